"""MONAI 1.6.1's ``monai.networks.nets``: the zoo's original MONAI entries, unchanged.

Not catalogued from ``monai.networks.nets``: DAF3D and TorchVisionFCModel (need torchvision),
Transchex (needs transformers), HyenaNDUNETR and SwinUNETR(use_hyena=True) (need
nvsubquadratic), MILModel's default backbone (torchvision; a small custom one is used),
the cell-SAM wrapper (needs segment_anything), HoVerNet (fixed 256x256 input and 33M
parameters: ~2.5 s per forward, and untraceable: it checks ``x.shape``), and, not tried,
VISTA3D (large prompt-driven composite), NaViT (takes lists of images), TopologySearch
(a search space) and the SPADE variants of AutoencoderKL/DiffusionModelUNet (same
untraceable blocks as their plain versions).

One entry, ``monai.BasicUNet[no-leaf]``, traces without any error but silently drops its
skip connections -- a reminder to compare against the eager model, never only against the
traced one.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from . import ZooModel, img, imgs, randn, tokens

# ----------------------------------------------------------------------------- inputs


def _diffusion_inputs() -> tuple[torch.Tensor, ...]:
    return (randn(1, 1, 16, 16), torch.tensor([10]))


def _controlnet_inputs() -> tuple[torch.Tensor, ...]:
    return (randn(1, 1, 16, 16), torch.tensor([10]), randn(1, 1, 16, 16, seed=1))


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


# ----------------------------------------------------------------------------- catalogue

_REARRANGE = "einops.layers.torch.Rearrange"
_UPCAT = "monai.networks.nets.basic_unet.UpCat"
_MONAI_EINOPS = ("monai", "einops")

#: Shared reasons, so that the notes stay short and greppable.
_SHAPE_FLOW = "shape-dependent Python control flow"

ENTRIES: list[ZooModel] = [
    # --- segmentation / dense prediction
    ZooModel("monai.UNet", _unet, img(1, 1, 32, 32), fast=True),
    ZooModel(
        "monai.BasicUNet",
        _basic_unet,
        img(1, 1, 32, 32),
        leaf_modules=(_UPCAT,),
        fast=True,
        note="UpCat must be a leaf (see monai.BasicUNet[no-leaf])",
    ),
    ZooModel(
        "monai.BasicUNet[no-leaf]",
        _basic_unet,
        img(1, 1, 32, 32),
        traceable=False,
        note="traces WITHOUT error but the graph is wrong: UpCat tests "
        "torch.jit.isinstance(x_e, Tensor), False for a Proxy, so every skip connection "
        "is dropped and the GraphModule fails with a channel mismatch",
    ),
    ZooModel(
        "monai.BasicUNetPlusPlus",
        _basic_unetpp,
        img(1, 1, 32, 32),
        leaf_modules=(_UPCAT,),
        note="UpCat must be a leaf (same silent mis-trace as BasicUNet otherwise)",
    ),
    ZooModel(
        "monai.FlexibleUNet[resnet10]",
        _flexible_unet,
        img(1, 1, 32, 32),
        leaf_modules=(_UPCAT,),
        note="UpCat must be a leaf (same silent mis-trace as BasicUNet otherwise)",
    ),
    ZooModel("monai.SegResNet", _segresnet, img(1, 1, 32, 32), fast=True),
    ZooModel(
        "monai.SegResNetVAE",
        _segresnet_vae,
        img(1, 1, 32, 32),
        note="eval mode returns (seg, None); the VAE branch (randn) runs only in training",
    ),
    ZooModel(
        "monai.SegResNetDS",
        _segresnet_ds,
        img(1, 1, 32, 32),
        fast=True,  # CI's TorchDynamo example: torch.fx cannot trace it
        traceable=False,
        note=f"{_SHAPE_FLOW}: is_valid_shape() iterates x.shape (segresnet_ds.py)",
    ),
    ZooModel(
        "monai.SegResNetDS2",
        _segresnet_ds2,
        img(1, 1, 32, 32),
        traceable=False,
        note=f"{_SHAPE_FLOW}: is_valid_shape() iterates x.shape (segresnet_ds.py)",
    ),
    ZooModel("monai.AttentionUnet", _attention_unet, img(1, 1, 32, 32)),
    ZooModel("monai.DynUNet", _dynunet, img(1, 1, 32, 32)),
    ZooModel("monai.DynUNet[res_block]", _dynunet_res, img(1, 1, 32, 32)),
    ZooModel("monai.VNet", _vnet, img(1, 1, 32, 32)),
    ZooModel(
        "monai.HighResNet",
        _highresnet,
        img(1, 1, 32, 32),
        traceable=False,
        note="forward returns torch.as_tensor(<Proxy>), which fx cannot capture",
    ),
    ZooModel("monai.MedNeXt", _mednext, img(1, 1, 32, 32)),
    ZooModel(
        "monai.DiNTS",
        _dints,
        img(1, 1, 32, 32),
        fast=True,
        note="graph builds torch.tensor(0.0, dtype=x.dtype, device=x.device) from getattr nodes; "
        "its ModuleDict keys are strings like '(0, 0)' (CI's non_identifier_keys example)",
    ),
    ZooModel(
        "monai.AHNet",
        _ahnet,
        img(1, 1, 32, 32),
        leaf_modules=("monai.networks.nets.ahnet.Bottleneck3x3x1",),
        note="Bottleneck3x3x1 must be a leaf: it compares out.size() != residual.size()",
    ),
    ZooModel(
        "monai.Quicknat",
        _quicknat,
        img(1, 1, 32, 32),
        traceable=False,
        note=f"{_SHAPE_FLOW}: `_, channel, *dims = input.size()` unpacks a Proxy",
    ),
    ZooModel(
        "monai.Restormer",
        _restormer,
        img(1, 1, 16, 16),
        traceable=False,
        note=f"{_SHAPE_FLOW}: assert on x.shape in forward",
        requires=_MONAI_EINOPS,
    ),
    # --- transformers (MONAI builds their attention with einops.layers.torch.Rearrange)
    ZooModel(
        "monai.ViT",
        _vit,
        img(1, 1, 32, 32),
        leaf_modules=(_REARRANGE,),
        fast=True,
        note="einops Rearrange must be a leaf; get_attr of cls_token/position_embeddings",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.ViTAutoEnc",
        _vit_autoenc,
        img(1, 1, 32, 32),
        leaf_modules=(_REARRANGE,),
        traceable=False,
        note=f"{_SHAPE_FLOW}: zips over x.shape[2:] to size the decoder "
        "input (even with Rearrange as a leaf)",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.UNETR",
        _unetr,
        img(1, 1, 32, 32),
        leaf_modules=(_REARRANGE,),
        note="einops Rearrange must be a leaf",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.SwinUNETR",
        _swin_unetr,
        img(1, 1, 64, 64),
        traceable=False,
        note=f"{_SHAPE_FLOW}: _check_input_size() runs numpy on x.shape",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.SwinUNETR[v2]",
        _swin_unetr_v2,
        img(1, 1, 64, 64),
        traceable=False,
        note=f"{_SHAPE_FLOW}: _check_input_size() runs numpy on x.shape",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.DecoderOnlyTransformer",
        _decoder_transformer,
        tokens(2, 8, 16),
        leaf_modules=(_REARRANGE,),
        traceable=False,
        note="the causal mask is sliced with x.shape[-2] (a Proxy) as bound, even with "
        "Rearrange as a leaf",
        requires=_MONAI_EINOPS,
    ),
    ZooModel(
        "monai.MaskedAutoEncoderViT",
        _mae_vit,
        img(1, 1, 32, 32),
        traceable=False,
        note="random token masking builds torch.ones(batch, tokens) from Proxy sizes",
        requires=_MONAI_EINOPS,
    ),
    # --- classification / regression
    ZooModel("monai.DenseNet121", _densenet121, img(1, 1, 32, 32), fast=True),
    ZooModel("monai.EfficientNetBN[b0]", _efficientnet_b0, img(1, 1, 32, 32)),
    ZooModel("monai.EfficientNetBNFeatures[b0]", _efficientnet_b0_features, img(1, 1, 32, 32)),
    ZooModel("monai.resnet10", _resnet10, img(1, 1, 32, 32)),
    ZooModel("monai.resnet18", _resnet18, img(1, 1, 32, 32)),
    ZooModel("monai.SENet", _senet, img(1, 1, 32, 32)),
    ZooModel("monai.Classifier", _classifier, img(1, 1, 16, 16)),
    ZooModel("monai.Regressor", _regressor, img(1, 1, 16, 16)),
    ZooModel("monai.FullyConnectedNet", _fcnet, img(2, 8)),
    ZooModel(
        "monai.NetAdapter[resnet10]",
        _netadapter,
        img(1, 1, 32, 32),
        traceable=False,
        note="torch.jit.isinstance(<Proxy>, dict[str, Tensor]) is used as a condition",
    ),
    ZooModel(
        "monai.MILModel",
        _mil,
        img(1, 4, 3, 16, 16),
        concrete_args={"no_head": False},
        note="needs concrete_args no_head=False (`if not no_head:` in forward), which leaves a "
        "placeholder with a default plus operator.eq/torch._assert guard nodes; input is a "
        "bag of 4 RGB tiles, custom small backbone",
    ),
    # --- generative / autoencoders
    ZooModel("monai.AutoEncoder", _autoencoder, img(1, 1, 32, 32), fast=True),
    ZooModel("monai.VarAutoEncoder", _var_autoencoder, img(1, 1, 32, 32)),
    ZooModel("monai.VarFullyConnectedNet", _varfcnet, img(2, 8)),
    ZooModel("monai.Generator", _generator, img(2, 8)),
    ZooModel("monai.Discriminator", _discriminator, img(1, 1, 16, 16)),
    ZooModel("monai.Critic", _critic, img(1, 1, 16, 16)),
    ZooModel("monai.PatchDiscriminator", _patch_disc, img(1, 1, 32, 32)),
    ZooModel("monai.MultiScalePatchDiscriminator", _ms_patch_disc, img(1, 1, 32, 32)),
    ZooModel("monai.SPADENet", _spade_net, img(1, 2, 32, 32)),
    ZooModel(
        "monai.VQVAE",
        _vqvae,
        img(1, 1, 16, 16),
        traceable=False,
        note=f"{_SHAPE_FLOW}: the quantizer calls list(inputs.shape)",
    ),
    ZooModel(
        "monai.AutoencoderKL",
        _autoencoderkl,
        img(1, 1, 16, 16),
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
        img(1, 2, 16, 16),
        traceable=False,
        note=f"{_SHAPE_FLOW}: RegistrationDownSampleBlock loops over x.shape[2:]",
    ),
    ZooModel(
        "monai.GlobalNet",
        _globalnet,
        img(1, 2, 16, 16),
        traceable=False,
        note=f"{_SHAPE_FLOW}: RegistrationDownSampleBlock loops over x.shape[2:]",
    ),
    ZooModel(
        "monai.RegUNet",
        _regunet,
        img(1, 2, 16, 16),
        traceable=False,
        note=f"{_SHAPE_FLOW}: RegistrationDownSampleBlock loops over x.shape[2:]",
    ),
    ZooModel("monai.VoxelMorphUNet", _voxelmorph_unet, img(1, 2, 32, 32)),
    ZooModel(
        "monai.VoxelMorph",
        _voxelmorph,
        imgs((1, 1, 32, 32), (1, 1, 32, 32)),
        traceable=False,
        note="`if moving.shape != fixed.shape: raise` in forward",
    ),
]
