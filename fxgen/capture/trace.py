"""Trace: an ``nn.Module`` -> a torch.fx GraphModule, leaving the module as it was.

Tracing is torch.fx's own (``Tracer`` or the caller's subclass, with leaf modules, autowrapped
functions and concrete args honoured). Around it: the module's state is recorded and restored
(``fxgen.capture.preserve``), the graph is linted for nodes of another graph, buffers the
GraphModule invented are made non-persistent, and state the forward never reads is put on the
GraphModule so the spec declares it. Tracing failures come back as one ExportError that names
the line of user code and the fix the torch.fx guide suggests.
"""

from __future__ import annotations

import importlib
import inspect
import linecache
import traceback
import types
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch.fx._symbolic_trace import _assert_is_none

from fxgen._errors import ExportError, Location
from fxgen.capture.decided import Decisions
from fxgen.capture.effects import (
    NOTES_KEY,
    global_state_notes,
    hook_mark,
    in_autograd_function,
    refuse_grad_regions,
    refuse_new_hooks,
    refuse_overridden_call,
    refuse_root_hooks,
)
from fxgen.capture.frozen import RandomDraws, readable, rebuild_strings, traced_strings
from fxgen.capture.modes import MODE_FREE_KEY, ModeWatch
from fxgen.capture.preserve import Snapshot
from fxgen.construct.modules import set_attr_path
from fxgen.describe.to_spec import Submodules

__all__ = [
    "CALLS_KEY",
    "HIDDEN_PARAMETERS",
    "LeafSpec",
    "ModuleCalls",
    "TracedGraphModule",
    "at_user_line",
    "declare_tensor",
    "declare_unread_state",
    "fix_buffers",
    "forward_signature",
    "leaf_predicate",
    "left_out_message",
    "named_arguments",
    "resolve_annotations",
    "trace",
]


LeafSpec = type | str


