"""The format-2 examples against hand-written PyTorch (``tests/reference_models.py``): the
reference model's checkpoint loads strictly into what ``fxgen.load`` builds and into the class
``fxgen generate`` wrote, with the same keys in the same order, and both compute exactly what the
reference computes. Run at the examples' defaults and at other constructor arguments."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from typing import Any

import pytest
import reference_models as ref
import torch
from conftest import ROOT
from helpers import assert_same

import fxgen


def full_size(*case: Any) -> Any:
    """A case at the published size (ResNet-18, MobileNetV2 1.0 and 1.4, YOLOv8m): seconds each,
    so marked slow (CI's second step); the narrow cases of each spec run in ``python -m pytest``."""
    return pytest.param(*case, marks=pytest.mark.slow)


# spec name -> (constructor arguments, the reference built with them, an input)
CASES: list[Any] = [
    full_size("resnet", {}, lambda: ref.ResNet(), (1, 3, 64, 64)),
    ("resnet", {"width": 8, "num_classes": 7, "blocks1": 3, "blocks2": 4, "blocks3": 6, "blocks4": 3},
     lambda: ref.ResNet((3, 4, 6, 3), num_classes=7, width=8), (2, 3, 32, 32)),  # a narrow ResNet-34
    ("resnet", {"width": 8, "blocks2": 1}, lambda: ref.ResNet((2, 1, 2, 2), width=8), (1, 3, 32, 32)),
    ("vit", {}, lambda: ref.ViT(32, 8, 64, 4, 4, 128, 10), (2, 3, 32, 32)),
    ("vit", {"image_size": 48, "patch_size": 16, "dim": 32, "depth": 1, "heads": 2, "mlp_dim": 64},
     lambda: ref.ViT(48, 16, 32, 1, 2, 64, 10), (3, 3, 48, 48)),
    ("unet", {}, lambda: ref.UNet(3, 2, 16), (1, 3, 64, 64)),
    ("unet", {"in_channels": 1, "num_classes": 5, "base": 4}, lambda: ref.UNet(1, 5, 4), (2, 1, 32, 48)),
    ("width_net", {}, lambda: ref.WidthNet(), (2, 3, 32, 32)),
    ("width_net", {"width": 0.75, "depth": 0.33}, lambda: ref.WidthNet(0.75, 0.33), (2, 3, 32, 32)),
    ("width_net", {"width": 1.4, "depth": 0.67, "max_channels": 64, "num_classes": 3},
     lambda: ref.WidthNet(1.4, 0.67, 64, 3), (1, 3, 16, 16)),
    ("family_net", {}, lambda: ref.FamilyNet(), (2, 3, 32, 32)),
    ("family_net", {"n": 0}, lambda: ref.FamilyNet(n=0), (2, 3, 32, 32)),  # no bottleneck: the loop runs no step
    ("family_net", {"n": 1, "width": 8}, lambda: ref.FamilyNet(8, 1), (1, 3, 16, 16)),
    ("family_net", {"n": 4, "width": 8, "num_classes": 3}, lambda: ref.FamilyNet(8, 4, 3), (3, 3, 24, 24)),
    full_size("mobilenet_v2", {}, lambda: ref.MobileNetV2(), (2, 3, 64, 64)),
    ("mobilenet_v2", {"width_mult": 0.5, "num_classes": 10}, lambda: ref.MobileNetV2(10, 0.5), (1, 3, 64, 64)),
    ("mobilenet_v2", {"width_mult": 0.75}, lambda: ref.MobileNetV2(width_mult=0.75), (1, 3, 64, 64)),
    full_size("mobilenet_v2", {"width_mult": 1.4}, lambda: ref.MobileNetV2(width_mult=1.4), (1, 3, 64, 64)),
    ("yolov8", {}, lambda: ref.YOLOv8("n"), (2, 3, 64, 64)),  # size n: three levels of 80 classes + 64 box bins
    full_size("yolov8", {"depth": 0.67, "width": 0.75, "max_channels": 768, "nc": 3}, lambda: ref.YOLOv8("m", 3),
              (1, 3, 64, 96)),
]  # fmt: skip

# Ultralytics' sizes (yolov8.yaml's `scales`: depth, width, max_channels) and the parameter counts
# it publishes for them (80 classes, the fixed DFL convolution included)
YOLOV8_SIZES = {
    "n": ({"depth": 0.33, "width": 0.25, "max_channels": 1024}, 3_157_200),
    "s": ({"depth": 0.33, "width": 0.50, "max_channels": 1024}, 11_166_560),
    "m": ({"depth": 0.67, "width": 0.75, "max_channels": 768}, 25_902_640),
    "l": ({"depth": 1.00, "width": 1.00, "max_channels": 512}, 43_691_520),
    "x": ({"depth": 1.00, "width": 1.25, "max_channels": 512}, 68_229_648),
}


def _keys_and_shapes(model: torch.nn.Module) -> list[tuple[str, tuple[int, ...]]]:
    return [(key, tuple(tensor.shape)) for key, tensor in model.state_dict().items()]


def _parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("width", [0.5, 0.75, 1.0, 1.4])
def test_mobilenet_v2_is_torchvisions_at_every_width(width: float) -> None:
    """One spec, torchvision's mobilenet_v2(width_mult=...): the same state-dict keys with the
    same shapes (0.75 needs _make_divisible's "never below 90%" rule) and parameter count;
    3,504,872 at 1.0 with 1000 classes, the figure torchvision publishes. Built on the meta
    device: only shapes matter here."""
    with torch.device("meta"):
        loaded = fxgen.load(ROOT / "model_specs" / "mobilenet_v2.yaml", args={"width_mult": width})
        reference = ref.MobileNetV2(width_mult=width)
    assert _keys_and_shapes(loaded) == _keys_and_shapes(reference)
    assert _parameters(loaded) == _parameters(reference)
    if width == 1.0:
        assert _parameters(loaded) == 3_504_872
        assert list(loaded.state_dict())[:2] == ["features.0.0.weight", "features.0.1.weight"]
        assert "features.1.conv.0.0.weight" in loaded.state_dict()  # t = 1: no expansion, conv.0 is the depthwise one
        assert "features.2.conv.3.running_var" in loaded.state_dict()  # t = 6: expansion first
        assert list(loaded.state_dict())[-2:] == ["classifier.1.weight", "classifier.1.bias"]


@pytest.mark.parametrize("size", [s if s == "n" else pytest.param(s, marks=pytest.mark.slow) for s in YOLOV8_SIZES])
def test_yolov8_has_ultralytics_parameter_count_and_keys(size: str) -> None:
    """One spec for the five sizes: Ultralytics' published parameter counts, and the keys and
    shapes of the reference built as parse_model builds yolov8.yaml (model.0.conv.weight ...
    model.22.dfl.conv.weight)."""
    args, published = YOLOV8_SIZES[size]
    with torch.device("meta"):
        loaded = fxgen.load(ROOT / "model_specs" / "yolov8.yaml", args=args)
        reference = ref.YOLOv8(size)
    assert _parameters(loaded) == published
    assert _parameters(reference) == published
    assert _keys_and_shapes(loaded) == _keys_and_shapes(reference)
    keys = list(loaded.state_dict())
    assert (keys[0], keys[-1]) == ("model.0.conv.weight", "model.22.dfl.conv.weight")
    with torch.device("meta"):  # the spec's own variant of that size builds the same model
        assert _parameters(fxgen.load(ROOT / "model_specs" / "yolov8.yaml", variant=size)) == published


@pytest.mark.parametrize("width", [0.1, 0.25, 0.35, 0.5, 0.75, 1.0, 1.3, 1.4, 2.0])
@pytest.mark.parametrize("depth", [0.33, 1.0, 1.5])
def test_width_net_has_the_reference_parameter_count(width: float, depth: float) -> None:
    """The values of model_specs/width_net.yaml (make_divisible, a capped ceil, a rounded
    depth) give the layer sizes the Python rules give, at many widths."""
    args = {"width": width, "depth": depth}
    loaded = fxgen.load(ROOT / "model_specs" / "width_net.yaml", args=args)
    reference = ref.WidthNet(width, depth)
    shapes = [tuple(t.shape) for t in reference.state_dict().values()]
    assert [tuple(t.shape) for t in loaded.state_dict().values()] == shapes
    assert sum(p.numel() for p in loaded.parameters()) == sum(p.numel() for p in reference.parameters())


def _generated_class(name: str, cls: str) -> type[torch.nn.Module]:
    path = ROOT / "generated" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_generated_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, cls)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("name", "args", "make_reference", "shape"), CASES)
