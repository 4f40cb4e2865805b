"""Three small pure-PyTorch zoos from PyPI, catalogued with the original MONAI entries.

Each installs with ``pip install -c constraints.txt NAME`` without torchvision or another torch:
efficientnet-pytorch 0.7.1 (needs torch only), rtdl-revisiting-models 0.0.2 (torch only),
mlp-mixer-pytorch 0.3.1 (torch, einops).
"""

from __future__ import annotations

import torch
from torch import nn

from . import ZooModel, img


def _lukemelas_efficientnet_b0() -> nn.Module:
    from efficientnet_pytorch import EfficientNet

    torch.manual_seed(0)
    # from_name builds the architecture only; from_pretrained would download weights.
    return EfficientNet.from_name("efficientnet-b0", in_channels=1, num_classes=3, image_size=32)


def _lukemelas_efficientnet_b0_swish() -> nn.Module:
    model = _lukemelas_efficientnet_b0()
    model.set_swish(memory_efficient=False)  # type: ignore[operator]
    return model


def _rtdl_mlp() -> nn.Module:
    from rtdl_revisiting_models import MLP

    torch.manual_seed(0)
    return MLP(d_in=8, d_out=2, n_blocks=2, d_block=16, dropout=0.1)


def _rtdl_resnet() -> nn.Module:
    from rtdl_revisiting_models import ResNet

    torch.manual_seed(0)
    return ResNet(
        d_in=8,
        d_out=2,
        n_blocks=2,
        d_block=16,
        d_hidden=None,
        d_hidden_multiplier=2.0,
        dropout1=0.1,
        dropout2=0.0,
    )


def _rtdl_ft_transformer() -> nn.Module:
    from rtdl_revisiting_models import FTTransformer

    torch.manual_seed(0)
    return FTTransformer(
        n_cont_features=4,
        cat_cardinalities=[3, 5],
        d_out=2,
        n_blocks=2,
        d_block=16,
        attention_n_heads=2,
        attention_dropout=0.1,
        ffn_d_hidden=None,
        ffn_d_hidden_multiplier=2.0,
        ffn_dropout=0.1,
        residual_dropout=0.0,
    )


def _ft_transformer_inputs() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    x_cont = torch.randn(2, 4, generator=g)
    x_cat = torch.stack(
        [torch.randint(0, 3, (2,), generator=g), torch.randint(0, 5, (2,), generator=g)], dim=1
    )
    return (x_cont, x_cat)


def _mlp_mixer() -> nn.Module:
    from mlp_mixer_pytorch import MLPMixer

    torch.manual_seed(0)
    return MLPMixer(image_size=32, channels=1, patch_size=8, dim=32, depth=2, num_classes=3)


ENTRIES: list[ZooModel] = [
    # --- other zoos
    ZooModel(
        "efficientnet_pytorch.EfficientNet[b0]",
        _lukemelas_efficientnet_b0,
        img(1, 1, 32, 32),
        requires=("efficientnet_pytorch",),
        note="MemoryEfficientSwish is a custom autograd.Function: tracing inlines its forward "
        "(sigmoid, mul) and drops its custom backward; Conv2dStaticSamePadding subclasses "
        "nn.Conv2d with its own forward, so fx traces into it (get_attr of conv weights)",
    ),
    ZooModel(
        "efficientnet_pytorch.EfficientNet[b0,swish]",
        _lukemelas_efficientnet_b0_swish,
        img(1, 1, 32, 32),
        requires=("efficientnet_pytorch",),
    ),
    ZooModel("rtdl.MLP", _rtdl_mlp, img(2, 8), requires=("rtdl_revisiting_models",)),
    ZooModel("rtdl.ResNet", _rtdl_resnet, img(2, 8), requires=("rtdl_revisiting_models",)),
    ZooModel(
        "rtdl.FTTransformer",
        _rtdl_ft_transformer,
        _ft_transformer_inputs,
        traceable=False,
        requires=("rtdl_revisiting_models",),
        note="`if not batch_dims: raise` on x.shape[:-1] in the CLS embedding; inputs are a "
        "float and an int64 tensor",
    ),
    ZooModel(
        "mlp_mixer_pytorch.MLPMixer",
        _mlp_mixer,
        img(1, 1, 32, 32),
        leaf_modules=("einops.layers.torch.Rearrange", "einops.layers.torch.Reduce"),
        requires=("mlp_mixer_pytorch", "einops"),
        fast=True,  # CI's third library, and third-party leaf modules recovered by fxgen
        note="einops Rearrange and Reduce must be leaves",
    ),
]
