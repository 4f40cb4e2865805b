"""Validate stage: a located Document -> a Spec, or a SpecError listing every problem.

The JSON Schema checks the shape; this module checks what a schema cannot: names, references
and their order, that targets resolve under the target policy, that constructor arguments bind,
that initialisers fit their tensors. Nothing a spec names is called here except the allowed
nn.Module classes' signatures and their construction: on the meta device (for the constructor
and get_attr checks), or, when validating for a load, by the constructor the load will use, so
that each module is constructed once and the build keeps it (``validate_for_load``).
"""

from __future__ import annotations

import builtins
import functools
import inspect
import keyword
import re
from collections.abc import Callable, Iterator
from typing import Any

import torch

from fxgen._errors import Diagnostic, Location, SpecError
from fxgen._policy import DEFAULT_POLICY, Policy, TargetError
from fxgen._reader import Document, JsonPath, parse_text
from fxgen._schema import check_schema
from fxgen._spec import FORMAT_VERSION, Spec
from fxgen._tensors import check_init
from fxgen._values import DTYPES, decode, decode_kwargs, iter_refs, plain_refs

__all__ = ["RESERVED_NAMES", "Construct", "parse_data", "validate_data", "validate_document", "validate_for_load"]

# Names the generated module and torch.fx's own code use as globals; a node may not shadow them.
RESERVED_NAMES = frozenset({"self", "torch", "nn", "F", "operator", "math", "typing", "builtins",
                            "device", "inf", "nan", "NoneType", "pytree", "fx_pytree"})  # fmt: skip
# jsonschema's `$` also matches before a trailing newline, so names are re-checked with fullmatch.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# what decoding a value the schema accepted can raise: a bad device string, a complex part
# beyond a float, a torch.Size that is not one
_DECODE_ERRORS = (RuntimeError, ValueError, TypeError, OverflowError)
_SEGMENT = re.compile(r"(?!__)[A-Za-z_][A-Za-z0-9_]*|0|[1-9][0-9]*")
_DEVICE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?::(?:0|[1-9][0-9]*))?")


Construct = Callable[[str, dict[str, Any], type], Any]
"""``(path, declaration, class) -> module``: how ``validate_for_load`` constructs a declared
module (the declaration as data; the class already resolved and its arguments checked)."""


def validate_document(doc: Document, policy: Policy = DEFAULT_POLICY) -> Spec:
    """Check ``doc`` fully and return its Spec; raise SpecError with every problem found."""
    return _validate(doc, policy, None)[0]


def validate_for_load(
    doc: Document, policy: Policy, construct: Construct
) -> tuple[Spec, dict[str, Any]]:
    """``validate_document``, constructing each declared module with ``construct`` (the load's
    own constructor) instead of on the meta device; returns the Spec and those modules by path.

    Errors are the same as ``validate_document``'s: a constructor that fails is tried again on
    the meta device, and only a failure there is a spec problem. One that fails only for real
    (memory, devices) leaves the module out, so the build constructs it and reports that at
    the declaration, as it does for a validated Spec.
    """
    return _validate(doc, policy, construct)


def _validate(doc: Document, policy: Policy, construct: Construct | None) -> tuple[Spec, dict[str, Any]]:
    _check_version(doc)
    errors = check_schema(doc)
    if errors:
        raise SpecError(errors)
    checker = _Checker(doc, policy, construct)
    checker.run()
    if checker.errors:
        raise SpecError(checker.errors)
    spec = Spec.from_dict(doc.data, document=doc)
    for node, canonical in zip(spec.nodes, checker.canonical_types, strict=True):
        node.type = canonical
        if node.op == "output" and node.name == "output":
            node.name = None  # torch.fx's own name for it; to_spec leaves it out too
    if any(node.name is None and node.op != "output" for node in spec.nodes):
        # torch.fx names unnamed nodes itself ("relu"); a later explicit name may collide with
        # one of those. Building the bare graph (no modules, no tensors) is the exact check.
        from fxgen._build import build_graph

        build_graph(spec, policy)
    return spec, checker.constructed


