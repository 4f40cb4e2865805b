"""Shapes, dtypes and FLOPs of every node, from a spec's declared example inputs.

torch.fx's own machinery does the work: the model is built on the meta device, the inputs are
FakeTensors (named dimensions become symbols of a ``ShapeEnv``, so ``batch`` stays ``batch``),
``ShapeProp`` (an ``Interpreter``) runs the graph, and ``torch.utils.flop_counter.FlopCounterMode``
counts each node's floating-point operations. Nothing of the model's size is allocated.

A node that fails with the declared inputs (a ``Linear`` given the wrong number of features) is
a located error: the node, the shapes that met there and torch's own words. ``check_flow`` asks
only that question (``fxgen validate``): the same propagation with each named dimension at its
stand-in size, no symbols and no FLOPs, first on plain meta tensors (``flow``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import logging
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp

from fxgen._errors import Location, SpecError
from fxgen.analysis.flow import flows_on_meta
from fxgen.assemble.module import META_KEY, Declarations, build_module, concrete_declarations
from fxgen.policy.policy import Policy
from fxgen.spec import expr
from fxgen.spec.model import Node, Spec, plain_nodes
from fxgen.spec.resolve import spec_functions, with_values
from fxgen.spec.values import DTYPES, dtype_name

__all__ = ["Analysis", "NodeInfo", "analyse", "check_flow", "owner", "stand_in_sizes"]



@dataclass(frozen=True)
class NodeInfo:
    """One node: its name, what it calls, the module it belongs to, what it produces, its FLOPs."""

    index: int  # in the spec's nodes
    name: str
    op: str
    target: str
    owner: str  # the dotted path of the module it belongs to ("" for the top module)
    value: str  # "float32[batch, 8, 14, 14]", "(float32[2], int)", "int", ...
    flops: int | str  # a count, or an expression in the symbolic dimensions
    users: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()  # the nodes it reads, in order


@dataclass(frozen=True)
class Analysis:
    """What propagating the declared inputs found, node by node, and the model's parameters."""

    nodes: list[NodeInfo]
    flops: int | str
    parameters: dict[str, int] = field(default_factory=dict)  # module or tensor path -> count
    dims: dict[str, int] = field(default_factory=dict)  # symbolic dimension -> the size used

    @property
    def total_parameters(self) -> int:
        return sum(self.parameters.values())

    def by_name(self) -> dict[str, NodeInfo]:
        return {n.name: n for n in self.nodes}


def owner(op: str, target: str) -> str:
    """The module a node belongs to: a module call's own path, an attribute's module."""
    if op == "call_module":
        return target
    if op == "get_attr":
        return target.rpartition(".")[0]
    return ""


def analyse(spec: Spec, policy: Policy, *, origin: Spec | None = None) -> Analysis:
    """Propagate ``spec.inputs`` through the spec's graph (which must declare them). ``origin``
    is the spec ``spec`` was transformed from: a node that fails is then reported where
    ``origin`` declares a node of its name, else at ``origin``'s passes."""
    gm, prop, names, symbols = _propagate(spec, policy, origin, symbolic=True)

    def text(value: Any) -> str:
        return _value_text(value, names)

    graph_nodes = list(gm.graph.nodes)
    infos = []
    for index, (node, declared_node) in enumerate(zip(graph_nodes, plain_nodes(spec.nodes), strict=True)):
        target = declared_node.target if declared_node.op != "output" else "output"
        infos.append(NodeInfo(
            index=index, name=node.name, op=node.op, target=str(target or node.name), value=text(prop.values.get(node)),
            owner=owner(node.op, str(node.target)), flops=_number(prop.flops.get(node, 0), names),
            users=tuple(u.name for u in node.users), inputs=tuple(n.name for n in node.all_input_nodes),
        ))  # fmt: skip
    total = _number(sum((prop.flops.get(n, 0) for n in graph_nodes), 0), names)
    return Analysis(infos, total, _parameters(spec, gm), {d: s.node.hint for d, s in symbols.items()})


