"""Assemble stage: a validated Spec -> a runnable ``torch.fx.GraphModule``.

The graph comes from ``fxgen.construct.graph``, each module and tensor from
``fxgen.construct.modules`` and ``.tensors``; this module puts them together at the spec's
dotted paths, in the order the generated class's ``__init__`` draws from the random generator,
so that ``state_dict()`` keys are exactly those paths and a seeded build matches the generated
class. In format 2, declarations are first made concrete with the class's argument values
(``fxgen.spec.resolve``), and a block is a GraphModule of its own, named after its class, built
by the same function. The GraphModule remembers the declarations it was built from in
``gm.meta["fxgen"]`` so ``to_spec`` can give back constructor calls and initialisers unchanged.
Each distinct forward torch.fx writes is compiled once per process (``set_graph``), as importing
a generated class compiles its ``forward`` once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import threading
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import torch
import torch.fx
import torch.fx.graph as fx_graph
import torch.fx.graph_module as fx_graph_module
from torch.fx.experimental import _config as fx_config
from torch.fx.graph import PythonCode

from fxgen._errors import SpecError
from fxgen.assemble.modes import Case, ModeGraphModule, case_envs, mode_graph_module
from fxgen.construct.graph import build_graph
from fxgen.construct.modules import construct_call, initialise, set_attr_path
from fxgen.construct.tensors import make_tensor
from fxgen.policy.policy import DEFAULT_POLICY, Policy
from fxgen.spec.expr import shown as expr_shown
from fxgen.spec.model import BufferSpec, Item, ModuleSpec, Node, ParameterSpec, Spec, plain_nodes
from fxgen.spec.resolve import (
    NodesError,
    bind,
    cases,
    declared,
    expand_nodes,
    has_arguments,
    needs_resolution,
    spec_functions,
    substitute,
    substitute_declaration,
    substitute_init,
    tested_inputs,
    with_values,
)
from fxgen.spec.tree import construction_plan, declaration_order

__all__ = ["META_KEY", "Builder", "Declarations", "build_module", "default_instance", "instance_spec"]


META_KEY = "fxgen"


class Builder:
    """How ``build_module`` makes what a spec declares: every module and tensor on ``device``,
    or, with ``placement``, each tensor where ``placement(table, declaration)`` says. With
    ``record``, each module made on the meta device is remembered with a way to make it again
    for real (``recipes``, by the module's id): loading weights builds everything on the meta
    device and rebuilds for real only the modules holding tensors the file does not carry."""

    def __init__(
        self,
        policy: Policy = DEFAULT_POLICY,
        device: torch.device | str | None = None,
        *,
        placement: Callable[[str, ParameterSpec | BufferSpec], torch.device | str | None]
        | None = None,
        record: bool = False,
    ) -> None:
        self.policy = policy
        self.device = device
        self.placement = placement
        self.recipes: dict[int, Callable[[], torch.nn.Module]] | None = {} if record else None
        # The code torch.fx generated for a block's graph, by its nodes: every instance of a block
        # class has the same graph (built from the same nodes with the same policy in this build).
        self.codes: dict[int, tuple[list[Any], PythonCode]] = {}

    def construct_validated(self, path: str, entry: dict[str, Any], cls: type) -> torch.nn.Module:
        """What validation for a load constructs (a format-1 declaration as data, its class
        resolved), made as ``module`` would make it."""
        args, kwargs, inits = entry.get("args", []), entry.get("kwargs", {}), entry.get("init")
        module = initialise(construct_call(cls, args, kwargs, self.device), inits)
        if self.recipes is not None:
            self.recipes[id(module)] = lambda: initialise(construct_call(cls, args, kwargs, None), inits)
        return module

    def tensor(self, table: str, declared: ParameterSpec | BufferSpec) -> torch.Tensor:
        device = self.placement(table, declared) if self.placement is not None else self.device
        return make_tensor(declared, device=device)

    def module(self, entry: ModuleSpec, spec: Spec) -> torch.nn.Module:
        """The module ``entry`` declares (arguments concrete): a block of ``spec`` as a
        GraphModule, any other class by its constructor, module values made first."""
        if entry.cls in spec.classes:
            return initialise(build_block(spec, entry, self), entry.init)
        cls = self.policy.resolve_module_class(entry.cls)
        values: list[torch.nn.Module] = []

        def make_value(decl: dict[str, Any]) -> torch.nn.Module:
            values.append(self.module(ModuleSpec.from_data(decl), spec))
            return values[-1]

        maker = make_value if has_arguments(entry.args) or has_arguments(entry.kwargs) else None
        module = initialise(construct_call(cls, entry.args, entry.kwargs, self.device, make_module=maker), entry.init)
        if self.recipes is not None:
            again = iter(values)  # made for real again, the module values it was given are reused
            self.recipes[id(module)] = lambda: initialise(
                construct_call(cls, entry.args, entry.kwargs, None, make_module=(lambda decl: next(again)) if maker else None),
                entry.init,
            )
        return module


def build_block(spec: Spec, entry: ModuleSpec, builder: Builder) -> torch.fx.GraphModule:
    """Block ``entry.cls`` of ``spec``, constructed with ``entry``'s (concrete) arguments."""
    values = bind(spec.classes[entry.cls].args, entry.args, entry.kwargs)
    return build_module(spec.block(entry.cls), builder.policy, builder=builder, values=values)


def build_module(
    spec: Spec,
    policy: Policy = DEFAULT_POLICY,
    *,
    device: torch.device | str | None = None,
    builder: Builder | None = None,
    made: Mapping[str, Any] | None = None,
    values: Mapping[str, Any] | None = None,
) -> torch.fx.GraphModule:
    """The runnable GraphModule of a validated spec; ``device="meta"`` skips initialisation.

    ``builder`` decides how modules and tensors are made (``Builder``; one on ``device`` by
    default); failures are reported at the declaration either way. ``made`` holds modules and
    tensors already made for some paths (validation for a load constructs each module once, as
    the load would, and creates the tensors whose random initialisation comes between them):
    those are used as they are, and the rest is created in declaration order, which then draws
    in the generated ``__init__``'s order. Without it, everything is created in that order
    (``construction_plan``). ``values`` are the class's argument values (format 2; the top
    class's defaults when None).
    """
    builder = builder or Builder(policy, device)
    if values is None:
        values = bind(spec.args, [], {})
    concrete = source = spec
    graphs: dict[Case, torch.fx.Graph] | None = None
    if spec.fxgen >= 2:
        with _located(spec, "values" if spec.values else "args", None, "cannot compute the class's values"):
            env = with_values(values, spec.values, spec_functions(spec))
            concrete = concrete_declarations(spec, env)
        written = spec.nodes
        envs = case_envs(spec.nodes)
        if envs:  # one graph per mode and per optional inputs left out (fxgen.assemble.modes)
            modes = {case: _resolved(spec, {**env, **extra}) for case, extra in envs.items()}
            graphs = {case: build_graph(body, policy) for case, (body, _) in modes.items()}
            spec, wheres = modes[(True, frozenset())]
        else:
            spec, wheres = _resolved(spec, env)
    if graphs is None:
        graph = build_graph(spec, policy)
    tables = (concrete.modules, concrete.parameters, concrete.buffers)
    order = construction_plan(*tables) if made is None else declaration_order(*tables)
    made = dict(made or {})  # path -> module or tensor (a path is declared in one table only)
    # Created in the generated __init__'s order of what draws from the random generator, ...
    for table, path in order:
        if path in made:
            continue
        if table == "modules":
            with _located(spec, "modules", path, "cannot build module"):
                made[path] = builder.module(concrete.modules[path], spec)
        else:
            declared = (
                concrete.parameters[path] if table == "parameters" else concrete.buffers[path]
            )
            with _located(spec, table, path, f"cannot create {table[:-1]}"):
                made[path] = builder.tensor(table, declared)
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
    if spec.fxgen >= 2 and spec.nodes is not written:
        for body, where, mode_env in (
            [(spec, wheres, env)] if graphs is None else [(*modes[c], {**env, **envs[c]}) for c in modes]
        ):
            _check_targets(body, where, root, mode_env)
    if graphs is None:
        gm = _graph_module(spec, root, graph, policy, builder if policy is builder.policy else None)
    else:
        gm = _mode_graph_module(spec, root, graphs, _optional(spec.nodes, tested_inputs(written)))
    if spec.doc is not None:
        type(gm).__doc__ = spec.doc
    gm.meta[META_KEY] = Declarations(spec, dict(values), source)
    if spec.fxgen >= 2 and spec.nodes is not written:  # resolved: remember the items as written
        gm.meta[META_KEY].written, gm.meta[META_KEY].code = written, gm.code
        bodies = [(spec, wheres)] if graphs is None else list(modes.values())
        gm.meta[META_KEY].wheres = {node.name: where for body, at in bodies
                                    for node, where in zip(plain_nodes(body.nodes), at, strict=True) if node.name}  # fmt: skip
    return gm


_STATE = ("_parameters", "_buffers", "_non_persistent_buffers_set", "_modules")


def _graph_module(
    spec: Spec,
    root: torch.nn.Module,
    graph: torch.fx.Graph,
    policy: Policy,
    builder: Builder | None = None,
) -> torch.fx.GraphModule:
    """A GraphModule running ``graph`` (built from ``spec.nodes`` with ``policy``) whose
    attributes are exactly ``root``'s, in its order.

    It is made empty (torch.fx's own constructor), given the graph while it holds no submodule,
    then ``root``'s whole state. ``GraphModule(root, graph)`` would copy the attributes the nodes
    use only for that state to replace them, and setting a graph recompiles every GraphModule
    below (a format-2 block once per level above it) although their graphs have not changed.
    The code torch.fx generates for the graph is generated once per distinct nodes and policy:
    a block's later instances in one build reuse the first's (``Builder.codes``, by identity),
    and later builds of the same nodes reuse it too (``_generated``, by content). The graph's own
    problems are reported at the nodes.
    """
    known = builder.codes.get(id(spec.nodes)) if builder is not None else None
    code = known[1] if known is not None and known[0] is spec.nodes else None
    key = _nodes_key(spec, policy) if code is None else None
    if key is not None:
        code = _generated.get(key)
    gm = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph(), class_name=spec.name)
    with _located(spec, "nodes", None, "torch.fx cannot compile the graph"):
        made = set_graph(gm, graph, code)
    if made is not None:
        if builder is not None and spec.scope[:1] == ("classes",):
            builder.codes[id(spec.nodes)] = (spec.nodes, made)
        if key is not None and code is None:
            _generated.put(key, made, len(key[1]) + len(made.src))
    vars(gm).update({name: vars(root)[name] for name in _STATE})
    return gm


