"""Validate stage: a located Document -> a Spec, or a SpecError listing every problem.

The JSON Schema checks the shape; this module checks what a schema cannot: names, references
and their order, that targets resolve under the target policy, that constructor arguments bind,
that initialisers fit their tensors. Nothing a spec names is called here except the allowed
nn.Module classes' signatures and their construction on the meta device (for get_attr checks).
"""

from __future__ import annotations

import builtins
import functools
import inspect
import keyword
from collections.abc import Iterator
from typing import Any

import torch

from fxgen._errors import Diagnostic, SpecError
from fxgen._policy import DEFAULT_POLICY, Policy, TargetError
from fxgen._reader import Document, JsonPath, parse_text
from fxgen._schema import check_schema
from fxgen._spec import FORMAT_VERSION, Spec
from fxgen._tensors import check_init
from fxgen._values import decode, decode_kwargs, iter_refs

__all__ = ["RESERVED_NAMES", "validate_data", "validate_document"]

# Names the generated module and torch.fx's own code use as globals; a node may not shadow them.
RESERVED_NAMES = frozenset({"self", "torch", "nn", "F", "operator", "math", "typing", "builtins",
                            "device", "inf", "nan", "NoneType", "pytree", "fx_pytree"})  # fmt: skip
_MODULE_ATTRS = frozenset(dir(torch.nn.Module))


def validate_document(doc: Document, policy: Policy = DEFAULT_POLICY) -> Spec:
    """Check ``doc`` fully and return its Spec; raise SpecError with every problem found."""
    _check_version(doc)
    errors = check_schema(doc)
    if errors:
        raise SpecError(errors)
    checker = _Checker(doc, policy)
    checker.run()
    if checker.errors:
        raise SpecError(checker.errors)
    spec = Spec.from_dict(doc.data, document=doc)
    for node, canonical in zip(spec.nodes, checker.canonical_types, strict=True):
        node.type = canonical
        if node.op == "output" and node.name == "output":
            node.name = None  # torch.fx's own name for it; to_spec leaves it out too
    return spec


def validate_data(data: dict[str, Any], policy: Policy = DEFAULT_POLICY, *, path: str = "<spec>") -> Spec:
    """Validate an in-memory dict (locations come from its JSON rendering)."""
    import json

    return validate_document(parse_text(json.dumps(data, indent=1), path, json_syntax=True), policy)


def _check_version(doc: Document) -> None:
    data = doc.data
    if not isinstance(data, dict):
        return  # the schema reports it
    version = data.get("fxgen")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise SpecError.at(
            doc.locate(("fxgen",)),
            f"spec format version {version} is newer than this fxgen supports ({FORMAT_VERSION}); upgrade fxgen",
        )
    # Future format versions are upgraded here, before the schema check: data = _upgrade(data).