def check_flow(spec: Spec, policy: Policy, *, origin: Spec | None = None) -> None:
    """Raise ``analyse``'s located error when ``spec.inputs`` do not flow through its graph:
    ``fxgen validate``'s check, without what only ``analyse``'s readers need. Named dimensions
    are plain integers, their stand-in sizes (no ``ShapeEnv``, no symbolic arithmetic), and no
    FLOPs are counted: 2-13x faster than ``analyse`` on the examples. It runs first on plain meta
    tensors (``flow.flows_on_meta``: no ``FakeTensorMode``, so no TorchDynamo import); only when
    that cannot tell do FakeTensors decide. ``analyse`` propagates its symbols with
    the same sizes as hints, so both meet the same sizes at every node; when this check fails,
    ``analyse`` runs to report the failure with the dimensions named as the spec names them.
    What it cannot see is what only symbols can fail on (an operation torch does not support on
    a symbolic size); the sizes it meets are the same."""
    try:
        _no_inputs(spec)
        hints = stand_in_sizes(spec)
        declared = [([d if isinstance(d, int) else hints[d] for d in shape], dtype) for shape, dtype in _declared(spec)]
        if not flows_on_meta(build_module(spec, policy, device="meta"), declared):
            _propagate(spec, policy, origin, symbolic=False)
    except SpecError:
        analyse(spec, policy, origin=origin)  # the same node fails, its shapes named
        raise  # where it would not, the sized failure stands


def _propagate(
    spec: Spec, policy: Policy, origin: Spec | None, *, symbolic: bool
) -> tuple[torch.fx.GraphModule, _Propagation, dict[Any, Any], dict[str, Any]]:
    """The model on the meta device and the propagation of ``spec.inputs`` through it: named
    dimensions as symbols (``symbolic``: their values named, FLOPs counted) or as their sizes."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    _no_inputs(spec)
    # the graph without the check of ``checks:`` (its nodes are the spec's, one for one): the sizes
    # chosen below meet the checks, and what they check is no shape the graph computes
    gm = build_module(dataclasses.replace(spec, checks=None), policy, device="meta")
    hints = stand_in_sizes(spec)
    # a ShapeEnv (symbols) only when a dimension is named: static shapes need none
    shape_env = _shape_env() if symbolic and hints else None
    fake_mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)
    symbols: dict[str, Any] = {}  # name -> SymInt
    names: dict[Any, Any] = {}  # sympy symbol -> a sympy symbol named as the spec names it

    def size(dim: int | str) -> Any:
        if isinstance(dim, int):
            return dim
        if shape_env is None:
            return hints[dim]
        if dim not in symbols:
            import sympy
            from torch.fx.experimental.symbolic_shapes import DimDynamic

            hint = hints[dim]
            source = _dimension(dim)
            symbol = shape_env.create_symbol(hint, source, dynamic_dim=DimDynamic.DYNAMIC)
            symbols[dim] = shape_env.create_symintnode(symbol, hint=hint, source=source)
            names[symbol] = sympy.Symbol(dim, integer=True, positive=True)
        return symbols[dim]

    args = []
    for shape, dtype in _declared(spec):
        with fake_mode:
            args.append(torch.empty([size(d) for d in shape], dtype=dtype, device="cpu"))
    prop = _Propagation(gm, fake_mode, spec, flops=symbolic)
    try:
        with _quiet():
            prop.run(*args)
    except _NodeFailed as failed:
        raise SpecError.at(*failed.report(_where(spec, origin, failed.index), plain_nodes(spec.nodes)[failed.index],
                                          prop, names)) from None  # fmt: skip
    return gm, prop, names, symbols


def _no_inputs(spec: Spec) -> None:
    if not spec.inputs:
        raise SpecError.at(spec.locate(()), "no example inputs: declare them under `inputs:` "
                           "(`inputs: {x: {shape: [1, 3, 224, 224], dtype: float32}}`)")  # fmt: skip


def _declared(spec: Spec) -> list[tuple[list[int | str], torch.dtype]]:
    """The shape and dtype of each input ``spec.inputs`` declares, in its placeholders' order (a
    placeholder it does not declare has a default: the graph uses it)."""
    declared = []
    for node in plain_nodes(spec.nodes):
        if node.op == "placeholder" and (node.name or "") in spec.inputs:
            given = spec.inputs[node.name or ""]
            declared.append((list(given.shape), DTYPES[given.dtype]))
    return declared


def _shape_env() -> Any:
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    return ShapeEnv(duck_shape=False)


def stand_in_sizes(spec: Spec) -> dict[str, int]:
    """The size each named dimension of ``spec.inputs`` takes while shapes propagate (the hint of
    its symbol), in order of first appearance: distinct primes from 17 up (not 0 or 1, which
    torch specialises on), none equal to an integer written anywhere in the spec.

    A symbol meeting a size it must equal is not an error to torch: it guards on the hint and
    goes on. So the hints must be sizes no correct graph asks for: two names never share one
    (``[batch, 8] + [seq, 8]`` fails), and a name never takes a literal's size (``Linear(19, 4)``
    given ``[batch, width]`` fails rather than passing by luck when ``width`` would be 19). What
    this cannot catch: an expression of several names that happens to equal a size the graph
    needs (``batch * seq`` meeting a literal 323 when they are 17 and 19); a spec must combine
    its dimensions against a coincidental constant for that.
    """
    names = dict.fromkeys(d for i in spec.inputs.values() for d in i.shape if isinstance(d, str))
    if not names:
        return {}
    taken = set(_integers(spec))
    free = (n for n in itertools.count(17) if n not in taken and all(n % d for d in range(2, math.isqrt(n) + 1)))
    sizes = dict(zip(names, free, strict=False))
    return _meeting_checks(sizes, spec.checks or [], taken)


def _meeting_checks(sizes: dict[str, int], checks: list[str], taken: set[int]) -> dict[str, int]:
    """``sizes`` with the names of a condition of ``checks:`` they fail (``seq <= 16``) given
    other sizes, each still distinct and no integer of the spec: smaller primes first, then any
    size up to 4096, the first that meets every condition over the names given sizes so far.
    A name no size satisfies keeps its prime (the propagation then names the check it fails)."""
    conditions = [expr.parse(text) for text in checks]
    if all(_holds(tree, sizes) for tree in conditions):
        return sizes
    small = [n for n in range(16, 1, -1) if all(n % d for d in range(2, math.isqrt(n) + 1))]
    out: dict[str, int] = {}
    for name, prime in sizes.items():
        used = set(out.values())
        for candidate in (prime, *small, *range(2, 4097)):
            if candidate in taken or candidate in used:
                continue
            trial = {**out, name: candidate}
            if all(_holds(tree, trial) for tree in conditions if set(expr.names(tree)) <= trial.keys()):
                out[name] = candidate
                break
        else:
            out[name] = prime
    return out


def _holds(tree: expr.Expr, sizes: dict[str, int]) -> bool:
    try:
        return bool(expr.evaluate(tree, sizes))
    except expr.ExprError:
        return False


def _integers(value: Any) -> Iterator[int]:
    """Every integer a spec writes (sizes, arguments, shapes, values), at any depth."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _integers(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _integers(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.compare:  # not the document it was read from
                yield from _integers(getattr(value, f.name))


