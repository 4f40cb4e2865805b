"""The default export of torchvision's ConvNeXt, DenseNet, EfficientNet and ViT, as
``tests/torchvision_models.py`` writes them (issue 42), at small widths and depths: whatever classes
the export writes, the spec is the model. The original ``state_dict()`` loads strictly into the
generated class and ``fxgen.load``, whose outputs are ``torch.equal`` to a fresh original's in eval
mode and, seeded the same, in train mode, where stochastic depth and dropout draw (and so does the
state after one forward: batch norm's running statistics). ``bench/export_classes.py`` measures the
classes themselves on the full-size models."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torchvision_models as tv
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from parity import check_train, export_checked

# Each with its random draws in train mode: stochastic depth (ConvNeXt, EfficientNet), dropout.
MODELS: dict[str, Callable[[], nn.Module]] = {
    "convnext": lambda: tv.convnext_small_test(stochastic_depth_prob=0.3),
    "densenet": lambda: tv.densenet_small_test(drop_rate=0.2),
    "efficientnet": lambda: tv.efficientnet_small_test(stochastic_depth_prob=0.3),
    "vit": lambda: tv.vit_small_test(dropout=0.1, attention_dropout=0.1),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_torchvision_reference_models_export_exactly_in_both_modes(name: str, tmp_path: Path) -> None:
    def factory() -> nn.Module:
        return tv.randomize(MODELS[name]())  # every tensor random, the same on every call

    inputs = (torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1)),)
    proved = export_checked(factory, inputs, tmp_path, allow=(tv.__name__,), stem=name)  # eval mode, strict loads
    check_train(factory, inputs, proved)
