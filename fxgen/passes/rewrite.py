"""``rewrite``: torch.fx's ``subgraph_rewriter`` with a pattern and a replacement that are small
specs; each match is reported at the spec node it was anchored at."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch.fx
from torch.fx import subgraph_rewriter

from fxgen.check.passes import CheckBody, PassArguments, is_body
from fxgen.passes.bodies import body_module
from fxgen.passes.context import PassContext
from fxgen.passes.registry import BuiltinPass
from fxgen.read.yaml_events import JsonPath

__all__ = ["PASS", "rewrite"]


def rewrite(gm: torch.fx.GraphModule, args: Mapping[str, Any], context: PassContext) -> torch.fx.GraphModule:
    pattern = body_module(args["pattern"], context.policy, "Pattern")
    replacement = body_module(args["replacement"], context.policy, "Replacement")
    matches = subgraph_rewriter.replace_pattern_with_filters(gm, pattern, replacement)
    for match in matches:
        matched = [n.name for p, n in match.nodes_map.items() if p.op not in ("placeholder", "output")]
        context.note(f"rewrite matched {', '.join(matched)}; replaced by "
                     f"{', '.join(n.name for n in match.replacements) or 'its inputs'}",
                     context.locate_node(matched[0] if matched else match.anchor.name))  # fmt: skip
    if not matches:
        context.note("rewrite: the pattern matched nothing")
    gm.recompile()
    return gm


def _check(checker: Any, at: JsonPath, args: Mapping[str, Any], body: CheckBody | None) -> None:
    for key in ("pattern", "replacement"):
        if key in args and is_body(checker, (*at, key), args[key]) and body is not None:
            body((*at, key), args[key])


_BOTH = frozenset({"pattern", "replacement"})
PASS = BuiltinPass("rewrite", rewrite, PassArguments(_BOTH, _BOTH, _check))
