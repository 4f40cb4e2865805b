"""``fxgen.load``: a spec (a path, a dict or a validated Spec) -> a runnable GraphModule, with
or without a weights file.

It composes the stages below it: read (the file, the weights), check (validation, which
constructs each module once the way this load builds it), construct and build. The random
generator draws in the generated class's order, so a seeded load and the generated class hold
the same values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import torch
import torch.fx

from fxgen._errors import Location, SpecError, WeightsError
from fxgen.assemble.module import META_KEY, Builder, build_module
from fxgen.assemble.weights import assign_weights, check_digest, has_meta_tensors
from fxgen.check.arguments import choose
from fxgen.check.checker import Construct, MakeTensor
from fxgen.check.validate import SpecLike, parse_data, validate_for_load
from fxgen.construct.modules import construct_call, initialise, same_random_state, set_attr_path
from fxgen.construct.tensors import make_tensor
from fxgen.policy.policy import Policy, policy_for
from fxgen.read.imports import read_spec
from fxgen.read.reader import Document
from fxgen.read.weights import read_weights
from fxgen.spec.choice import Choice
from fxgen.spec.model import BufferSpec, ParameterSpec, Spec

__all__ = ["load"]


def _validated(
    spec: SpecLike | Document,
    policy: Policy,
    construct: Construct,
    make_tensor: MakeTensor | None = None,
    choice: Choice | None = None,
) -> tuple[Spec, dict[str, Any] | None]:
    """``as_spec`` for a load: a path, dict or read Document is validated with the load's own
    module constructor, and the modules (and tensors) it made come back with the Spec (an
    already validated Spec comes back with None: the build makes everything). ``choice``
    becomes the top class's defaults (checked with them, for a path, dict or Document)."""
    if isinstance(spec, Spec):
        return (choose(spec, choice) if choice else spec), None
    if isinstance(spec, Document):
        doc = spec
    else:
        doc = parse_data(spec) if isinstance(spec, dict) else read_spec(spec)
    return validate_for_load(doc, policy, construct, make_tensor, choice)


def load(
    spec: SpecLike | Document,
    *,
    weights: str | Path | None = None,
    allow: Iterable[str] | Policy | None = None,
    args: Mapping[str, Any] | None = None,
    variant: str | None = None,
) -> torch.fx.GraphModule:
    """A runnable GraphModule for ``spec`` (a path, a dict, a Spec or a read Document), optionally
    with weights.

    With ``weights`` (a safetensors file) the model is built on the meta device and the loaded
    tensors are assigned, so no time is spent on random initialisation that would be
    overwritten; the file must match the spec exactly (keys, shapes, dtypes), and be the file
    the spec was exported with if it records one (``weights_digest``). Only what the
    file cannot provide is built for real: non-persistent buffers (and the few modules that
    hold them or plain tensor attributes). The global random generator is left as it was.

    ``args`` are values for the top class's constructor arguments (format 2); the others keep
    their defaults, as ``Model()`` of the generated class does. ``variant`` names one of the
    spec's ``variants:`` (its values first, then ``args``), as ``Model.<variant>()`` does.

    Modules, parameters and buffers draw from the random generator in the order the generated
    class's ``__init__`` creates them, so after ``torch.manual_seed`` a load, a load of the
    validated Spec and the generated class hold the same values. A format-1 path or dict is
    validated by constructing each module the way this load builds it (and, where that order
    puts a random tensor between modules, creating that tensor there too); the build keeps what
    validation made, so each module is constructed once.
    """
    policy = policy_for(allow)
    choice = Choice.of(variant, args, origin="load(args=...)")
    if weights is None:
        with _RandomStateKeptOnError():  # a refused spec draws nothing
            spec, made = _validated(spec, policy, _construct_for_real, _tensor_for_real, choice)
        return build_module(spec, policy, made=made)

    def placement(table: str, declared: ParameterSpec | BufferSpec) -> str | None:
        # Non-persistent buffers are not in the file: those are built for real.
        return None if table == "buffers" and not cast(BufferSpec, declared).persistent else "meta"

    builder = Builder(policy, "meta", placement=placement, record=True)
    with same_random_state():
        spec, made = _validated(spec, policy, builder.construct_validated, None, choice)
    check_digest(spec, weights)  # the header only, before any tensor is read
    state = read_weights(weights)
    with same_random_state():  # loading weights leaves the global generator as it was
        gm = build_module(spec, policy, builder=builder, made=made)
    assign_weights(gm, state, weights)  # checks the whole file first
    recipes = builder.recipes or {}
    for path, module in list(gm.named_modules()):
        if id(module) in recipes and _holds_unsaved_meta(module, recipes):
            # Non-persistent buffers or tensor attributes are not in the file: build this module
            # (only this one; the modules it was given are kept) for real, with the file's tensors.
            with same_random_state(), _located(spec, path):
                real = recipes[id(module)]()
            prefix = path + "."
            assign_weights(
                real,
                {k[len(prefix) :]: t for k, t in state.items() if k.startswith(prefix)},
                weights,
            )
            set_attr_path(gm, path, real)
    left = _meta_tensors(gm)
    if left:
        raise WeightsError(
            f"weights left tensors uninitialised: {', '.join(left[:5])}", Location(str(weights))
        )
    return gm


