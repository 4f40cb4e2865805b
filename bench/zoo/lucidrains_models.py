"""Small single-purpose PyTorch libraries from PyPI (most by Phil Wang, "lucidrains").

perceiver-pytorch 0.11.0, linformer 0.2.3, performer-pytorch 1.1.4, g-mlp-pytorch 0.1.5,
res-mlp-pytorch 0.0.6, nystrom-attention 0.0.14, conformer 0.3.2 and lambda-networks 0.4.0,
each at a tiny config (width 32, two layers, sequences of 16 or 32x32 images). Tracing as for
vit-pytorch: einops' layers are leaves, its functions are autowrapped, optional ``forward``
arguments are fixed to their defaults, and ``leaves`` names the library's own blocks that must
be leaf modules.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import torch
from torch import nn

from . import BATCH, SEQUENCE, Inputs, ZooModel, img, tokens

LEAVES = ("einops.layers.torch.Rearrange", "einops.layers.torch.Reduce")
EINOPS = ("einops.rearrange", "einops.repeat", "einops.reduce", "einops.pack", "einops.unpack")


def _build(module: str, cls: str, kwargs: tuple[tuple[str, Any], ...]) -> nn.Module:
    torch.manual_seed(0)
    model: nn.Module = getattr(importlib.import_module(module), cls)(**dict(kwargs))
    return model


def _lib(
    name: str,
    module: str,
    cls: str,
    inputs: Inputs,
    *,
    traceable: bool = True,
    note: str = "",
    leaves: tuple[str, ...] = (),
    concrete_args: dict[str, Any] | None = None,
    varies: tuple[str, ...] = ("batch", "spatial"),
    **kwargs: Any,
) -> ZooModel:
    """An entry ``<name>`` for ``<module>.<cls>(**kwargs)``; ``leaves`` are dotted class paths."""
    package = module.split(".")[0]
    return ZooModel(
        name,
        functools.partial(_build, module, cls, tuple(kwargs.items())),
        inputs,
        concrete_args=concrete_args,
        leaf_modules=LEAVES + leaves,
        autowrap_functions=EINOPS,
        traceable=traceable,
        note=note,
        requires=(package, "einops"),
        varies=varies,
    )


_SEQ = img(1, 16, 32)
_IMG = img(1, 3, 32, 32)
_TOK = tokens(1, 16, 99)

ENTRIES: list[ZooModel] = [
    _lib(
        "perceiver_pytorch.Perceiver",
        "perceiver_pytorch",
        "Perceiver",
        img(1, 16, 16, 3),
        varies=BATCH,  # channels last
        input_channels=3,
        input_axis=2,
        num_freq_bands=6,
        max_freq=10.0,
        depth=2,
        num_latents=16,
        latent_dim=32,
        cross_heads=1,
        latent_heads=2,
        cross_dim_head=16,
        latent_dim_head=16,
        num_classes=10,
        concrete_args={
            "mask": None,
            "return_embeddings": False,
            "block_outputs": None,
            "return_hiddens": False,
        },
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (perceiver_pytorch.py:379)",
    ),
    _lib(
        "linformer.Linformer",
        "linformer",
        "Linformer",
        _SEQ,
        varies=SEQUENCE,
        dim=32,
        seq_len=16,
        depth=2,
        k=8,
        heads=2,
        dim_head=16,
        leaves=("linformer.linformer.LinformerSelfAttention",),
    ),
    _lib(
        "linformer.LinformerLM",
        "linformer",
        "LinformerLM",
        _TOK,
        varies=SEQUENCE,
        num_tokens=99,
        dim=32,
        seq_len=16,
        depth=2,
        k=8,
        heads=2,
        dim_head=16,
        leaves=("linformer.linformer.LinformerSelfAttention",),
    ),
    _lib(
        "performer_pytorch.Performer",
        "performer_pytorch",
        "Performer",
        _SEQ,
        varies=SEQUENCE,
        dim=32,
        depth=2,
        heads=2,
        dim_head=16,
        leaves=("performer_pytorch.performer_pytorch.Attention",),
        concrete_args={"**kwargs": {}},
        traceable=False,
        note="traces WITHOUT error but the GraphModule fails: IndexError: list index out of range (performer_pytorch.py:576 in forward:5)",
    ),
    _lib(
        "g_mlp_pytorch.gMLP",
        "g_mlp_pytorch",
        "gMLP",
        _TOK,
        varies=SEQUENCE,
        num_tokens=99,
        dim=32,
        depth=2,
        seq_len=16,
        traceable=False,
        note="NameError: module is not installed as a submodule (g_mlp_pytorch.py:243)",
    ),
    _lib(
        "res_mlp_pytorch.ResMLP",
        "res_mlp_pytorch",
        "ResMLP",
        _IMG,
        image_size=32,
        patch_size=8,
        dim=32,
        depth=2,
        num_classes=10,
    ),
    _lib(
        "nystrom_attention.Nystromformer",
        "nystrom_attention",
        "Nystromformer",
        _SEQ,
        varies=SEQUENCE,
        dim=32,
        depth=2,
        heads=2,
        dim_head=16,
        num_landmarks=8,
        leaves=("nystrom_attention.nystrom_attention.NystromAttention",),
        concrete_args={"mask": None},
    ),
    _lib(
        "conformer.ConformerBlock",
        "conformer",
        "ConformerBlock",
        _SEQ,
        varies=SEQUENCE,
        dim=32,
        dim_head=16,
        heads=2,
        ff_mult=2,
        conv_expansion_factor=2,
        conv_kernel_size=7,
        leaves=("conformer.conformer.Attention",),
        concrete_args={"mask": None},
    ),
    _lib(
        "conformer.Conformer",
        "conformer",
        "Conformer",
        _SEQ,
        varies=SEQUENCE,
        dim=32,
        depth=2,
        dim_head=16,
        heads=2,
        ff_mult=2,
        conv_expansion_factor=2,
        conv_kernel_size=7,
        leaves=("conformer.conformer.Attention",),
    ),
    _lib(
        "lambda_networks.LambdaLayer",
        "lambda_networks",
        "LambdaLayer",
        img(1, 16, 8, 8),
        dim=16,
        dim_out=16,
        r=5,
        dim_k=8,
        heads=2,
        dim_u=1,
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (lambda_networks.py:60)",
    ),
]