def test_reference_checkpoint_loads_and_computes_the_same(
    name: str, args: dict[str, Any], make_reference: Callable[[], torch.nn.Module], shape: tuple[int, ...]
) -> None:
    torch.manual_seed(0)
    reference = make_reference().eval()
    with torch.no_grad():  # batch-norm statistics that are not the defaults, so they matter
        for module in reference.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 1.5)
    state = reference.state_dict()
    spec = fxgen.load_spec(ROOT / "model_specs" / f"{name}.yaml")
    loaded = fxgen.load(spec, args=args).eval()
    generated = _generated_class(name, spec.name)(**args).eval()
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(x.clone())
        for model in (loaded, generated):
            assert list(model.state_dict()) == list(state)
            model.load_state_dict(state, strict=True)
            assert_same(model(x.clone()), expected)


def test_a_wrong_checkpoint_is_refused() -> None:
    """The strict load above can fail: a ResNet-34 checkpoint does not fit the ResNet-18 spec."""
    spec = fxgen.load_spec(ROOT / "model_specs" / "resnet.yaml")
    loaded = fxgen.load(spec, args={"width": 8})
    with pytest.raises(RuntimeError, match="Unexpected key"):
        loaded.load_state_dict(ref.ResNet((3, 4, 6, 3), width=8).state_dict())

