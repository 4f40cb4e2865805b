"""GraphModule -> Spec: the inverse of the assemble stage, and the core of export.

Nodes come straight from the Graph; call targets are written as public qualified names that
resolve back to the same object; declarations come from what ``build_module`` recorded when
the GraphModule was made by fxgen, and otherwise are recovered from the module instances
(constructor calls via ``fxgen.describe.recover``, shapes/dtypes of tensors, and the values of
the tensors a checkpoint does not carry).
"""

from __future__ import annotations

import builtins
import dataclasses
import keyword
import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.fx
import torch.nn.functional

from fxgen._errors import ExportError
from fxgen.assemble.modes import ModeGraphModule, case_envs
from fxgen.assemble.module import META_KEY
from fxgen.check.checker import RESERVED_NAMES
from fxgen.construct.checks import is_check
from fxgen.construct.graph import TARGET_KEY
from fxgen.describe.align import align
from fxgen.describe.rebuild import RebuildCache
from fxgen.describe.recover import class_name
from fxgen.describe.recover import resolve_qualname as _lookup
from fxgen.policy.policy import DEFAULT_POLICY, TargetError, type_repr
from fxgen.policy.tables import SAFE_BUILTINS
from fxgen.spec.model import (
    BufferSpec,
    ClassSpec,
    InputSpec,
    Item,
    ModuleSpec,
    Node,
    ParameterSpec,
    Spec,
    walk_nodes,
)
from fxgen.spec.packed import pack, unpack
from fxgen.spec.resolve import has_arguments, resolve_nodes, spec_functions, with_values
from fxgen.spec.values import UnencodableValue, dtype_name, encode

__all__ = ["Submodules", "avoid_reserved_names", "graph_module_to_spec", "input_checks", "loadable_class_name",
           "recover_declaration", "spec_state", "tensor_dtype"]


LITERAL_LIMIT = 64  # tensors up to this many elements are written as readable literals, larger ones packed


def graph_module_to_spec(
    gm: torch.fx.GraphModule,
    *,
    name: str | None = None,
    doc: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    given: Mapping[str, ModuleSpec] | None = None,
    cache: RebuildCache | None = None,
) -> Spec:
    """The spec of ``gm``: its graph's nodes plus the modules, parameters and buffers they use.
    ``progress(done, total, path)`` is told of each module recovered and verified (the slow part).
    ``given`` declares modules export already knows how to write (blocks, kept Sequentials);
    ``cache`` shares rebuilt constructor calls with other graphs of the same export."""
    declared = gm.meta.get(META_KEY)
    if declared is not None and declared.spec.fxgen >= 2:
        return _format2_spec(gm, declared.source, name)
    call_modules = [n.target for n in gm.graph.nodes if n.op == "call_module"]
    modules: dict[str, ModuleSpec] = {}
    module_paths = _dedupe([*declared.modules, *call_modules]) if declared else _dedupe(call_modules)
    if given:  # a call into a given module (``layer.0`` of a kept Sequential) is declared by it
        module_paths = _dedupe([next((p for p in given if path.startswith(p + ".")), path) for path in module_paths])
    cache = cache or RebuildCache()  # identical constructor calls are rebuilt once (each is compared)
    names: dict[type, str] = {}  # class -> its checked spec name, once per export
    submodules = Submodules(gm)
    for done, path in enumerate(module_paths, 1):
        if progress is not None:
            progress(done, len(module_paths), path)
        if given is not None and path in given:
            modules[path] = given[path]
            continue
        sub = submodules.get(path)
        known = declared.modules.get(path) if declared else None
        if known is not None and _same_class(known.cls, sub):
            modules[path] = known
        else:
            modules[path] = _recover(path, sub, cache, names)
    parameters, buffers = _tensors(gm, modules, declared)
    # torch.fx puts the checks of a concrete argument (`torch._assert`) right after its
    # placeholder, before the next placeholder; a spec lists its placeholders first. Moving them
    # up changes nothing: they read no node, and the code takes them all in its signature.
    graph_nodes = [n for n in gm.graph.nodes if not is_check(n)]
    placeholders = [n for n in graph_nodes if n.op == "placeholder"]
    nodes: list[Item] = [_node(n) for n in (*placeholders, *(n for n in graph_nodes if n.op != "placeholder"))]
    cls_name = name or type(gm).__name__
    if doc is None and declared is not None:
        doc = type(gm).__doc__
    version = 2 if any(has_arguments(m.to_dict()) for m in modules.values()) else 1  # module values
    spec = Spec(name=cls_name, doc=doc, modules=modules, parameters=parameters, buffers=buffers, nodes=nodes,
                fxgen=version)  # fmt: skip
    if declared is not None and declared.spec.inputs:
        # the example inputs of the spec it was built from, while its placeholders are still there
        argument_names = {n.name for n in walk_nodes(nodes) if n.op == "placeholder"}
        if set(declared.spec.inputs) <= argument_names:
            spec.inputs, spec.shapes = dict(declared.spec.inputs), declared.spec.shapes
    checked = input_checks(gm, spec.inputs)
    if checked is not None:
        spec.inputs, spec.checks = checked
    return spec