def _mode_graph_module(
    spec: Spec, root: torch.nn.Module, graphs: dict[Case, torch.fx.Graph], optional: tuple[tuple[str, int | None], ...]
) -> ModeGraphModule:
    """``_graph_module`` for a class whose graph depends on the mode or on the optional inputs a
    call gives: a ``ModeGraphModule`` with each case's graph compiled once, in train mode (a new
    module's)."""
    gm = mode_graph_module({mode: g for (mode, absent), g in graphs.items() if not absent}, spec.name, optional)
    for (mode, absent), graph in graphs.items():
        which = f"{'train' if mode else 'eval'} mode" + (f" without {', '.join(sorted(absent))}" if absent else "")
        with _located(spec, "nodes", None, f"torch.fx cannot compile the graph of {which}"):
            set_graph(gm, graph, swap=True)
        gm.compiled(mode, absent)
    vars(gm).update({name: vars(root)[name] for name in _STATE})
    gm.use_mode(gm.training)
    return gm


def _optional(nodes: list[Item], tested: list[str]) -> tuple[tuple[str, int | None], ...]:
    """Each tested input with its position among ``forward``'s (None after a ``*args``)."""
    positions: dict[str, int | None] = {}
    variadic = False
    for k, node in enumerate(n for n in nodes if isinstance(n, Node) and n.op == "placeholder"):
        variadic = variadic or str(node.target or node.name).startswith("*")
        positions[str(node.name)] = None if variadic else k
    return tuple((name, positions.get(name)) for name in tested)


