"""pytorchcv 0.0.74: classification, segmentation, detection and pose networks.

One or two of the smallest variants of each of pytorchcv's architecture families that builds
without torchvision and runs in well under a second (several ImageNet ones at their native
224x224, since their final ``AvgPool2d(7)`` fixes the input size; CIFAR ones at 32x32;
segmentation ones at a reduced ``in_size`` with ``fixed_size=True`` and ``aux=False``, as
pytorchcv's own tests build them). Classifiers get ``num_classes=10``.

``pytorchcv.model_provider`` imports every model module, one of which (``propainter_rfc``)
imports torchvision, so factories import the model's own module ``pytorchcv.models.<module>``
instead of calling ``get_model``. Families left out: VGG, ZFNet, WRN-50-2, IBPPose, PNASNet,
PolyNet, FastSEResNet-101, i-RevNet, AlphaPose and NTS-Net (50-130M parameters), ProPainter
(torchvision), Jasper/QuartzNet (librosa), VisemeNet (fails in eager mode with the inputs of
its own test), and the CUB-200 and dataset-specific duplicates of included models. One
factory fills parameters pytorchcv leaves uninitialised (NvpAttExp's ``SelectableDense``).
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import torch
from torch import nn

from . import Inputs, ZooModel, img, imgs, randn


def _build(module: str, name: str, kwargs: tuple[tuple[str, Any], ...]) -> nn.Module:
    torch.manual_seed(0)
    factory = getattr(importlib.import_module(f"pytorchcv.models.{module}"), name)
    model: nn.Module = factory(pretrained=False, **dict(kwargs))
    for sub in model.modules():
        if type(sub).__name__ == "SelectableDense":
            # pytorchcv allocates these with torch.Tensor(...) and never initialises them: the
            # values would be whatever memory held. Give them seeded values instead.
            for param in sub.parameters():
                nn.init.normal_(param, std=0.02)
    return model


def _pcv(name: str, module: str, inputs: Inputs, *, traceable: bool = True, note: str = "",
         **kwargs: Any) -> ZooModel:  # fmt: skip
    """An entry for ``pytorchcv.models.<module>.<name>(pretrained=False, **kwargs)``."""
    return ZooModel(
        f"pytorchcv.{name}",
        functools.partial(_build, module, name, tuple(kwargs.items())),
        inputs,
        traceable=traceable,
        note=note,
        requires=("pytorchcv",),
    )


def _nvpattexp_inputs() -> tuple[torch.Tensor, ...]:
    return randn(2, 8, 16, 29), torch.full((2,), 3)


def _voca_inputs() -> tuple[torch.Tensor, ...]:
    return randn(2, 1, 16, 29), torch.full((2,), 3)


ENTRIES: list[ZooModel] = [
    _pcv("airnet50_1x64d_r16", "airnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("airnext50_32x4d_r2", "airnext", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("alexnet", "alexnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "bagnet9",
        "bagnet",
        img(1, 3, 224, 224),
        num_classes=10,
        in_size=(224, 224),
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (bagnet.py:103)",
    ),
    _pcv("bam_resnet18", "bamresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "bisenet_resnet18_celebamaskhq",
        "bisenet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (bisenet.py:321)",
    ),
    _pcv("bninception", "bninception", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("cbam_resnet18", "cbamresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("centernet_resnet18_voc", "centernet", img(1, 3, 32, 32), in_size=(32, 32)),
    _pcv(
        "cgnet_cityscapes", "cgnet", img(1, 3, 32, 32), aux=False, fixed_size=True, in_size=(32, 32)
    ),
    _pcv("channelnet", "channelnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "condensenet74_c8_g8",
        "condensenet",
        img(1, 3, 224, 224),
        num_classes=10,
        in_size=(224, 224),
    ),
    _pcv(
        "ctxnet_cityscapes",
        "contextnet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (tutti.py:245)",
    ),
    _pcv(
        "dabnet_cityscapes",
        "dabnet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
    ),
    _pcv(
        "danet_resnetd50b_cityscapes",
        "danet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
    ),
    _pcv("darknet_tiny", "darknet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("darknet_ref", "darknet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("darknet53", "darknet53", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("darts", "darts", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "deeplabv3_resnetd50b_voc",
        "deeplabv3",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
    ),
    _pcv("densenet121", "densenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "densenet40_k12_bc_cifar10",
        "densenet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv(
        "densenet40_k12_cifar10",
        "densenet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv("diapreresnet10", "diapreresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "diapreresnet20_cifar10",
        "diapreresnet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv("diaresnet10", "diaresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "diaresnet20_cifar10",
        "diaresnet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv(
        "dicenet_wd5",
        "dicenet",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (dicenet.py:55)",
    ),
    _pcv("diracnet18v2", "diracnetv2", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("dla46xc", "dla", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("dla34", "dla", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("dpn68", "dpn", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("drnc26", "drn", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("drnd22", "drn", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "edanet_cityscapes",
        "edanet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (tutti.py:243)",
    ),
    _pcv(
        "efficientnet_b0", "efficientnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)
    ),
    _pcv(
        "efficientnet_b0b",
        "efficientnet",
        img(1, 3, 224, 224),
        num_classes=10,
        in_size=(224, 224),
        traceable=False,
        note="TypeError: float() argument must be a string or a real number, not 'Proxy' (efficientnet.py:51)",
    ),
    _pcv(
        "enet_cityscapes",
        "enet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
        traceable=False,
        note="TypeError: zeros() takes 1 positional argument but 4 were given (enet.py:49)",
    ),
    _pcv(
        "erfnet_cityscapes",
        "erfnet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
    ),
    _pcv(
        "esnet_cityscapes", "esnet", img(1, 3, 32, 32), aux=False, fixed_size=True, in_size=(32, 32)
    ),
    _pcv(
        "espcnet_cityscapes",
        "espcnet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
    ),
    _pcv("espnetv2_wd2", "espnetv2", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "fastscnn_cityscapes",
        "fastscnn",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
    ),
    _pcv("fbnet_cb", "fbnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "fcn8sd_resnetd50b_voc",
        "fcn8sd",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
    ),
    _pcv("fdmobilenet_wd4", "fdmobilenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("fishnet99", "fishnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "fpenet_cityscapes",
        "fpenet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (fpenet.py:46)",
    ),
    _pcv(
        "fractalnet_cifar10",
        "fractalnet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
        traceable=False,
        note="TypeError: int() argument must be a string, a bytes-like object or a real number, not 'Proxy' (fractalnet_cifar.py:369)",
    ),
    _pcv("ghostnet", "ghostnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("hardnet39ds", "hardnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("hardnet68", "hardnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("hrnet_w18_small_v1", "hrnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("ibnb_resnet50", "ibnbresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("ibn_densenet121", "ibndensenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("ibn_resnet50", "ibnresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "ibn_resnext50_32x4d", "ibnresnext", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)
    ),
    _pcv("igcv3_wd4", "igcv3", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "inceptionresnetv1",
        "inceptionresnetv1",
        img(1, 3, 299, 299),
        num_classes=10,
        in_size=(299, 299),
    ),
    _pcv(
        "inceptionresnetv2",
        "inceptionresnetv2",
        img(1, 3, 299, 299),
        num_classes=10,
        in_size=(299, 299),
    ),
    _pcv("inceptionv3", "inceptionv3", img(1, 3, 299, 299), num_classes=10, in_size=(299, 299)),
    _pcv("inceptionv4", "inceptionv4", img(1, 3, 299, 299), num_classes=10, in_size=(299, 299)),
    _pcv(
        "isqrtcovresnet18",
        "isqrtcovresnet",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (isqrtcovresnet.py:60)",
    ),
    _pcv(
        "lednet_cityscapes",
        "lednet",
        img(1, 3, 64, 64),
        aux=False,
        fixed_size=True,
        in_size=(64, 64),
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (tutti.py:243)",
    ),
    _pcv("lffd20x5s320v2_widerface", "lffd", img(1, 3, 128, 128), in_size=(128, 128)),
    _pcv(
        "linknet_cityscapes",
        "linknet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
    ),
    _pcv(
        "lwopenpose2d_mobilenet_cmupan_coco",
        "lwopenpose_cmupan",
        img(1, 3, 32, 32),
        in_size=(32, 32),
    ),
    _pcv(
        "lwopenpose3d_mobilenet_cmupan_coco",
        "lwopenpose_cmupan",
        img(1, 3, 32, 32),
        in_size=(32, 32),
    ),
    _pcv("menet108_8x1_g3", "menet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "mixnet_s",
        "mixnet",
        img(1, 3, 224, 224),
        num_classes=10,
        in_size=(224, 224),
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (mixnet.py:78)",
    ),
    _pcv("mnasnet_small", "mnasnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("mnasnet_a1", "mnasnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("mobilenet_wd4", "mobilenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("mobilenetb_wd4", "mobilenetb", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("mobilenetv2_wd4", "mobilenetv2", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "mobilenetv2b_wd4", "mobilenetv2", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)
    ),
    _pcv(
        "mobilenetv3_small_w7d20",
        "mobilenetv3",
        img(1, 3, 224, 224),
        num_classes=10,
        in_size=(224, 224),
    ),
    _pcv(
        "mobilenetv3_large_w7d20",
        "mobilenetv3",
        img(1, 3, 224, 224),
        num_classes=10,
        in_size=(224, 224),
    ),
    _pcv(
        "msdnet22_cifar10",
        "msdnet_cifar10",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (msdnet_cifar10.py:160)",
    ),
    # NASNet builds its own in_size: only its native 224x224 input fits the final pooling.
    _pcv("nasnet_4a1056", "nasnet", img(1, 3, 224, 224), num_classes=10),
    _pcv("nin_cifar10", "nin_cifar", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv(
        "nvpattexp116bazel76",
        "nvpattexp",
        _nvpattexp_inputs,
        note="audio features (batch, seq_len 8, window 16, 29) plus a person id; its "
        "SelectableDense weights are uninitialised memory in pytorchcv (torch.Tensor(...)), so "
        "the factory fills them with seeded values",
    ),
    _pcv("octresnet10_ad2", "octresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("peleenet", "peleenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("pfpcnet", "pfpcnet", img(1, 1, 320, 240), in_size=(320, 240)),
    _pcv("preresnet10", "preresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("preresnetbc14b", "preresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "preresnet20_cifar10",
        "preresnet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv(
        "preresnet164bn_cifar10",
        "preresnet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv("prnet", "prnet", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv(
        "proxylessnas_mobile",
        "proxylessnas",
        img(1, 3, 224, 224),
        num_classes=10,
        in_size=(224, 224),
    ),
    _pcv(
        "pspnet_resnetd50b_voc",
        "pspnet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
    ),
    _pcv(
        "pyramidnet101_a360", "pyramidnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)
    ),
    _pcv(
        "pyramidnet110_a48_cifar10",
        "pyramidnet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv(
        "raft_small",
        "raft",
        imgs((1, 3, 64, 64), (1, 3, 64, 64)),
        traceable=False,
        note="RuntimeError: 'len' is not supported in symbolic tracing by default. If you want this call to be recorded, please call torch.fx.wrap('len') at module scope (raft.py:783)",
    ),
    _pcv("regnetx002", "regnet", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv("regnety002", "regnet", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv("resattnet56", "resattnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "resdropresnet20_cifar10",
        "resdropresnet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv("resnestabc14", "resnesta", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv("resnesta18", "resnesta", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv("resnet10", "resnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("resnetbc14b", "resnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("resnet20_cifar10", "resnet_cifar", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv(
        "resnet164bn_cifar10", "resnet_cifar", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)
    ),
    _pcv("resneta10", "resneta", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv("resnetabc14b", "resneta", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv("resnetd50b", "resnetd", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv("resnext14_32x2d", "resnext", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "resnext20_32x2d_cifar10",
        "resnext_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv(
        "revnet38",
        "revnet",
        img(1, 3, 224, 224),
        num_classes=10,
        in_size=(224, 224),
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (revnet.py:118)",
    ),
    _pcv("rir_cifar10", "rir_cifar", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv("ror3_56_cifar10", "ror_cifar", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv("scnet50", "scnet", img(1, 3, 128, 128), num_classes=10, in_size=(128, 128)),
    _pcv("scneta50", "scnet", img(1, 3, 128, 128), num_classes=10, in_size=(128, 128)),
    _pcv(
        "segnet_cityscapes",
        "segnet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
    ),
    _pcv("selecsls42", "selecsls", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("senet16", "senet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("sepreresnet10", "sepreresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "sepreresnetbc26b", "sepreresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)
    ),
    _pcv(
        "sepreresnet20_cifar10",
        "sepreresnet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv("seresnet10", "seresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("seresnetbc26b", "seresnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "seresnet20_cifar10", "seresnet_cifar", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)
    ),
    _pcv("seresnext50_32x4d", "seresnext", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "shakedropresnet20_cifar10",
        "shakedropresnet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv(
        "shakeshakeresnet20_2x16d_cifar10",
        "shakeshakeresnet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv("sharesnet18", "sharesnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "shufflenet_g1_wd4", "shufflenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)
    ),
    _pcv(
        "shufflenet_g3_wd4", "shufflenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)
    ),
    _pcv(
        "shufflenetv2_wd2", "shufflenetv2", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)
    ),
    _pcv(
        "shufflenetv2b_wd2",
        "shufflenetv2b",
        img(1, 3, 224, 224),
        num_classes=10,
        in_size=(224, 224),
    ),
    _pcv(
        "simplepose_resnet18_coco",
        "simplepose_coco",
        img(1, 3, 32, 32),
        in_size=(32, 32),
        traceable=False,
        note="TypeError: 'Proxy' object cannot be interpreted as an integer (tutti.py:427)",
    ),
    _pcv(
        "sinet_cityscapes",
        "sinet",
        img(1, 3, 128, 128),
        aux=False,
        fixed_size=True,
        in_size=(128, 128),
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (tutti.py:243)",
    ),
    _pcv("sknet50", "sknet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("sparsenet121", "sparsenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("spnasnet", "spnasnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "sqnet_cityscapes", "sqnet", img(1, 3, 32, 32), aux=False, fixed_size=True, in_size=(32, 32)
    ),
    _pcv("squeezenet_v1_1", "squeezenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "squeezeresnet_v1_1", "squeezenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)
    ),
    _pcv("squeezenet_v1_0", "squeezenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("sqnxt23_w1", "squeezenext", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv("sqnxt23v5_w1", "squeezenext", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "superpointnet",
        "superpointnet",
        img(1, 1, 64, 64),
        traceable=False,
        note="TraceError: symbolically traced variables cannot be used as inputs to control flow (superpointnet.py:251)",
    ),
    _pcv("tresnet_m", "tresnet", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv(
        "unet_cityscapes",
        "unet",
        img(1, 3, 32, 32),
        aux=False,
        fixed_size=True,
        in_size=(32, 32),
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (tutti.py:243)",
    ),
    _pcv(
        "voca8flame", "voca", _voca_inputs, note="audio window (batch, 1, 16, 29) plus a person id"
    ),
    _pcv("vovnet27s", "vovnet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "wrn20_10_1bit_cifar10",
        "wrn1bit_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
    _pcv("wrn16_10_cifar10", "wrn_cifar", img(1, 3, 32, 32), num_classes=10, in_size=(32, 32)),
    _pcv("xception", "xception", img(1, 3, 299, 299), num_classes=10, in_size=(299, 299)),
    _pcv("xdensenet121_2", "xdensenet", img(1, 3, 224, 224), num_classes=10, in_size=(224, 224)),
    _pcv(
        "xdensenet40_2_k24_bc_cifar10",
        "xdensenet_cifar",
        img(1, 3, 32, 32),
        num_classes=10,
        in_size=(32, 32),
    ),
]
