"""Hugging Face encoders (BERT, RoBERTa, DistilBERT, ViT, T5's encoder) without ``HFTracer``.

``hf_models`` traces these with transformers 4.46.3's own tracer, which later releases cannot
use (its module docstring says why); these entries are what ``capture="auto"`` exports on any
release, the current one included: torch.fx's own tracer cannot trace them, so they are captured
with TorchDynamo on their example inputs. Built as ``hf_models`` builds them (its tiny configs,
random weights from ``torch.manual_seed(0)``, nothing downloaded), and given an attention mask
whose second row is padded, so the masks transformers builds from it are part of the capture.
"""

from __future__ import annotations

import functools

from . import ZooModel
from .hf_models import _build, _inputs

_ENCODERS = {
    "BertModel": ("BertConfig", ("input_ids", "attention_mask"), "text"),
    "RobertaModel": ("RobertaConfig", ("input_ids", "attention_mask"), "text"),
    "DistilBertModel": ("DistilBertConfig", ("input_ids", "attention_mask"), "text"),
    "ViTModel": ("ViTConfig", ("pixel_values",), "image"),
    "T5EncoderModel": ("T5Config", ("input_ids", "attention_mask"), "text"),
}

ENTRIES: list[ZooModel] = [
    ZooModel(
        f"hf_encoders.{cls}",
        functools.partial(_build, cls, config_cls),
        _inputs(names, kind),
        requires=("transformers",),
        traceable=False,
        note="torch.fx's own tracer cannot trace it (transformers' HFTracer can in 4.46.3, not from 4.5x)",
    )
    for cls, (config_cls, names, kind) in _ENCODERS.items()
]