def _nodes_key(spec: Spec, policy: Policy) -> tuple[Any, ...] | None:
    """What the code torch.fx generates for ``build_graph(spec, policy)`` depends on: the nodes'
    content and the top class's ``checks:`` with the shapes they check (``build_graph`` makes
    them a node; pickled: equal bytes, equal nodes, however the Spec was made or edited since), the
    policy that resolved their targets and types (by identity: each policy memoises its
    resolutions, so one policy resolves one name to one object), the builtins torch.fx's code
    generation knows and the environment switch that puts node metadata in the code. None when
    the nodes do not pickle (a Spec made in memory holding other objects): no reuse."""
    checked = None if spec.checks is None or spec.scope else (spec.checks, [(n, i.shape) for n, i in spec.inputs.items()])
    try:
        nodes = pickle.dumps((spec.nodes, checked), protocol=5)  # (the check of ``checks:`` is a node too)
    except Exception:
        return None
    return (_PolicyRef(policy), nodes, len(fx_graph._custom_builtins), os.environ.get("FX_GRAPH_SHOW_META"))


class _PolicyRef:
    """A policy in a cache key by identity, without keeping it alive (a load with an allow list
    makes a policy of its own each time: its entries simply age out)."""

    __slots__ = ("_hash", "ref")

    def __init__(self, policy: Policy) -> None:
        self.ref = weakref.ref(policy)
        self._hash = id(policy)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _PolicyRef) and self.ref() is not None and self.ref() is other.ref()


