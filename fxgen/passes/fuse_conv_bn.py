"""``fuse_conv_bn``: a convolution (or ``Linear``) followed by batch norm becomes one convolution
for inference, with torch.fx's own ``experimental.optimization.fuse`` (``fuse_conv_bn_eval``,
``fuse_linear_bn_eval``). The fused layer's weights are computed from the model's tensors: with
a weights file, those of the file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch.fx
from torch.fx.experimental.optimization import fuse

from fxgen.passes.context import PassContext

__all__ = ["fuse_conv_bn"]


def fuse_conv_bn(gm: torch.fx.GraphModule, args: Mapping[str, Any], context: PassContext) -> torch.fx.GraphModule:
    before = {n.name: n.target for n in gm.graph.nodes if n.op == "call_module"}
    modules = dict(gm.named_modules())
    gm.eval()  # fusion is for inference: batch norm's running statistics
    fused = fuse(gm, inplace=True, no_trace=True)  # in place: the modules it leaves stay as they were
    assert isinstance(fused, torch.fx.GraphModule)
    for path, module in fused.named_modules():
        old = modules.get(path)
        if path and old is not None and module is not old:  # a fused layer: as trainable as the one before
            for param in module.parameters(recurse=False):
                param.requires_grad_(old.weight.requires_grad)
    fused.meta.update(gm.meta)
    after = {n.name for n in fused.graph.nodes}
    folded = [f"{before[name]}" for name in before if name not in after]
    context.note(f"fuse_conv_bn: folded {len(folded)} batch norm{'s' * (len(folded) != 1)} into the layer "
                 f"before {'them' if len(folded) != 1 else 'it'}" + (f" ({', '.join(folded)})" if folded else ""))  # fmt: skip
    return fused