def _where(spec: Spec, origin: Spec | None, index: int) -> Location:
    if origin is None:
        return spec.locate(("nodes", index))
    name = plain_nodes(spec.nodes)[index].name
    for i, node in enumerate(plain_nodes(origin.nodes)):
        if node.name is not None and node.name == name:
            return origin.locate(("nodes", i))
    return origin.locate(("passes",))


def _dimension(name: str) -> Any:
    """Where a symbolic dimension comes from, as a ShapeEnv wants to be told: a constant named as
    the spec names it (torch._dynamo's ``ConstantSource``, without importing dynamo: 0.9 s)."""
    from torch._guards import GuardSource, Source

    class _Dimension(Source):
        @property
        def guard_source(self) -> GuardSource:
            return GuardSource.CONSTANT

        @property
        def _name_template(self) -> str:
            return name

        def __hash__(self) -> int:
            return hash(("fxgen-dimension", name))

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Source) and other.name == name

    return _Dimension()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """ShapeProp prints the traceback it re-raises, and FakeTensor logs the failures it reports:
    the located error says it all."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    disabled = logger.disabled
    logger.disabled = True
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logger.disabled = disabled


def _parameters(spec: Spec, gm: torch.fx.GraphModule) -> dict[str, int]:
    counts = {}
    for path in spec.modules:
        counts[path] = sum(p.numel() for p in gm.get_submodule(path).parameters())
    for path in spec.parameters:
        counts[path] = gm.get_parameter(path).numel()
    return counts


class _NodeFailed(Exception):
    """Node ``index`` of a propagation failed; ``inside``: what failed inside it, when it is a
    call of a block instance."""

    def __init__(self, index: int, node: torch.fx.Node, cause: BaseException, inside: _BlockFailed | None = None) -> None:
        self.index = index
        self.node = node
        self.cause = cause
        self.inside = inside

    def report(self, where: Location, declared: Node | None, prop: _Propagation, names: dict[Any, Any]) -> tuple[Location, str]:
        """Where to report the failure and what to say: for a call of a block instance, at the
        node of the block's own declaration that failed (at any depth), with each instance's
        argument values and the line that builds it, innermost first."""
        location, message, instances = self._innermost(where, declared, prop, names)
        return location, message + (f" (in {'; in '.join(instances)})" if instances else "")

    def _innermost(
        self, where: Location, declared: Node | None, prop: _Propagation, names: dict[Any, Any]
    ) -> tuple[Location, str, list[str]]:
        inside = self.inside
        block = inside.declared if inside is not None else None
        at = block.written_at(inside.failed.node.name) if inside is not None and block is not None else None
        if inside is None or block is None or at is None:  # not inside a block (or at a node it does not write)
            return where, self.message(declared, prop.spec, prop, names), []
        written = next((n for n in plain_nodes(block.spec.nodes) if n.name == inside.failed.node.name), None)
        location, message, instances = inside.failed._innermost(block.spec.locate(at), written, inside.prop, names)
        shown = ", ".join(f"{arg}={value!r}" for arg, value in block.values.items())
        return location, message, [*instances, f"{block.spec.name}({shown}), built at {inside.built}"]

    def message(self, declared: Node | None, spec: Spec, prop: _Propagation, names: dict[Any, Any]) -> str:
        node = self.node
        if node.op == "call_module":
            entry = spec.modules.get(str(node.target))
            call = ", ".join([*map(repr, entry.args), *(f"{k}={v!r}" for k, v in entry.kwargs.items())]) if entry else ""
            what = f"module {node.target!r} ({entry.cls}({call[:80]}))" if entry else f"module {node.target!r}"
        else:
            what = f"{(declared.target if declared else None) or node.op}"
        met = ", ".join(f"{n.name}: {_value_text(prop.values.get(n), names)}" for n in node.all_input_nodes) or "no inputs"
        lines = [line.strip() for line in str(self.cause).strip().splitlines() if line.strip()]
        said = (lines[0] if lines else type(self.cause).__name__).rstrip(".")
        for symbol, named in names.items():  # torch's words use its own names for the dimensions
            said = re.sub(rf"\b{re.escape(str(symbol))}\b", str(named), said)
        return (f"the declared inputs do not flow through node {node.name!r}, {what}: it was given ({met}), "
                f"and torch says: {said[:300]}; fix the declaration or `inputs:`")  # fmt: skip


@dataclass
class _BlockFailed:
    """A node that failed inside a block instance: ``failed`` in the propagation ``prop`` through
    the instance (``declared``: its class and argument values), which the declaration at ``built``
    makes."""

    failed: _NodeFailed
    prop: _Propagation
    declared: Declarations
    built: Location


class _Propagation(ShapeProp):
    """``ShapeProp`` on FakeTensors, keeping each node's value and counting its FLOPs."""

    def __init__(
        self, gm: torch.fx.GraphModule, fake_mode: Any, spec: Spec, *, flops: bool = True, fake: bool = False
    ) -> None:
        super().__init__(gm)
        self.count = flops
        self.spec = spec  # what ``gm`` was built from: its declarations, to name them
        # ShapeProp's own fake copy would keep the meta device, which the CPU inputs (and the
        # modules a spec puts on the CPU) do not meet: every tensor is a FakeTensor on the CPU
        # (``fake``: ``gm``'s already are, a block of such a copy).
        self.fake_mode = fake_mode
        self.fake_module = gm if fake else _on_fake_cpu(gm, fake_mode)
        self.values: dict[torch.fx.Node, Any] = {}
        self.flops: dict[torch.fx.Node, Any] = {}
        self.index = {node: i for i, node in enumerate(gm.graph.nodes)}
        self.current: torch.fx.Node | None = None

    def run_node(self, n: torch.fx.Node) -> Any:
        self.current = n
        try:
            result = super().run_node(n)
        except Exception as exc:
            raise _NodeFailed(self.index[n], n, exc.__cause__ or exc, self._inside(n)) from None
        self.values[n] = result
        return result

    def _inside(self, n: torch.fx.Node) -> _BlockFailed | None:
        """When ``n`` calls a block instance: the node that fails inside it, found by running the
        instance's graph on what ``n`` was given (None: not a block, or it does not fail there)."""
        module = self.fake_module.get_submodule(str(n.target)) if n.op == "call_module" else None
        declared = module.meta.get(META_KEY) if isinstance(module, torch.fx.GraphModule) else None
        if not isinstance(declared, Declarations) or declared.spec.scope[:1] != ("classes",):
            return None
        assert isinstance(module, torch.fx.GraphModule)
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        inputs = [str(p.target) for p in module.graph.nodes if p.op == "placeholder"][len(args) :]
        if list(kwargs) != inputs[: len(kwargs)]:
            return None  # keywords out of the inputs' order: the call's own report stands
        spec = dataclasses.replace(declared.spec, modules=_concrete_modules(declared))
        inner = _Propagation(module, self.fake_mode, spec, flops=False, fake=True)
        try:
            inner.run(*args, *kwargs.values())
        except _NodeFailed as failed:
            return _BlockFailed(failed, inner, declared, self.spec.locate(("modules", _declared_path(self.spec, str(n.target)))))
        except Exception:
            return None
        return None

    def _counted(self, call: Any, *args: Any) -> Any:
        if not self.count:
            return call(*args)
        from torch.utils.flop_counter import FlopCounterMode

        with FlopCounterMode(display=False) as counter:
            result = call(*args)
        assert self.current is not None
        self.flops[self.current] = counter.get_total_flops()
        return result

    def call_function(self, target: Any, args: Any, kwargs: Any) -> Any:
        return self._counted(super().call_function, target, args, kwargs)

    def call_method(self, target: Any, args: Any, kwargs: Any) -> Any:
        return self._counted(super().call_method, target, args, kwargs)

    def call_module(self, target: Any, args: Any, kwargs: Any) -> Any:
        return self._counted(super().call_module, target, args, kwargs)


