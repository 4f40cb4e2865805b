"""``eliminate_dead_code``: torch.fx's ``Graph.eliminate_dead_code`` (nodes nothing uses, impure
ones kept), then the submodules no node calls any more."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch.fx

from fxgen.passes.context import PassContext
from fxgen.passes.registry import BuiltinPass

__all__ = ["PASS", "eliminate_dead_code"]


def eliminate_dead_code(
    gm: torch.fx.GraphModule, args: Mapping[str, Any], context: PassContext
) -> torch.fx.GraphModule:
    before = [n.name for n in gm.graph.nodes]
    gm.graph.eliminate_dead_code()
    gm.delete_all_unused_submodules()
    gm.recompile()
    after = {n.name for n in gm.graph.nodes}
    removed = [name for name in before if name not in after]
    context.note(f"eliminate_dead_code: removed {len(removed)} node{'s' * (len(removed) != 1)}"
                 + (f" ({', '.join(removed)})" if removed else ""))  # fmt: skip
    return gm


PASS = BuiltinPass("eliminate_dead_code", eliminate_dead_code)