def input_checks(gm: torch.fx.GraphModule,
                 dtypes: Mapping[str, InputSpec] | None = None) -> tuple[dict[str, InputSpec], list[str]] | None:  # fmt: skip
    """The ``inputs:`` and ``checks:`` of ``gm``'s check node (``fxgen.construct.checks``), if it
    has one: the shapes it checks, with the dtypes ``dtypes`` (or ``float32``), and its conditions.
    Each input is named as its placeholder is now (``avoid_reserved_names`` renames ``input`` to
    ``input_1``); ``dtypes`` by the name the check was made with (the forward's parameter)."""
    node = next((n for n in gm.graph.nodes if is_check(n)), None)
    if node is None:
        return None
    placeholders, shapes, texts = node.args
    inputs = {placeholder.name: InputSpec(list(shape), dtypes[name].dtype if dtypes and name in dtypes else "float32")
              for placeholder, (name, shape) in zip(placeholders, shapes, strict=True)}  # fmt: skip
    return inputs, [str(text) for text in texts]


def avoid_reserved_names(graph: torch.fx.Graph) -> None:
    """Rename nodes whose names generated code reserves (``nn``, ``F``, ``math``…) or Python
    keeps (``_``, ``match``: soft keywords).

    ``output`` is kept for the output node: torch.fx names a call of a submodule called
    ``output`` "output" and the real output node "output_1"; specs leave the output node's
    name out, so it must be "output".
    """
    for node in graph.nodes:
        name = node.name
        if node.op != "output" and (name in RESERVED_NAMES or name == "output" or keyword.issoftkeyword(name)):
            node._rename(name + "_1")
    last = next(iter(reversed(graph.nodes)))
    if last.op == "output" and last.name != "output":
        last._rename("output")


def loadable_class_name(spec: Spec) -> str:
    """``spec.name`` if ``load_spec`` takes it as the class name, else that name made one: only ASCII
    letters, digits and _ kept (``Model`` put before a name that would start with a digit or be
    empty), and ``Model`` added while it is a keyword, a builtin, a name the generated code uses
    (``F``, ``nn``, ``torch``, a package it imports) or one of the spec's blocks."""
    taken = set(RESERVED_NAMES) | set(spec.classes)
    roots = [m.cls for m in spec.modules.values()]
    roots += [n.target for n in walk_nodes(spec.nodes) if n.op == "call_function" and isinstance(n.target, str)]
    taken |= {root.split(".")[0] for root in roots if "." in root}
    name = spec.name
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and not _unusable(name, taken):
        return name
    name = re.sub(r"[^A-Za-z0-9_]", "", name)
    if not name or name[0].isdigit():
        name = "Model" + name
    while _unusable(name, taken):
        name += "Model"
    return name


def _unusable(name: str, taken: set[str]) -> bool:
    return keyword.iskeyword(name) or keyword.issoftkeyword(name) or hasattr(builtins, name) or name in taken