class _Checker:
    def __init__(self, doc: Document, policy: Policy) -> None:
        self.doc = doc
        self.data: dict[str, Any] = doc.data
        self.policy = policy
        self.errors: list[Diagnostic] = []
        self.canonical_types: list[str | None] = []
        self.module_classes: dict[str, type] = {}

    def error(self, path: JsonPath, message: str, *, key: bool = False) -> None:
        loc = self.doc.key_location(path) if key else self.doc.locate(path)
        self.errors.append(Diagnostic(loc, message))

    def run(self) -> None:
        self.check_paths()
        self.check_modules()
        self.check_tensors("parameters")
        self.check_tensors("buffers")
        self.check_nodes()

    # -- declarations ------------------------------------------------------------------------
    def check_paths(self) -> None:
        seen: dict[str, str] = {}
        for table in ("modules", "parameters", "buffers"):
            for path in self.data.get(table, {}):
                where = (table, path)
                for segment in path.split("."):
                    if keyword.iskeyword(segment) or keyword.issoftkeyword(segment):
                        self.error(where, f"path {path!r}: {segment!r} is a Python keyword", key=True)
                    elif segment in _MODULE_ATTRS:
                        self.error(where, f"path {path!r}: {segment!r} is an nn.Module attribute", key=True)
                if path in seen:
                    self.error(where, f"{path!r} is already declared in {seen[path]}", key=True)
                seen[path] = table
        modules = self.data.get("modules", {})
        for path, table in seen.items():
            for i in range(path.count(".")):
                prefix = path.rsplit(".", i + 1)[0]
                if prefix in modules:
                    self.error(
                        (table, path),
                        f"{path!r} is inside module {prefix!r}, which owns its own attributes; "
                        "declare it on a container path instead",
                        key=True,
                    )
                    break
                if prefix in seen:
                    self.error((table, path), f"{path!r} is inside {seen[prefix][:-1]} {prefix!r}", key=True)
                    break

    def check_modules(self) -> None:
        for path, entry in self.data.get("modules", {}).items():
            where: JsonPath = ("modules", path)
            try:
                cls = self.policy.resolve_module_class(entry["class"])
            except TargetError as exc:
                self.error((*where, "class"), f"module {path!r}: {exc}")
                continue
            args = self.decode_constant(entry.get("args", []), (*where, "args"))
            kwargs = self.decode_constant(entry.get("kwargs", {}), (*where, "kwargs"), mapping=True)
            if args is None or kwargs is None:
                continue
            try:
                _signature(cls).bind(*args, **kwargs)
            except TypeError as exc:
                self.error(where, f"module {path!r}: arguments do not fit {entry['class']}: {exc}")
                continue
            self.module_classes[path] = cls

    def check_tensors(self, table: str) -> None:
        for path, entry in self.data.get(table, {}).items():
            where: JsonPath = (table, path)
            dtype = entry.get("dtype", "float32")
            if "value" in entry:
                try:
                    torch.tensor(entry["value"], dtype=getattr(torch, dtype))
                except (TypeError, ValueError, RuntimeError) as exc:
                    self.error((*where, "value"), f"{path!r}: value is not a {dtype} tensor: {exc}")
                continue
            problem = check_init(entry.get("init", "zeros"), entry["shape"], dtype)
            if problem:
                self.error((*where, "init") if "init" in entry else where, f"{path!r}: {problem}")

    def decode_constant(self, value: Any, where: JsonPath, *, mapping: bool = False) -> Any:
        for rel, name in iter_refs(value):
            self.error((*where, *rel), f"%{name}: node references are not allowed here")
            return None
        try:
            return decode_kwargs(value, _no_ref) if mapping else decode(value, _no_ref)
        except (RuntimeError, ValueError, TypeError) as exc:
            self.error(where, f"invalid value: {exc}")
            return None

    # -- nodes -------------------------------------------------------------------------------
    def check_nodes(self) -> None:
        nodes: list[dict[str, Any]] = self.data["nodes"]
        defined: dict[str, int] = {}
        seen_other = False
        outputs = [i for i, n in enumerate(nodes) if n["op"] == "output"]
        if not outputs:
            self.error(("nodes",), "the graph has no output node; end `nodes` with {op: output, args: [...]}")
        for i in outputs[:-1]:
            self.error(("nodes", i), "only one output node is allowed, and it must come last")
        if outputs and outputs[-1] != len(nodes) - 1:
            self.error(("nodes", outputs[-1]), "the output node must be the last node")
        for i, node in enumerate(nodes):
            where: JsonPath = ("nodes", i)
            op = node["op"]
            if op == "placeholder" and seen_other:
                self.error(where, "placeholders must come before every other node")
            seen_other = seen_other or op != "placeholder"
            self.check_refs(node, where, defined)
            self.canonical_types.append(self.check_type(node, where))
            getattr(self, f"check_{op}")(node, where)
            name = node.get("name")
            if name is not None and self.check_name(name, (*where, "name")):
                if name in defined:
                    self.error((*where, "name"), f"node name {name!r} is already used by node {defined[name]}")
                else:
                    defined[name] = i

    def check_name(self, name: str, where: JsonPath) -> bool:
        if keyword.iskeyword(name) or keyword.issoftkeyword(name):
            self.error(where, f"node name {name!r} is a Python keyword; choose another name")
        elif hasattr(builtins, name):
            self.error(where, f"node name {name!r} would shadow the builtin {name!r}; choose another name")
        elif name in RESERVED_NAMES or name in self.imported_roots:
            self.error(where, f"node name {name!r} is reserved for a module the generated code imports")
        else:
            return True
        return False

    @functools.cached_property
    def imported_roots(self) -> frozenset[str]:
        """Top-level packages the generated code will import (node names must not shadow them)."""
        roots = {m["class"].split(".")[0] for m in self.data.get("modules", {}).values()}
        roots |= {n["target"].split(".")[0] for n in self.data["nodes"] if n["op"] == "call_function"}
        return frozenset(r for r in roots if "." in r or r not in dir(builtins))

    def check_refs(self, node: dict[str, Any], where: JsonPath, defined: dict[str, int]) -> None:
        for field in ("args", "kwargs", "default"):
            if field not in node:
                continue
            for rel in _size_paths(node[field]):
                self.error((*where, field, *rel), "torch.fx stores torch.Size arguments as tuples; "
                           "write {tuple: [...]} here ({size: ...} is for module arguments)")
            for rel, name in iter_refs(node[field]):
                at = (*where, field, *rel)
                if field == "default":
                    self.error(at, f"%{name}: a placeholder default cannot refer to a node")
                elif name not in defined:
                    later = any(n.get("name") == name for n in self.data["nodes"])
                    reason = "is defined later (nodes must come in execution order)" if later else "is not defined"
                    self.error(at, f"%{name}: node {name!r} {reason}; write '%%{name}' for a literal string")

    def check_type(self, node: dict[str, Any], where: JsonPath) -> str | None:
        if "type" not in node:
            return None
        try:
            return self.policy.resolve_type(node["type"])[1]
        except TargetError as exc:
            self.error((*where, "type"), str(exc))
            return None

    def check_values(self, node: dict[str, Any], where: JsonPath) -> None:
        for field in ("args", "kwargs", "default"):
            if field in node:
                try:
                    (decode_kwargs if field == "kwargs" else decode)(node[field], _any_ref)
                except (RuntimeError, ValueError, TypeError) as exc:
                    self.error((*where, field), f"invalid value: {exc}")

    def check_placeholder(self, node: dict[str, Any], where: JsonPath) -> None:
        self.check_values(node, where)

    def check_output(self, node: dict[str, Any], where: JsonPath) -> None:
        self.check_values(node, where)

    def check_get_attr(self, node: dict[str, Any], where: JsonPath) -> None:
        target: str = node["target"]
        if target in self.data.get("parameters", {}) or target in self.data.get("buffers", {}):
            return
        for path, cls in self.module_classes.items():
            if target.startswith(path + "."):
                if not _has_attribute(self.data["modules"][path], cls, target[len(path) + 1 :]):
                    self.error((*where, "target"), f"module {path!r} ({cls.__name__}) has no attribute "
                               f"{target[len(path) + 1:]!r}")
                return
        self.error((*where, "target"), f"get_attr target {target!r} is not a declared parameter, buffer "
                   "or attribute of a declared module")  # fmt: skip

    def check_call_module(self, node: dict[str, Any], where: JsonPath) -> None:
        self.check_values(node, where)
        if node["target"] not in self.data.get("modules", {}):
            self.error((*where, "target"), f"call_module target {node['target']!r} is not declared in `modules`")

    def check_call_method(self, node: dict[str, Any], where: JsonPath) -> None:
        self.check_values(node, where)
        try:
            self.policy.check_method(node["target"])
        except TargetError as exc:
            self.error((*where, "target"), str(exc))

    def check_call_function(self, node: dict[str, Any], where: JsonPath) -> None:
        self.check_values(node, where)
        target = node["target"]
        try:
            self.policy.resolve_function(target)
        except TargetError as exc:
            self.error((*where, "target"), str(exc))
            return
        if target in ("getattr", "hasattr"):
            args = node.get("args", [])
            attr = args[1] if len(args) > 1 else None
            if not isinstance(attr, str) or (attr.startswith("%") and not attr.startswith("%%")):
                self.error((*where, "args"), f"{target} needs a literal attribute name as its second argument")
                return
            try:
                self.policy.check_attribute(attr.removeprefix("%"))
            except TargetError as exc:
                self.error((*where, "args", 1), str(exc))


def _size_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _size_paths(item, (*path, i))
    elif isinstance(value, dict):
        if list(value) == ["size"]:
            yield path
        for key, item in value.items():
            yield from _size_paths(item, (*path, key))


def _any_ref(name: str) -> Any:
    return None  # node values are not known while validating


def _no_ref(name: str) -> Any:
    raise AssertionError(f"unexpected reference %{name}")  # refs were checked before decoding


@functools.cache
def _signature(cls: type) -> inspect.Signature:
    return inspect.signature(cls)


def _has_attribute(entry: dict[str, Any], cls: type, attr: str) -> bool:
    """Build the module on the meta device (no memory, no init) and look the attribute up."""
    try:
        with torch.device("meta"):
            module = cls(*decode(entry.get("args", []), _no_ref), **decode_kwargs(entry.get("kwargs", {}), _no_ref))
        obj: Any = module
        for part in attr.split("."):
            obj = getattr(obj, part)
        return True
    except Exception:
        return False


def iter_node_targets(spec: Spec) -> Iterator[str]:
    """Qualified names a spec's call_function nodes and modules use (for import lists)."""
    for module in spec.modules.values():
        yield module.cls
    for node in spec.nodes:
        if node.op == "call_function" and node.target:
            yield node.target
