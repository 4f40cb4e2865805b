"""Build stage: a validated Spec -> a ``torch.fx.Graph`` and a runnable ``GraphModule``.

Everything is done with torch.fx's own API: ``Graph.create_node`` for the nodes, a
``GraphModule`` whose attributes live at the spec's dotted paths (so ``state_dict()`` keys are
exactly those paths). The GraphModule remembers the declarations it was built from in
``gm.meta["fxgen"]`` so ``to_spec`` can give back constructor calls and initialisers unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import torch
import torch.fx
from torch.overrides import TorchFunctionMode

from fxgen import _fx_fixes  # noqa: F401  (torch.fx must quote every path it writes)
from fxgen._errors import SpecError
from fxgen._policy import DEFAULT_POLICY, Policy
from fxgen._spec import NO_DEFAULT, BufferSpec, ModuleSpec, ParameterSpec, Spec
from fxgen._tensors import make_tensor
from fxgen._tree import construction_order, declaration_order
from fxgen._values import decode, decode_kwargs

__all__ = [
    "META_KEY",
    "NO_TENSORS",
    "SMALL_MODULE",
    "TARGET_KEY",
    "build_graph",
    "build_module",
    "construct",
    "construct_call",
    "construct_declared",
    "construction_plan",
    "meta_device",
    "same_random_state",
    "set_attr_path",
    "tensors_in",
]

META_KEY = "fxgen"
TARGET_KEY = "fxgen_target"


def build_graph(spec: Spec, policy: Policy = DEFAULT_POLICY) -> torch.fx.Graph:
    """The spec's nodes as a torch.fx Graph (no module attached)."""
    graph = torch.fx.Graph()
    env: dict[str, torch.fx.Node] = {}
    for index, node in enumerate(spec.nodes):
        kwargs = decode_kwargs(node.kwargs, env.__getitem__)
        args: tuple[Any, ...] = tuple(decode(node.args, env.__getitem__))
        type_expr = policy.resolve_type(node.type)[0] if node.type is not None else None
        if node.op == "placeholder":
            target: Any = node.name
            if node.default is not NO_DEFAULT:
                args = (decode(node.default, env.__getitem__),)
        elif node.op == "output":
            target = "output"
        elif node.op == "call_function":
            assert node.target is not None
            target = policy.resolve_function(node.target)
        else:
            target = node.target
        created = graph.create_node(node.op, target, args, kwargs, name=node.name, type_expr=type_expr)
        if node.name is not None and created.name != node.name:
            raise SpecError.at(
                spec.document.locate(("nodes", index, "name")) if spec.document else _nowhere(spec),
                f"node name {node.name!r} was already taken by an earlier unnamed node; "
                "give that node an explicit name",
            )
        if node.op == "call_function":
            created.meta[TARGET_KEY] = node.target  # the spelling, for to_spec (F.conv2d is torch.conv2d)
        env[created.name] = created
    return graph


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


def construction_plan(
    modules: Iterable[str], parameters: Iterable[str], buffers: Iterable[str]
) -> list[tuple[str, str]]:
    """``(table, path)`` in the order the generated class's ``__init__`` creates them
    (``_tree.construction_order``); a spec without dotted paths keeps its declaration order,
    which is that order too."""
    modules, parameters, buffers = list(modules), list(parameters), list(buffers)
    if any("." in path for paths in (modules, parameters, buffers) for path in paths):
        order = construction_order(modules, parameters, buffers)
        if order is not None:
            return order
    return declaration_order(modules, parameters, buffers)


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


def construct_call(
    cls: type, args: list[Any], kwargs: dict[str, Any], device: torch.device | str | None
) -> torch.nn.Module:
    """``cls(*args, **kwargs)`` from encoded (validated) arguments, on ``device``; the one
    constructor call validation and the build share, so both build a module the same way."""
    decoded = decode(args, _no_ref)
    decoded_kwargs = decode_kwargs(kwargs, _no_ref)
    if device is None:
        module: torch.nn.Module = cls(*decoded, **decoded_kwargs)
        return module
    with meta_device() if torch.device(device).type == "meta" else torch.device(device):
        module = cls(*decoded, **decoded_kwargs)
    return module


SMALL_MODULE = 1 << 14
"""Modules with at most this many parameter and buffer elements are cheaper to build for real
than on the meta device: initialising a few thousand numbers (~3 ns each) costs less than
running every torch call of the constructor through the meta device's Python dispatch (about
100 us for a small layer)."""