def _format2_spec(gm: torch.fx.GraphModule, spec: Spec, name: str | None) -> Spec:
    """What ``fxgen.load`` built from a format-2 spec: the declarations it was built from (argument
    expressions cannot be read back from the numbers they gave), with the nodes its graphs hold
    now; a block's from its instances, which must agree. A block GraphModule gives a spec of its
    own class, with the spec's other blocks."""
    blocks: dict[str, list[torch.fx.GraphModule]] = {}
    for module in gm.modules():
        if module is gm or not isinstance(module, torch.fx.GraphModule):
            continue
        declared = module.meta.get(META_KEY)
        if declared is not None and declared.spec.scope[:1] == ("classes",):
            blocks.setdefault(declared.spec.scope[1], []).append(module)
    classes: dict[str, ClassSpec] = {}
    for block, body in spec.classes.items():
        if block == spec.name and spec.scope:
            continue  # the block this GraphModule is
        graphs = [_written_or_graph(instance, body) for instance in blocks.get(block, [])]
        if any(nodes != graphs[0] for nodes in graphs[1:]):
            raise ExportError(f"the instances of block {block!r} no longer run the same graph; a format-2 "
                              "spec holds one graph per class: change every instance, or export the model")  # fmt: skip
        classes[block] = dataclasses.replace(body, nodes=graphs[0] if graphs else body.nodes)
    nodes = _written_or_graph(gm, spec)
    return dataclasses.replace(spec, name=name or spec.name, nodes=nodes, classes=classes, document=None, scope=())


def _written_or_graph(gm: torch.fx.GraphModule, body: Spec | ClassSpec) -> list[Item]:
    """A class built from conditionals or repeats whose graph nothing changed since: the items as
    written (its graph is one instance's); else ``gm``'s nodes."""
    declared = gm.meta.get(META_KEY)
    if declared is not None and declared.written is not None and gm.code == declared.code \
            and not isinstance(gm, ModeGraphModule):  # fmt: skip
        return declared.written
    return _graph_nodes(gm, body)


def _graph_nodes(gm: torch.fx.GraphModule, body: Spec | ClassSpec) -> list[Item]:
    """``gm``'s nodes, when they use only what ``body`` declares. A module with one graph per
    mode gives ``body``'s items where each mode's graph is still what they resolve to, else its
    two graphs aligned (``fxgen.describe.align``)."""
    if not isinstance(gm, ModeGraphModule):
        return list(_plain_nodes(gm.graph, body))
    nodes = {case: _plain_nodes(graph, body) for case, graph in gm.case_graphs().items()}
    declared = gm.meta.get(META_KEY)
    if declared is not None:
        written = declared.written if declared.written is not None else body.nodes
        env = with_values(declared.values, body.values, spec_functions(declared.spec))
        envs = case_envs(written)
        if set(envs) == set(nodes) and all(resolve_nodes(written, {**env, **envs[c]}) == nodes[c] for c in nodes):
            return list(written)
    if any(absent for _, absent in nodes):
        raise ExportError("the graph depends on which optional inputs a call gives, and it changed after loading; "
                          "export the model with fxgen.export instead")  # fmt: skip
    return align(nodes[(False, frozenset())], nodes[(True, frozenset())]).spec_items()


def _plain_nodes(graph: torch.fx.Graph, body: Spec | ClassSpec) -> list[Node]:
    declared = (*body.modules, *body.parameters, *body.buffers)
    for node in graph.nodes:
        if node.op in ("call_module", "get_attr") and not any(
            node.target == path or str(node.target).startswith(path + ".") for path in declared
        ):
            raise ExportError(f"node {node.name!r} uses {node.target!r}, which its format-2 spec does not "
                              "declare; a graph changed after loading is exported with fxgen.export")  # fmt: skip
    return [_node(n) for n in graph.nodes if not is_check(n)]


def _dedupe(items: list[Any]) -> list[str]:
    return list(dict.fromkeys(str(i) for i in items))


def _same_class(qualname: str, module: torch.nn.Module) -> bool:
    return qualname.rsplit(".", 1)[-1] == type(module).__name__