def trace(
    module: torch.nn.Module,
    *,
    concrete_args: dict[str, Any] | None = None,
    leaf_modules: Iterable[LeafSpec] = (),
    autowrap_functions: Iterable[Callable[..., Any]] = (),
    tracer_class: type[torch.fx.Tracer] | None = None,
) -> torch.fx.GraphModule:
    """``module`` as a GraphModule (returned as it is if it already is one).

    Its Python code is generated when first used (``code``, ``forward``, printing): export
    itself only reads the graph.

    What the graph cannot record is refused (``fxgen.capture.effects``): hooks on the model
    itself or global ones, hooks the forward registers, and grad-mode regions that change a
    gradient (the trace runs with gradients enabled, and each node records whether it was
    created with them disabled). Module-global state the forward reads is noted in
    ``gm.meta[NOTES_KEY]``.
    """
    if isinstance(module, torch.nn.Module):
        refuse_root_hooks(module)
        refuse_overridden_call(module)
    if isinstance(module, torch.fx.GraphModule):
        return module
    if not isinstance(module, torch.nn.Module):
        raise ExportError(f"export needs an nn.Module, got {type(module).__name__}")
    base = tracer_class or torch.fx.Tracer
    is_leaf = leaf_predicate(leaf_modules, base)
    if tracer_class is not None:
        # A custom tracer may patch torch's functions while it runs (Hugging Face's HFTracer does)
        # and import torch._dynamo meanwhile, which then takes the patched functions for torch's
        # own, for the rest of the process: every later TorchDynamo capture fails. Imported
        # first, it knows the real ones (once per process).
        importlib.import_module("torch._dynamo")

    calls = ModuleCalls()
    tracer_methods = _methods(base)  # a custom tracer's own frames are not the model's lines
    disabled: dict[torch.fx.Node, tuple[str, int, str] | None] = {}  # node -> the user's line it was made at
    decisions = Decisions(lambda: _innermost_user(traceback.extract_stack(), skip=tracer_methods))

    class _Tracer(base):  # type: ignore[valid-type, misc]
        def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
            return is_leaf(m, qualname, lambda: bool(super(_Tracer, self).is_leaf_module(m, qualname)))

        def call_module(self, m: torch.nn.Module, forward: Callable[..., Any], args: tuple[Any, ...],
                        kwargs: dict[str, Any]) -> Any:  # fmt: skip
            # The call is pushed on ``module_stack`` under the key torch.fx's own call_module gives
            # it, so the nodes made inside record it in ``nn_module_stack`` even when the caller's
            # tracer runs the module without ``Tracer.call_module`` (which then pushes nothing:
            # ``fxgen.capture.partition`` splits the graph by these records).
            path = self.path_of_module(m)
            count = self.num_calls.get(path, 0)
            key = path if count == 0 else f"{path}@{count}"
            pushed = key not in self.module_stack
            if pushed:  # (Tracer.call_module writes the same entry again, in place, and pops it)
                self.module_stack[key] = (path, type(m))
            result = super().call_module(m, forward, args, kwargs)  # (a failure leaves the stack: errors name it)
            if pushed:
                self.module_stack.pop(key, None)
            self.num_calls[path] = max(self.num_calls.get(path, 0), count + 1)
            calls.record(key, args, kwargs, result)
            return result

        def proxy(self, node: torch.fx.Node) -> torch.fx.Proxy:
            return decisions.watch(super().proxy(node))  # (a branch the tracer answers becomes a check)

        def create_node(self, *args: Any, **kwargs: Any) -> torch.fx.Node:
            node = super().create_node(*args, **kwargs)
            if not torch.is_grad_enabled() and not in_autograd_function():  # a region (the trace enables them)
                disabled[node] = _innermost_user(traceback.extract_stack(), skip=tracer_methods)
            return node

    snapshot = Snapshot(module)
    if snapshot.proxies:
        raise ExportError(
            f"the model holds values of an earlier torch.fx trace ({', '.join(snapshot.proxies[:3])}): its "
            "forward stored traced values on the module (a cache filled on the first call); build the "
            "model again, or clear them, before export"
        )
    tracer: torch.fx.Tracer | None = None
    mark = hook_mark()
    try:
        tracer = _Tracer(autowrap_functions=tuple(autowrap_functions)) if autowrap_functions else _Tracer()
        draws = RandomDraws()
        with torch.enable_grad(), draws, traced_strings() as formatted, ModeWatch(module) as watch:
            graph = tracer.trace(module, concrete_args)
        _name_none_arguments(graph, concrete_args, type(module).__name__)
        decisions.keep(graph, type(module).__name__)
        _lint(graph)
        _refuse_frozen(graph, tracer.root, draws, formatted)
        refuse_new_hooks(module, mark)
        refuse_grad_regions(graph, tracer.root, set(disabled), lambda node: at_user_line(disabled[node]))
        resolve_annotations(graph, module)
        gm = TracedGraphModule(tracer.root, graph, class_name=type(module).__name__)
        fix_buffers(gm, module)
        declare_unread_state(gm, module)
        gm.meta[CALLS_KEY] = calls
        gm.meta[NOTES_KEY] = global_state_notes(module)
        gm.meta[MODE_FREE_KEY] = watch.independent
        return gm
    except ExportError:
        raise
    except Exception as exc:
        raise _trace_error(exc, tracer) from None
    finally:
        # Tracing may store Proxies on the model (a cache its forward fills), and torch.fx puts
        # the tensor constants it makes (`_tensor_constant0`) on it; the GraphModule has its own
        # copies. Leave the user's module as it was: a second export then traces the same graph.
        snapshot.restore()


