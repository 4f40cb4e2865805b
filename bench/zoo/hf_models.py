"""Hugging Face ``transformers`` 4.46.3 models at tiny configs, traced with its ``HFTracer``.

Every architecture ``transformers.utils.fx`` lists as supported that has a small config (plus a
few it does not list: XLM-R, CamemBERT, ConvBERT, MPNet, DeiT, BEiT, MobileViT, PoolFormer,
RegNet, VAN), each as its base model and one to three task heads, built from a config with
hidden sizes of 8-32, two layers, a 99-token vocabulary and 32x32 images (random weights, no
download; ``HF_HUB_OFFLINE=1``).

Tracing reproduces ``transformers.utils.fx.symbolic_trace(model, input_names=[...])``: the
tracer is ``HFTracer`` and ``concrete_args`` fixes every other ``forward`` parameter to its
default (``get_concrete_args``), ``None`` mostly; the input names are a prefix of ``forward``'s
parameters, so ``inputs()`` are positional. Like ``symbolic_trace``, the factory sets
``config.use_cache = False``.

Why 4.46.3 and not the newest 4.x: from 4.5x on, most models' ``forward`` is wrapped by
``check_model_inputs`` and takes ``**kwargs``, which ``HFTracer`` cannot trace (``'NoneType'
object has no attribute 'get'``), and the new masking utilities ``vmap`` over Proxies; with
4.57.6, ViT, DeiT, Dinov2, GPT-2, OPT, Llama, Mistral, Qwen2, Mixtral, Cohere, Pegasus and
M2M100 all fail to trace and DeBERTa fails even in eager mode on torch 2.13.
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any

import torch
from torch import nn

from . import BATCH, SEQUENCE, Inputs, ZooModel, randn, token_ids

_TEXT = {
    "vocab_size": 99,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "max_position_embeddings": 64,
}
_S2S = {
    "vocab_size": 99,
    "d_model": 32,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 37,
    "decoder_ffn_dim": 37,
    "max_position_embeddings": 64,
}
_LLAMA = {
    "pad_token_id": 0,
    "vocab_size": 99,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 37,
    "max_position_embeddings": 64,
    "use_cache": False,
}
_VIT = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "image_size": 32,
    "patch_size": 8,
}
_SWIN = {
    "image_size": 32,
    "patch_size": 4,
    "embed_dim": 16,
    "depths": [1, 1],
    "num_heads": [1, 2],
    "window_size": 4,
}
_T5 = {
    "vocab_size": 99,
    "d_model": 32,
    "d_kv": 8,
    "d_ff": 37,
    "num_layers": 2,
    "num_decoder_layers": 2,
    "num_heads": 4,
    "relative_attention_num_buckets": 8,
    "use_cache": False,
}
_W2V = {
    "vocab_size": 32,
    "hidden_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 20,
    "conv_dim": [16, 16],
    "conv_stride": [4, 4],
    "conv_kernel": [8, 8],
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 2,
    "codevector_dim": 16,
    "proj_codevector_dim": 16,
    "num_codevectors_per_group": 8,
    "num_codevector_groups": 2,
    "classifier_proj_size": 8,
}
_CLIPV = {
    "hidden_size": 32,
    "intermediate_size": 37,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "image_size": 32,
    "patch_size": 8,
    "projection_dim": 16,
}
_CLIPT = {
    "vocab_size": 99,
    "hidden_size": 32,
    "intermediate_size": 37,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
    "projection_dim": 16,
}
_CONVNEXT = {"hidden_sizes": [8, 16], "depths": [1, 1], "num_stages": 2}
_RESNET = {"embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1], "layer_type": "basic"}
_SEGF = {
    "num_encoder_blocks": 2,
    "depths": [1, 1],
    "sr_ratios": [2, 1],
    "hidden_sizes": [8, 16],
    "patch_sizes": [7, 3],
    "strides": [4, 2],
    "num_attention_heads": [1, 2],
    "mlp_ratios": [2, 2],
    "decoder_hidden_size": 16,
}

_CONFIGS: dict[str, dict[str, Any]] = {
    "BertConfig": _TEXT,
    "RobertaConfig": _TEXT,
    "XLMRobertaConfig": _TEXT,
    "AlbertConfig": {**_TEXT, "embedding_size": 16},
    "DistilBertConfig": {
        "vocab_size": 99,
        "dim": 32,
        "n_layers": 2,
        "n_heads": 4,
        "hidden_dim": 37,
        "max_position_embeddings": 64,
    },
    "ElectraConfig": {**_TEXT, "embedding_size": 16},
    "MobileBertConfig": {
        **_TEXT,
        "embedding_size": 16,
        "intra_bottleneck_size": 16,
        "true_hidden_size": 16,
        "num_feedforward_networks": 2,
    },
    "MegatronBertConfig": _TEXT,
    "NezhaConfig": {**_TEXT, "max_relative_position": 16},
    "LayoutLMConfig": _TEXT,
    "DebertaConfig": {
        **_TEXT,
        "relative_attention": True,
        "pos_att_type": ["c2p", "p2c"],
        "max_relative_positions": 16,
    },
    "DebertaV2Config": {
        **_TEXT,
        "relative_attention": True,
        "pos_att_type": ["c2p", "p2c"],
        "max_relative_positions": 16,
        "position_buckets": 8,
    },
    "ConvBertConfig": {**_TEXT, "embedding_size": 16},
    "MPNetConfig": _TEXT,
    "CamembertConfig": _TEXT,
    "GPT2Config": {
        "pad_token_id": 0,
        "vocab_size": 99,
        "n_embd": 32,
        "n_layer": 2,
        "n_head": 4,
        "n_inner": 37,
        "n_positions": 64,
        "use_cache": False,
    },
    "GPTNeoConfig": {
        "vocab_size": 99,
        "hidden_size": 32,
        "num_layers": 2,
        "num_heads": 4,
        "intermediate_size": 37,
        "max_position_embeddings": 64,
        "attention_types": [[["global", "local"], 1]],
        "window_size": 4,
        "use_cache": False,
    },
    "GPTJConfig": {
        "vocab_size": 99,
        "n_embd": 32,
        "n_layer": 2,
        "n_head": 4,
        "n_inner": 37,
        "n_positions": 64,
        "rotary_dim": 4,
        "use_cache": False,
    },
    "OPTConfig": {
        "vocab_size": 99,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "ffn_dim": 37,
        "max_position_embeddings": 64,
        "word_embed_proj_dim": 32,
        "use_cache": False,
    },
    "BloomConfig": {
        "vocab_size": 99,
        "hidden_size": 32,
        "n_layer": 2,
        "n_head": 4,
        "use_cache": False,
    },
    "XGLMConfig": {
        "vocab_size": 99,
        "d_model": 32,
        "ffn_dim": 37,
        "num_layers": 2,
        "attention_heads": 4,
        "max_position_embeddings": 64,
        "use_cache": False,
    },
    "LlamaConfig": _LLAMA,
    "MistralConfig": _LLAMA,
    "Qwen2Config": _LLAMA,
    "CohereConfig": _LLAMA,
    "MixtralConfig": {**_LLAMA, "num_local_experts": 4, "num_experts_per_tok": 2},
    "Qwen2MoeConfig": {
        **_LLAMA,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 16,
        "shared_expert_intermediate_size": 24,
        "decoder_sparse_step": 1,
    },
    "BartConfig": _S2S,
    "MBartConfig": _S2S,
    "PLBartConfig": _S2S,
    "BlenderbotConfig": _S2S,
    "BlenderbotSmallConfig": _S2S,
    "MarianConfig": {**_S2S, "pad_token_id": 0, "decoder_start_token_id": 0},
    "PegasusConfig": _S2S,
    "M2M100Config": _S2S,
    "T5Config": _T5,
    "MT5Config": _T5,
    "ViTConfig": _VIT,
    "DeiTConfig": _VIT,
    "Dinov2Config": {**_VIT, "mlp_ratio": 2},
    "BeitConfig": _VIT,
    "SwinConfig": _SWIN,
    "DonutSwinConfig": _SWIN,
    "ConvNextConfig": _CONVNEXT,
    "ResNetConfig": _RESNET,
    "SegformerConfig": _SEGF,
    "CLIPVisionConfig": _CLIPV,
    "CLIPTextConfig": _CLIPT,
    "Wav2Vec2Config": _W2V,
    "HubertConfig": _W2V,
    "MobileViTConfig": {
        "image_size": 32,
        "patch_size": 2,
        "hidden_sizes": [16, 20, 24],
        "neck_hidden_sizes": [8, 8, 16, 16, 24, 32, 40],
        "num_attention_heads": 2,
    },
    "PoolFormerConfig": {"hidden_sizes": [8, 16, 24, 32], "depths": [1, 1, 1, 1]},
    "RegNetConfig": {
        "embedding_size": 8,
        "hidden_sizes": [8, 16],
        "depths": [1, 1],
        "groups_width": 8,
    },
    "VanConfig": {
        "hidden_sizes": [8, 16],
        "depths": [1, 1],
        "mlp_ratios": [2, 2],
        "patch_sizes": [7, 3],
        "strides": [4, 2],
    },
    "HieraConfig": {
        "embed_dim": 8,
        "image_size": [64, 64],
        "depths": [1, 1, 1, 1],
        "num_heads": [1, 1, 1, 1],
    },
    "LxmertConfig": {
        "vocab_size": 99,
        "hidden_size": 32,
        "num_attention_heads": 4,
        "intermediate_size": 37,
        "l_layers": 1,
        "x_layers": 1,
        "r_layers": 1,
        "visual_feat_dim": 16,
        "visual_pos_dim": 4,
        "num_qa_labels": 5,
        "num_object_labels": 5,
        "num_attr_labels": 5,
    },
    "Speech2TextConfig": {
        "vocab_size": 99,
        "d_model": 32,
        "encoder_layers": 2,
        "decoder_layers": 2,
        "encoder_attention_heads": 4,
        "decoder_attention_heads": 4,
        "encoder_ffn_dim": 37,
        "decoder_ffn_dim": 37,
        "max_source_positions": 64,
        "max_target_positions": 64,
        "num_conv_layers": 2,
        "conv_kernel_sizes": [5, 5],
        "conv_channels": 16,
        "input_feat_per_channel": 16,
        "input_channels": 1,
    },
    "Speech2Text2Config": {
        "vocab_size": 99,
        "d_model": 32,
        "decoder_layers": 2,
        "decoder_attention_heads": 4,
        "decoder_ffn_dim": 37,
        "max_target_positions": 64,
        "use_cache": False,
    },
    "TrOCRConfig": {
        "vocab_size": 99,
        "d_model": 32,
        "decoder_layers": 2,
        "decoder_attention_heads": 4,
        "decoder_ffn_dim": 37,
        "max_position_embeddings": 64,
        "use_cache": False,
    },
    "AltCLIPVisionConfig": _CLIPV,
    "GitVisionConfig": {**_VIT, "projection_dim": None},
}


#: The transformers releases whose ``HFTracer`` these entries are traced with: the survey's
#: (bench/install_zoo.sh); from 4.5x on it fails on most of them (module docstring).
HF_TRACER = "transformers<=4.46.3"


def _hf_tracer() -> type[torch.fx.Tracer]:
    from transformers.utils.fx import HFTracer

    return HFTracer


def _build(cls: str, config_cls: str, overrides: tuple[tuple[str, Any], ...] = ()) -> nn.Module:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    torch.manual_seed(0)
    config = getattr(transformers, config_cls)(**_CONFIGS[config_cls], **dict(overrides))
    if getattr(config, "use_cache", False):
        config.use_cache = False  # as transformers.utils.fx.symbolic_trace does
    model: nn.Module = getattr(transformers, cls)(config)
    return model


#: What ``get_concrete_args`` fixes a ``**kwargs`` parameter to (harmless in 4.46.3).
_EMPTY = inspect.Parameter.empty


def _fixed(nones: str, **values: Any) -> dict[str, Any]:
    """``concrete_args``: the parameters named in ``nones`` (space-separated) fixed to ``None``,
    and those of ``values``."""
    return {**dict.fromkeys(nones.split()), **values}


def _mask(*shape: int, pad: int = 2) -> torch.Tensor:
    """An int64 attention mask of ones whose second row ends with ``pad`` padding zeros."""
    mask = torch.ones(*shape, dtype=torch.long)
    mask[1, ..., -pad:] = 0
    return mask


def _bbox(*shape: int) -> torch.Tensor:
    """LayoutLM word boxes ``(x0, y0, x1, y1)`` in [0, 1000) with x0 <= x1 and y0 <= y1."""
    g = torch.Generator().manual_seed(2)
    xs = torch.randint(0, 1000, (*shape, 2), generator=g).sort(-1).values
    ys = torch.randint(0, 1000, (*shape, 2), generator=g).sort(-1).values
    return torch.stack([xs[..., 0], ys[..., 0], xs[..., 1], ys[..., 1]], -1)


def _input(name: str, kind: str) -> torch.Tensor:
    text = (2, 2, 8) if kind == "choice" else (2, 8)
    if kind == "speech" and name == "attention_mask":
        return _mask(2, 32, pad=4)
    makers = {
        "input_ids": lambda: (
            3 + torch.randint(0, 96, text, generator=torch.Generator().manual_seed(0))
        ),
        "attention_mask": lambda: _mask(*text),
        "token_type_ids": lambda: (torch.arange(text[-1]) >= 4).long().expand(text).clone(),
        "bbox": lambda: _bbox(*text),
        "decoder_input_ids": lambda: 3 + token_ids(2, 6, 96, seed=1),
        "pixel_values": lambda: randn(1, 3, *((64, 64) if kind == "image64" else (32, 32))),
        "input_values": lambda: randn(1, 400),
        "input_features": lambda: randn(2, 32, 16),
        "visual_feats": lambda: randn(2, 5, 16, seed=1),
        "visual_pos": lambda: torch.rand(2, 5, 4, generator=torch.Generator().manual_seed(2)),
    }
    return makers[name]()


#: What each kind of input may vary along (a multiple-choice input's dim 1 is its choices).
_VARIES = {"text": SEQUENCE, "speech": SEQUENCE, "audio": SEQUENCE, "lxmert": SEQUENCE, "choice": BATCH,
           "image": ("batch", "spatial"), "image64": ("batch", "spatial")}  # fmt: skip


def _inputs(names: tuple[str, ...], kind: str) -> Inputs:
    return lambda: tuple(_input(name, kind) for name in names)


def _hf(
    cls: str,
    config_cls: str,
    input_names: tuple[str, ...],
    kind: str,
    concrete_args: dict[str, Any],
    config: dict[str, Any] | None = None,
    **kwargs: Any,
) -> ZooModel:
    """An entry for ``transformers.<cls>(<config_cls>(**_CONFIGS[config_cls], **config))``.

    ``input_names`` are the leading parameters of ``forward`` (given positionally);
    ``concrete_args`` is what ``get_concrete_args(model, input_names)`` returns.
    """
    return ZooModel(
        f"transformers.{cls}",
        functools.partial(_build, cls, config_cls, tuple((config or {}).items())),
        _inputs(input_names, kind),
        concrete_args=concrete_args,
        requires=("transformers",),
        tracer_class=_hf_tracer,
        versions=(HF_TRACER,),
        varies=_VARIES[kind],
        **kwargs,
    )


ENTRIES: list[ZooModel] = [
    _hf(
        "BertModel",
        "BertConfig",
        ("input_ids", "attention_mask", "token_type_ids"),
        "text",
        _fixed(
            "position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask past_key_values use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BertForMaskedLM",
        "BertConfig",
        ("input_ids", "attention_mask", "token_type_ids"),
        "text",
        _fixed(
            "position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BertForSequenceClassification",
        "BertConfig",
        ("input_ids", "attention_mask", "token_type_ids"),
        "text",
        _fixed(
            "position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BertForTokenClassification",
        "BertConfig",
        ("input_ids", "attention_mask", "token_type_ids"),
        "text",
        _fixed(
            "position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BertForQuestionAnswering",
        "BertConfig",
        ("input_ids", "attention_mask", "token_type_ids"),
        "text",
        _fixed(
            "position_ids head_mask inputs_embeds start_positions end_positions output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BertForMultipleChoice",
        "BertConfig",
        ("input_ids", "attention_mask", "token_type_ids"),
        "choice",
        _fixed(
            "position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BertForPreTraining",
        "BertConfig",
        ("input_ids", "attention_mask", "token_type_ids"),
        "text",
        _fixed(
            "position_ids head_mask inputs_embeds labels next_sentence_label output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BertForNextSentencePrediction",
        "BertConfig",
        ("input_ids", "attention_mask", "token_type_ids"),
        "text",
        _fixed(
            "position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict",
            kwargs=_EMPTY,
        ),
    ),
    _hf(
        "BertLMHeadModel",
        "BertConfig",
        ("input_ids", "attention_mask", "token_type_ids"),
        "text",
        _fixed(
            "position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask labels past_key_values use_cache output_attentions output_hidden_states return_dict"
        ),
        config={"is_decoder": True},
    ),
    _hf(
        "RobertaModel",
        "RobertaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask past_key_values use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "RobertaForMaskedLM",
        "RobertaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "RobertaForSequenceClassification",
        "RobertaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "RobertaForCausalLM",
        "RobertaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask labels past_key_values use_cache output_attentions output_hidden_states return_dict"
        ),
        config={"is_decoder": True},
    ),
    _hf(
        "XLMRobertaModel",
        "XLMRobertaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask past_key_values use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "XLMRobertaForTokenClassification",
        "XLMRobertaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "AlbertModel",
        "AlbertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "AlbertForMaskedLM",
        "AlbertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "AlbertForSequenceClassification",
        "AlbertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "AlbertForPreTraining",
        "AlbertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds labels sentence_order_label output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "DistilBertModel",
        "DistilBertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed("head_mask inputs_embeds output_attentions output_hidden_states return_dict"),
        fast=True,
        note="CI's smallest Hugging Face model (non-persistent position_ids buffer)",
    ),
    _hf(
        "DistilBertForMaskedLM",
        "DistilBertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed("head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"),
    ),
    _hf(
        "DistilBertForSequenceClassification",
        "DistilBertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed("head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"),
    ),
    _hf(
        "DistilBertForQuestionAnswering",
        "DistilBertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "head_mask inputs_embeds start_positions end_positions output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "ElectraModel",
        "ElectraConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask past_key_values use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "ElectraForPreTraining",
        "ElectraConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "ElectraForMaskedLM",
        "ElectraConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "ElectraForSequenceClassification",
        "ElectraConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "MobileBertModel",
        "MobileBertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds output_hidden_states output_attentions return_dict"
        ),
    ),
    _hf(
        "MobileBertForMaskedLM",
        "MobileBertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "MobileBertForSequenceClassification",
        "MobileBertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "MegatronBertModel",
        "MegatronBertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask past_key_values use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "MegatronBertForMaskedLM",
        "MegatronBertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "MegatronBertForCausalLM",
        "MegatronBertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask labels past_key_values use_cache output_attentions output_hidden_states return_dict"
        ),
        config={"is_decoder": True},
    ),
    _hf(
        "NezhaModel",
        "NezhaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask past_key_values use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "NezhaForMaskedLM",
        "NezhaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "LayoutLMModel",
        "LayoutLMConfig",
        ("input_ids", "bbox", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "LayoutLMForTokenClassification",
        "LayoutLMConfig",
        ("input_ids", "bbox", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "DebertaModel",
        "DebertaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids inputs_embeds output_attentions output_hidden_states return_dict"
        ),
        traceable=False,
        note="RuntimeError: c2p_dynamic_expand is a torch.jit.script function, which rejects an HFProxy argument (modeling_deberta.py:700)",
    ),
    _hf(
        "DebertaV2Model",
        "DebertaV2Config",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids inputs_embeds output_attentions output_hidden_states return_dict"
        ),
        fast=True,
        note="CI's example of tensor constants (two `_tensor_constantN`) and non-persistent buffers",
    ),
    _hf(
        "DebertaV2ForMaskedLM",
        "DebertaV2Config",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "DebertaV2ForTokenClassification",
        "DebertaV2Config",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "ConvBertModel",
        "ConvBertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds output_attentions output_hidden_states return_dict"
        ),
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (modeling_convbert.py:328)",
    ),
    _hf(
        "MPNetModel",
        "MPNetConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids head_mask inputs_embeds output_attentions output_hidden_states return_dict",
            kwargs=_EMPTY,
        ),
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (modeling_mpnet.py:149)",
    ),
    _hf(
        "CamembertModel",
        "CamembertConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask past_key_values use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "GPT2Model",
        "GPT2Config",
        ("input_ids",),
        "text",
        _fixed(
            "past_key_values attention_mask token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "GPT2LMHeadModel",
        "GPT2Config",
        ("input_ids",),
        "text",
        _fixed(
            "past_key_values attention_mask token_type_ids position_ids head_mask inputs_embeds encoder_hidden_states encoder_attention_mask labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "GPT2ForSequenceClassification",
        "GPT2Config",
        ("input_ids",),
        "text",
        _fixed(
            "past_key_values attention_mask token_type_ids position_ids head_mask inputs_embeds labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "GPT2ForTokenClassification",
        "GPT2Config",
        ("input_ids",),
        "text",
        _fixed(
            "past_key_values attention_mask token_type_ids position_ids head_mask inputs_embeds labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "GPT2DoubleHeadsModel",
        "GPT2Config",
        ("input_ids",),
        "text",
        _fixed(
            "past_key_values attention_mask token_type_ids position_ids head_mask inputs_embeds mc_token_ids labels mc_labels use_cache output_attentions output_hidden_states return_dict",
            kwargs=_EMPTY,
        ),
    ),
    _hf(
        "GPTNeoModel",
        "GPTNeoConfig",
        ("input_ids",),
        "text",
        _fixed(
            "past_key_values attention_mask token_type_ids position_ids head_mask inputs_embeds use_cache output_attentions output_hidden_states return_dict cache_position"
        ),
    ),
    _hf(
        "GPTNeoForCausalLM",
        "GPTNeoConfig",
        ("input_ids",),
        "text",
        _fixed(
            "past_key_values attention_mask token_type_ids position_ids head_mask inputs_embeds labels use_cache output_attentions output_hidden_states return_dict cache_position"
        ),
    ),
    _hf(
        "GPTJModel",
        "GPTJConfig",
        ("input_ids",),
        "text",
        _fixed(
            "past_key_values attention_mask token_type_ids position_ids head_mask inputs_embeds use_cache output_attentions output_hidden_states return_dict cache_position"
        ),
        fast=True,  # CI's plain_tensor_attributes example: its rotary table (embed_positions)
    ),
    _hf(
        "GPTJForCausalLM",
        "GPTJConfig",
        ("input_ids",),
        "text",
        _fixed(
            "past_key_values attention_mask token_type_ids position_ids head_mask inputs_embeds labels use_cache output_attentions output_hidden_states return_dict cache_position"
        ),
    ),
    _hf(
        "OPTModel",
        "OPTConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "head_mask past_key_values inputs_embeds use_cache output_attentions output_hidden_states return_dict position_ids"
        ),
    ),
    _hf(
        "OPTForCausalLM",
        "OPTConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "head_mask past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states return_dict position_ids"
        ),
    ),
    _hf(
        "BloomModel",
        "BloomConfig",
        ("input_ids",),
        "text",
        _fixed(
            "past_key_values attention_mask head_mask inputs_embeds use_cache output_attentions output_hidden_states return_dict cache_position",
            deprecated_arguments=_EMPTY,
        ),
    ),
    _hf(
        "BloomForCausalLM",
        "BloomConfig",
        ("input_ids",),
        "text",
        _fixed(
            "past_key_values attention_mask head_mask inputs_embeds labels use_cache output_attentions output_hidden_states return_dict cache_position",
            deprecated_arguments=_EMPTY,
        ),
    ),
    _hf(
        "XGLMModel",
        "XGLMConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids encoder_hidden_states encoder_attention_mask head_mask cross_attn_head_mask past_key_values inputs_embeds use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "XGLMForCausalLM",
        "XGLMConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids encoder_hidden_states encoder_attention_mask head_mask cross_attn_head_mask past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "LlamaModel",
        "LlamaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds use_cache output_attentions output_hidden_states return_dict cache_position"
        ),
    ),
    _hf(
        "LlamaForCausalLM",
        "LlamaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states return_dict cache_position",
            num_logits_to_keep=0,
            loss_kwargs=_EMPTY,
        ),
    ),
    _hf(
        "LlamaForSequenceClassification",
        "LlamaConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "MistralModel",
        "MistralConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds use_cache output_attentions output_hidden_states return_dict cache_position"
        ),
    ),
    _hf(
        "MistralForCausalLM",
        "MistralConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states return_dict cache_position",
            num_logits_to_keep=0,
        ),
    ),
    _hf(
        "Qwen2Model",
        "Qwen2Config",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds use_cache output_attentions output_hidden_states return_dict cache_position"
        ),
    ),
    _hf(
        "Qwen2ForCausalLM",
        "Qwen2Config",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states return_dict cache_position",
            num_logits_to_keep=0,
            loss_kwargs=_EMPTY,
        ),
    ),
    _hf(
        "CohereModel",
        "CohereConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds use_cache output_attentions output_hidden_states return_dict cache_position"
        ),
    ),
    _hf(
        "CohereForCausalLM",
        "CohereConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states return_dict cache_position",
            num_logits_to_keep=0,
            loss_kwargs=_EMPTY,
        ),
    ),
    _hf(
        "MixtralModel",
        "MixtralConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds use_cache output_attentions output_hidden_states output_router_logits return_dict cache_position"
        ),
    ),
    _hf(
        "MixtralForCausalLM",
        "MixtralConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states output_router_logits return_dict cache_position",
            num_logits_to_keep=0,
            loss_kwargs=_EMPTY,
        ),
    ),
    _hf(
        "Qwen2MoeModel",
        "Qwen2MoeConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds use_cache output_attentions output_hidden_states output_router_logits return_dict cache_position"
        ),
    ),
    _hf(
        "Qwen2MoeForCausalLM",
        "Qwen2MoeConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "position_ids past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states output_router_logits return_dict cache_position",
            num_logits_to_keep=0,
            loss_kwargs=_EMPTY,
        ),
    ),
    _hf(
        "BartModel",
        "BartConfig",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BartForConditionalGeneration",
        "BartConfig",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BartForQuestionAnswering",
        "BartConfig",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs start_positions end_positions inputs_embeds decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BartForCausalLM",
        "BartConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "encoder_hidden_states encoder_attention_mask head_mask cross_attn_head_mask past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "MBartModel",
        "MBartConfig",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "MBartForConditionalGeneration",
        "MBartConfig",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "PLBartModel",
        "PLBartConfig",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BlenderbotModel",
        "BlenderbotConfig",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "BlenderbotSmallModel",
        "BlenderbotSmallConfig",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "MarianModel",
        "MarianConfig",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "MarianMTModel",
        "MarianConfig",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "PegasusModel",
        "PegasusConfig",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "M2M100Model",
        "M2M100Config",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "T5Model",
        "T5Config",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict cache_position"
        ),
    ),
    _hf(
        "T5ForConditionalGeneration",
        "T5Config",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds labels use_cache output_attentions output_hidden_states return_dict cache_position"
        ),
    ),
    _hf(
        "T5EncoderModel",
        "T5Config",
        ("input_ids", "attention_mask"),
        "text",
        _fixed("head_mask inputs_embeds output_attentions output_hidden_states return_dict"),
    ),
    _hf(
        "MT5Model",
        "MT5Config",
        ("input_ids", "attention_mask", "decoder_input_ids"),
        "text",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values inputs_embeds decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict cache_position"
        ),
    ),
    _hf(
        "MT5EncoderModel",
        "MT5Config",
        ("input_ids", "attention_mask"),
        "text",
        _fixed("head_mask inputs_embeds output_attentions output_hidden_states return_dict"),
    ),
    _hf(
        "ViTModel",
        "ViTConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "bool_masked_pos head_mask output_attentions output_hidden_states interpolate_pos_encoding return_dict"
        ),
    ),
    _hf(
        "ViTForImageClassification",
        "ViTConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "head_mask labels output_attentions output_hidden_states interpolate_pos_encoding return_dict"
        ),
    ),
    _hf(
        "ViTForMaskedImageModeling",
        "ViTConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "bool_masked_pos head_mask output_attentions output_hidden_states interpolate_pos_encoding return_dict"
        ),
    ),
    _hf(
        "DeiTModel",
        "DeiTConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "bool_masked_pos head_mask output_attentions output_hidden_states return_dict",
            interpolate_pos_encoding=False,
        ),
    ),
    _hf(
        "DeiTForImageClassificationWithTeacher",
        "DeiTConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "head_mask output_attentions output_hidden_states return_dict",
            interpolate_pos_encoding=False,
        ),
    ),
    _hf(
        "Dinov2Model",
        "Dinov2Config",
        ("pixel_values",),
        "image",
        _fixed("bool_masked_pos head_mask output_attentions output_hidden_states return_dict"),
    ),
    _hf(
        "Dinov2ForImageClassification",
        "Dinov2Config",
        ("pixel_values",),
        "image",
        _fixed("head_mask labels output_attentions output_hidden_states return_dict"),
    ),
    _hf(
        "BeitModel",
        "BeitConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "bool_masked_pos head_mask output_attentions output_hidden_states return_dict",
            interpolate_pos_encoding=False,
        ),
        traceable=False,
        note="TraceError: Proxy object cannot be iterated (modeling_beit.py:307)",
    ),
    _hf(
        "SwinModel",
        "SwinConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "bool_masked_pos head_mask output_attentions output_hidden_states return_dict",
            interpolate_pos_encoding=False,
        ),
    ),
    _hf(
        "SwinForImageClassification",
        "SwinConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "head_mask labels output_attentions output_hidden_states return_dict",
            interpolate_pos_encoding=False,
        ),
    ),
    _hf(
        "SwinForMaskedImageModeling",
        "SwinConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "bool_masked_pos head_mask output_attentions output_hidden_states return_dict",
            interpolate_pos_encoding=False,
        ),
    ),
    _hf(
        "DonutSwinModel",
        "DonutSwinConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "bool_masked_pos head_mask output_attentions output_hidden_states return_dict",
            interpolate_pos_encoding=False,
        ),
    ),
    _hf(
        "ConvNextModel",
        "ConvNextConfig",
        ("pixel_values",),
        "image",
        _fixed("output_hidden_states return_dict"),
    ),
    _hf(
        "ConvNextForImageClassification",
        "ConvNextConfig",
        ("pixel_values",),
        "image",
        _fixed("labels output_hidden_states return_dict"),
    ),
    _hf(
        "ResNetModel",
        "ResNetConfig",
        ("pixel_values",),
        "image",
        _fixed("output_hidden_states return_dict"),
    ),
    _hf(
        "ResNetForImageClassification",
        "ResNetConfig",
        ("pixel_values",),
        "image",
        _fixed("labels output_hidden_states return_dict"),
    ),
    _hf(
        "SegformerModel",
        "SegformerConfig",
        ("pixel_values",),
        "image",
        _fixed("output_attentions output_hidden_states return_dict"),
    ),
    _hf(
        "SegformerForSemanticSegmentation",
        "SegformerConfig",
        ("pixel_values",),
        "image",
        _fixed("labels output_attentions output_hidden_states return_dict"),
    ),
    _hf(
        "SegformerForImageClassification",
        "SegformerConfig",
        ("pixel_values",),
        "image",
        _fixed("labels output_attentions output_hidden_states return_dict"),
    ),
    _hf(
        "CLIPVisionModel",
        "CLIPVisionConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "output_attentions output_hidden_states return_dict", interpolate_pos_encoding=False
        ),
    ),
    _hf(
        "CLIPVisionModelWithProjection",
        "CLIPVisionConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "output_attentions output_hidden_states return_dict", interpolate_pos_encoding=False
        ),
    ),
    _hf(
        "CLIPTextModel",
        "CLIPTextConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed("position_ids output_attentions output_hidden_states return_dict"),
    ),
    _hf(
        "CLIPTextModelWithProjection",
        "CLIPTextConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed("position_ids output_attentions output_hidden_states return_dict"),
    ),
    _hf(
        "Wav2Vec2Model",
        "Wav2Vec2Config",
        ("input_values",),
        "audio",
        _fixed(
            "attention_mask mask_time_indices output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "Wav2Vec2ForCTC",
        "Wav2Vec2Config",
        ("input_values",),
        "audio",
        _fixed("attention_mask output_attentions output_hidden_states return_dict labels"),
    ),
    _hf(
        "Wav2Vec2ForSequenceClassification",
        "Wav2Vec2Config",
        ("input_values",),
        "audio",
        _fixed("attention_mask output_attentions output_hidden_states return_dict labels"),
    ),
    _hf(
        "HubertModel",
        "HubertConfig",
        ("input_values",),
        "audio",
        _fixed(
            "attention_mask mask_time_indices output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "MobileViTModel",
        "MobileViTConfig",
        ("pixel_values",),
        "image",
        _fixed("output_hidden_states return_dict"),
        traceable=False,
        note="TypeError: int(<HFProxy>) in MobileViTLayer.unfolding (math.ceil of the feature-map size, modeling_mobilevit.py:444)",
    ),
    _hf(
        "PoolFormerModel",
        "PoolFormerConfig",
        ("pixel_values",),
        "image",
        _fixed("output_hidden_states return_dict"),
    ),
    _hf(
        "RegNetModel",
        "RegNetConfig",
        ("pixel_values",),
        "image",
        _fixed("output_hidden_states return_dict"),
    ),
    _hf(
        "VanModel",
        "VanConfig",
        ("pixel_values",),
        "image",
        _fixed("output_hidden_states return_dict"),
    ),
    _hf(
        "HieraModel",
        "HieraConfig",
        ("pixel_values",),
        "image64",
        _fixed(
            "noise head_mask output_attentions output_hidden_states interpolate_pos_encoding return_dict"
        ),
    ),
    _hf(
        "HieraForImageClassification",
        "HieraConfig",
        ("pixel_values",),
        "image64",
        _fixed(
            "head_mask labels output_attentions output_hidden_states interpolate_pos_encoding return_dict"
        ),
    ),
    _hf(
        "LxmertModel",
        "LxmertConfig",
        ("input_ids", "visual_feats", "visual_pos"),
        "lxmert",
        _fixed(
            "attention_mask visual_attention_mask token_type_ids inputs_embeds output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "LxmertForQuestionAnswering",
        "LxmertConfig",
        ("input_ids", "visual_feats", "visual_pos"),
        "lxmert",
        _fixed(
            "attention_mask visual_attention_mask token_type_ids inputs_embeds labels output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "Speech2TextModel",
        "Speech2TextConfig",
        ("input_features", "attention_mask", "decoder_input_ids"),
        "speech",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values decoder_inputs_embeds use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "Speech2TextForConditionalGeneration",
        "Speech2TextConfig",
        ("input_features", "attention_mask", "decoder_input_ids"),
        "speech",
        _fixed(
            "decoder_attention_mask head_mask decoder_head_mask cross_attn_head_mask encoder_outputs past_key_values decoder_inputs_embeds labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "Speech2Text2ForCausalLM",
        "Speech2Text2Config",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "encoder_hidden_states encoder_attention_mask head_mask cross_attn_head_mask past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "TrOCRForCausalLM",
        "TrOCRConfig",
        ("input_ids", "attention_mask"),
        "text",
        _fixed(
            "encoder_hidden_states encoder_attention_mask head_mask cross_attn_head_mask past_key_values inputs_embeds labels use_cache output_attentions output_hidden_states return_dict"
        ),
    ),
    _hf(
        "AltCLIPVisionModel",
        "AltCLIPVisionConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "output_attentions output_hidden_states return_dict", interpolate_pos_encoding=False
        ),
    ),
    _hf(
        "GitVisionModel",
        "GitVisionConfig",
        ("pixel_values",),
        "image",
        _fixed(
            "output_attentions output_hidden_states return_dict", interpolate_pos_encoding=False
        ),
    ),
]