def validate_data(data: dict[str, Any], policy: Policy = DEFAULT_POLICY, *, path: str = "<spec>") -> Spec:
    """Validate an in-memory dict (locations come from its JSON rendering)."""
    return validate_document(parse_data(data, path), policy)


def parse_data(data: dict[str, Any], path: str = "<spec>") -> Document:
    """An in-memory dict as a located Document: its JSON rendering, parsed (to be validated)."""
    import json

    try:
        text = json.dumps(data, indent=1, ensure_ascii=False)  # characters as they are, to be checked and located
    except (TypeError, ValueError, RecursionError) as exc:  # not JSON data: sets, huge ints, cycles, objects
        raise SpecError.at(Location(path), f"the spec is not plain JSON data: {exc}") from None
    return parse_text(text, path, json_syntax=True)


def _check_version(doc: Document) -> None:
    data = doc.data
    if not isinstance(data, dict):
        return  # the schema reports it
    version = data.get("fxgen")
    if isinstance(version, (int, float)) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise SpecError.at(
            doc.locate(("fxgen",)),
            f"spec format version {version} is newer than this fxgen supports ({FORMAT_VERSION}); "
            "upgrade fxgen (pip install -U fxgen)",
        )
    # Future format versions are upgraded here, before the schema check: data = _upgrade(data).


