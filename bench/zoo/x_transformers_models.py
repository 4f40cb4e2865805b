"""x-transformers 2.31.10: three real-world examples of what torch.fx cannot capture.

A tiny ``Encoder`` (width 32, two layers of two heads) alone and inside a
``TransformerWrapper`` (99 tokens). ``concrete_args`` fixes every optional ``forward``
argument to its default; einops' functions and x-transformers' ``max_neg_value``
(``-torch.finfo(t.dtype).max``, which fx cannot evaluate on a Proxy) are autowrapped and the
attention kernel ``Attend`` is a leaf. None of them traces correctly, each for a different
reason (see the notes); they are kept as examples, not as round-trip material: a survey of
~40 documented ``Encoder``/``Decoder`` options found no configuration that traces.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn

from . import SEQUENCE, ZooModel, img, tokens

LEAVES = (
    "einops.layers.torch.Rearrange",
    "einops.layers.torch.Reduce",
    "x_transformers.attend.Attend",
)
WRAPPED = (
    "einops.rearrange",
    "einops.repeat",
    "einops.reduce",
    "einops.pack",
    "einops.unpack",
    "x_transformers.x_transformers.max_neg_value",
)
_LAYERS: dict[str, Any] = dict(dim=32, depth=2, heads=2, attn_dim_head=16)

#: ``Encoder.forward``'s optional parameters at their defaults.
_ENCODER_DEFAULTS: dict[str, Any] = {
    **dict.fromkeys(
        [
            "context",
            "mask",
            "context_mask",
            "attn_mask",
            "self_attn_kv_mask",
            "mems",
            "mem_masks",
            "seq_start_pos",
            "seq_pos_offset",
            "cache",
            "rotary_pos_emb",
            "polar_pos_emb",
            "pos",
            "context_pos",
            "attn_bias",
            "deep_embeds_and_ids",
            "self_attn_additional_kv",
            "additional_kv_mask",
            "condition",
            "in_attn_cond",
            "layers_execute_order",
            "repeat_blocks",
            "self_attn_kv_residuals",
            "cross_attn_kv_residuals",
            "flash_pack_seq_kwargs",
            "flash_pack_seq_context_kwargs",
            "causal",
            "transform_block_inputs",
        ]
    ),
    "input_not_include_cache": False,
    "cache_age": 1,
    "return_hiddens": False,
    "return_gumbel_log_probs": False,
    "detach_additional_kv": False,
    "route_additional_kv_to_top": True,
}

#: ``TransformerWrapper.forward``'s optional parameters at their defaults (``**kwargs``: {}).
_WRAPPER_DEFAULTS: dict[str, Any] = {
    **dict.fromkeys(
        [
            "mask",
            "mems",
            "mem_masks",
            "recycle_steps",
            "looped_steps",
            "max_looped_steps",
            "looped_pred_all_logits",
            "pos",
            "prepend_embeds",
            "prepend_mask",
            "sum_embeds",
            "transform_token_embeds",
            "transform_block_inputs",
            "seq_start_pos",
            "cache",
            "input_not_include_cache",
        ]
    ),
    **dict.fromkeys(
        [
            "return_embeddings",
            "return_logits_and_embeddings",
            "return_intermediates",
            "return_embeddings_and_intermediates",
            "return_logit_entropies",
            "return_next_embed_pred",
            "return_mems",
            "return_attn",
            "looped_inference",
            "excise_prepend_embeds",
            "return_attn_z_loss",
        ],
        False,
    ),
    "detach_mems": True,
    "looped_exit_prob_threshold": 0.9,
    "attn_z_loss_weight": 0.0001,
    "embed_ids": {},
    "token_emb_kwargs": {},
    "to_logits_kwargs": {},
    "**kwargs": {},
}


def _encoder(kwargs: tuple[tuple[str, Any], ...]) -> nn.Module:
    from x_transformers import Encoder

    torch.manual_seed(0)
    return Encoder(**_LAYERS, **dict(kwargs))


def _wrapper() -> nn.Module:
    from x_transformers import Encoder, TransformerWrapper

    torch.manual_seed(0)
    return TransformerWrapper(num_tokens=99, max_seq_len=16, attn_layers=Encoder(**_LAYERS))


def _xt(name: str, factory: Any, inputs: Any, concrete_args: dict[str, Any], note: str) -> ZooModel:
    return ZooModel(
        f"x_transformers.{name}",
        factory,
        inputs,
        concrete_args=concrete_args,
        leaf_modules=LEAVES,
        autowrap_functions=WRAPPED,
        traceable=False,
        note=note,
        requires=("x_transformers", "einops"),
        varies=SEQUENCE,
    )


ENTRIES: list[ZooModel] = [
    _xt(
        "Encoder",
        functools.partial(_encoder, ()),
        img(2, 8, 32),
        _ENCODER_DEFAULTS,
        "traces WITHOUT error but the graph is wrong: a value the attention block calls is a "
        "traced tensor, so the GraphModule runs `mul.__call__()` and fails",
    ),
    _xt(
        "Encoder[rotary]",
        functools.partial(_encoder, (("rotary_pos_emb", True),)),
        img(2, 8, 32),
        _ENCODER_DEFAULTS,
        "StopIteration: the @disable_autocast wrapper looks for a torch.Tensor argument and a "
        "Proxy is none (x_transformers.py:97)",
    ),
    _xt(
        "TransformerWrapper",
        _wrapper,
        tokens(2, 8, 99),
        _WRAPPER_DEFAULTS,
        "TraceError: AbsolutePositionalEmbedding asserts on the traced sequence length "
        "(x_transformers.py:432); with it as a leaf, torch.fx's own generated code is a "
        "SyntaxError (dict-valued concrete_args switch it to pytree codegen)",
    ),
]