def _concrete_modules(declared: Declarations) -> dict[str, Any]:
    """The module declarations of a block instance with its argument values put in (what its
    messages show: ``torch.nn.Linear(8, 16)``, not the expressions)."""
    try:
        spec = declared.spec
        return concrete_declarations(spec, with_values(declared.values, spec.values, spec_functions(spec))).modules
    except Exception:
        return declared.spec.modules


def _declared_path(spec: Spec, target: str) -> str:
    """The declaration of ``spec`` that makes the module at ``target`` (itself, or a container
    holding it)."""
    parts = target.split(".")
    for size in range(len(parts), 0, -1):
        if ".".join(parts[:size]) in spec.modules:
            return ".".join(parts[:size])
    return target


def _on_fake_cpu(gm: torch.fx.GraphModule, fake_mode: Any) -> torch.fx.GraphModule:
    """A copy of ``gm`` (built on the meta device) whose parameters and buffers are FakeTensors
    on the CPU, as ``fxgen.load`` would place them; nothing is allocated."""
    converter = fake_mode.fake_tensor_converter
    cpu = torch.device("cpu")

    def fake(t: torch.Tensor) -> torch.Tensor:
        if t.is_meta:
            return converter.from_meta_and_device(fake_mode, t, cpu)
        return fake_mode.from_tensor(t)

    copy = gm.__deepcopy__({})  # meta tensors: nothing to copy
    for module in copy.modules():
        for name, param in list(module._parameters.items()):
            if param is not None:
                module._parameters[name] = torch.nn.Parameter(fake(param), requires_grad=param.requires_grad)
        for name, buffer in list(module._buffers.items()):
            if buffer is not None:
                module._buffers[name] = fake(buffer)
    return copy


def _expr(value: Any, names: dict[Any, Any]) -> str:
    expr = value.node.expr if isinstance(value, torch.SymInt) else value
    if hasattr(expr, "xreplace"):
        expr = expr.xreplace(names)
    return str(expr)


def _number(value: Any, names: dict[Any, Any]) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = _expr(value, names)
    return int(text) if text.lstrip("-").isdigit() else text


def _value_text(value: Any, names: dict[Any, Any]) -> str:
    """A node's value as the table and comments show it: ``float32[batch, 8]``, ``int``..."""
    if isinstance(value, torch.Tensor):
        return f"{dtype_name(value.dtype)}[{', '.join(_expr(d, names) for d in value.shape)}]"
    if isinstance(value, torch.Size):
        return f"Size([{', '.join(_expr(d, names) for d in value)}])"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_value_text(v, names) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_value_text(v, names)}" for k, v in value.items()) + "}"
    if isinstance(value, torch.SymInt):
        return "int"
    if isinstance(value, torch.SymFloat):
        return "float"
    if isinstance(value, torch.SymBool):
        return "bool"
    if value is None:
        return "None"
    if isinstance(value, (torch.dtype, torch.device)):
        return str(value)
    return type(value).__name__