class Submodules:
    """``root.get_submodule(path)`` for many paths, each dotted prefix looked up once.

    Leaf modules share their containers' paths (``layer1.0.conv1``, ``layer1.0.bn1``), and
    ``get_submodule`` walks every segment again with two attribute lookups each. The same
    lookups are made (``getattr``, which is what ``get_submodule`` does), only fewer times;
    a missing path is left to ``get_submodule`` to report.
    """

    def __init__(self, root: torch.nn.Module) -> None:
        self._root = root
        self._found: dict[str, torch.nn.Module] = {"": root}

    def get(self, path: str) -> torch.nn.Module:
        found = self._found.get(path)
        if found is not None:
            return found
        parent_path, _, name = path.rpartition(".")
        parent = self.get(parent_path)
        child = getattr(parent, name, None)
        if not isinstance(child, torch.nn.Module):
            return self._root.get_submodule(path)  # raises torch's AttributeError
        self._found[path] = child
        return child


def recover_declaration(path: str, module: torch.nn.Module, cache: RebuildCache, names: dict[type, str]) -> ModuleSpec:
    """The verified constructor call of a module fxgen can rebuild (``fxgen.describe.recover``)."""
    return _recover(path, module, cache, names)


def _recover(path: str, module: torch.nn.Module, cache: RebuildCache, names: dict[type, str]) -> ModuleSpec:
    from fxgen.describe.recover import recover_and_check
    from fxgen.describe.thirdparty import register_known

    cls = type(module)
    name = names.get(cls)
    if name is None:
        register_known(cls)
    args, kwargs = recover_and_check(path, module, cache=cache)
    if name is None:
        name = names[cls] = class_name(cls)
    held: list[torch.nn.Module] = []  # modules the constructor takes: format 2's module values
    try:
        entry = ModuleSpec(name, [encode(_hide(a, held)) for a in args],
                           {k: encode(_hide(v, held)) for k, v in kwargs.items()})  # fmt: skip
    except UnencodableValue as exc:
        raise ExportError(f"module {path!r} ({cls.__name__}): {exc}") from None
    if not held:
        return entry
    values = [{"module": module_value(f"{path} (its argument {i})", m, cache, names)} for i, m in enumerate(held)]
    return ModuleSpec(entry.cls, _shown(entry.args, values), _shown(entry.kwargs, values))


_HELD = "\0fxgen-module-value:"  # stands for a module argument while the rest is encoded


def _hide(value: Any, held: list[torch.nn.Module]) -> Any:
    if isinstance(value, torch.nn.Module):
        held.append(value)
        return f"{_HELD}{len(held) - 1}"
    if type(value) in (list, tuple):
        return type(value)(_hide(v, held) for v in value)
    if type(value) is dict:
        return {k: _hide(v, held) for k, v in value.items()}
    return value


def _shown(encoded: Any, values: list[dict[str, Any]]) -> Any:
    if isinstance(encoded, str) and encoded.startswith(_HELD):
        return values[int(encoded.removeprefix(_HELD))]
    if isinstance(encoded, list):
        return [_shown(v, values) for v in encoded]
    if isinstance(encoded, dict):
        return {k: _shown(v, values) for k, v in encoded.items()}
    return encoded


def module_value(path: str, module: torch.nn.Module, cache: RebuildCache, names: dict[type, str]) -> dict[str, Any]:
    """A module a constructor takes, as a format-2 module value: an ``nn.Sequential`` or
    ``nn.ModuleList`` from its contents, any other module by its verified constructor call."""
    if type(module) in (torch.nn.Sequential, torch.nn.ModuleList):
        keys = list(module._modules)
        if keys != [str(i) for i in range(len(keys))]:
            raise ExportError(f"{path}: a {type(module).__name__} with named items cannot be a constructor argument")
        items = [{"module": module_value(f"{path}.{k}", child, cache, names)}
                 for k, child in module._modules.items() if child is not None]  # fmt: skip
        cls = f"torch.nn.{type(module).__name__}"
        return {"class": cls, "args": items if cls == "torch.nn.Sequential" else [items]} if items else {"class": cls}
    return _recover(path, module, cache, names).to_dict()


