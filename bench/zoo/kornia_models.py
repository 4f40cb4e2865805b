"""kornia 0.9.0: its learned local-feature networks and a few of its image-processing modules.

Built with ``pretrained=False`` (kornia's default constructors download weights). kornia
validates its inputs with ``KORNIA_CHECK_SHAPE`` & co., which read ``len(x.shape)`` in Python;
they are autowrapped (recorded as ``call_function`` nodes that run again on real tensors).
Most of kornia's colour conversions and filters stay untraceable: they test
``isinstance(image, torch.Tensor)`` inline, which a Proxy fails (two are kept as examples).
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import torch
from torch import nn

from . import Inputs, ZooModel, img


def _unit_image() -> tuple[torch.Tensor, ...]:
    """An RGB image in [0, 1) (AdjustLog takes the log of it)."""
    return (torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(0)),)


#: kornia.core.check's assertions, which inspect shapes in Python.
CHECKS = tuple(
    f"kornia.core.check.{name}"
    for name in (
        "KORNIA_CHECK",
        "KORNIA_CHECK_IS_COLOR",
        "KORNIA_CHECK_IS_COLOR_OR_GRAY",
        "KORNIA_CHECK_IS_GRAY",
        "KORNIA_CHECK_IS_IMAGE",
        "KORNIA_CHECK_IS_TENSOR",
        "KORNIA_CHECK_LAF",
        "KORNIA_CHECK_SAME_SHAPE",
        "KORNIA_CHECK_SHAPE",
    )
)


def _build(path: str, kwargs: tuple[tuple[str, Any], ...]) -> nn.Module:
    module, _, cls = path.rpartition(".")
    torch.manual_seed(0)
    model: nn.Module = getattr(importlib.import_module(module), cls)(**dict(kwargs))
    return model


def _k(
    name: str, path: str, inputs: Inputs, *, traceable: bool = True, note: str = "", **kwargs: Any
) -> ZooModel:
    """An entry for ``kornia.<path>(**kwargs)``."""
    return ZooModel(
        f"kornia.{name}",
        functools.partial(_build, f"kornia.{path}", tuple(kwargs.items())),
        inputs,
        autowrap_functions=CHECKS,
        traceable=traceable,
        note=note,
        requires=("kornia",),
    )


_PATCH = img(2, 1, 32, 32)
_RGB = img(1, 3, 32, 32)

ENTRIES: list[ZooModel] = [
    _k(
        "HardNet",
        "feature.HardNet",
        _PATCH,
        pretrained=False,
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (hardnet.py:146)",
    ),
    _k(
        "HardNet8",
        "feature.HardNet8",
        _PATCH,
        pretrained=False,
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (utils.py:241)",
    ),
    _k("TFeat", "feature.TFeat", _PATCH, pretrained=False),
    _k(
        "SOSNet",
        "feature.SOSNet",
        _PATCH,
        pretrained=False,
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (_normalization.py:64)",
    ),
    _k(
        "HyNet",
        "feature.HyNet",
        _PATCH,
        pretrained=False,
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (hynet.py:124)",
    ),
    _k(
        "SIFTDescriptor",
        "feature.SIFTDescriptor",
        _PATCH,
        patch_size=32,
        traceable=False,
        note="TypeCheckError: Type mismatch: expected Tensor, got <class 'torch.fx.proxy.Proxy'>. (check.py:409)",
    ),
    _k("OriNet", "feature.OriNet", _PATCH, pretrained=False),
    _k(
        "KeyNet",
        "feature.KeyNet",
        img(1, 1, 32, 32),
        pretrained=False,
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (filter.py:61)",
    ),
    _k("XFeatModel", "feature.xfeat.XFeatModel", img(1, 1, 32, 32)),
    _k("BlobDoG", "feature.BlobDoG", img(1, 1, 3, 32, 32)),
    _k(
        "CornerHarris",
        "feature.CornerHarris",
        img(1, 1, 32, 32),
        k=0.04,
        traceable=False,
        note="TypeError: sigmas type is not a torch.Tensor. Got <class 'torch.fx.proxy.Proxy'> (responses.py:113)",
    ),
    _k("AdjustSigmoid", "enhance.AdjustSigmoid", _RGB),
    _k("AdjustLog", "enhance.AdjustLog", _unit_image),
    _k("Hflip", "geometry.transform.Hflip", _RGB),
    _k("Vflip", "geometry.transform.Vflip", _RGB),
    _k("Rot180", "geometry.transform.Rot180", _RGB),
    _k("RgbToRgb255", "color.RgbToRgb255", _RGB),
    _k(
        "Sobel",
        "filters.Sobel",
        _RGB,
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (filter.py:61)",
    ),
    _k(
        "RgbToHsv",
        "color.RgbToHsv",
        _RGB,
        traceable=False,
        note="TypeError: Input type is not a torch.Tensor. Got <class 'torch.fx.proxy.Proxy'> (hsv.py:55)",
    ),
]
