"""``fuse_conv_bn``: a convolution (or ``Linear``) followed by batch norm becomes one convolution
for inference, with torch.fx's own ``experimental.optimization.fuse`` (``fuse_conv_bn_eval``,
``fuse_linear_bn_eval``). The fused layer's weights are computed from the model's tensors: with
a weights file, those of the file.

When the spec declares ``inputs:`` and the model holds values (it is loaded or transformed; not
while validating or generating, where it is on the meta device and nothing of the declared sizes
is allocated), the fused model is checked against the unfused one on a random input of those
shapes (named dimensions of size 2): the fused weights are rounded once
more than the unfused ones (2**-24 relative each) and summed in another order, so outputs may
differ by some float32 ulps of their magnitude, and ``TOLERANCE`` (32 ulps, 2**-19 relative to
the largest output) allows that and no more. A larger difference is an error at the pass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.optimization import fuse
from torch.utils._pytree import tree_leaves

from fxgen._errors import SpecError
from fxgen.passes.context import PassContext
from fxgen.passes.registry import BuiltinPass
from fxgen.spec.model import walk_nodes
from fxgen.spec.values import DTYPES

__all__ = ["PASS", "TOLERANCE", "fuse_conv_bn"]

TOLERANCE = 2.0**-19  # relative to the largest output magnitude: 32 float32 ulps


def fuse_conv_bn(gm: torch.fx.GraphModule, args: Mapping[str, Any], context: PassContext) -> torch.fx.GraphModule:
    before = {n.name: n.target for n in gm.graph.nodes if n.op == "call_module"}
    modules = dict(gm.named_modules())
    gm.eval()  # fusion is for inference: batch norm's running statistics
    example = _example(context)
    if example is not None:
        with torch.no_grad():
            want = gm.forward(*example)  # not gm(...): torch.fx prints a traceback to stderr on an error
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
    checked = ""
    if example is not None and folded:
        with torch.no_grad():
            got = fused.forward(*example)
        checked = "; " + _compare(want, got, context)
    context.note(f"fuse_conv_bn: folded {len(folded)} batch norm{'s' * (len(folded) != 1)} into the layer "
                 f"before {'them' if len(folded) != 1 else 'it'}" + (f" ({', '.join(folded)})" if folded else "")
                 + checked)  # fmt: skip
    return fused


def _example(context: PassContext) -> list[torch.Tensor] | None:
    """A random input of the declared shapes (named dimensions of size 2), or None (no inputs
    declared, or a model on the meta device: nothing to compare)."""
    spec = context.spec
    if not spec.inputs or context.meta:
        return None
    generator = torch.Generator().manual_seed(0)
    out = []
    for node in walk_nodes(spec.nodes):
        declared = spec.inputs.get(node.name or "") if node.op == "placeholder" else None
        if declared is None:
            continue
        shape = [d if isinstance(d, int) else 2 for d in declared.shape]
        dtype = DTYPES[declared.dtype]
        if dtype.is_floating_point or dtype.is_complex:
            out.append(torch.randn(shape, generator=generator, dtype=dtype))
        else:
            out.append(torch.randint(0, 2, shape, generator=generator).to(dtype))
    return out


def _compare(want: object, got: object, context: PassContext) -> str:
    """What the check found, or a SpecError at the pass when the fused model is another model."""
    worst = scale = 0.0
    exact = True
    for a, b in zip(tree_leaves(want), tree_leaves(got), strict=True):
        if isinstance(a, torch.Tensor) and a.is_floating_point() and isinstance(b, torch.Tensor):
            if a.numel():
                both_nan = torch.isnan(a) & torch.isnan(b)
                worst = max(worst, torch.where(both_nan, 0.0, (a - b).abs()).max().item())
                scale = max(scale, torch.where(torch.isnan(a), 0.0, a.abs()).max().item())
        elif isinstance(a, torch.Tensor):
            exact = exact and isinstance(b, torch.Tensor) and torch.equal(a, b)
        else:
            exact = exact and a == b
    if not exact or not worst <= TOLERANCE * scale:
        raise SpecError.at(context.where, f"fuse_conv_bn: the fused model computes other values than the unfused one "
                           f"on the declared inputs (largest difference {worst:.3g} on outputs up to {scale:.3g}, "
                           f"more than the {TOLERANCE:.3g} relative that rounding the fused weights explains)")  # fmt: skip
    return f"checked on the declared inputs: largest difference {worst:.3g} on outputs up to {scale:.3g}"


PASS = BuiltinPass("fuse_conv_bn", fuse_conv_bn)