def _tensors(
    gm: torch.fx.GraphModule, modules: dict[str, ModuleSpec], declared: Any
) -> tuple[dict[str, ParameterSpec], dict[str, BufferSpec]]:
    """Parameters and buffers not owned by a declared module, plus tensors get_attr reads that
    are neither (set on a GraphModule by hand). Every path is declared, tied tensors included
    (a state_dict has a key for each); tensors the checkpoint does not carry come with their
    values (``valued_buffer``)."""

    def owned(path: str) -> bool:
        """Is a proper dotted prefix of ``path`` a declared module? (linear in the path, not in modules)"""
        end = path.rfind(".")
        while end > 0:
            if path[:end] in modules:
                return True
            end = path.rfind(".", 0, end)
        return False

    parameters: dict[str, ParameterSpec] = {}
    buffers: dict[str, BufferSpec] = {}
    found_parameters, found_buffers = _named_tensors(gm, modules)
    for path, param in found_parameters:
        known = declared.parameters.get(path) if declared else None
        spec = ParameterSpec(list(param.shape), dtype_name(param.dtype), requires_grad=param.requires_grad)
        if known is not None and (known.shape, known.dtype) == (spec.shape, spec.dtype):
            spec.init = known.init
        parameters[path] = spec
    for path, buf, owner in found_buffers:
        persistent = path.rpartition(".")[2] not in owner._non_persistent_buffers_set
        known = declared.buffers.get(path) if declared else None
        if known is not None and known.persistent == persistent and _buffer_matches(known, buf):
            buffers[path] = known
        elif persistent:
            buffers[path] = BufferSpec(shape=list(buf.shape), dtype=tensor_dtype(path, buf))
        else:
            buffers[path] = valued_buffer(path, buf)
    for node in gm.graph.nodes:
        if node.op != "get_attr" or node.target in parameters or node.target in buffers or owned(node.target):
            continue
        value = _get_attr(gm, node.target)
        if not isinstance(value, torch.Tensor):
            raise ExportError(_not_a_tensor(node, value))
        buffers[node.target] = valued_buffer(node.target, value)
    return parameters, buffers


def _not_a_tensor(node: torch.fx.Node, value: Any) -> str:
    """Why a get_attr that reads no tensor cannot be written, and what to do."""
    users = ", ".join(sorted({str(getattr(u.target, "__name__", u.target)) for u in node.users})) or "nothing"
    if isinstance(value, torch.nn.Module):
        return (f"the graph passes module {node.target!r} ({type(value).__name__}) itself as a value to {users}: a spec "
                f"calls modules but cannot hand one to a function; call the module in the forward "
                f"(self.{node.target}(x)), or make the code that takes it a leaf module (leaf_modules / --leaf-module)")
    return (f"the graph reads attribute {node.target!r}, a {type(value).__name__} (used by {users}), as a value: a spec "
            "can read only tensors and call modules; compute it from a tensor, or make the code that reads it a leaf "
            "module (leaf_modules / --leaf-module)")


def _named_tensors(
    gm: torch.nn.Module, modules: dict[str, ModuleSpec]
) -> tuple[list[tuple[str, torch.Tensor]], list[tuple[str, torch.Tensor, torch.nn.Module]]]:
    """``gm``'s parameters and buffers at every path (``remove_duplicate=False``: a tensor or
    module registered twice is declared on each path, as the state dict has it), less those
    inside a declared module, from one walk that decides ownership once per module instead of
    once per tensor; buffers come with the module holding them."""
    parameters: list[tuple[str, torch.Tensor]] = []
    buffers: list[tuple[str, torch.Tensor, torch.nn.Module]] = []
    inside: dict[str, bool] = {"": False}  # module path -> is it or an ancestor declared
    for path, module in gm.named_modules(remove_duplicate=False):
        if path:
            parent = path.rpartition(".")[0]
            owned = inside[path] = path in modules or inside[parent]
            if owned:
                continue
        prefix = path + "." if path else ""
        for name, param in module._parameters.items():
            if param is not None:
                parameters.append((prefix + name, param))
        for name, buf in module._buffers.items():
            if buf is not None:
                buffers.append((prefix + name, buf, module))
    return parameters, buffers