class _Checker:
    def __init__(self, doc: Document, policy: Policy, construct: Construct | None = None) -> None:
        self.doc = doc
        self.data: dict[str, Any] = doc.data
        self.policy = policy
        self.construct = construct
        self.errors: list[Diagnostic] = []
        self.canonical_types: list[str | None] = []
        self.module_classes: dict[str, type] = {}
        # path -> an instance of the declared module, for get_attr checks
        self.instances: dict[str, Any] = {}
        # path -> the module ``construct`` built (validating for a load): the build keeps it
        self.constructed: dict[str, Any] = {}
        # constructor call -> its meta instance or why it fails: models repeat the same block
        self.meta_builds: dict[tuple[type, str], tuple[Any, str | None]] = {}
        self.bindings: dict[tuple[type, str], str | None] = {}  # the same, for signature binding
        self.keyword_names: set[str] = set()  # keyword argument names already found usable
        self.arities: dict[str, Any] = {}  # call_function target -> its operator arity, or None

    def error(self, path: JsonPath, message: str, *, key: bool = False) -> None:
        loc = self.doc.key_location(path) if key else self.doc.locate(path)
        # One line, always: messages may quote torch's or the policy's multi-line exceptions.
        self.errors.append(Diagnostic(loc, " ".join(message.splitlines())))

    def run(self) -> None:
        self.check_class_name()
        self.check_paths()
        self.check_modules()
        self.check_tensors("parameters")
        self.check_tensors("buffers")
        self.check_nodes()

    # -- declarations ------------------------------------------------------------------------
    def check_class_name(self) -> None:
        name: str = self.data["name"]
        if not _IDENTIFIER.fullmatch(name):
            self.error(("name",), f"class name {name!r} is not an identifier; use only letters, digits and _")
        elif keyword.iskeyword(name) or keyword.issoftkeyword(name):
            self.error(("name",), f"class name {name!r} is a Python keyword; choose another name")
        elif hasattr(builtins, name) or name in RESERVED_NAMES or name in self.imported_roots:
            self.error(("name",), f"class name {name!r} would shadow a name the generated code uses; "
                       "choose another name")  # fmt: skip

    def check_paths(self) -> None:
        seen: dict[str, str] = {}
        for table in ("modules", "parameters", "buffers"):
            for path in self.data.get(table, {}):
                where = (table, path)
                problem = _path_problem(path)
                if problem:
                    self.error(where, f"path {path!r}: {problem}", key=True)
                elif path in seen:
                    self.error(where, f"{path!r} is already declared in `{seen[path]}`; "
                               "declare each path once", key=True)  # fmt: skip
                    continue
                seen[path] = table
        modules = self.data.get("modules", {})
        kinds = {"modules": "module", "parameters": "parameter", "buffers": "buffer"}
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
                    self.error((table, path), f"{path!r} is inside {kinds[seen[prefix]]} {prefix!r}, which "
                               "cannot hold attributes; declare it on another path", key=True)  # fmt: skip
                    break

    def check_modules(self) -> None:
        for path, entry in self.data.get("modules", {}).items():
            where: JsonPath = ("modules", path)
            try:
                cls = self.policy.resolve_module_class(entry["class"])
            except TargetError as exc:
                hint = "; call functions with a call_function node" if "not an nn.Module" in str(exc) else ""
                self.error((*where, "class"), f"module {path!r}: {exc}{hint}")
                continue
            args = self.decode_constant(entry.get("args", []), (*where, "args"))
            kwargs = self.decode_constant(entry.get("kwargs", {}), (*where, "kwargs"), mapping=True)
            if args is None or kwargs is None:
                continue
            unfit = self.bind_problem(cls, entry, args, kwargs)
            if unfit is not None:
                self.error(where, f"module {path!r}: arguments do not fit {entry['class']}: {unfit}; "
                           f"its signature is {cls.__name__}{_plain_signature(_signature(cls))}")  # fmt: skip
                continue
            module, problem = self.build(path, entry, cls)
            if problem:  # the constructor itself refuses them (types, ranges, devices): say so now, not at load
                self.error(where, f"module {path!r}: {entry['class']} cannot be built with these arguments: {problem}")
                continue
            self.module_classes[path] = cls
            self.instances[path] = module

    def bind_problem(self, cls: type, entry: dict[str, Any], args: list[Any], kwargs: dict[str, Any]) -> str | None:
        """Why ``cls``'s signature refuses the (decoded) arguments, or None: bound once per
        distinct call, as models repeat the same block (binding costs about 10 us)."""
        call = _call_key(cls, entry)
        if call not in self.bindings:
            try:
                _signature(cls).bind(*args, **kwargs)
            except TypeError as exc:
                self.bindings[call] = str(exc)
            else:
                self.bindings[call] = None
        return self.bindings[call]

    def build(self, path: str, entry: dict[str, Any], cls: type) -> tuple[Any, str | None]:
        """The module (for attribute checks) and why its constructor refuses the call, or None.

        On the meta device each distinct call is built once. Validating for a load, the load's
        constructor builds every module; when it fails, the meta build decides whether the spec
        is wrong (reported here, as always) or only the real build is (left to the build).
        """
        if self.construct is not None:
            try:
                module = self.construct(path, entry, cls)
            except Exception:
                pass
            else:
                self.constructed[path] = module
                return module, None
        call = _call_key(cls, entry)
        if call not in self.meta_builds:
            self.meta_builds[call] = _meta_build(entry, cls)
        return self.meta_builds[call]

    def check_tensors(self, table: str) -> None:
        for path, entry in self.data.get(table, {}).items():
            where: JsonPath = (table, path)
            dtype = entry.get("dtype", "float32")
            if "value" in entry:
                try:
                    torch.tensor(entry["value"], dtype=getattr(torch, dtype))
                except (TypeError, ValueError, RuntimeError) as exc:
                    self.error((*where, "value"), f"{path!r}: value is not a valid {dtype} tensor ({exc}); "
                               "nested lists must be rectangular: every row the same length")  # fmt: skip
                continue
            shape = entry["shape"]
            floats = [i for i, d in enumerate(shape) if not isinstance(d, int)]
            for i in floats:
                self.error((*where, "shape", i), f"{path!r}: shape entries are integers; write {int(shape[i])}, "
                           f"not {shape[i]}")  # fmt: skip
            init = entry.get("init", "zeros")
            groups = init.get("dirac", {}).get("groups") if isinstance(init, dict) else None
            if groups is not None and not isinstance(groups, int):
                self.error((*where, "init", "dirac", "groups"), f"{path!r}: groups is an integer; write {int(groups)}")
                continue
            problem = None if floats else check_init(init, shape, dtype)
            if problem:
                self.error((*where, "init") if "init" in entry else where, f"{path!r}: {problem}")
            if table == "parameters" and entry.get("requires_grad", True) and not _differentiable(dtype):
                self.error(where, f"parameter {path!r} has dtype {dtype}, which cannot require gradients; "
                           "add `requires_grad: false` or declare it as a buffer", key=True)  # fmt: skip

    def decode_constant(self, value: Any, where: JsonPath, *, mapping: bool = False) -> Any:
        refs = list(iter_refs(value))
        for rel, name in refs:
            self.error((*where, *rel), f"%{name}: module arguments are constants and cannot refer to a node; "
                       f"write '%%{name}' for the literal string '%{name}'")  # fmt: skip
        names_ok = self.check_kwargs(value, where) if mapping else True
        if not (self.check_tags(value, where, mapping=mapping) and names_ok) or refs:
            return None
        try:
            return decode_kwargs(value, _no_ref) if mapping else decode(value, _no_ref)
        except _DECODE_ERRORS as exc:
            self.error(where, f"invalid value: {exc}")
            return None

    def check_kwargs(self, kwargs: dict[str, Any], where: JsonPath) -> bool:
        """Keyword names must be usable in generated code: identifiers, not keywords."""
        ok = True
        for key in kwargs:
            if not self.is_keyword_name(key):
                what = "a Python keyword" if keyword.iskeyword(key) else "not an identifier"
                self.error((*where, key), f"keyword argument {key!r} is {what}; a call cannot pass it by name",
                           key=True)  # fmt: skip
                ok = False
        return ok

    def check_tags(self, value: Any, where: JsonPath, *, mapping: bool = False) -> bool:
        """Tagged values the schema cannot fully check: devices and torch.Size entries."""
        ok = True
        items = value.items() if mapping else [((), value)]
        tagged = [found for key, item in items for found in _tagged(item, (key,) if mapping else ())]
        for rel, tag, body in tagged:
            at = (*where, *rel, tag)
            if tag == "device":
                problem = _device_problem(body)
                if problem:
                    self.error(at, f"invalid device {body!r}: {problem}; write a device such as cpu, cuda:0 or meta")
                    ok = False
            elif tag == "size" and not all(isinstance(d, int) for d in body):
                self.error(at, "torch.Size entries are integers; write 4, not 4.0")
                ok = False
        return ok

    # -- nodes -------------------------------------------------------------------------------
    def check_nodes(self) -> None:
        nodes: list[dict[str, Any]] = self.data["nodes"]
        defined: dict[str, int] = {}
        seen_other = False
        with_default: str | None = None
        outputs = [i for i, n in enumerate(nodes) if n["op"] == "output"]
        if not outputs:
            self.error(("nodes",), "the graph has no output node; end `nodes` with {op: output, args: [...]}",
                       key=True)  # fmt: skip
        for i in outputs[:-1]:
            self.error(("nodes", i), "only one output node is allowed, and it must come last; "
                       "return several values as {tuple: [...]}")  # fmt: skip
        if outputs and outputs[-1] != len(nodes) - 1:
            self.error(("nodes", outputs[-1]), "the output node must be the last node; move it to the end")
        for i, node in enumerate(nodes):
            where: JsonPath = ("nodes", i)
            op = node["op"]
            if op == "placeholder":
                if seen_other:
                    self.error(where, "placeholders must come before every other node; move it up")
                elif "default" in node:
                    with_default = with_default or node["name"]
                elif with_default is not None:
                    self.error((*where, "name"), f"placeholder {node['name']!r} has no default but follows "
                               f"{with_default!r}, which has one; give it a default or move it before "
                               f"{with_default!r}")  # fmt: skip
            seen_other = seen_other or op != "placeholder"
            # The same checks in the same order (references, type, values, target); a node whose
            # values pass one walk (the common case) skips the walks that could only report.
            clean = self.clean_values(node, op, defined)
            if not clean:
                self.check_refs(node, where, defined)
            self.canonical_types.append(self.check_type(node, where))
            if not clean and op != "get_attr":
                self.check_values(node, where)
            getattr(self, f"check_{op}")(node, where)
            name = node.get("name")
            if name is None:
                continue
            if name in defined:
                self.error((*where, "name"), f"node name {name!r} is already used by node {defined[name]}; "
                           "node names must be unique, rename one")  # fmt: skip
                continue
            self.check_name(name, (*where, "name"), op)
            defined[name] = i  # even when refused, so references to it are not reported again

    def check_name(self, name: str, where: JsonPath, op: str) -> None:
        if not _IDENTIFIER.fullmatch(name):
            self.error(where, f"node name {name!r} is not an identifier; use only letters, digits and _")
        elif keyword.iskeyword(name) or keyword.issoftkeyword(name):
            self.error(where, f"node name {name!r} is a Python keyword; choose another name")
        elif name in self.builtin_names:
            self.error(where, f"node name {name!r} would shadow the builtin {name!r}; choose another name")
        elif name in RESERVED_NAMES or name in self.imported_roots:
            self.error(where, f"node name {name!r} is reserved for a module the generated code imports; "
                       "choose another name")  # fmt: skip
        elif name == "output" and op != "output":
            self.error(where, "node name 'output' is reserved for the output node; choose another name")

    @functools.cached_property
    def imported_roots(self) -> frozenset[str]:
        """Top-level packages the generated code will import (node names must not shadow them)."""
        roots = {m["class"].split(".")[0] for m in self.data.get("modules", {}).values()}
        roots |= {n["target"].split(".")[0] for n in self.data["nodes"] if n["op"] == "call_function"}
        return frozenset(r for r in roots if "." in r or r not in self.builtin_names)

    @property
    def builtin_names(self) -> dict[str, Any]:
        """The names ``dir(builtins)`` lists, read live (the REPL adds ``_`` at run time): the
        namespace itself, since a set of its 160 names built per validation cost more than the checks."""
        return vars(builtins)

    def clean_values(self, node: dict[str, Any], op: str, defined: dict[str, int]) -> bool:
        """Whether ``check_refs`` and ``check_values`` would find nothing to report in ``node``,
        answered by one walk per value (``plain_refs``); False means "run them", not "wrong"."""
        refs: list[str] = []
        if "args" in node and not plain_refs(node["args"], refs):
            return False
        if "kwargs" in node:
            kwargs = node["kwargs"]
            if type(kwargs) is not dict:
                return False
            for key, value in kwargs.items():
                if not self.is_keyword_name(key) or not plain_refs(value, refs):
                    return False
        if "default" in node:
            constant: list[str] = []  # a default may not refer to nodes at all
            if op != "placeholder" or not plain_refs(node["default"], constant) or constant:
                return False
        return all(name in defined for name in refs)

    def is_keyword_name(self, key: str) -> bool:
        """Usable as a keyword argument in generated code (an identifier, not a keyword);
        remembered when it is, since models pass the same few names over and over."""
        if key in self.keyword_names:
            return True
        if _IDENTIFIER.fullmatch(key) and not keyword.iskeyword(key):
            self.keyword_names.add(key)
            return True
        return False

    def check_refs(self, node: dict[str, Any], where: JsonPath, defined: dict[str, int]) -> None:
        for field in ("args", "kwargs", "default"):
            if field not in node:
                continue
            for rel in _size_paths(node[field], kwargs=field == "kwargs"):
                self.error((*where, field, *rel), "torch.fx stores torch.Size arguments as tuples; "
                           "write {tuple: [...]} here ({size: ...} is for module arguments)")
            for rel, name in iter_refs(node[field]):
                at = (*where, field, *rel)
                if field == "default":
                    self.error(at, f"%{name}: a placeholder default is a constant and cannot refer to a node; "
                               f"write '%%{name}' for the literal string '%{name}'")  # fmt: skip
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
            if field not in node:
                continue
            names_ok = self.check_kwargs(node[field], (*where, field)) if field == "kwargs" else True
            if not (self.check_tags(node[field], (*where, field), mapping=field == "kwargs") and names_ok):
                continue
            try:
                (decode_kwargs if field == "kwargs" else decode)(node[field], _any_ref)
            except _DECODE_ERRORS as exc:
                self.error((*where, field), f"invalid value: {exc}")

    def check_placeholder(self, node: dict[str, Any], where: JsonPath) -> None:
        pass  # its values were checked by check_nodes, like every node's

    def check_output(self, node: dict[str, Any], where: JsonPath) -> None:
        pass

    def check_get_attr(self, node: dict[str, Any], where: JsonPath) -> None:
        target: str = node["target"]
        if target in self.data.get("parameters", {}) or target in self.data.get("buffers", {}):
            return
        path = self.owning_module(target)
        if path is not None:
            cls = self.module_classes.get(path)
            if cls is None:
                return  # a module whose declaration is invalid was reported already
            module = self.instances[path]
            attr = target[len(path) + 1 :]
            found, value = _attribute(module, attr)
            if not found:
                names = _attribute_names(module)
                has = f"; it has {', '.join(names)}" if names else ""
                self.error((*where, "target"), f"module {path!r} ({cls.__name__}) has no attribute {attr!r}{has}")
                return
            try:  # public tensors and plain data only: not submodules, methods, hooks, _modules...
                self.policy.check_module_attribute(attr, value)
            except TargetError as exc:
                self.error((*where, "target"), _node_prefix(node) + str(exc))
            return
        self.error((*where, "target"), f"get_attr target {target!r} is not a declared parameter, buffer "
                   "or attribute of a declared module; declare it under `parameters` or `buffers`")  # fmt: skip

    def owning_module(self, target: str) -> str | None:
        """The first declared module (in declaration order) whose path is a prefix of ``target``:
        only the target's own prefixes are looked up, not every module per get_attr node."""
        order = self.module_order
        found = [prefix for prefix in _prefixes(target) if prefix in order]
        return min(found, key=order.__getitem__) if found else None

    @functools.cached_property
    def module_order(self) -> dict[str, int]:
        return {path: i for i, path in enumerate(self.data.get("modules", {}))}

    def check_call_module(self, node: dict[str, Any], where: JsonPath) -> None:
        if node["target"] not in self.data.get("modules", {}):
            self.error((*where, "target"), f"call_module target {node['target']!r} is not declared; "
                       "declare it under `modules`")  # fmt: skip

    def check_call_method(self, node: dict[str, Any], where: JsonPath) -> None:
        target: str = node["target"]
        if not _IDENTIFIER.fullmatch(target):
            self.error((*where, "target"), f"method name {target!r} is not an identifier")
            return
        if _is_number_literal(node.get("args", [None])[0]):
            # torch.fx writes repr(obj).method(...): `2.view()` does not parse, `-2.5.abs()` means -(2.5.abs())
            self.error((*where, "args", 0), _node_prefix(node) + "a method cannot be called on the number literal "
                       "in args[0]; call it on a node (such as '%x')")  # fmt: skip
            return
        try:
            self.policy.check_method(target)
        except TargetError as exc:
            self.error((*where, "target"), _node_prefix(node) + str(exc))

    def check_call_function(self, node: dict[str, Any], where: JsonPath) -> None:
        target = node["target"]
        try:
            function = self.policy.resolve_function(target)
        except TargetError as exc:
            self.error((*where, "target"), _node_prefix(node) + str(exc))
            return
        arity = self.arities.get(target, _UNSET)
        if arity is _UNSET:  # one lookup per distinct target, not per node
            arity = _fx_operator_arity().get(getattr(function, "__name__", "")) if _is_operator(function) else None
            self.arities[target] = arity
        if arity is not None and (len(node.get("args", [])) != arity or node.get("kwargs")):
            self.error((*where, "args"), _node_prefix(node) + f"{target} takes exactly {arity} positional "
                       f"argument{'s' * (arity != 1)} and no keywords (torch.fx writes it as an operator)")  # fmt: skip
            return
        if target in ("getattr", "hasattr"):
            args = node.get("args", [])
            attr = args[1] if len(args) > 1 else None
            if not isinstance(attr, str) or (attr.startswith("%") and not attr.startswith("%%")):
                self.error((*where, "args"), f"{target} needs a literal attribute name as its second argument")
                return
            if target == "getattr" and _is_number_literal(args[0]):
                # torch.fx writes repr(obj).attr: `0.shape` does not parse
                self.error((*where, "args", 0), _node_prefix(node) + "getattr cannot read an attribute of the "
                           "number literal in args[0]; read it from a node (such as '%x')")  # fmt: skip
                return
            try:
                self.policy.check_attribute(attr.removeprefix("%"))
            except TargetError as exc:
                self.error((*where, "args", 1), _node_prefix(node) + str(exc))