_VALUE_FILLS = frozenset(
    {
        "normal_",
        "uniform_",
        "erfinv_",
        "exponential_",
        "log_normal_",
        "cauchy_",
        "geometric_",
        "bernoulli_",
        "random_",
    }
)


def skip_meta_fill(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The meta tensor a random-filling call would fill (so the call can be skipped), or None."""
    if getattr(func, "__name__", None) in _VALUE_FILLS:
        # Tensor.normal_(t, ...) passes it first; torch.nn.init.normal_(tensor=t) by name.
        target = args[0] if args else kwargs.get("tensor", kwargs.get("self"))
        if isinstance(target, torch.Tensor) and target.is_meta:
            return target
    return None


class SkipMetaFills(TorchFunctionMode):
    """Make random initialisation of meta tensors a no-op.

    Meta tensors have no values, so these calls do nothing anyway -- but several (``normal_``,
    used by nn.Embedding and MultiheadAttention) run Python meta kernels whose first call
    imports torch's compiler stack, about 1.5 s. Only value-filling methods are skipped;
    anything that changes shape, dtype or ``requires_grad`` still runs.
    """

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        return _skip_fill_or(func, args, kwargs or {}, lambda: func(*args, **(kwargs or {})))


def _skip_fill_or(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], call: Any) -> Any:
    skipped = skip_meta_fill(func, args, kwargs)
    return call() if skipped is None else skipped


def meta_device() -> contextlib.AbstractContextManager[Any]:
    """``torch.device("meta")`` plus :class:`SkipMetaFills`, as one torch-function mode when
    torch's device context can be extended (every torch call in a constructor goes through
    each mode in Python, so one mode instead of two saves a sixth of a construction)."""
    if _MetaDevice is None:
        return _stacked_meta_device()
    return _MetaDevice(torch.device("meta"))


@contextlib.contextmanager
def _stacked_meta_device() -> Iterator[None]:
    with torch.device("meta"), SkipMetaFills():
        yield


try:
    from torch.utils._device import DeviceContext as _DeviceContext

    class _MetaDevice(_DeviceContext):
        def __torch_function__(
            self,
            func: Any,
            types: Any,
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            return _skip_fill_or(func, args, kwargs or {}, lambda: super(_MetaDevice, self).__torch_function__(func, types, args, kwargs))

except ImportError:  # pragma: no cover - a torch without the private device context
    _MetaDevice = None  # type: ignore[assignment, misc]


@contextlib.contextmanager
def same_random_state() -> Iterator[None]:
    """Leave the global random generator as it was, whatever the block draws (building a module
    for a check or with loaded weights must not shift what the user's next draws are)."""
    state = torch.random.get_rng_state()
    try:
        yield
    finally:
        torch.random.set_rng_state(state)


NO_TENSORS: frozenset[type] = frozenset({int, float, str, bool, complex, type(None), torch.dtype, torch.device})
"""Types of attribute values that cannot hold a tensor (skipped without a walk)."""


def tensors_in(value: Any) -> Iterator[torch.Tensor]:
    """The tensors in a plain attribute value (a tensor, or tuples, lists and dicts of them)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from tensors_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item)


def set_attr_path(root: torch.nn.Module, path: str, value: Any, *, persistent: bool = True) -> None:
    """Put ``value`` at dotted ``path`` under ``root``, creating plain container modules."""
    *parents, leaf = path.split(".")
    owner = root
    for part in parents:
        child = owner._modules.get(part)
        if child is None:
            child = torch.nn.Module()
            owner.add_module(part, child)
        owner = child
    if isinstance(value, torch.nn.Module):
        owner.add_module(leaf, value)
    elif isinstance(value, torch.nn.Parameter):
        owner.register_parameter(leaf, value)
    else:
        owner.register_buffer(leaf, value, persistent=persistent)


@contextlib.contextmanager
def _located(spec: Spec, table: str, path: str | None, what: str) -> Iterator[None]:
    """Constructors and allocations fail on what validation cannot see (memory, devices): report
    them as a SpecError at the declaration instead of letting torch's exception escape."""
    try:
        yield
    except Exception as exc:
        key = (table,) if path is None else (table, path)
        where = spec.document.locate(key) if spec.document else _nowhere(spec)
        text = str(exc).strip().splitlines()
        subject = "" if path is None else f" {path!r}"
        raise SpecError.at(where, f"{what}{subject}: {type(exc).__name__}: {text[0] if text else ''}"[:400]) from exc


def _no_ref(name: str) -> Any:
    raise AssertionError(f"unexpected reference %{name}")


def _nowhere(spec: Spec) -> Any:
    from fxgen._errors import Location

    return Location(f"<spec {spec.name}>")
