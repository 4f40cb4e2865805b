"""Assemble stage: a validated Spec -> a runnable ``torch.fx.GraphModule``.

The graph comes from ``fxgen.construct.graph``, each module and tensor from
``fxgen.construct.modules`` and ``.tensors``; this module puts them together at the spec's
dotted paths, in the order the generated class's ``__init__`` draws from the random generator,
so that ``state_dict()`` keys are exactly those paths and a seeded build matches the generated
class. The GraphModule remembers the declarations it was built from in ``gm.meta["fxgen"]`` so
``to_spec`` can give back constructor calls and initialisers unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
import torch.fx

from fxgen._errors import SpecError
from fxgen.construct.graph import build_graph
from fxgen.construct.modules import construct_call, set_attr_path
from fxgen.construct.tensors import make_tensor
from fxgen.policy.policy import DEFAULT_POLICY, Policy
from fxgen.spec.model import BufferSpec, ModuleSpec, ParameterSpec, Spec
from fxgen.spec.tree import construction_plan, declaration_order

__all__ = ["META_KEY", "build_module", "construct", "construct_declared"]


META_KEY = "fxgen"


Placement = Callable[[str, str], "torch.device | str | None"]
"""``(table, path) -> device``: where ``build_module`` creates a parameter or buffer."""


ModuleMaker = Callable[[str, ModuleSpec], torch.nn.Module]
"""``(path, declaration) -> module``: how ``build_module`` constructs a declared module."""


def build_module(
    spec: Spec,
    policy: Policy = DEFAULT_POLICY,
    *,
    device: torch.device | str | None = None,
    placement: Placement | None = None,
    make_module: ModuleMaker | None = None,
    made: Mapping[str, Any] | None = None,
) -> torch.fx.GraphModule:
    """The runnable GraphModule of a validated spec; ``device="meta"`` skips initialisation.

    Loading weights chooses per declaration instead: ``placement`` the device of each
    parameter and buffer (``table`` is ``"parameters"`` or ``"buffers"``), ``make_module`` the
    construction of each module (failures are reported at the declaration either way).
    ``made`` holds modules and tensors already made for some paths (validation for a load
    constructs each module once, as the load would, and creates the tensors whose random
    initialisation comes between them): those are used as they are, and the rest is created in
    declaration order, which then draws in the generated ``__init__``'s order. Without it,
    everything is created in that order (``construction_plan``).
    """
    graph = build_graph(spec, policy)
    where = placement or (lambda table, path: device)
    tables = (spec.modules, spec.parameters, spec.buffers)
    order = construction_plan(*tables) if made is None else declaration_order(*tables)
    made = dict(made or {})  # path -> module or tensor (a path is declared in one table only)
    # Created in the generated __init__'s order of what draws from the random generator, ...
    for table, path in order:
        if path in made:
            continue
        if table == "modules":
            with _located(spec, "modules", path, "cannot build module"):
                entry = spec.modules[path]
                made[path] = make_module(path, entry) if make_module else construct(entry, policy, device)
        else:
            declared = spec.parameters[path] if table == "parameters" else spec.buffers[path]
            with _located(spec, table, path, f"cannot create {table[:-1]}"):
                made[path] = make_tensor(declared, device=where(table, path))
    # ... then set on a plain module in declaration order (the state_dict's order); the
    # GraphModule is made with the real graph (one code generation, not one for an empty graph
    # and another).
    root = torch.nn.Module()
    for path in spec.modules:
        set_attr_path(root, path, made[path])
    for path, param in spec.parameters.items():
        set_attr_path(root, path, torch.nn.Parameter(made[path], requires_grad=param.requires_grad))
    for path, buffer in spec.buffers.items():
        set_attr_path(root, path, made[path], persistent=buffer.persistent)
    gm = _graph_module(spec, root, graph)
    if spec.doc is not None:
        type(gm).__doc__ = spec.doc
    gm.meta[META_KEY] = _Declarations(dict(spec.modules), dict(spec.parameters), dict(spec.buffers))
    return gm


_STATE = ("_parameters", "_buffers", "_non_persistent_buffers_set", "_modules")


def _graph_module(spec: Spec, root: torch.nn.Module, graph: torch.fx.Graph) -> torch.fx.GraphModule:
    """A GraphModule running ``graph`` whose attributes are exactly ``root``'s, in its order.

    ``GraphModule(root, graph)`` copies only what the nodes use, in node order; its state is
    then replaced by ``root``'s whole tree. Should that copy fail (a Spec that was never
    validated), the attributes go on an empty GraphModule and the graph is set after, which
    reports the graph's own problems as before.
    """
    try:
        gm = torch.fx.GraphModule(root, graph, class_name=spec.name)
    except Exception:
        gm = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph(), class_name=spec.name)
        vars(gm).update({name: vars(root)[name] for name in _STATE})
        with _located(spec, "nodes", None, "torch.fx cannot compile the graph"):
            gm.graph = graph  # setting the graph recompiles forward()
        return gm
    vars(gm).update({name: vars(root)[name] for name in _STATE})
    return gm


class _Declarations:
    """What ``to_spec`` needs to give back a spec's declarations verbatim."""

    def __init__(
        self,
        modules: dict[str, ModuleSpec],
        parameters: dict[str, ParameterSpec],
        buffers: dict[str, BufferSpec],
    ) -> None:
        self.modules = modules
        self.parameters = parameters
        self.buffers = buffers

    def __deepcopy__(self, memo: dict[int, Any]) -> _Declarations:
        return self  # immutable in practice; GraphModule deep-copies its meta


def construct_declared(
    spec: Spec, path: str, policy: Policy, device: torch.device | str | None
) -> torch.nn.Module:
    """The module ``spec`` declares at ``path``; a failing constructor is a located SpecError."""
    with _located(spec, "modules", path, "cannot build module"):
        return construct(spec.modules[path], policy, device)


def construct(entry: ModuleSpec, policy: Policy, device: torch.device | str | None) -> torch.nn.Module:
    """The module a spec declaration builds, on ``device`` (the default device when None)."""
    return construct_call(policy.resolve_module_class(entry.cls), entry.args, entry.kwargs, device)


@contextlib.contextmanager
def _located(spec: Spec, table: str, path: str | None, what: str) -> Iterator[None]:
    """Constructors and allocations fail on what validation cannot see (memory, devices): report
    them as a SpecError at the declaration instead of letting torch's exception escape."""
    try:
        yield
    except Exception as exc:
        key = (table,) if path is None else (table, path)
        where = spec.locate(key)
        text = str(exc).strip().splitlines()
        subject = "" if path is None else f" {path!r}"
        raise SpecError.at(where, f"{what}{subject}: {type(exc).__name__}: {text[0] if text else ''}"[:400]) from exc