_UNSET: Any = object()


def _prefixes(target: str) -> list[str]:
    """``"a.b.c"`` -> ``["a", "a.b"]``: the paths a declared module owning ``target`` could have."""
    parts = target.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _is_number_literal(value: Any) -> bool:
    """An int or float literal (not bool): torch.fx writes it bare before a dot, which cannot parse."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
        isinstance(value, dict) and "float" in value
    )


@functools.cache
def _module_attributes() -> frozenset[str]:
    """Names an nn.Module instance already has (class and instance attributes)."""
    return frozenset(dir(torch.nn.Module()))


@functools.cache
def _graph_module_attributes() -> frozenset[str]:
    """Names the root GraphModule has on top of an nn.Module's (``graph``, ``code``, ``meta``...)."""
    import torch.fx

    return frozenset(dir(torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph()))) - _module_attributes()


def _path_problem(path: str) -> str | None:
    """Why a dotted declaration path cannot be an attribute path, or None."""
    for i, segment in enumerate(path.split(".")):
        if not _SEGMENT.fullmatch(segment):
            return (f"segment {segment!r} is not an identifier or index; use letters, digits and _ "
                    "(not starting with __), or a number")  # fmt: skip
        if keyword.iskeyword(segment) or keyword.issoftkeyword(segment):
            return f"segment {segment!r} is a Python keyword; rename it"
        if segment in _module_attributes():
            return f"segment {segment!r} is an nn.Module attribute (nn.Module.{segment}); rename it"
        if i == 0 and segment in _graph_module_attributes():
            return f"{segment!r} is an attribute of torch.fx.GraphModule; rename it"
    return None