def _refuse_frozen(graph: torch.fx.Graph, root: torch.nn.Module, draws: RandomDraws,
                   formatted: list[tuple[torch.fx.Proxy, str]]) -> None:  # fmt: skip
    """Refuse a graph that reads a random draw tracing froze; rebuild the strings formatted from
    traced values (``fxgen.capture.frozen``)."""
    frozen = draws.frozen_draw(graph, root)
    if frozen is not None:
        target, function, frame = frozen
        where, detail = at_user_line(frame)
        raise ExportError(
            f"the forward draws random numbers with {function} from values that are not traced{detail}: tracing "
            f"ran it once and the graph would read that one draw as the constant {target!r}, the same numbers on "
            "every call; draw them from a traced value (torch.rand_like(x), torch.rand(x.shape[0], 4)) so the "
            "graph draws at run time", where)  # fmt: skip
    if draws.decided is not None:
        function, frame = draws.decided
        where, detail = at_user_line(frame)
        raise ExportError(
            f"the forward turns a random draw of {function} into a Python value{detail} (a branch such as "
            "`if torch.rand([]) < p:`): tracing decided it once, and the graph would always take that one way; "
            "compute with the draw as a tensor (torch.where, a mask), or export this mode with TorchDynamo "
            "(capture='dynamo')", where)  # fmt: skip
    failed = rebuild_strings(graph, formatted)
    if failed is not None:
        raise ExportError(f"node {failed!r} reads a string formatted from a value of another trace; build the "
                          "string inside the forward that uses it")  # fmt: skip


def forward_signature(module: torch.nn.Module) -> inspect.Signature | None:
    """``inspect.signature(module.forward)`` (None where it has none), once per class: export asks
    it for every block instance, and it is the same for all instances of a class that do not
    set ``forward`` themselves."""
    own = vars(module).get("forward")
    if own is not None:
        return _signature(own)
    cls = type(module)
    if cls not in _SIGNATURES:
        if len(_SIGNATURES) >= 1024:
            _SIGNATURES.clear()
        _SIGNATURES[cls] = _signature(module.forward)
    return _SIGNATURES[cls]


