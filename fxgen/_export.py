"""Trace + export stages: an ``nn.Module`` -> torch.fx GraphModule -> Spec (+ safetensors weights).

Tracing is torch.fx's own (``Tracer`` or the caller's subclass, with leaf modules, autowrapped
functions and concrete args honoured). Tracing failures come back as one ExportError that names
the line of user code and the fix the torch.fx guide suggests.
"""

from __future__ import annotations

import argparse
import importlib
import json
import linecache
import sys
import traceback
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
import torch.fx

from fxgen._errors import ExportError, Location
from fxgen._preserve import Snapshot
from fxgen._spec import Spec
from fxgen._to_spec import Submodules, graph_module_to_spec
from fxgen._validate import RESERVED_NAMES

__all__ = ["export", "export_command", "save_weights", "trace"]

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
    """
    if isinstance(module, torch.fx.GraphModule):
        return module
    if not isinstance(module, torch.nn.Module):
        raise ExportError(f"export needs an nn.Module, got {type(module).__name__}")
    leaves = tuple(leaf_modules)
    leaf_types = tuple(t for t in leaves if isinstance(t, type))
    leaf_paths = {t for t in leaves if isinstance(t, str)}
    base = tracer_class or torch.fx.Tracer

    class _Tracer(base):  # type: ignore[valid-type, misc]
        def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
            if isinstance(m, leaf_types) or qualname in leaf_paths:
                return True
            if type(m).__module__ in _PARAMETRIZE_MODULES:
                return False  # computed in the graph: see _PARAMETRIZE_MODULES
            return bool(super().is_leaf_module(m, qualname))

    snapshot = Snapshot(module)
    if snapshot.proxies:
        raise ExportError(
            f"the model holds values of an earlier torch.fx trace ({', '.join(snapshot.proxies[:3])}): its "
            "forward stored traced values on the module (a cache filled on the first call); build the "
            "model again, or clear them, before export"
        )
    tracer: torch.fx.Tracer | None = None
    try:
        tracer = _Tracer(autowrap_functions=tuple(autowrap_functions)) if autowrap_functions else _Tracer()
        graph = tracer.trace(module, concrete_args)
        _lint(graph)
        _resolve_annotations(graph, module)
        gm = _GraphModule(tracer.root, graph, class_name=type(module).__name__)
        _fix_buffers(gm, module)
        _declare_unread_state(gm, module)
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
    from torch.fx._lazy_graph_module import _LazyGraphModule as _GraphModule
except ImportError:  # pragma: no cover - a torch without lazy graph modules
    _GraphModule = torch.fx.GraphModule  # type: ignore[misc, assignment]


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


def _fix_buffers(gm: torch.fx.GraphModule, original: torch.nn.Module) -> None:
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


def _declare_unread_state(gm: torch.fx.GraphModule, original: torch.nn.Module) -> None:
    """Put on ``gm`` every entry of the original's ``state_dict()`` the graph does not reach
    (a head the forward skips, ``num_batches_tracked`` of a batch norm run as ``F.batch_norm``),
    at its own path: the spec then declares it, and the original checkpoint loads strictly."""
    have = gm.state_dict(keep_vars=True)
    for key, tensor in original.state_dict(keep_vars=True).items():
        if key in have:
            continue
        owner_path, _, name = key.rpartition(".")
        try:
            source = original.get_submodule(owner_path)
        except AttributeError:
            source = None
        if source is None or not (name in source._parameters or name in source._buffers):
            raise ExportError(
                f"state_dict entry {key!r} is not a parameter or buffer at that path (the model customises "
                "its state dict), so a spec cannot declare it; remove the customisation before export"
            )
        owner: torch.nn.Module = gm
        for part in owner_path.split(".") if owner_path else ():
            child = owner._modules.get(part)
            if child is None:
                child = torch.nn.Module()
                owner.add_module(part, child)
            owner = child
        if name in source._parameters:
            owner.register_parameter(name, tensor)
        else:
            owner.register_buffer(name, tensor)


def _resolve_annotations(graph: torch.fx.Graph, module: torch.nn.Module) -> None:
    """Turn PEP 563 string annotations into types (in forward's globals), or drop them.

    Annotations are optional in a spec; one that cannot be written as a spec type (a forward
    reference to something the default policy cannot name) is dropped rather than failing export.
    """
    from fxgen._policy import DEFAULT_POLICY, TargetError, type_repr

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


def export(
    module: torch.nn.Module,
    *,
    concrete_args: dict[str, Any] | None = None,
    leaf_modules: Iterable[LeafSpec] = (),
    autowrap_functions: Iterable[Callable[..., Any]] = (),
    tracer_class: type[torch.fx.Tracer] | None = None,
    name: str | None = None,
) -> Spec:
    """Trace ``module`` with torch.fx and turn the graph into a Spec.

    An already traced or transformed GraphModule is accepted as it is. Every call_module
    target becomes a verified constructor call (``fxgen.register_constructor`` covers classes
    fxgen does not know); parameters and buffers keep their paths, shapes and dtypes; the
    weights themselves go to ``save_weights``.
    """
    gm = trace(
        module,
        concrete_args=concrete_args,
        leaf_modules=leaf_modules,
        autowrap_functions=autowrap_functions,
        tracer_class=tracer_class,
    )
    _avoid_reserved_names(gm.graph)
    for message in tied_notes(gm):
        warnings.warn(message, UserWarning, stacklevel=2)
    return graph_module_to_spec(gm, name=name or _class_name(module))


def tied_notes(module: torch.nn.Module) -> list[str]:
    """One note per tensor that is the same tensor as an earlier one (tied weights): the spec
    format declares each path's tensor on its own, so the tie is not kept."""
    first: dict[int, str] = {}
    notes = []
    named = (*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False))
    for path, tensor in named:
        earlier = first.setdefault(id(tensor), path)
        if earlier != path:
            notes.append(f"{path} is the same tensor as {earlier} (tied weights); a spec declares each "
                         "tensor on its own, so what is loaded or generated from it holds two equal copies: "
                         "tie them again after loading if the model is trained")  # fmt: skip
    return notes