def set_graph(
    gm: torch.fx.GraphModule, graph: torch.fx.Graph, code: PythonCode | None = None, *, swap: bool = False
) -> PythonCode | None:
    """``gm.graph = graph`` for a GraphModule with no GraphModule below it, compiling the code
    torch.fx writes for ``graph`` once per process; returns that code (None where torch.fx's
    own ``recompile`` ran).

    This is torch.fx's ``recompile`` with one step memoised: ``compile`` of the source text,
    keyed on that full text (and the code fields that name its file), to the module-level code
    object (``_compiled``). Everything else runs on every call, as torch.fx runs it: the source
    is generated from this graph (or is ``code``, what torch.fx generated for an identical
    graph), and the cached code is executed in a copy of this graph's own globals, so the
    ``def`` makes a new ``forward`` bound to exactly the objects this graph calls, with its
    defaults and annotations evaluated afresh; a stale function or global can never be served.
    Graphs torch.fx compiles in another way (pytree or custom code generation, profiler
    metadata) take ``recompile`` itself, as does any later ``gm.recompile()``. With ``swap``,
    ``gm`` swaps between graphs it compiles itself (``fxgen.assemble.modes``): the GraphModules
    below it are compiled already and are left alone.
    """
    if (
        type(graph._codegen) is not _PLAIN_CODEGEN
        or fx_config.enrich_profiler_metadata
        or (
            not swap
            and (
                type(gm).recompile is not torch.fx.GraphModule.recompile
                or any(isinstance(m, torch.fx.GraphModule) for m in gm.children())
            )
        )
    ):
        gm.graph = graph  # torch.fx's own setter and recompile
        return None
    gm._graph = graph  # what the graph setter does before it recompiles
    graph.owning_module = gm
    if code is None:
        code = graph.python_code(root_module="self", record_func=False)
    gm._code = code.src
    gm._lineno_map = None if code._lineno_map is None else dict(code._lineno_map)
    gm._prologue_start = code._prologue_start
    fields: dict[str, Any] = getattr(graph, "_co_fields", None) or {}
    namespace = dict(code.globals)  # torch.fx's _method_from_src: a copy per function
    exec(_compiled(code.src, code.globals, fields), namespace)
    type(gm).forward = namespace.pop("forward")  # __call__ and _wrapped_call: set by the constructor
    return code


