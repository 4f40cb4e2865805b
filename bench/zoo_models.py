"""A catalogue of real, third-party model architectures for fxgen's export/regenerate round trip.

Every entry is a *small* configuration of a network written by someone else -- MONAI's
``monai.networks.nets`` (1.6.1) and three small pure-PyTorch zoos from PyPI
(efficientnet-pytorch, rtdl-revisiting-models, mlp-mixer-pytorch) -- that builds and runs one
eval-mode forward on CPU in milliseconds (the largest, EfficientNet-b0, in about 0.1 s
including tracing). Nothing here downloads weights: factories pass ``pretrained=False`` (or use
``from_name``) and parameters come from ``torch.manual_seed(0)``.

Importing this module imports only ``torch``. Each entry's ``requires`` names the packages its
factory imports (``monai``; ``einops`` for MONAI's transformer blocks; the other zoos), so a
test can ``pytest.importorskip`` them. None of them pulls torchvision or another torch build:
``pip install -c constraints.txt monai einops efficientnet-pytorch rtdl-revisiting-models
mlp-mixer-pytorch``.

How an entry is meant to be used::

    zm = ZOO[0]
    model = zm.factory().eval()
    args = zm.inputs()
    tracer = zm.tracer()  # honours zm.leaf_modules
    graph = tracer.trace(model, concrete_args=zm.concrete_args)
    gm = torch.fx.GraphModule(tracer.root, graph)
    torch.testing.assert_close(gm(*args), model(*args))  # outputs may be nested lists/tuples

``traceable`` records what the survey found with torch 2.13 / MONAI 1.6.1 / einops 0.8.2:
``True`` means tracing (with the entry's ``concrete_args`` and ``leaf_modules``) succeeds
*and* the GraphModule reproduces the eager output; ``False`` entries are kept on purpose, as
real-world examples of what torch.fx cannot capture (``note`` gives the one-line reason).
One of them, ``monai.BasicUNet[no-leaf]``, traces without any error but silently drops its
skip connections -- a reminder to compare against the eager model, never only against the
traced one.

Not catalogued from ``monai.networks.nets``: DAF3D and TorchVisionFCModel (need torchvision),
Transchex (needs transformers), HyenaNDUNETR and SwinUNETR(use_hyena=True) (need
nvsubquadratic), MILModel's default backbone (torchvision; a small custom one is used),
the cell-SAM wrapper (needs segment_anything), HoVerNet (fixed 256x256 input and 33M
parameters: ~2.5 s per forward, and untraceable: it checks ``x.shape``), and, not tried,
VISTA3D (large prompt-driven composite), NaViT (takes lists of images), TopologySearch
(a search space) and the SPADE variants of AutoencoderKL/DiffusionModelUNet (same
untraceable blocks as their plain versions).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch import nn

Inputs = Callable[[], tuple[torch.Tensor, ...]]


@dataclass(frozen=True)
class ZooModel:
    """One catalogued model configuration.

    Attributes:
        name: ``"<zoo>.<Architecture>[variant]"``, unique within :data:`ZOO`.
        factory: builds the module (seeded, no downloads); call ``.eval()`` on the result.
        inputs: deterministic example positional inputs (seeded ``torch.Generator``).
        concrete_args: passed to ``Tracer.trace`` / ``torch.fx.symbolic_trace``.
        leaf_modules: dotted class paths (``"package.module.ClassName"``) that must be kept as
            opaque ``call_module`` nodes for tracing to work; strings, so that importing this
            module does not import MONAI. :meth:`leaf_module_types` resolves them.
        fast: a representative, traceable subset cheap enough for every CI run (< ~1 s each,
            tracing included, once MONAI is imported).
        traceable: the survey's verdict (see the module docstring).
        note: why an entry is not traceable, or what is special about it.
        requires: top-level import names the factory needs (for ``pytest.importorskip``);
            none of them is a torch build or torchvision.
    """

    name: str
    factory: Callable[[], nn.Module]
    inputs: Inputs
    concrete_args: dict[str, Any] | None = None
    leaf_modules: tuple[str, ...] = ()
    fast: bool = False
    traceable: bool = True
    note: str = ""
    requires: tuple[str, ...] = ("monai",)

    def leaf_module_types(self) -> tuple[type[nn.Module], ...]:
        """Import and return the classes named in :attr:`leaf_modules`."""
        types: list[type[nn.Module]] = []
        for path in self.leaf_modules:
            module_name, _, class_name = path.rpartition(".")
            types.append(getattr(importlib.import_module(module_name), class_name))
        return tuple(types)

    def build(self) -> nn.Module:
        """The model in eval mode, built while fxgen records its leaf classes' constructor calls.

        Leaf modules become constructor calls in the spec; third-party blocks such as MONAI's
        ``UpCat`` do not keep their arguments, so they are recorded as the model is built.
        """
        import fxgen

        with fxgen.record_constructors(*self.leaf_module_types()):
            return self.factory().eval()

    def tracer(self) -> torch.fx.Tracer:
        """A ``torch.fx.Tracer`` that also treats :attr:`leaf_modules` as leaves."""
        return _LeafTracer(self.leaf_module_types())


class _LeafTracer(torch.fx.Tracer):
    def __init__(self, leaves: tuple[type[nn.Module], ...]) -> None:
        super().__init__()
        self._leaves = leaves

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        if self._leaves and isinstance(m, self._leaves):
            return True
        return super().is_leaf_module(m, module_qualified_name)


# ----------------------------------------------------------------------------- inputs


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _img(*shape: int, seed: int = 0) -> Inputs:
    """One float input of the given full shape (batch first)."""
    return lambda: (_randn(*shape, seed=seed),)


def _imgs(*shapes: tuple[int, ...]) -> Inputs:
    """Several float inputs, seeded 0, 1, 2, ..."""
    return lambda: tuple(_randn(*s, seed=i) for i, s in enumerate(shapes))


def _tokens(batch: int, length: int, vocab: int) -> Inputs:
    return lambda: (
        torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(0)),
    )


def _diffusion_inputs() -> tuple[torch.Tensor, ...]:
    return (_randn(1, 1, 16, 16), torch.tensor([10]))


def _controlnet_inputs() -> tuple[torch.Tensor, ...]:
    return (_randn(1, 1, 16, 16), torch.tensor([10]), _randn(1, 1, 16, 16, seed=1))


# ----------------------------------------------------------------------------- factories
# Every factory seeds torch's global RNG so that parameter initialisation is reproducible.


def _unet() -> nn.Module:
    from monai.networks.nets import UNet

    torch.manual_seed(0)
    return UNet(
        spatial_dims=2,
        in_channels=1,
        out_channels=2,
        channels=(4, 8, 16),
        strides=(2, 2),
        num_res_units=2,
    )


def _basic_unet() -> nn.Module:
    from monai.networks.nets import BasicUNet

    torch.manual_seed(0)
    return BasicUNet(spatial_dims=2, in_channels=1, out_channels=2, features=(4, 4, 8, 16, 32, 4))


def _basic_unetpp() -> nn.Module:
    from monai.networks.nets import BasicUNetPlusPlus

    torch.manual_seed(0)
    return BasicUNetPlusPlus(
        spatial_dims=2, in_channels=1, out_channels=2, features=(4, 4, 8, 16, 32, 4)
    )


def _densenet121() -> nn.Module:
    from monai.networks.nets import DenseNet121

    torch.manual_seed(0)
    return DenseNet121(
        spatial_dims=2,
        in_channels=1,
        out_channels=3,
        init_features=8,
        growth_rate=4,
        block_config=(2, 2, 2, 2),
        pretrained=False,
    )


def _segresnet() -> nn.Module:
    from monai.networks.nets import SegResNet

    torch.manual_seed(0)
    return SegResNet(spatial_dims=2, init_filters=8, in_channels=1, out_channels=2)


def _segresnet_vae() -> nn.Module:
    from monai.networks.nets import SegResNetVAE

    torch.manual_seed(0)
    return SegResNetVAE(
        input_image_size=(32, 32),
        vae_nz=16,
        spatial_dims=2,
        init_filters=8,
        in_channels=1,
        out_channels=2,
    )


def _segresnet_ds() -> nn.Module:
    from monai.networks.nets import SegResNetDS

    torch.manual_seed(0)
    return SegResNetDS(
        spatial_dims=2, init_filters=8, in_channels=1, out_channels=2, blocks_down=(1, 1, 1)
    )


def _segresnet_ds2() -> nn.Module:
    from monai.networks.nets import SegResNetDS2

    torch.manual_seed(0)
    return SegResNetDS2(
        spatial_dims=2, init_filters=8, in_channels=1, out_channels=2, blocks_down=(1, 1, 1)
    )


def _vit() -> nn.Module:
    from monai.networks.nets import ViT

    torch.manual_seed(0)
    return ViT(
        in_channels=1,
        img_size=(32, 32),
        patch_size=(8, 8),
        hidden_size=32,
        mlp_dim=64,
        num_layers=2,
        num_heads=4,
        spatial_dims=2,
        classification=True,
        num_classes=3,
    )


def _vit_autoenc() -> nn.Module:
    from monai.networks.nets import ViTAutoEnc

    torch.manual_seed(0)
    return ViTAutoEnc(
        in_channels=1,
        img_size=(32, 32),
        patch_size=(16, 16),
        out_channels=1,
        deconv_chns=4,
        hidden_size=32,
        mlp_dim=64,
        num_layers=2,
        num_heads=4,
        spatial_dims=2,
    )


def _unetr() -> nn.Module:
    from monai.networks.nets import UNETR

    torch.manual_seed(0)
    return UNETR(
        in_channels=1,
        out_channels=2,
        img_size=(32, 32),
        feature_size=8,
        hidden_size=32,
        mlp_dim=64,
        num_heads=4,
        spatial_dims=2,
    )


def _swin_unetr() -> nn.Module:
    from monai.networks.nets import SwinUNETR

    torch.manual_seed(0)
    return SwinUNETR(
        in_channels=1,
        out_channels=2,
        depths=(1, 1, 1, 1),
        num_heads=(1, 1, 2, 2),
        window_size=4,
        feature_size=12,
        spatial_dims=2,
    )


def _swin_unetr_v2() -> nn.Module:
    from monai.networks.nets import SwinUNETR

    torch.manual_seed(0)
    return SwinUNETR(
        in_channels=1,
        out_channels=2,
        depths=(1, 1, 1, 1),
        num_heads=(1, 1, 2, 2),
        window_size=4,
        feature_size=12,
        spatial_dims=2,
        use_v2=True,
    )


def _attention_unet() -> nn.Module:
    from monai.networks.nets import AttentionUnet

    torch.manual_seed(0)
    return AttentionUnet(
        spatial_dims=2, in_channels=1, out_channels=2, channels=(4, 8, 16), strides=(2, 2)
    )


def _dynunet() -> nn.Module:
    from monai.networks.nets import DynUNet

    torch.manual_seed(0)
    return DynUNet(
        spatial_dims=2,
        in_channels=1,
        out_channels=2,
        kernel_size=[3, 3, 3],
        strides=[1, 2, 2],
        upsample_kernel_size=[2, 2],
        filters=[4, 8, 16],
    )


def _dynunet_res() -> nn.Module:
    from monai.networks.nets import DynUNet

    torch.manual_seed(0)
    return DynUNet(
        spatial_dims=2,
        in_channels=1,
        out_channels=2,
        kernel_size=[3, 3, 3],
        strides=[1, 2, 2],
        upsample_kernel_size=[2, 2],
        filters=[4, 8, 16],
        res_block=True,
    )


def _vnet() -> nn.Module:
    from monai.networks.nets import VNet

    torch.manual_seed(0)
    # VNet's widths are fixed (16..256); 2-D keeps it at ~9M parameters and ~20 ms.
    return VNet(spatial_dims=2, in_channels=1, out_channels=2)


def _highresnet() -> nn.Module:
    from monai.networks.nets import HighResNet

    torch.manual_seed(0)
    return HighResNet(
        spatial_dims=2,
        in_channels=1,
        out_channels=2,
        layer_params=(
            {"name": "conv_0", "n_features": 4, "kernel_size": 3},
            {"name": "res_1", "n_features": 4, "kernels": (3, 3), "repeat": 1},
            {"name": "res_2", "n_features": 8, "kernels": (3, 3), "repeat": 1},
            {"name": "res_3", "n_features": 16, "kernels": (3, 3), "repeat": 1},
            {"name": "conv_1", "n_features": 16, "kernel_size": 1},
            {"name": "conv_2", "kernel_size": 1},
        ),
    )


def _autoencoder() -> nn.Module:
    from monai.networks.nets import AutoEncoder

    torch.manual_seed(0)
    return AutoEncoder(
        spatial_dims=2,
        in_channels=1,
        out_channels=1,
        channels=(4, 8, 16),
        strides=(2, 2, 2),
        num_res_units=1,
    )


def _var_autoencoder() -> nn.Module:
    from monai.networks.nets import VarAutoEncoder

    torch.manual_seed(0)
    # use_mean_at_inference: eval-mode forward returns the mean, no sampling.
    return VarAutoEncoder(
        spatial_dims=2,
        in_shape=(1, 32, 32),
        out_channels=1,
        latent_size=8,
        channels=(4, 8),
        strides=(2, 2),
        use_mean_at_inference=True,
    )


def _regressor() -> nn.Module:
    from monai.networks.nets import Regressor

    torch.manual_seed(0)
    return Regressor(in_shape=(1, 16, 16), out_shape=(2,), channels=(4, 8), strides=(2, 2))


def _classifier() -> nn.Module:
    from monai.networks.nets import Classifier

    torch.manual_seed(0)
    return Classifier(in_shape=(1, 16, 16), classes=3, channels=(4, 8), strides=(2, 2))


def _discriminator() -> nn.Module:
    from monai.networks.nets import Discriminator

    torch.manual_seed(0)
    return Discriminator(in_shape=(1, 16, 16), channels=(4, 8), strides=(2, 2))


def _critic() -> nn.Module:
    from monai.networks.nets import Critic

    torch.manual_seed(0)
    return Critic(in_shape=(1, 16, 16), channels=(4, 8), strides=(2, 2))


def _generator() -> nn.Module:
    from monai.networks.nets import Generator

    torch.manual_seed(0)
    return Generator(
        latent_shape=(8,), start_shape=(8, 4, 4), channels=(8, 4, 1), strides=(2, 2, 1)
    )


def _efficientnet_b0() -> nn.Module:
    from monai.networks.nets import EfficientNetBN

    torch.manual_seed(0)
    return EfficientNetBN(
        "efficientnet-b0", pretrained=False, spatial_dims=2, in_channels=1, num_classes=3
    )


def _efficientnet_b0_features() -> nn.Module:
    from monai.networks.nets import EfficientNetBNFeatures

    torch.manual_seed(0)
    return EfficientNetBNFeatures(
        "efficientnet-b0", pretrained=False, spatial_dims=2, in_channels=1, num_classes=3
    )


def _resnet10() -> nn.Module:
    from monai.networks.nets import resnet10

    torch.manual_seed(0)
    return resnet10(
        pretrained=False, spatial_dims=2, n_input_channels=1, num_classes=3, widen_factor=0.25
    )


def _resnet18() -> nn.Module:
    from monai.networks.nets import resnet18

    torch.manual_seed(0)
    return resnet18(
        pretrained=False, spatial_dims=2, n_input_channels=1, num_classes=3, widen_factor=0.25
    )


def _senet() -> nn.Module:
    from monai.networks.nets import SENet

    torch.manual_seed(0)
    # SE-ResNet with one bottleneck per stage; SENet's stage widths (64..512 x4) are fixed.
    return SENet(
        spatial_dims=2,
        in_channels=1,
        block="se_resnet_bottleneck",
        layers=(1, 1, 1, 1),
        groups=1,
        reduction=16,
        dropout_prob=None,
        inplanes=16,
        downsample_kernel_size=1,
        input_3x3=False,
        num_classes=3,
    )


def _fcnet() -> nn.Module:
    from monai.networks.nets import FullyConnectedNet

    torch.manual_seed(0)
    return FullyConnectedNet(in_channels=8, out_channels=2, hidden_channels=(16, 16))


def _varfcnet() -> nn.Module:
    from monai.networks.nets import VarFullyConnectedNet

    torch.manual_seed(0)
    return VarFullyConnectedNet(
        in_channels=8,
        out_channels=2,
        latent_size=4,
        encode_channels=(16,),
        decode_channels=(16,),
        use_mean_at_inference=True,
    )


def _localnet() -> nn.Module:
    from monai.networks.nets import LocalNet

    torch.manual_seed(0)
    levels: Any = (0, 1, 2)  # MONAI annotates extract_levels as tuple[int] but wants several
    return LocalNet(
        spatial_dims=2,
        in_channels=2,
        num_channel_initial=4,
        extract_levels=levels,
        out_channels=2,
    )


def _globalnet() -> nn.Module:
    from monai.networks.nets import GlobalNet

    torch.manual_seed(0)
    return GlobalNet(
        image_size=[16, 16], spatial_dims=2, in_channels=2, num_channel_initial=4, depth=2
    )


def _regunet() -> nn.Module:
    from monai.networks.nets import RegUNet

    torch.manual_seed(0)
    return RegUNet(spatial_dims=2, in_channels=2, num_channel_initial=4, depth=2, out_channels=2)


def _dints() -> nn.Module:
    from monai.networks.nets import DiNTS, TopologyInstance

    torch.manual_seed(0)
    space = TopologyInstance(
        channel_mul=0.125, num_blocks=2, num_depths=2, spatial_dims=2, use_downsample=True
    )
    return DiNTS(
        dints_space=space, in_channels=1, num_classes=2, spatial_dims=2, use_downsample=True
    )


def _mil() -> nn.Module:
    from monai.networks.nets import MILModel

    torch.manual_seed(0)
    # A custom backbone: the default one is torchvision's resnet50.
    backbone = nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()
    )
    return MILModel(
        num_classes=3,
        mil_mode="att",
        pretrained=False,
        backbone=backbone,
        backbone_num_features=8,
    )


def _mednext() -> nn.Module:
    from monai.networks.nets import MedNeXt

    torch.manual_seed(0)
    return MedNeXt(
        spatial_dims=2,
        init_filters=8,
        in_channels=1,
        out_channels=2,
        kernel_size=3,
        blocks_down=(1, 1, 1, 1),
        blocks_bottleneck=1,
        blocks_up=(1, 1, 1, 1),
    )


def _flexible_unet() -> nn.Module:
    from monai.networks.nets import FlexibleUNet

    torch.manual_seed(0)
    # "resnet10" is one of MONAI's own registered encoders (no torchvision, no download).
    return FlexibleUNet(
        in_channels=1,
        out_channels=2,
        backbone="resnet10",
        pretrained=False,
        decoder_channels=(32, 16, 8, 8, 4),
        spatial_dims=2,
    )


def _ahnet() -> nn.Module:
    from monai.networks.nets import AHNet

    torch.manual_seed(0)
    return AHNet(
        layers=(1, 1, 1, 1),
        spatial_dims=2,
        in_channels=1,
        out_channels=2,
        psp_block_num=0,
        upsample_mode="transpose",
        pretrained=False,
    )


def _quicknat() -> nn.Module:
    from monai.networks.nets import Quicknat

    torch.manual_seed(0)
    return Quicknat(num_classes=2, num_channels=1, num_filters=8)


def _patch_disc() -> nn.Module:
    from monai.networks.nets import PatchDiscriminator

    torch.manual_seed(0)
    return PatchDiscriminator(spatial_dims=2, channels=8, in_channels=1, num_layers_d=2)


def _ms_patch_disc() -> nn.Module:
    from monai.networks.nets import MultiScalePatchDiscriminator

    torch.manual_seed(0)
    return MultiScalePatchDiscriminator(
        num_d=2, num_layers_d=2, spatial_dims=2, channels=8, in_channels=1, minimum_size_im=32
    )


def _vqvae() -> nn.Module:
    from monai.networks.nets import VQVAE

    torch.manual_seed(0)
    return VQVAE(
        spatial_dims=2,
        in_channels=1,
        out_channels=1,
        channels=(8, 8),
        num_res_layers=1,
        num_res_channels=(8, 8),
        downsample_parameters=((2, 4, 1, 1), (2, 4, 1, 1)),
        upsample_parameters=((2, 4, 1, 1, 0), (2, 4, 1, 1, 0)),
        num_embeddings=8,
        embedding_dim=4,
    )


def _autoencoderkl() -> nn.Module:
    from monai.networks.nets import AutoencoderKL

    torch.manual_seed(0)
    return AutoencoderKL(
        spatial_dims=2,
        in_channels=1,
        out_channels=1,
        num_res_blocks=1,
        channels=(8, 16),
        attention_levels=(False, True),
        latent_channels=2,
        norm_num_groups=4,
    )


def _diffusion_unet() -> nn.Module:
    from monai.networks.nets import DiffusionModelUNet

    torch.manual_seed(0)
    return DiffusionModelUNet(
        spatial_dims=2,
        in_channels=1,
        out_channels=1,
        num_res_blocks=1,
        channels=(8, 16),
        attention_levels=(False, True),
        norm_num_groups=4,
        num_head_channels=8,
    )


def _controlnet() -> nn.Module:
    from monai.networks.nets import ControlNet

    torch.manual_seed(0)
    return ControlNet(
        spatial_dims=2,
        in_channels=1,
        num_res_blocks=1,
        channels=(8, 16),
        attention_levels=(False, True),
        norm_num_groups=4,
        num_head_channels=8,
        conditioning_embedding_num_channels=(8,),
    )


def _decoder_transformer() -> nn.Module:
    from monai.networks.nets import DecoderOnlyTransformer

    torch.manual_seed(0)
    return DecoderOnlyTransformer(
        num_tokens=16,
        max_seq_len=8,
        attn_layers_dim=16,
        attn_layers_depth=2,
        attn_layers_heads=2,
    )


def _mae_vit() -> nn.Module:
    from monai.networks.nets import MaskedAutoEncoderViT

    torch.manual_seed(0)
    return MaskedAutoEncoderViT(
        in_channels=1,
        img_size=32,
        patch_size=8,
        hidden_size=32,
        mlp_dim=64,
        num_layers=2,
        num_heads=4,
        decoder_hidden_size=16,
        decoder_mlp_dim=32,
        decoder_num_layers=1,
        decoder_num_heads=2,
        spatial_dims=2,
    )


def _voxelmorph_unet() -> nn.Module:
    from monai.networks.nets import VoxelMorphUNet

    torch.manual_seed(0)
    return VoxelMorphUNet(
        spatial_dims=2,
        in_channels=2,
        unet_out_channels=8,
        channels=(4, 8, 8, 8),
        final_conv_channels=(8, 4),
    )


def _voxelmorph() -> nn.Module:
    from monai.networks.nets import VoxelMorph, VoxelMorphUNet

    torch.manual_seed(0)
    backbone = VoxelMorphUNet(
        spatial_dims=2,
        in_channels=2,
        unet_out_channels=8,
        channels=(4, 8, 8, 8),
        final_conv_channels=(8, 4),
    )
    return VoxelMorph(backbone=backbone, integration_steps=3, spatial_dims=2)


def _restormer() -> nn.Module:
    from monai.networks.nets.restormer import Restormer

    torch.manual_seed(0)
    return Restormer(
        spatial_dims=2,
        in_channels=1,
        out_channels=1,
        dim=8,
        num_blocks=(1, 1),
        heads=(1, 2),
        num_refinement_blocks=1,
        ffn_expansion_factor=1.0,
    )


def _netadapter() -> nn.Module:
    from monai.networks.nets import NetAdapter, resnet10

    torch.manual_seed(0)
    return NetAdapter(
        resnet10(spatial_dims=2, n_input_channels=1, widen_factor=0.25),
        num_classes=3,
        dim=2,
        in_channels=128,
        pool=("avg", {"kernel_size": 2, "stride": 1}),
    )


def _spade_net() -> nn.Module:
    from monai.networks.nets import SPADENet

    torch.manual_seed(0)
    # is_vae=False: the generator is conditioned on the label map only (no sampling).
    return SPADENet(
        spatial_dims=2,
        in_channels=1,
        out_channels=1,
        label_nc=2,
        input_shape=(32, 32),
        channels=[4, 8],
        z_dim=8,
        is_vae=False,
        spade_intermediate_channels=8,
    )


# ------------------------------------------------------------ other pure-PyTorch zoos (PyPI)
# Each installs with ``pip install -c constraints.txt NAME`` without torchvision or another torch:
# efficientnet-pytorch 0.7.1 (needs torch only), rtdl-revisiting-models 0.0.2 (torch only),
# mlp-mixer-pytorch 0.3.1 (torch, einops).


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


# ----------------------------------------------------------------------------- catalogue

_REARRANGE = "einops.layers.torch.Rearrange"
_UPCAT = "monai.networks.nets.basic_unet.UpCat"
_MONAI_EINOPS = ("monai", "einops")

#: Shared reasons, so that the notes stay short and greppable.
_SHAPE_FLOW = "shape-dependent Python control flow"

ZOO: list[ZooModel] = [
    # --- segmentation / dense prediction
    ZooModel("monai.UNet", _unet, _img(1, 1, 32, 32), fast=True),
    ZooModel(
        "monai.BasicUNet",
        _basic_unet,
        _img(1, 1, 32, 32),
        leaf_modules=(_UPCAT,),
        fast=True,
        note="UpCat must be a leaf (see monai.BasicUNet[no-leaf])",
    ),
    ZooModel(
        "monai.BasicUNet[no-leaf]",
        _basic_unet,
        _img(1, 1, 32, 32),
        traceable=False,
        note="traces WITHOUT error but the graph is wrong: UpCat tests "
        "torch.jit.isinstance(x_e, Tensor), False for a Proxy, so every skip connection "
        "is dropped and the GraphModule fails with a channel mismatch",
    ),
    ZooModel(
        "monai.BasicUNetPlusPlus",
        _basic_unetpp,
        _img(1, 1, 32, 32),
        leaf_modules=(_UPCAT,),
        note="UpCat must be a leaf (same silent mis-trace as BasicUNet otherwise)",
    ),
    ZooModel(
        "monai.FlexibleUNet[resnet10]",
        _flexible_unet,
        _img(1, 1, 32, 32),
        leaf_modules=(_UPCAT,),
        note="UpCat must be a leaf (same silent mis-trace as BasicUNet otherwise)",
    ),
    ZooModel("monai.SegResNet", _segresnet, _img(1, 1, 32, 32), fast=True),
    ZooModel(
        "monai.SegResNetVAE",
        _segresnet_vae,
        _img(1, 1, 32, 32),
        note="eval mode returns (seg, None); the VAE branch (randn) runs only in training",
    ),
    ZooModel(
        "monai.SegResNetDS",
        _segresnet_ds,
        _img(1, 1, 32, 32),
        traceable=False,
        note=f"{_SHAPE_FLOW}: is_valid_shape() iterates x.shape (segresnet_ds.py)",
    ),
    ZooModel(
        "monai.SegResNetDS2",
        _segresnet_ds2,
        _img(1, 1, 32, 32),
        traceable=False,
        note=f"{_SHAPE_FLOW}: is_valid_shape() iterates x.shape (segresnet_ds.py)",
    ),
    ZooModel("monai.AttentionUnet", _attention_unet, _img(1, 1, 32, 32)),
    ZooModel("monai.DynUNet", _dynunet, _img(1, 1, 32, 32)),
    ZooModel("monai.DynUNet[res_block]", _dynunet_res, _img(1, 1, 32, 32)),
    ZooModel("monai.VNet", _vnet, _img(1, 1, 32, 32)),
    ZooModel(
        "monai.HighResNet",
        _highresnet,
        _img(1, 1, 32, 32),
        traceable=False,
        note="forward returns torch.as_tensor(<Proxy>), which fx cannot capture",
    ),
    ZooModel("monai.MedNeXt", _mednext, _img(1, 1, 32, 32)),
    ZooModel(
        "monai.DiNTS",
        _dints,
        _img(1, 1, 32, 32),
        note="graph builds torch.tensor(0.0, dtype=x.dtype, device=x.device) from getattr nodes",
    ),
    ZooModel(
        "monai.AHNet",
        _ahnet,
        _img(1, 1, 32, 32),
        leaf_modules=("monai.networks.nets.ahnet.Bottleneck3x3x1",),
        note="Bottleneck3x3x1 must be a leaf: it compares out.size() != residual.size()",
    ),
    ZooModel(
        "monai.Quicknat",
        _quicknat,
        _img(1, 1, 32, 32),
        traceable=False,
        note=f"{_SHAPE_FLOW}: `_, channel, *dims = input.size()` unpacks a Proxy",
    ),
    ZooModel(
        "monai.Restormer",
        _restormer,
        _img(1, 1, 16, 16),
        traceable=False,
        note=f"{_SHAPE_FLOW}: assert on x.shape in forward",
        requires=_MONAI_EINOPS,
    ),
    # --- transformers (MONAI builds their attention with einops.layers.torch.Rearrange)
    ZooModel(
        "monai.ViT",
        _vit,
        _img(1, 1, 32, 32),
        leaf_modules=(_REARRANGE,),
        fast=True,
        note="einops Rearrange must be a leaf; get_attr of cls_token/position_embeddings",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.ViTAutoEnc",
        _vit_autoenc,
        _img(1, 1, 32, 32),
        leaf_modules=(_REARRANGE,),
        traceable=False,
        note=f"{_SHAPE_FLOW}: zips over x.shape[2:] to size the decoder "
        "input (even with Rearrange as a leaf)",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.UNETR",
        _unetr,
        _img(1, 1, 32, 32),
        leaf_modules=(_REARRANGE,),
        note="einops Rearrange must be a leaf",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.SwinUNETR",
        _swin_unetr,
        _img(1, 1, 64, 64),
        traceable=False,
        note=f"{_SHAPE_FLOW}: _check_input_size() runs numpy on x.shape",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.SwinUNETR[v2]",
        _swin_unetr_v2,
        _img(1, 1, 64, 64),
        traceable=False,
        note=f"{_SHAPE_FLOW}: _check_input_size() runs numpy on x.shape",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.DecoderOnlyTransformer",
        _decoder_transformer,
        _tokens(2, 8, 16),
        leaf_modules=(_REARRANGE,),
        traceable=False,
        note="the causal mask is sliced with x.shape[-2] (a Proxy) as bound, even with "
        "Rearrange as a leaf",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.MaskedAutoEncoderViT",
        _mae_vit,
        _img(1, 1, 32, 32),
        traceable=False,
        note="random token masking builds torch.ones(batch, tokens) from Proxy sizes",
        requires=_MONAI_EINOPS,
    ),
    # --- classification / regression
    ZooModel("monai.DenseNet121", _densenet121, _img(1, 1, 32, 32), fast=True),
    ZooModel("monai.EfficientNetBN[b0]", _efficientnet_b0, _img(1, 1, 32, 32)),
    ZooModel("monai.EfficientNetBNFeatures[b0]", _efficientnet_b0_features, _img(1, 1, 32, 32)),
    ZooModel("monai.resnet10", _resnet10, _img(1, 1, 32, 32)),
    ZooModel("monai.resnet18", _resnet18, _img(1, 1, 32, 32)),
    ZooModel("monai.SENet", _senet, _img(1, 1, 32, 32)),
    ZooModel("monai.Classifier", _classifier, _img(1, 1, 16, 16)),
    ZooModel("monai.Regressor", _regressor, _img(1, 1, 16, 16)),
    ZooModel("monai.FullyConnectedNet", _fcnet, _img(2, 8)),
    ZooModel(
        "monai.NetAdapter[resnet10]",
        _netadapter,
        _img(1, 1, 32, 32),
        traceable=False,
        note="torch.jit.isinstance(<Proxy>, dict[str, Tensor]) is used as a condition",
    ),
    ZooModel(
        "monai.MILModel",
        _mil,
        _img(1, 4, 3, 16, 16),
        concrete_args={"no_head": False},
        note="needs concrete_args no_head=False (`if not no_head:` in forward), which leaves a "
        "placeholder with a default plus operator.eq/torch._assert guard nodes; input is a "
        "bag of 4 RGB tiles, custom small backbone",
    ),
    # --- generative / autoencoders
    ZooModel("monai.AutoEncoder", _autoencoder, _img(1, 1, 32, 32), fast=True),
    ZooModel("monai.VarAutoEncoder", _var_autoencoder, _img(1, 1, 32, 32)),
    ZooModel("monai.VarFullyConnectedNet", _varfcnet, _img(2, 8)),
    ZooModel("monai.Generator", _generator, _img(2, 8)),
    ZooModel("monai.Discriminator", _discriminator, _img(1, 1, 16, 16)),
    ZooModel("monai.Critic", _critic, _img(1, 1, 16, 16)),
    ZooModel("monai.PatchDiscriminator", _patch_disc, _img(1, 1, 32, 32)),
    ZooModel("monai.MultiScalePatchDiscriminator", _ms_patch_disc, _img(1, 1, 32, 32)),
    ZooModel("monai.SPADENet", _spade_net, _img(1, 2, 32, 32)),
    ZooModel(
        "monai.VQVAE",
        _vqvae,
        _img(1, 1, 16, 16),
        traceable=False,
        note=f"{_SHAPE_FLOW}: the quantizer calls list(inputs.shape)",
    ),
    ZooModel(
        "monai.AutoencoderKL",
        _autoencoderkl,
        _img(1, 1, 16, 16),
        traceable=False,
        note=f"{_SHAPE_FLOW}: SpatialAttentionBlock reshapes with *x.shape[:2]",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.DiffusionModelUNet",
        _diffusion_unet,
        _diffusion_inputs,
        traceable=False,
        note="`if timesteps.ndim != 1: raise` in the timestep embedding",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.ControlNet",
        _controlnet,
        _controlnet_inputs,
        traceable=False,
        note="`if timesteps.ndim != 1: raise` in the timestep embedding",
        requires=_MONAI_EINOPS,
    ),
    # --- registration
    ZooModel(
        "monai.LocalNet",
        _localnet,
        _img(1, 2, 16, 16),
        traceable=False,
        note=f"{_SHAPE_FLOW}: RegistrationDownSampleBlock loops over x.shape[2:]",
    ),
    ZooModel(
        "monai.GlobalNet",
        _globalnet,
        _img(1, 2, 16, 16),
        traceable=False,
        note=f"{_SHAPE_FLOW}: RegistrationDownSampleBlock loops over x.shape[2:]",
    ),
    ZooModel(
        "monai.RegUNet",
        _regunet,
        _img(1, 2, 16, 16),
        traceable=False,
        note=f"{_SHAPE_FLOW}: RegistrationDownSampleBlock loops over x.shape[2:]",
    ),
    ZooModel("monai.VoxelMorphUNet", _voxelmorph_unet, _img(1, 2, 32, 32)),
    ZooModel(
        "monai.VoxelMorph",
        _voxelmorph,
        _imgs((1, 1, 32, 32), (1, 1, 32, 32)),
        traceable=False,
        note="`if moving.shape != fixed.shape: raise` in forward",
    ),
    # --- other zoos
    ZooModel(
        "efficientnet_pytorch.EfficientNet[b0]",
        _lukemelas_efficientnet_b0,
        _img(1, 1, 32, 32),
        requires=("efficientnet_pytorch",),
        note="MemoryEfficientSwish is a custom autograd.Function: tracing inlines its forward "
        "(sigmoid, mul) and drops its custom backward; Conv2dStaticSamePadding subclasses "
        "nn.Conv2d with its own forward, so fx traces into it (get_attr of conv weights)",
    ),
    ZooModel(
        "efficientnet_pytorch.EfficientNet[b0,swish]",
        _lukemelas_efficientnet_b0_swish,
        _img(1, 1, 32, 32),
        requires=("efficientnet_pytorch",),
    ),
    ZooModel("rtdl.MLP", _rtdl_mlp, _img(2, 8), requires=("rtdl_revisiting_models",)),
    ZooModel("rtdl.ResNet", _rtdl_resnet, _img(2, 8), requires=("rtdl_revisiting_models",)),
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
        _img(1, 1, 32, 32),
        leaf_modules=(_REARRANGE, "einops.layers.torch.Reduce"),
        requires=("mlp_mixer_pytorch", "einops"),
        note="einops Rearrange and Reduce must be leaves",
    ),
]