def save_weights(module: torch.nn.Module, path: str | Path, **trace_options: Any) -> None:
    """Write the tensors of ``module``'s spec as safetensors, keys equal to the spec's paths."""
    from fxgen._weights import write_weights

    write_weights(path, spec_state(trace(module, **trace_options)))


def spec_state(gm: torch.fx.GraphModule) -> dict[str, torch.Tensor]:
    """The state a spec's weights file holds: the exported module's state_dict (every tensor
    outside it is declared with its value in the spec)."""
    return {k: v.detach() for k, v in gm.state_dict().items()}


def _class_name(module: torch.nn.Module) -> str:
    if isinstance(module, torch.fx.GraphModule):
        return type(module).__name__.removesuffix("GraphModuleImpl") or "GraphModule"
    return type(module).__name__


def _avoid_reserved_names(graph: torch.fx.Graph) -> None:
    """Rename nodes whose names generated code reserves (``nn``, ``F``, ``math``…).

    ``output`` is kept for the output node: torch.fx names a call of a submodule called
    ``output`` "output" and the real output node "output_1"; specs leave the output node's
    name out, so it must be "output".
    """
    for node in graph.nodes:
        if node.op != "output" and (node.name in RESERVED_NAMES or node.name == "output"):
            node._rename(node.name + "_1")
    last = next(iter(reversed(graph.nodes)))
    if last.op == "output" and last.name != "output":
        last._rename("output")


# -- tracing errors ------------------------------------------------------------------------
_FOREIGN = ("the forward uses a value from outside the traced graph: it reads a traced value it kept on "
            "the module from an earlier trace, such as a cache filled on the first call; build the model "
            "again, or clear the cache, before export")  # fmt: skip