def _device_problem(text: str) -> str | None:
    if not _DEVICE.fullmatch(text):
        return "a device is a type with an optional index"
    try:
        torch.device(text)
    except RuntimeError:
        return f"unknown device type {text.partition(':')[0]!r}"
    return None


def _tagged(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str, Any]]:
    """Every tagged mapping inside an encoded (schema-valid) value: (path, tag, body)."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _tagged(item, (*path, i))
    elif isinstance(value, dict):
        ((tag, body),) = value.items()
        yield path, tag, body
        if tag == "dict":
            for key, item in body.items():
                yield from _tagged(item, (*path, tag, key))
        elif tag in ("tuple", "slice"):
            for i, item in enumerate(body):
                yield from _tagged(item, (*path, tag, i))


def _differentiable(dtype: str) -> bool:
    return DTYPES[dtype].is_floating_point or DTYPES[dtype].is_complex


def _plain_signature(signature: inspect.Signature) -> str:
    return str(signature.replace(return_annotation=inspect.Signature.empty))


def _size_paths(value: Any, path: tuple[Any, ...] = (), *, kwargs: bool = False) -> Iterator[tuple[Any, ...]]:
    """Where ``value`` holds a ``{size: ...}`` tag; a node's kwargs mapping is not itself a value
    (``kwargs: {size: ...}`` passes ``size=``)."""
    if kwargs and isinstance(value, dict):
        for key, item in value.items():
            yield from _size_paths(item, (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _size_paths(item, (*path, i))
    elif isinstance(value, dict):
        if list(value) == ["size"]:
            yield path
        for key, item in value.items():
            yield from _size_paths(item, (*path, key))


def _node_prefix(node: dict[str, Any]) -> str:
    name = node.get("name")
    return f"node {name!r}: " if isinstance(name, str) else ""


def _any_ref(name: str) -> Any:
    return None  # node values are not known while validating


def _no_ref(name: str) -> Any:
    raise AssertionError(f"unexpected reference %{name}")  # refs were checked before decoding


def _call_key(cls: type, entry: dict[str, Any]) -> tuple[type, str]:
    """What makes two declarations the same constructor call (its arguments as the spec encodes them)."""
    return cls, repr((entry.get("args", []), entry.get("kwargs", {})))


@functools.cache
def _signature(cls: type) -> inspect.Signature:
    return inspect.signature(cls)


def _meta_build(entry: dict[str, Any], cls: type) -> tuple[Any, str | None]:
    """``cls(*args, **kwargs)`` on the meta device (no memory, no initialisation), as load builds
    it with weights: the module, or None and why the constructor refuses the call.

    It draws nothing from the global generator: a module given an explicit ``device`` builds
    real tensors even here, and their initialisation must not shift what a load draws.
    """
    from fxgen._build import construct_call, same_random_state

    with same_random_state():
        try:
            return construct_call(cls, entry.get("args", []), entry.get("kwargs", {}), "meta"), None
        except Exception as exc:
            text = str(exc).strip().splitlines()
            return None, f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


@functools.cache
def _fx_operator_arity() -> dict[str, int]:
    """operator functions torch.fx prints as Python operators (``"{} + {}".format(*args)``): with
    other arguments it crashes (too few) or silently drops them (too many, keywords)."""
    from torch.fx.graph import inplace_methods, magic_methods

    return {name: text.count("{}") for name, text in {**magic_methods, **inplace_methods}.items()}


def _is_operator(function: Any) -> bool:
    import operator

    name = getattr(function, "__name__", None)
    return isinstance(name, str) and getattr(operator, name, None) is function


def _attribute(module: Any, attr: str) -> tuple[bool, Any]:
    """``module.<attr>`` (a dotted path): whether it exists, and its value."""
    obj = module
    try:
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception:
        return False, None
    return True, obj


def _attribute_names(module: Any) -> list[str]:
    """The state a module instance holds (``weight``, ``bias``, ``0.weight``), for messages."""
    if not isinstance(module, torch.nn.Module):
        return []
    names = [name for name, _ in module.named_parameters()] + [name for name, _ in module.named_buffers()]
    return names[:12]


def iter_node_targets(spec: Spec) -> Iterator[str]:
    """Qualified names a spec's call_function nodes and modules use (for import lists)."""
    for module in spec.modules.values():
        yield module.cls
    for node in spec.nodes:
        if node.op == "call_function" and node.target:
            yield node.target