_PLAIN_CODEGEN = torch.fx.graph.CodeGen
_CODE_BUDGET = 2**25  # characters of source (and key) a cache keeps (least recently used goes first)
_Value = TypeVar("_Value")


class _Cache(Generic[_Value]):
    """A thread-safe least-recently-used map holding at most ``budget`` characters of keys and
    values (each entry's size given when it is put)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[Any, tuple[_Value, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: Any) -> _Value | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: Any, value: _Value, size: int) -> None:
        if size > self.budget:
            return
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = (value, size)
            self._size += size
            while self._size > self.budget:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._size -= dropped


_code_cache: _Cache[types.CodeType] = _Cache(_CODE_BUDGET)  # (source, code fields) -> compiled
_generated: _Cache[PythonCode] = _Cache(_CODE_BUDGET)  # _nodes_key -> what torch.fx generated


def _compiled(src: str, globals_: dict[str, Any], fields: dict[str, Any]) -> types.CodeType:
    """``compile`` of torch.fx's source ``src`` as ``_exec_with_source`` does it (the text
    registered for tracebacks and ``inspect`` under the file name it is compiled with), once per
    distinct ``(src, fields)``: a code object depends on nothing else (the globals it runs with
    are given to ``exec``)."""
    key = (src, tuple(sorted(fields.items())))
    code = _code_cache.get(key)
    if code is None:
        filename = fx_graph_module._loader.cache(src, globals_, fields)
        code = compile(src, filename, "exec", dont_inherit=True)
        _code_cache.put(key, code, len(src))
    return code


class Declarations:
    """What ``to_spec`` needs to give back a spec's declarations verbatim: the Spec (for a block,
    the whole spec's view of it; its nodes this instance's plain graph), the argument values it
    was built with, the spec as written (``source``: with the modules declared on a condition
    this instance leaves out) and the class's node items as written (``written``: with its
    conditionals and repeats, which one instance's graph cannot give back)."""

    def __init__(self, spec: Spec, values: dict[str, Any], source: Spec | None = None) -> None:
        self.spec = spec  # for a class with conditionals or repeats, this instance's (resolved)
        self.source = source if source is not None else spec
        self.values = values
        # the node list as written (conditionals, repeats) and the code of the graph it gave,
        # when it was resolved: a graph no pass changed since gives the items back
        self.written: list[Item] | None = None
        self.code: str | None = None
        # where each node of a resolved graph (of any mode) is written, by its name
        self.wheres: dict[str, tuple[str | int, ...]] | None = None
        self.modules = dict(spec.modules)
        self.parameters = dict(spec.parameters)
        self.buffers = dict(spec.buffers)

    def __deepcopy__(self, memo: dict[int, Any]) -> Declarations:
        return self  # immutable in practice; GraphModule deep-copies its meta

    def written_at(self, name: str) -> tuple[str | int, ...] | None:
        """Where the class writes the node ``name`` of this instance's graph (a path in its part of
        the spec, located by ``spec.locate``); None for a name no node has."""
        if self.wheres is not None:
            return self.wheres.get(name)
        at = [i for i, node in enumerate(self.spec.nodes) if isinstance(node, Node) and node.name == name]
        return ("nodes", at[0]) if at else None


def instance_spec(spec: Spec, env: Mapping[str, Any]) -> Spec:
    """``spec`` with its nodes resolved for one instance (``env``: its argument and named
    values): conditionals taken, repeats unrolled, aliases gone (``fxgen.spec.resolve``); the
    same Spec when its graph does not depend on them. What cannot be resolved is a SpecError
    at the conditional or repeat."""
    return _resolved(spec, env)[0]