def _buffer_matches(known: BufferSpec, buf: torch.Tensor) -> bool:
    """Does the declaration still describe ``buf`` (values too, where it gives them)?"""
    if known.dtype != dtype_name(buf.dtype):
        return False
    if known.value is not None:
        return _same_bits(torch.tensor(known.value, dtype=buf.dtype), buf)
    if known.shape != list(buf.shape):
        return False
    return known.data is None or _same_bits(unpack(known.data, known.shape, known.dtype), buf)


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal shapes, dtypes and bytes (NaN payloads and the sign of zero included)."""
    if a.shape != b.shape or a.dtype != b.dtype or b.is_meta:
        return False
    flat_a, flat_b = a.detach().cpu().reshape(-1), b.detach().cpu().reshape(-1)
    if flat_a.dtype != torch.bool:  # a bool is one byte already
        flat_a, flat_b = flat_a.contiguous().view(torch.uint8), flat_b.contiguous().view(torch.uint8)
    return torch.equal(flat_a, flat_b)


def tensor_dtype(path: str, tensor: torch.Tensor) -> str:
    try:
        return dtype_name(tensor.dtype)
    except UnencodableValue as exc:
        raise ExportError(f"{path!r}: {exc}") from None


def valued_buffer(path: str, tensor: torch.Tensor) -> BufferSpec:
    """A non-persistent buffer declared with its exact values: a readable literal when it is
    small and the literal gives back the same bits, else packed bytes (``fxgen.spec.packed``)."""
    dtype = tensor_dtype(path, tensor)
    if tensor.is_meta:
        raise ExportError(f"{path!r} is not in the checkpoint, so the spec must carry its values, but it is on the "
                          "meta device and has none; export a model with real tensors")  # fmt: skip
    if tensor.numel() == 0:
        return BufferSpec(shape=list(tensor.shape), dtype=dtype, persistent=False)  # no values to carry
    literal = _literal(tensor)
    if literal is not None:
        return BufferSpec(value=literal, dtype=dtype, persistent=False)
    return BufferSpec(shape=list(tensor.shape), dtype=dtype, persistent=False, data=pack(tensor))


def _literal(tensor: torch.Tensor) -> Any:
    """``tensor.tolist()`` if it is small and ``torch.tensor`` gives back exactly its bits, else None."""
    if tensor.numel() > LITERAL_LIMIT or tensor.is_complex():
        return None
    if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
        return None  # the spec's literals are JSON numbers: no NaN or infinity
    value = tensor.detach().cpu().tolist()
    return value if _same_bits(torch.tensor(value, dtype=tensor.dtype), tensor) else None


def _get_attr(gm: torch.nn.Module, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _type_text(annotation: Any) -> str:
    """An annotation as the spec reader spells it back (``Policy.resolve_type``'s canonical
    form): ``type_repr`` keeps an ``X | None`` nested in ``tuple[...]`` as written, the reader
    gives ``typing.Optional[X]``, and a spec must read back equal to itself."""
    text = type_repr(annotation)
    try:
        return DEFAULT_POLICY.resolve_type(text)[1]
    except TargetError:  # (not a type the default policy reads: written as it is, the reader says why)
        return text


def _node(node: torch.fx.Node) -> Node:
    def ref(value: Any) -> str | None:
        return value.name if isinstance(value, torch.fx.Node) else None

    try:
        args = [encode(a, ref) for a in node.args]
        kwargs = {k: encode(v, ref) for k, v in node.kwargs.items()}
    except UnencodableValue as exc:
        raise ExportError(f"node {node.name!r} ({node.op} {node.target}): {exc}") from None
    out = Node(op=node.op, name=node.name, type=_type_text(node.type) if node.type is not None else None)
    if node.op == "placeholder":
        if args:
            out.default = args[0]
        if str(node.target).startswith("*"):
            raise ExportError(f"placeholder {node.target!r}: variadic arguments are not supported; "
                              "pass concrete_args or wrap the module")  # fmt: skip
        return out
    if node.op == "output":
        out.name = None if node.name == "output" else node.name
        out.args = args
        return out
    out.target = _call_target(node) if node.op == "call_function" else str(node.target)
    out.args, out.kwargs = args, kwargs
    return out


def _call_target(node: torch.fx.Node) -> str:
    """The name the spec used (if fxgen built the node and it still names the same function)."""
    spelled = node.meta.get(TARGET_KEY)
    if isinstance(spelled, str) and _NAMED.get(spelled) is node.target:
        return spelled
    if isinstance(spelled, str) and _lookup(spelled) is node.target:
        _NAMED[spelled] = node.target
        return spelled
    return function_name(node.target)


_NAMED: dict[str, Any] = {}


_PUBLIC_HOMES: tuple[tuple[str, Any], ...] = (
    ("operator", operator),
    ("math", math),
    ("torch", torch),
    ("torch.nn.functional", torch.nn.functional),
    ("torch.fft", torch.fft),
    ("torch.linalg", torch.linalg),
    ("torch.special", torch.special),
)


_NAMES: dict[int, str] = {}


def function_name(fn: Any) -> str:
    """A qualified name of ``fn`` that resolves back to the same object, public where possible."""
    cached = _NAMES.get(id(fn))
    if cached is not None:
        return cached
    name = _function_name(fn)
    _NAMES[id(fn)] = name
    return name


def _function_name(fn: Any) -> str:
    short = getattr(fn, "__name__", None)
    if not isinstance(short, str):
        raise ExportError(f"call target {fn!r} has no name; wrap it in a named function")
    if SAFE_BUILTINS.get(short) is fn or getattr(builtins, short, None) is fn:
        return short
    for home, namespace in _PUBLIC_HOMES:
        for candidate in (short, short.split("_", 1)[-1]):
            if not candidate.startswith("_") and getattr(namespace, candidate, None) is fn:
                return f"{home}.{candidate}"
    from torch.fx.node import _get_qualified_name

    try:
        name = _get_qualified_name(fn)
    except Exception as exc:
        raise ExportError(f"cannot name call target {fn!r}: {exc}") from None
    if _is_private(name):
        name = _public_alias(fn, name) or name
    if _lookup(name) is not fn:
        raise ExportError(f"call target {name!r} does not resolve back to the traced function: "
                          f"{_unreachable(fn, name)}")  # fmt: skip
    return name


def _is_private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def _public_alias(fn: Any, name: str) -> str | None:
    """The shortest public dotted name (then the first in order) of the same object as ``fn``,
    which ``name`` reaches through a private module (``torch.masked._ops.sum`` is
    ``torch.masked.sum``): looked up in the public modules above ``name``'s and in the
    namespaces the default policy reads, as already imported. None when there is none."""
    import sys

    from fxgen.policy.tables import DEFAULT_NAMESPACES

    parts = name.split(".")[:-1]
    homes = [".".join(parts[:i]) for i in range(1, len(parts) + 1) if not _is_private(".".join(parts[:i]))]
    found = []
    for home in dict.fromkeys((*homes, *DEFAULT_NAMESPACES)):
        module = sys.modules.get(home)
        if home and not _is_private(home) and module is not None:
            found += [f"{home}.{key}" for key, value in vars(module).items() if value is fn and not key.startswith("_")]
    return min(found, key=lambda dotted: (len(dotted), dotted)) if found else None


def _unreachable(fn: Any, name: str) -> str:
    """Why ``name`` does not give ``fn`` back, as the user can act on it."""
    qualname = getattr(fn, "__qualname__", "")
    short = getattr(fn, "__name__", "")
    wrapper = getattr(torch, short, None)
    if qualname.startswith("_VariableFunctionsClass.") and wrapper is not None and wrapper is not fn:
        return (f"it is torch's internal builtin behind the Python function torch.{short}, which torch.fx records "
                f"when torch.{short} is given the traced values inside a list or tuple it does not look into: "
                f"pass them as separate arguments (torch.{short}(a, b)), so torch.fx records torch.{short} itself")
    if "<locals>" in qualname:
        return f"{qualname!r} is defined inside a function; define it at module level (and torch.fx.wrap it)"
    return (f"it is a {type(fn).__name__} that its module does not hold under that name (a wrapper or a "
            "patched function); call the function it wraps, or mark the code calling it a leaf (leaf_modules)")


def spec_state(gm: torch.fx.GraphModule) -> dict[str, torch.Tensor]:
    """The state a spec's weights file holds: the exported module's state_dict (every tensor
    outside it is declared with its value in the spec)."""
    return {k: v.detach() for k, v in gm.state_dict().items()}