_SIGNATURES: weakref.WeakKeyDictionary[type, inspect.Signature | None] = weakref.WeakKeyDictionary()


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def named_arguments(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The values of a call of ``module`` by its ``forward``'s parameter names, a tuple or list's
    items as ``name_0``, ``name_1``… (``position_embeddings_0``); nothing for a call that does not
    bind: how both captures name a block's inputs."""
    signature = forward_signature(module)
    try:
        bound = signature.bind(*args, **kwargs).arguments if signature is not None else {}
    except TypeError:
        return
    for name, value in bound.items():
        if isinstance(value, (tuple, list)):
            yield from ((f"{name}_{i}", item) for i, item in enumerate(value))
        else:
            yield name, value


_PLAIN = (bool, int, float, str, type(None))  # constants a block may return beside its values

CALLS_KEY = "fxgen_module_calls"  # GraphModule.meta of a trace: the ModuleCalls it made


class ModuleCalls:
    """What every module call of a trace was given and gave back, by the key torch.fx names the
    call with in ``nn_module_stack`` (the module's path, ``path@N`` for its N-th call): which
    ``forward`` parameter each value of the graph came in by and what the forward returned,
    which the graph does not record (``fxgen.capture.partition`` writes a block's inputs and
    result with them). Kept as the tracer gave them (Proxies). Not copied with the
    GraphModule's meta, and dropped when it is pickled."""

    def __init__(self) -> None:
        self.calls: dict[str, tuple[tuple[Any, ...], dict[str, Any], Any]] = {}

    def record(self, key: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        self.calls[key] = (args, kwargs, result)

    def parameters(self, key: str, module: torch.nn.Module) -> dict[str, torch.fx.Node]:
        """The graph node each of ``module``'s parameters was given in call ``key``, by name (a
        tuple or list's items as ``name_0``, ``name_1``…); nothing for a call that does not bind."""
        call = self.calls.get(key)
        if call is None:
            return {}
        return {name: item.node for name, item in named_arguments(module, *call[:2]) if isinstance(item, torch.fx.Proxy)}

    def result(self, key: str) -> torch.fx.Node | tuple[Any, ...] | list[Any] | None:
        """What call ``key`` returned, as graph nodes: one value, or a tuple or list of values
        (None for anything else: a dict, an output class, nested sequences, or no such call)."""
        call = self.calls.get(key)
        if call is None:
            return None
        value = call[2]
        if isinstance(value, torch.fx.Proxy):
            return value.node
        if type(value) in (tuple, list) and all(isinstance(v, torch.fx.Proxy) or type(v) in _PLAIN for v in value):
            return type(value)(v.node if isinstance(v, torch.fx.Proxy) else v for v in value)
        return None

    def __deepcopy__(self, memo: dict[int, Any]) -> ModuleCalls:
        return self

    def __reduce__(self) -> tuple[type[ModuleCalls], tuple[()]]:
        return ModuleCalls, ()


def leaf_predicate(
    leaf_modules: Iterable[LeafSpec] = (), base: type[torch.fx.Tracer] = torch.fx.Tracer
) -> Callable[..., bool]:
    """``is_leaf(module, path[, otherwise])``: does export keep ``module`` as one ``call_module``?
    The caller's leaf classes and paths are; a parametrized module is not; the rest as ``base``
    decides (``otherwise()`` when given, else ``base().is_leaf_module``: torch.nn's modules
    other than containers). Symbolic tracing and Dynamo's folding both ask it."""
    leaves = tuple(leaf_modules)
    leaf_types = tuple(t for t in leaves if isinstance(t, type))
    leaf_paths = {t for t in leaves if isinstance(t, str)}
    default: list[torch.fx.Tracer] = []

    def is_leaf(m: torch.nn.Module, qualname: str, otherwise: Callable[[], bool] | None = None) -> bool:
        if isinstance(m, leaf_types) or qualname in leaf_paths:
            return True
        if type(m).__module__ in _PARAMETRIZE_MODULES:
            return False  # computed in the graph: see _PARAMETRIZE_MODULES
        if otherwise is not None:
            return otherwise()
        if not default:
            default.append(base())
        return bool(default[0].is_leaf_module(m, qualname))

    return is_leaf


# A parametrized module (weight_norm, spectral_norm, orthogonal through torch.nn.utils.parametrize)
# is a class torch makes on the fly, which no constructor call can rebuild; its state dict holds
# the parametrization's own tensors (`conv.parametrizations.weight.original0`). It is traced
# through instead, with its parametrizations: the graph computes the weight from those tensors,
# which the spec declares at their paths, so the checkpoint still loads.
_PARAMETRIZE_MODULES = frozenset({"torch.nn.utils.parametrize", "torch.nn.utils.parametrizations"})


# Export reads the graph, never the Python code a GraphModule generates from it: a lazy
# GraphModule generates (and compiles) that code only when ``code`` or ``forward`` is first used.
# Code generation is a third of ``symbolic_trace`` on small models.
try:
    from torch.fx._lazy_graph_module import _LazyGraphModule as TracedGraphModule
except ImportError:  # pragma: no cover - a torch without lazy graph modules
    TracedGraphModule = torch.fx.GraphModule  # type: ignore[misc, assignment]


def _lint(graph: torch.fx.Graph) -> None:
    """Every node reads only nodes of its own graph. A forward that keeps traced values on the
    module (a cache filled on the first call) hands a later trace nodes of an earlier one."""
    for node in graph.nodes:
        for arg in node.all_input_nodes:
            if arg.graph is not graph:
                raise ExportError(
                    f"node {node.name!r}{_module_of(node)} uses a value from outside the traced graph (node "
                    f"{arg.name!r} of another trace): its forward reads a traced value it kept on the module "
                    "from an earlier trace, such as a cache filled on the first call; build the model again, "
                    "or clear the cache, before export"
                )


def _module_of(node: torch.fx.Node) -> str:
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return ""
    path = next(reversed(stack.values()))[0] if isinstance(stack, dict) else ""
    return f" (in module {path!r})" if path else " (in the model's own forward)"


def fix_buffers(gm: torch.fx.GraphModule, original: torch.nn.Module) -> None:
    """GraphModule construction registers every tensor it copies as a *persistent* buffer.
    Those that were not persistent buffers of the original -- non-persistent buffers, plain
    tensor attributes (``self.table = torch.tensor(...)``) and the constants tracing made
    (``_tensor_constant0``) -- are made non-persistent: the checkpoint does not carry them, so
    the spec declares them with their values."""
    sources = Submodules(original)
    for owner_path, owner in gm.named_modules():  # each owner once (not per buffer)
        if not owner._buffers:
            continue
        try:
            source: torch.nn.Module | None = sources.get(owner_path)
        except AttributeError:
            source = None
        if source is owner:
            continue  # a leaf module the GraphModule shares with the model: its state is its own
        saved = set(source._buffers) - source._non_persistent_buffers_set if source is not None else set()
        for name in owner._buffers:
            if name not in saved:
                owner._non_persistent_buffers_set.add(name)


def declare_unread_state(gm: torch.fx.GraphModule, original: torch.nn.Module, keys: Iterable[str] | None = None) -> None:
    """Put on ``gm`` every entry of the original's ``state_dict()`` the graph does not reach
    (a head the forward skips, ``num_batches_tracked`` of a batch norm run as ``F.batch_norm``),
    at its own path: the spec then declares it, and the original checkpoint loads strictly.
    ``keys`` are the original's state-dict keys in order where the caller has them already, and
    vouches that no module of the original rewrites its state dict: whether ``gm`` holds each is
    then looked up at its path (what its state dict would hold there: a parameter, or a buffer it
    saves), instead of ``gm``'s whole state dict being built (a block's GraphModule holds the
    modules of every block it calls: a state dict per level of a nested model)."""
    held: Callable[[str], bool]
    if keys is None:
        keys, held = original.state_dict(keep_vars=True), gm.state_dict(keep_vars=True).__contains__
    else:
        held = _Holds(gm)
    unread: dict[str, list[str]] = {}  # owner path -> names, in the state dict's order (an owner's are together)
    for key in keys:
        if not held(key):
            owner_path, _, name = key.rpartition(".")
            unread.setdefault(owner_path, []).append(name)
    for owner_path, names in unread.items():  # each owner looked up once, on both sides
        source = _submodule(original, owner_path)
        holder = _submodule(gm, owner_path)
        for name in names:
            if source is None or not (name in source._parameters or name in source._buffers):
                key = f"{owner_path}.{name}" if owner_path else name
                raise ExportError(
                    f"state_dict entry {key!r} is not a parameter or buffer at that path (the model customises "
                    "its state dict), so a spec cannot declare it; remove the customisation before export"
                )
            _declare(gm, holder, owner_path, name, source)
            holder = holder if holder is not None else _submodule(gm, owner_path)


def declare_tensor(root: torch.nn.Module, path: str, source: torch.nn.Module) -> None:
    """Register ``source``'s tensor (the last part of ``path``) on ``root`` at ``path`` as
    ``source`` holds it: a parameter, a persistent buffer, or else (a non-persistent buffer, a
    plain tensor attribute) a non-persistent buffer; nothing when ``root`` has it there already."""
    owner_path, _, name = path.rpartition(".")
    _declare(root, _submodule(root, owner_path), owner_path, name, source)


def _declare(root: torch.nn.Module, holder: torch.nn.Module | None, owner_path: str, name: str,
             source: torch.nn.Module) -> None:  # fmt: skip
    if holder is not None and (holder is source or hasattr(holder, name)):
        return
    persistent = name in source._buffers and name not in source._non_persistent_buffers_set
    set_attr_path(root, f"{owner_path}.{name}" if owner_path else name, getattr(source, name), persistent=persistent)


class _Holds:
    """Whether ``root.state_dict()`` would hold a key, for a root whose modules all write their
    state dicts as nn.Module does: its parameter, or its buffer that is saved, at that path."""

    def __init__(self, root: torch.nn.Module) -> None:
        self.root = root
        self.owners: dict[str, torch.nn.Module | None] = {}

    def __call__(self, key: str) -> bool:
        owner_path, _, name = key.rpartition(".")
        owner = self.owners.get(owner_path, _NO_OWNER)
        if owner is _NO_OWNER:
            owner = self.owners[owner_path] = _submodule(self.root, owner_path)
        if owner is None:
            return False
        if name in owner._parameters:
            return owner._parameters[name] is not None
        return owner._buffers.get(name) is not None and name not in owner._non_persistent_buffers_set


_NO_OWNER: Any = object()


def _submodule(root: torch.nn.Module, path: str) -> torch.nn.Module | None:
    """``root.get_submodule(path)``, or None where there is no module (no exception raised and
    caught per lookup: most unread tensors sit under modules the GraphModule does not have)."""
    module = root
    for part in path.split(".") if path else ():
        child = module._modules.get(part)
        if child is None:
            return None
        module = child
    return module


def resolve_annotations(graph: torch.fx.Graph, module: torch.nn.Module) -> None:
    """Turn PEP 563 string annotations into types (in forward's globals), or drop them.

    Annotations are optional in a spec; one that cannot be written as a spec type (a forward
    reference to something the default policy cannot name) is dropped rather than failing export.
    """
    from fxgen.policy.policy import DEFAULT_POLICY, TargetError, type_repr

    namespace = getattr(type(module).forward, "__globals__", {})
    for node in graph.nodes:
        if node.type is None:
            continue
        value = node.type
        if isinstance(value, str):
            try:
                value = eval(value, dict(namespace))  # the user's own module's annotation text
            except Exception:
                value = None
        if value is not None:
            try:
                DEFAULT_POLICY.resolve_type(type_repr(value))
            except (TargetError, SyntaxError, TypeError):
                value = None
        node.type = value


# -- tracing errors ------------------------------------------------------------------------
_FOREIGN = ("the forward uses a value from outside the traced graph: it reads a traced value it kept on "
            "the module from an earlier trace, such as a cache filled on the first call; build the model "
            "again, or clear the cache, before export")  # fmt: skip


# A forward whose signature is only (*args, **kwargs): both captures need its parameters by name.
HIDDEN_PARAMETERS = ("its forward takes only (*args, **kwargs): a decorator that does not keep the signature "
                     "(torch.compiler.nested_compile_region, or one without functools.wraps) hides its parameters, "
                     "and export needs them by name; remove the decorator from forward for export, or decorate "
                     "a function forward calls instead")  # fmt: skip


_FIXES = (
    ("cannot be part of *args expansion", HIDDEN_PARAMETERS),
    ("cannot be used as inputs to control flow",
     "the code branches on a traced value (dynamic control flow): pass the deciding argument "
     "with concrete_args / --concrete-args, make the submodule a leaf (leaf_modules / --leaf-module), "
     "or move the branch into a function marked with torch.fx.wrap"),
    ("cannot be iterated",
     "the code iterates over a traced value (e.g. `for d in x.shape`): use concrete_args, "
     "a leaf module, or torch.fx.wrap the function that iterates"),
    ("is not supported in symbolic tracing",
     "a builtin is called on a traced value: call torch.fx.wrap('<name>') at module scope, "
     "or pass autowrap_functions"),
    ("__bool__", "a traced value is used as a condition: use concrete_args, a leaf module or torch.fx.wrap"),
    ("Found multiple different tracers", _FOREIGN),
)  # fmt: skip


def _trace_error(exc: BaseException, tracer: torch.fx.Tracer | None = None) -> ExportError:
    """One clear message: what failed, the user's line, and the torch.fx guide's fix."""
    frame = _user_frame(exc)
    text = readable(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
    fix = next((f for key, f in _FIXES if key in str(exc)), None)
    stack = getattr(tracer, "module_stack", None)
    if fix == _FOREIGN and stack:
        fix = f"{fix} (in module {next(reversed(stack))!r})"
    where, detail = at_user_line(frame)
    message = f"cannot trace the module: {type(exc).__name__}: {text}{detail}"
    if _in_parametrization(exc):
        inside = f" of module {next(reversed(stack))!r}" if stack else ""
        fix = (f"it fails inside a parametrization{inside} (spectral_norm and orthogonal branch on the weight's "
               "shape): remove it before export with torch.nn.utils.parametrize.remove_parametrizations(module, "
               "'weight'); weight_norm is traced")  # fmt: skip
    if fix:
        message += f"; {fix}"
    return ExportError(message, where)


def at_user_line(frame: tuple[str, int, str] | None) -> tuple[Location | None, str]:
    """Where a capture failed in the user's code, and `` (in func: `the line`)`` for its message."""
    if frame is None:
        return None, ""
    filename, lineno, func = frame
    source = linecache.getline(filename, lineno).strip()
    return Location(filename, lineno, 1), f" (in {func}: `{source}`)" if source else f" (in {func})"


def _in_parametrization(exc: BaseException) -> bool:
    """Did tracing fail inside torch.nn.utils.parametrize or parametrizations?"""
    return any("parametriz" in Path(frame.filename).name for frame in traceback.extract_tb(exc.__traceback__))


def _methods(tracer_class: type) -> frozenset[tuple[str, str]]:
    """(file, name) of each function a tracer class outside torch defines (Hugging Face's
    ``HFTracer.create_proxy``)."""
    return frozenset((code.co_filename, code.co_name) for cls in tracer_class.__mro__
                     if not cls.__module__.startswith("torch.") for value in vars(cls).values()
                     if isinstance(code := getattr(value, "__code__", None), types.CodeType))  # fmt: skip


def _user_frame(exc: BaseException) -> tuple[str, int, str] | None:
    """The innermost traceback frame outside torch and fxgen: where the user's code failed."""
    return _innermost_user(traceback.extract_tb(exc.__traceback__))


def _innermost_user(frames: Iterable[traceback.FrameSummary],
                    skip: frozenset[tuple[str, str]] = frozenset()) -> tuple[str, int, str] | None:  # fmt: skip
    """The innermost of ``frames`` outside torch and fxgen and not a function ``skip`` names (by
    file and name)."""
    torch_dir = str(Path(torch.__file__).parent)
    here = str(Path(__file__).parent)
    found = None
    for frame in frames:
        if (not frame.filename.startswith((torch_dir, here)) and frame.lineno is not None
                and (frame.filename, frame.name) not in skip):  # fmt: skip
            found = (frame.filename, frame.lineno, frame.name)
    return found


def left_out_message(owner: str, name: str) -> str:
    """What a call passing a value for ``name`` is told when the model was captured without it."""
    return (f"{owner}.forward was exported from a call leaving {name!r} out (None) and cannot compute with a value "
            f"for it: export it from a call giving {name}")  # fmt: skip


def _name_none_arguments(graph: torch.fx.Graph, concrete_args: dict[str, Any] | None, owner: str) -> None:
    """torch.fx names the placeholder of an argument fixed to None ``mask_1`` (one per leaf of a
    concrete value), and the generated ``forward`` takes it by that name: ``m(x, mask=None)``
    failed where the original accepts it. Each such placeholder takes the parameter's own name
    when nothing else in the graph has it, and its check says what to do (``left_out_message``)
    in place of torch.fx's "has been specialized to have value None but got another value"."""
    fixed = {name for name, value in (concrete_args or {}).items() if value is None}
    if not fixed:
        return
    names = {node.name for node in graph.nodes}
    for node in graph.nodes:
        if node.op != "placeholder" or not isinstance(node.target, str):
            continue
        base, _, count = node.target.rpartition("_")
        if count != "1" or base not in fixed:
            continue
        for user in list(node.users):
            if user.op == "call_function" and user.target is _assert_is_none and user.args[0] is node:
                user.args = (node, left_out_message(owner, base))
        if base not in names:
            node.target = base
            node._rename(base)
            names.add(node.name)
