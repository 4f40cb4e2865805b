"""A pass's small spec (``{nodes: [...]}``: a pattern, a replacement, a rule) as a GraphModule."""

from __future__ import annotations

from typing import Any

import torch.fx

from fxgen.assemble.module import build_module
from fxgen.check.validate import validate_data
from fxgen.policy.policy import Policy

__all__ = ["body_module"]


def body_module(body: dict[str, Any], policy: Policy, name: str) -> torch.fx.GraphModule:
    """``body`` (already checked where it was written) validated and built: a graph of functions
    and methods, no modules or tensors."""
    spec = validate_data({"fxgen": 1, "name": name, "nodes": body["nodes"]}, policy, path=f"<{name}>")
    return build_module(spec, policy)
