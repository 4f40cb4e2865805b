"""``fxgen.load``: a spec (a path, a dict or a validated Spec) -> a runnable GraphModule, with
or without a weights file.

It composes the stages below it: read (the file, the weights), check (validation, which
constructs each module once the way this load builds it), construct and build. The random
generator draws in the generated class's order, so a seeded load and the generated class hold
the same values.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
import torch.fx

from fxgen._errors import Location, WeightsError
from fxgen.assemble.module import build_module, construct, construct_declared
from fxgen.assemble.weights import assign_weights, has_meta_tensors
from fxgen.check.checker import Construct, MakeTensor
from fxgen.check.validate import SpecLike, parse_data, validate_for_load
from fxgen.construct.modules import construct_call, same_random_state, set_attr_path
from fxgen.construct.tensors import make_tensor
from fxgen.policy.policy import Policy, policy_for
from fxgen.read.reader import read_document
from fxgen.read.weights import read_weights
from fxgen.spec.model import BufferSpec, ModuleSpec, ParameterSpec, Spec

__all__ = ["load"]


def _validated(
    spec: SpecLike, policy: Policy, construct: Construct, make_tensor: MakeTensor | None = None
) -> tuple[Spec, dict[str, Any] | None]:
    """``as_spec`` for a load: a path or dict is validated with the load's own module
    constructor, and the modules (and tensors) it made come back with the Spec (an already
    validated Spec comes back with None: the build makes everything)."""
    if isinstance(spec, Spec):
        return spec, None
    doc = parse_data(spec) if isinstance(spec, dict) else read_document(spec)
    return validate_for_load(doc, policy, construct, make_tensor)


def load(
    spec: SpecLike,
    *,
    weights: str | Path | None = None,
    allow: Iterable[str] | Policy | None = None,
) -> torch.fx.GraphModule:
    """A runnable GraphModule for ``spec`` (a path, a dict or a Spec), optionally with weights.

    With ``weights`` (a safetensors file) the model is built on the meta device and the loaded
    tensors are assigned, so no time is spent on random initialisation that would be
    overwritten; the file must match the spec exactly (keys, shapes, dtypes). Only what the
    file cannot provide is built for real: non-persistent buffers (and the few modules that
    hold them or plain tensor attributes). The global random generator is left as it was.

    Modules, parameters and buffers draw from the random generator in the order the generated
    class's ``__init__`` creates them, so after ``torch.manual_seed`` a load, a load of the
    validated Spec and the generated class hold the same values. A path or dict is validated by
    constructing each module the way this load builds it (and, where that order puts a random
    tensor between modules, creating that tensor there too); the build keeps what validation
    made, so each module is constructed once.
    """
    policy = policy_for(allow)
    if weights is None:
        with _RandomStateKeptOnError():  # a refused spec draws nothing
            spec, made = _validated(spec, policy, _construct_for_real, _tensor_for_real)
        return build_module(spec, policy, made=made)
    builder = _ModulesForWeights(policy)
    with same_random_state():
        spec, made = _validated(spec, policy, builder.construct)
    state = read_weights(weights)

    def placement(table: str, path: str) -> str | None:
        # Non-persistent buffers are not in the file: those are built for real.
        return None if table == "buffers" and not spec.buffers[path].persistent else "meta"

    with same_random_state():  # loading weights leaves the global generator as it was
        gm = build_module(spec, policy, placement=placement, make_module=builder, made=made)
    left = assign_weights(gm, state, weights)  # checks the whole file first
    for path in builder.on_meta:
        if has_meta_tensors(gm.get_submodule(path), saved=False):
            # Non-persistent buffers or tensor attributes are not in the file: build this module
            # (only this one) for real, and give it the file's tensors too.
            with same_random_state():
                module = construct_declared(spec, path, policy, None)
            prefix = path + "."
            assign_weights(module, {k[len(prefix) :]: t for k, t in state.items() if k.startswith(prefix)}, weights)
            set_attr_path(gm, path, module)
    left = [key for key in left if _still_meta(gm, key)]
    left += [path for path in builder.on_meta if has_meta_tensors(gm.get_submodule(path))]
    if left:
        raise WeightsError(f"weights left tensors uninitialised: {', '.join(left[:5])}", Location(str(weights)))
    return gm


def _construct_for_real(path: str, entry: dict[str, Any], cls: type) -> torch.nn.Module:
    """Validation's constructor for a load without weights: the build's own call. A failing
    one draws nothing: the build tries it again and must draw what it always drew."""
    with _RandomStateKeptOnError():
        return construct_call(cls, entry.get("args", []), entry.get("kwargs", {}), None)


def _tensor_for_real(table: str, entry: dict[str, Any]) -> torch.Tensor:
    """Validation's tensor maker for a load without weights: the build's own ``make_tensor``."""
    return make_tensor(ParameterSpec(**entry) if table == "parameters" else BufferSpec(**entry))


def _still_meta(root: torch.nn.Module, path: str) -> bool:
    owner_path, _, leaf = path.rpartition(".")
    owner = root.get_submodule(owner_path)
    found = owner._buffers.get(leaf)
    if found is None:
        found = owner._parameters.get(leaf)
    return found is not None and found.is_meta


class _ModulesForWeights:
    """Constructs declared modules on the meta device (no memory, no initialisation: a weights
    file replaces their tensors), remembering which ones, so that only those holding tensors the
    file cannot provide are built again for real."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.on_meta: list[str] = []  # paths built on the meta device

    def __call__(self, path: str, entry: ModuleSpec) -> torch.nn.Module:
        self.on_meta.append(path)
        return construct(entry, self.policy, "meta")

    def construct(self, path: str, entry: dict[str, Any], cls: type) -> torch.nn.Module:
        """The same, as validation calls it (the declaration as data, its class resolved)."""
        module = construct_call(cls, entry.get("args", []), entry.get("kwargs", {}), "meta")
        self.on_meta.append(path)
        return module


class _RandomStateKeptOnError:
    """Put the global generator back if the block fails (validation constructing modules for
    real draws from it; a spec it refuses must leave no trace). A class, not a generator-based
    context manager: it is entered once per declared module."""

    def __enter__(self) -> None:
        self.state = torch.random.get_rng_state()

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None:
            torch.random.set_rng_state(self.state)