def _check_targets(spec: Spec, wheres: list[tuple[str | int, ...]], root: torch.nn.Module, env: Mapping[str, Any]) -> None:
    """Each target of a resolved graph is in the module built for it: validation checks the
    instances the spec's defaults make, a load with other arguments may unroll a loop past the
    end of a list (``m.{i}`` for i up to the count, with fewer items)."""
    for node, where in zip(plain_nodes(spec.nodes), wheres, strict=True):
        if node.op not in ("call_module", "get_attr") or node.target is None:
            continue
        value: Any = root
        for part in node.target.split("."):
            value = getattr(value, part, _MISSING)
            if value is _MISSING:
                shown = expr_shown(env)
                raise SpecError.at(spec.locate((*where, "target")), f"{node.op} target {node.target!r} is not in "
                                   f"this instance (with {shown}): a loop or condition reaches past what the "
                                   "declarations build for these arguments")  # fmt: skip


_MISSING: Any = object()


def default_instance(spec: Spec) -> tuple[Spec, list[int | None]]:
    """``spec`` resolved at its default arguments (what ``fxgen show`` and shape comments look
    at; in eval mode where its graph depends on the mode), and for each of its nodes the position of the top-level item it is (None for a node
    from inside a conditional or repeat)."""
    if spec.fxgen < 2 or not (needs_resolution(spec.nodes) or any(m.when is not None for m in spec.modules.values())):
        return spec, list(range(len(spec.nodes)))
    with _located(spec, "values" if spec.values else "args", None, "cannot compute the class's values"):
        env = with_values(bind(spec.args, [], {}), spec.values, spec_functions(spec))
    env.update(cases(spec.nodes)[0])  # a graph that depends on the mode or the call: eval, every input given
    instance, wheres = _resolved(spec, env)
    return instance, [int(where[1]) if len(where) == 2 else None for where in wheres]


def _resolved(spec: Spec, env: Mapping[str, Any]) -> tuple[Spec, list[tuple[str | int, ...]]]:
    """``spec`` with its nodes resolved with ``env``, and where each node is written; a module
    declared on a condition that does not hold for this instance is left out."""
    absent = [path for path, m in spec.modules.items() if m.when is not None and not declared(m.to_dict(), env)]
    if absent:
        spec = dataclasses.replace(spec, modules={p: m for p, m in spec.modules.items() if p not in absent})
    if not needs_resolution(spec.nodes):
        return spec, [("nodes", i) for i in range(len(spec.nodes))]
    try:
        flat = expand_nodes([item.to_dict() for item in spec.nodes], env)
    except NodesError as exc:
        raise SpecError.at(spec.locate(exc.path), str(exc)) from None
    nodes: list[Item] = [Node(**data) for data, _ in flat]
    return dataclasses.replace(spec, nodes=nodes), [where for _, where in flat]


def concrete_declarations(spec: Spec, values: Mapping[str, Any]) -> Spec:
    """``spec``'s declarations with its arguments' ``values`` substituted (format 2)."""
    modules = {
        path: ModuleSpec.from_data(substitute_declaration(m.to_dict(), values))
        for path, m in spec.modules.items()
        if m.when is None or declared(m.to_dict(), values)
    }
    parameters = {path: _concrete_tensor(p, values) for path, p in spec.parameters.items()}
    buffers = {path: _concrete_tensor(b, values) for path, b in spec.buffers.items()}
    return Spec(name=spec.name, nodes=spec.nodes, modules=modules, parameters=parameters, buffers=buffers,
                fxgen=spec.fxgen, classes=spec.classes, functions=spec.functions, document=spec.document,
                scope=spec.scope)  # fmt: skip


def _concrete_tensor(declared: _Tensor, values: Mapping[str, Any]) -> _Tensor:
    if declared.shape is None or not (
        has_arguments(declared.shape) or has_arguments(declared.init)
    ):
        return declared
    return dataclasses.replace(
        declared,
        shape=substitute(declared.shape, values),
        init=substitute_init(declared.init, values),
    )


_Tensor = TypeVar("_Tensor", ParameterSpec, BufferSpec)


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
        raise SpecError.at(
            where, f"{what}{subject}: {type(exc).__name__}: {text[0] if text else ''}"[:400]
        ) from exc