_FIXES = (
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
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    fix = next((f for key, f in _FIXES if key in str(exc)), None)
    stack = getattr(tracer, "module_stack", None)
    if fix == _FOREIGN and stack:
        fix = f"{fix} (in module {next(reversed(stack))!r})"
    where: Location | None = None
    detail = ""
    if frame is not None:
        filename, lineno, func = frame
        where = Location(filename, lineno, 1)
        source = linecache.getline(filename, lineno).strip()
        detail = f" (in {func}: `{source}`)" if source else f" (in {func})"
    message = f"cannot trace the module: {type(exc).__name__}: {text}{detail}"
    if _in_parametrization(exc):
        inside = f" of module {next(reversed(stack))!r}" if stack else ""
        fix = (f"it fails inside a parametrization{inside} (spectral_norm and orthogonal branch on the weight's "
               "shape): remove it before export with torch.nn.utils.parametrize.remove_parametrizations(module, "
               "'weight'); weight_norm is traced")  # fmt: skip
    if fix:
        message += f"; {fix}"
    return ExportError(message, where)


def _in_parametrization(exc: BaseException) -> bool:
    """Did tracing fail inside torch.nn.utils.parametrize or parametrizations?"""
    return any("parametriz" in Path(frame.filename).name for frame in traceback.extract_tb(exc.__traceback__))


def _user_frame(exc: BaseException) -> tuple[str, int, str] | None:
    """The innermost traceback frame outside torch and fxgen: where the user's code failed."""
    torch_dir = str(Path(torch.__file__).parent)
    here = str(Path(__file__).parent)
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if not frame.filename.startswith((torch_dir, here)) and frame.lineno is not None:
            found = (frame.filename, frame.lineno, frame.name)
    return found


# -- the `fxgen export` command ----------------------------------------------------------------
def _import_attr(spec: str) -> Any:
    """``pkg.module:Attr.sub`` -> the object (the user's own code: importing it is intended)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ExportError(f"{spec!r}: expected PKG.MODULE:ATTR, e.g. mypkg.models:Net")
    sys.path.insert(0, str(Path.cwd()))
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ExportError(f"cannot import {module_name!r}: {exc}") from None
    finally:
        sys.path.pop(0)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ExportError(f"{module_name!r} has no attribute {attr!r}") from None
    return obj


def _json(text: str | None, what: str, kind: type) -> Any:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExportError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(value, kind):
        raise ExportError(f"{what} must be a JSON {'list' if kind is list else 'object'}")
    return value


def build_target(spec: str, args: list[Any], kwargs: dict[str, Any]) -> torch.nn.Module:
    """Instantiate ``PKG.MODULE:ATTR``: a module class, a function returning a module, or a module."""
    from fxgen._values import decode, decode_kwargs

    obj = _import_attr(spec)
    if isinstance(obj, torch.nn.Module):
        return obj
    if not callable(obj):
        raise ExportError(f"{spec!r} is neither an nn.Module class nor a function returning one")
    try:
        module = obj(*decode(args, _no_ref), **decode_kwargs(kwargs, _no_ref))
    except Exception as exc:
        raise ExportError(f"calling {spec!r} failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(module, torch.nn.Module):
        raise ExportError(f"{spec!r} returned a {type(module).__name__}, not an nn.Module")
    return module


def _no_ref(name: str) -> Any:
    raise ExportError(f"'%{name}': node references make no sense in export arguments")


def export_command(ns: argparse.Namespace) -> None:
    """``fxgen export``: compute the spec and weights in memory, then write both."""
    from fxgen._values import decode_kwargs
    from fxgen._writer import write_atomic

    module = build_target(ns.target, _json(ns.args, "--args", list), _json(ns.kwargs, "--kwargs", dict))
    module.eval()  # the exported graph is the inference graph
    concrete = _json(ns.concrete_args, "--concrete-args", dict)
    concrete = decode_kwargs(concrete, _no_ref) if concrete is not None else None
    leaves = [_import_attr(name if ":" in name else ":".join(name.rsplit(".", 1))) for name in ns.leaf_module]
    for leaf in leaves:
        if not (isinstance(leaf, type) and issubclass(leaf, torch.nn.Module)):
            raise ExportError(f"--leaf-module {leaf!r} is not an nn.Module class")
    gm = trace(module, concrete_args=concrete, leaf_modules=leaves)
    _avoid_reserved_names(gm.graph)
    spec = graph_module_to_spec(gm, name=ns.name or type(module).__name__)
    out: Path = ns.out
    text = spec.to_json() if out.suffix == ".json" else spec.to_yaml(schema_ref=_schema_ref(out))
    payload = None
    if ns.weights is not None:
        from safetensors.torch import save

        state = {k: v.to("cpu").clone().contiguous() for k, v in sorted(spec_state(gm).items())}
        payload = save(state, metadata={"format": "pt", "producer": "fxgen"})
    write_atomic(out, text)
    print(f"fxgen: wrote {out} ({len(spec.nodes)} nodes)", file=sys.stderr)
    if payload is not None:
        write_atomic(ns.weights, payload)
        print(f"fxgen: wrote {ns.weights}", file=sys.stderr)
    for note in tied_notes(gm):
        print(f"fxgen: note: {note}", file=sys.stderr)
    outside = _outside_default_policy(spec)
    if outside:
        names = " ".join(f"--allow {m}" for m in outside)
        print(f"fxgen: note: this spec uses {', '.join(outside)}; load or generate it with {names} "
              "or list them in [tool.fxgen] allow", file=sys.stderr)  # fmt: skip


def _schema_ref(out: Path) -> str:
    """A schema reference for editors: the repository's schemas/ if the spec sits inside one."""
    import os

    from fxgen._schema import load_schema

    here = out.resolve().parent
    for folder in (here, *here.parents):
        candidate = folder / "schemas" / "fxgen.schema.json"
        if candidate.is_file():
            return Path(os.path.relpath(candidate, here)).as_posix()
    return str(load_schema()["$id"])


def _outside_default_policy(spec: Spec) -> list[str]:
    """The names the spec uses that the default target policy refuses (the narrowest entries to
    allow: suggesting a whole package such as ``torch`` would also allow ``torch.load``)."""
    from fxgen._policy import DEFAULT_POLICY, TargetError

    outside = set()
    for module in spec.modules.values():
        try:
            DEFAULT_POLICY.resolve_module_class(module.cls)
        except TargetError:
            outside.add(module.cls)
    for node in spec.nodes:
        if node.op == "call_function" and node.target:
            try:
                DEFAULT_POLICY.resolve_function(node.target)
            except TargetError:
                outside.add(node.target)
    return sorted(outside)
