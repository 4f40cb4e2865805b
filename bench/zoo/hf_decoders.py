"""Hugging Face decoder language models at tiny configs, captured without ``HFTracer``.

torch.fx's own tracer (fxgen's default) cannot trace them: their forward raises on Proxies
(``You must specify exactly one of input_ids or inputs_embeds``), builds masks from shapes and
caches. transformers 4.46.3's ``HFTracer`` still traces most of them (``hf_models``), but from
4.5x on it fails on GPT-2, OPT, Llama, Mistral and Qwen2 too; these entries are what
``capture="auto"`` exports with TorchDynamo instead. Needing no ``HFTracer``, they run on every
release: the pinned 4.46.3, the last 4.x (4.57.6, whose attention masks are built with
``torch.vmap``: ``fxgen.capture.vmap``) and the current 5.x (``bench/install_zoo.sh --current``;
docs/zoo.md has the figures of each). Every config is built from a config object
with random weights from ``torch.manual_seed(0)`` (nothing is downloaded; ``use_cache=False``),
and takes ``input_ids`` of shape (2, 8).
"""

from __future__ import annotations

import functools
import os
from typing import Any

import torch
from torch import nn

from . import SEQUENCE, ZooModel, token_ids
from .hf_models import _CONFIGS, _LLAMA

_SMALL = {"vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 37, "max_position_embeddings": 64}  # fmt: skip

_DECODERS: dict[str, tuple[str, dict[str, Any]]] = {
    "GPT2LMHeadModel": ("GPT2Config", {"vocab_size": 99, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64}),
    "OPTForCausalLM": ("OPTConfig", _CONFIGS["OPTConfig"]),
    "LlamaForCausalLM": ("LlamaConfig", _LLAMA),
    "MistralForCausalLM": ("MistralConfig", _LLAMA),
    "Qwen2ForCausalLM": ("Qwen2Config", _LLAMA),
    "PhiForCausalLM": ("PhiConfig", _SMALL),
    "Phi3ForCausalLM": ("Phi3Config", {**_SMALL, "pad_token_id": 0}),
    "GemmaForCausalLM": ("GemmaConfig", {**_SMALL, "num_key_value_heads": 2, "head_dim": 8}),
    "Gemma2ForCausalLM": ("Gemma2Config", {**_SMALL, "num_key_value_heads": 2, "head_dim": 8}),
    # num_key_value_heads: its default (32) exceeds the 4 heads, which 5.x refuses while running
    "StableLmForCausalLM": ("StableLmConfig", {**_SMALL, "num_key_value_heads": 4}),
    "GPTNeoXForCausalLM": ("GPTNeoXConfig", _SMALL),
    "FalconForCausalLM": ("FalconConfig", {"vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2,
                                           "num_attention_heads": 4}),
    "BloomForCausalLM": ("BloomConfig", _CONFIGS["BloomConfig"]),
    "GPTJForCausalLM": ("GPTJConfig", _CONFIGS["GPTJConfig"]),
    "CodeGenForCausalLM": ("CodeGenConfig", {"vocab_size": 99, "n_embd": 32, "n_layer": 2, "n_head": 4,
                                             "n_positions": 64, "rotary_dim": 4}),
    "GPTBigCodeForCausalLM": ("GPTBigCodeConfig", {"vocab_size": 99, "n_embd": 32, "n_layer": 2, "n_head": 4,
                                                   "n_positions": 64}),
    "Starcoder2ForCausalLM": ("Starcoder2Config", {**_SMALL, "num_key_value_heads": 2}),
    "XGLMForCausalLM": ("XGLMConfig", _CONFIGS["XGLMConfig"]),
}  # fmt: skip


def _build(cls: str, config_cls: str, config: tuple[tuple[str, Any], ...]) -> nn.Module:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    torch.manual_seed(0)
    values = dict(config)
    values["use_cache"] = False
    model: nn.Module = getattr(transformers, cls)(getattr(transformers, config_cls)(**values))
    return model


def _ids() -> tuple[torch.Tensor, ...]:
    return (3 + token_ids(2, 8, 96, seed=0),)


ENTRIES: list[ZooModel] = [
    ZooModel(
        f"hf_decoders.{cls}",
        functools.partial(_build, cls, config_cls, tuple(config.items())),
        _ids,
        requires=("transformers",),
        traceable=False,
        note="torch.fx's own tracer cannot trace it (transformers' HFTracer can in 4.46.3, not from 4.5x)",
        fast=cls == "LlamaForCausalLM",
        varies=SEQUENCE,
    )
    for cls, (config_cls, config) in _DECODERS.items()
]
