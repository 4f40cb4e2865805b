"""The public functions, each a short composition of the pipeline stages."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
import torch.fx

from fxgen._build import build_module
from fxgen._errors import Location, WeightsError
from fxgen._policy import DEFAULT_POLICY, Policy
from fxgen._reader import read_document
from fxgen._spec import Spec
from fxgen._to_spec import graph_module_to_spec
from fxgen._validate import validate_data, validate_document

__all__ = ["load", "load_spec", "policy_for", "to_spec", "validate"]

SpecLike = Spec | str | Path | dict[str, Any]


def policy_for(allow: Iterable[str] | Policy | None) -> Policy:
    """``allow=`` as the API takes it -> a Policy (the default when None)."""
    if allow is None:
        return DEFAULT_POLICY
    if isinstance(allow, Policy):
        return allow
    if isinstance(allow, str):
        allow = [allow]
    return DEFAULT_POLICY.widened(allow)


def load_spec(path: str | Path, *, allow: Iterable[str] | Policy | None = None) -> Spec:
    """Read and fully validate a spec file; raises SpecError listing every problem."""
    return validate_document(read_document(path), policy_for(allow))


def as_spec(spec: SpecLike, policy: Policy) -> Spec:
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, dict):
        return validate_data(spec, policy)
    return validate_document(read_document(spec), policy)


def load(
    spec: SpecLike,
    *,
    weights: str | Path | None = None,
    allow: Iterable[str] | Policy | None = None,
) -> torch.fx.GraphModule:
    """A runnable GraphModule for ``spec`` (a path, a dict or a Spec), optionally with weights.

    With ``weights`` (a safetensors file) the model is built on the meta device and the loaded
    tensors are assigned, so no time is spent on random initialisation that would be
    overwritten; the file must match the spec exactly (keys, shapes, dtypes).
    """
    policy = policy_for(allow)
    spec = as_spec(spec, policy)
    if weights is None:
        return build_module(spec, policy)
    from fxgen._weights import check_weights, read_weights

    state = read_weights(weights)
    gm = build_module(spec, policy, device="meta")
    expected = gm.state_dict()
    check_weights(weights, expected, state)
    gm.load_state_dict(state, strict=True, assign=True)
    if any(t.is_meta for t in (*gm.parameters(), *gm.buffers())):
        # Non-persistent buffers are not in the file: build those for real.
        gm = build_module(spec, policy)
        gm.load_state_dict(state, strict=True)
    if any(t.is_meta for t in gm.buffers()):
        raise WeightsError("weights left tensors uninitialised", Location(str(weights)))
    return gm


def to_spec(graph_module: torch.fx.GraphModule, *, name: str | None = None) -> Spec:
    """The spec of a GraphModule (one built by ``fxgen.load`` gives back an equal spec)."""
    return graph_module_to_spec(graph_module, name=name)


def validate(path: str | Path, *, allow: Iterable[str] | Policy | None = None) -> Spec:
    """Check a spec file; the same as ``load_spec`` (the name the CLI command uses)."""
    return load_spec(path, allow=allow)