def _holds_unsaved_meta(module: torch.nn.Module, recipes: Mapping[int, Any]) -> bool:
    """Whether ``module``'s own part of the tree holds a meta tensor a weights file does not carry
    (submodules made separately, with their own recipes or as blocks, are looked at on their own)."""
    stack = [module]
    while stack:
        sub = stack.pop()
        if has_meta_tensors(sub, saved=False, recurse=False):
            return True
        stack += [c for c in sub.children() if id(c) not in recipes and not _is_block(c)]
    return False


def _is_block(module: torch.nn.Module) -> bool:
    return isinstance(module, torch.fx.GraphModule) and META_KEY in module.meta


def _meta_tensors(root: torch.nn.Module) -> list[str]:
    """Where a tensor is still on the meta device: state-dict names, or module paths for tensors
    kept as plain attributes."""
    left = [name for name, t in (*root.named_parameters(), *root.named_buffers()) if t.is_meta]
    return left or [
        path or "<root>"
        for path, sub in root.named_modules()
        if has_meta_tensors(sub, recurse=False)
    ]


@contextlib.contextmanager
def _located(spec: Spec, path: str) -> Iterator[None]:
    """A module rebuilt for real fails on what the meta build could not see (memory): say where."""
    try:
        yield
    except Exception as exc:
        where = spec.locate(("modules", path) if path in spec.modules else ())
        text = str(exc).strip().splitlines()
        raise SpecError.at(
            where,
            f"cannot build module {path!r}: {type(exc).__name__}: {text[0] if text else ''}"[:400],
        ) from exc


def _construct_for_real(path: str, entry: dict[str, Any], cls: type) -> torch.nn.Module:
    """Validation's constructor for a load without weights: the build's own call. A failing
    one draws nothing: the build tries it again and must draw what it always drew."""
    with _RandomStateKeptOnError():
        return initialise(construct_call(cls, entry.get("args", []), entry.get("kwargs", {}), None), entry.get("init"))


def _tensor_for_real(table: str, entry: dict[str, Any]) -> torch.Tensor:
    """Validation's tensor maker for a load without weights: the build's own ``make_tensor``."""
    return make_tensor(ParameterSpec(**entry) if table == "parameters" else BufferSpec(**entry))


class _RandomStateKeptOnError:
    """Put the global generator back if the block fails (validation constructing modules for
    real draws from it; a spec it refuses must leave no trace). A class, not a generator-based
    context manager: it is entered once per declared module."""

    def __enter__(self) -> None:
        self.state = torch.random.get_rng_state()

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None:
            torch.random.set_rng_state(self.state)
