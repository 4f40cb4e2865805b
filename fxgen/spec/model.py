"""The spec model: plain dataclasses holding a validated spec in its encoded (JSON) form.

Values stay encoded (``"%x"``, ``{"tuple": [...]}``) so a Spec compares, hashes into files and
serialises without torch; the graph builder decodes them. ``Spec.from_dict`` trusts its input
to be schema-valid — validation (``fxgen.check.validate``) is the way in from untrusted data.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from fxgen._errors import Location

if TYPE_CHECKING:
    from fxgen.read.reader import Document

__all__ = [
    "FORMAT_VERSION",
    "NO_DEFAULT",
    "ArgSpec",
    "BufferSpec",
    "ClassSpec",
    "ForNodes",
    "FunctionSpec",
    "IfNodes",
    "InputSpec",
    "Item",
    "ModuleSpec",
    "Node",
    "ParameterSpec",
    "Spec",
    "item_from_data",
    "plain_nodes",
    "walk_items",
    "walk_loops",
    "walk_nodes",
    "yaml_text",
]


FORMAT_VERSION = 2  # the newest format this fxgen reads and writes; format 1 is a subset of it


class _NoDefault:
    """Marks a placeholder without a default (``None`` is a valid default)."""

    _instance: _NoDefault | None = None

    def __new__(cls) -> _NoDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DEFAULT"

    def __reduce__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass
class ModuleSpec:
    """A submodule built by ``cls(*args, **kwargs)``; ``init`` initialises some of its
    parameters and buffers afterwards (their path in the module -> an init scheme)."""

    cls: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    init: dict[str, Any] = field(default_factory=dict)
    # format 2: declared only when this expression (or bool) holds for the instance; None: always
    when: str | bool | None = None
    # what validation found each ``init`` path to be ("parameter" or "buffer"): the generated code
    # asks the module for it by kind (``get_parameter``), which type checkers read exactly
    kinds: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": self.cls}
        if self.args:
            out["args"] = self.args
        if self.kwargs:
            out["kwargs"] = self.kwargs
        if self.init:
            out["init"] = self.init
        if self.when is not None:
            out["if"] = self.when
        return out

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> ModuleSpec:
        """From a schema-valid declaration (``{class, args, kwargs, init, if}``)."""
        return cls(data["class"], list(data.get("args", [])), dict(data.get("kwargs", {})), dict(data.get("init", {})),
                   data.get("if"))  # fmt: skip


@dataclass
class ParameterSpec:
    """An ``nn.Parameter`` of ``shape``/``dtype`` initialised by ``init``."""

    shape: list[int]
    dtype: str = "float32"
    init: Any = "zeros"
    requires_grad: bool = True

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"shape": self.shape}
        if self.dtype != "float32":
            out["dtype"] = self.dtype
        if self.init != "zeros":
            out["init"] = self.init
        if not self.requires_grad:
            out["requires_grad"] = False
        return out


@dataclass
class BufferSpec:
    """A registered buffer: ``shape`` + ``init``, a literal ``value``, or ``shape`` + packed
    ``data`` (the exact bytes, ``fxgen.spec.packed``)."""

    shape: list[int] | None = None
    dtype: str = "float32"
    init: Any = "zeros"
    value: Any = None
    persistent: bool = True
    data: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.value is not None:
            out["value"] = self.value
        else:
            out["shape"] = self.shape
        if self.dtype != "float32":
            out["dtype"] = self.dtype
        if self.value is None and self.data is None and self.init != "zeros":
            out["init"] = self.init
        if not self.persistent:
            out["persistent"] = False
        if self.data is not None:
            out["data"] = self.data  # last: a long line that nobody reads
        return out


@dataclass
class Node:
    """One torch.fx node, fields as in ``torch.fx.Node``; values encoded."""

    op: str
    name: str | None = None
    target: str | None = None
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    type: str | None = None
    default: Any = NO_DEFAULT

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op}
        if self.name is not None:
            out["name"] = self.name
        if self.target is not None:
            out["target"] = self.target
        if self.args or self.op in ("output", "call_method"):
            out["args"] = self.args
        if self.kwargs:
            out["kwargs"] = self.kwargs
        if self.type is not None:
            out["type"] = self.type
        if self.default is not NO_DEFAULT:
            out["default"] = self.default
        return out


@dataclass
class IfNodes:
    """A node-list item ``{if: COND, then: [...], else: [...]}`` (format 2): the ``then`` items
    when the condition (an expression over the class's arguments, named values, enclosing loop
    indices and ``training``) holds, else the ``else`` items (``fxgen.spec.resolve``)."""

    cond: Any
    then: list[Item]
    orelse: list[Item] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"if": self.cond, "then": [item.to_dict() for item in self.then]}
        if self.orelse:
            out["else"] = [item.to_dict() for item in self.orelse]
        return out


@dataclass
class ForNodes:
    """A node-list item ``{for: i, in: COUNT, nodes: [...], carry: {...}, collect: NAME}``
    (format 2): the ``nodes`` once per index ``0 .. COUNT-1``; ``carry`` says what each step
    hands the next under an outer name, ``collect`` names the list of each step's last value
    (``fxgen.spec.resolve``)."""

    var: str
    count: Any
    nodes: list[Item]
    carry: dict[str, Any] = field(default_factory=dict)
    collect: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"for": self.var, "in": self.count, "nodes": [item.to_dict() for item in self.nodes]}
        if self.carry:
            out["carry"] = dict(self.carry)
        if self.collect is not None:
            out["collect"] = self.collect
        return out


Item = Node | IfNodes | ForNodes
"""What a node list holds: nodes (``alias`` among them) and, in format 2, conditionals and repeats."""


def item_from_data(data: dict[str, Any]) -> Item:
    """A node-list item from schema-valid data."""
    if "if" in data:
        return IfNodes(data["if"], [item_from_data(d) for d in data["then"]],
                       [item_from_data(d) for d in data.get("else", [])])  # fmt: skip
    if "for" in data:
        return ForNodes(data["for"], data["in"], [item_from_data(d) for d in data["nodes"]],
                        dict(data.get("carry", {})), data.get("collect"))  # fmt: skip
    return Node(**data)


def plain_nodes(items: list[Item]) -> list[Node]:
    """The nodes of a plain graph (an exported spec, one instance resolved by
    ``fxgen.assemble.module.instance_spec``); TypeError for a list holding a conditional or a
    repeat, which only codegen and resolution take as they are."""
    for item in items:
        if not isinstance(item, Node):
            raise TypeError("a node list with conditionals or repeats: resolve it for an instance first")
    return items  # type: ignore[return-value]  # every item is a Node


def walk_items(items: list[Item]) -> list[Item]:
    """Every item of ``items`` and of the conditionals and repeats among them, in the order written."""
    out: list[Item] = []
    stack: list[Item] = list(reversed(items))
    while stack:
        item = stack.pop()
        out.append(item)
        if isinstance(item, IfNodes):
            stack.extend(reversed([*item.then, *item.orelse]))
        elif isinstance(item, ForNodes):
            stack.extend(reversed(item.nodes))
    return out


def walk_loops(items: list[Item]) -> list[ForNodes]:
    """Every repeat of ``items`` (inside conditionals and other repeats too), in the order written."""
    return [item for item in walk_items(items) if isinstance(item, ForNodes)]


def walk_nodes(items: list[Item]) -> list[Node]:
    """Every node of ``items`` (inside conditionals and repeats too), in the order written."""
    if all(type(item) is Node for item in items):
        return items  # type: ignore[return-value]  # a plain graph: the list itself
    return [item for item in walk_items(items) if isinstance(item, Node)]


@dataclass
class InputSpec:
    """An example input: its shape (sizes, or names of symbolic dimensions) and dtype."""

    shape: list[int | str]
    dtype: str = "float32"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"shape": self.shape}
        if self.dtype != "float32":
            out["dtype"] = self.dtype
        return out


@dataclass
class ArgSpec:
    """A constructor argument of a class (format 2): its type and, if it has one, its default
    (in the value encoding). Written ``int`` alone, or ``{type: int, default: 1}``."""

    type: str
    default: Any = NO_DEFAULT

    def to_dict(self) -> Any:
        return self.type if self.default is NO_DEFAULT else {"type": self.type, "default": self.default}

    @classmethod
    def from_data(cls, data: Any) -> ArgSpec:
        return cls(data) if isinstance(data, str) else cls(data["type"], data.get("default", NO_DEFAULT))


@dataclass
class FunctionSpec:
    """A function of a format-2 spec (``functions:``): pure, over numbers. Its arguments (as a
    class's: a type, or ``{type, default}``), named values computed from them in order, the
    expression it returns (``return``) and that value's type (``int``, ``float`` or ``bool``);
    every expression of the spec may call it, and the generated file defines it with ``def``."""

    args: dict[str, ArgSpec]
    returns: str
    type: str
    values: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"args": {name: arg.to_dict() for name, arg in self.args.items()}}
        if self.values:
            out["values"] = dict(self.values)
        out["return"] = self.returns
        out["type"] = self.type
        return out

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> FunctionSpec:
        return cls(args={name: ArgSpec.from_data(a) for name, a in data.get("args", {}).items()},
                   returns=data["return"], type=data["type"], values=dict(data.get("values", {})))  # fmt: skip


_TABLES = ("modules", "parameters", "buffers")


def _body(data: dict[str, Any]) -> dict[str, Any]:
    """The fields a graph body has, top class and blocks alike, from schema-valid data."""
    return {
        "doc": data.get("doc"),
        "args": {name: ArgSpec.from_data(a) for name, a in data.get("args", {}).items()},
        "values": dict(data.get("values", {})),
        "modules": {path: ModuleSpec.from_data(m) for path, m in data.get("modules", {}).items()},
        "parameters": {path: ParameterSpec(**p) for path, p in data.get("parameters", {}).items()},
        "buffers": {path: BufferSpec(**b) for path, b in data.get("buffers", {}).items()},
        "nodes": [Node(**n) if "op" in n else item_from_data(n) for n in data["nodes"]],
    }


def _body_dict(body: Spec | ClassSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if body.doc is not None:
        out["doc"] = body.doc
    if body.args:
        out["args"] = {name: arg.to_dict() for name, arg in body.args.items()}
    if body.values:
        out["values"] = dict(body.values)
    for key in _TABLES:
        table = getattr(body, key)
        if table:
            out[key] = {path: item.to_dict() for path, item in table.items()}
    out["nodes"] = [node.to_dict() for node in body.nodes]
    return out


@dataclass
class ClassSpec:
    """A block of a format-2 spec: a graph of its own, with its own modules, parameters and
    buffers, constructor arguments and the values named from them (``values``: name ->
    expression, ``fxgen.spec.expr``). It becomes a class in the generated file."""

    nodes: list[Item]
    doc: str | None = None
    args: dict[str, ArgSpec] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    modules: dict[str, ModuleSpec] = field(default_factory=dict)
    parameters: dict[str, ParameterSpec] = field(default_factory=dict)
    buffers: dict[str, BufferSpec] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClassSpec:
        return cls(**_body(data))

    def to_dict(self) -> dict[str, Any]:
        return _body_dict(self)


@dataclass
class Spec:
    """A whole model spec: the top class (its graph and declarations) and, in format 2, the
    blocks it is built from and its constructor arguments. ``document`` (where it was read from)
    and ``scope`` (which part of it this Spec is) take no part in equality."""

    name: str
    nodes: list[Item]
    doc: str | None = None
    modules: dict[str, ModuleSpec] = field(default_factory=dict)
    parameters: dict[str, ParameterSpec] = field(default_factory=dict)
    buffers: dict[str, BufferSpec] = field(default_factory=dict)
    fxgen: int = 1
    args: dict[str, ArgSpec] = field(default_factory=dict)
    classes: dict[str, ClassSpec] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)  # format 2: named values of the top class
    functions: dict[str, FunctionSpec] = field(default_factory=dict)  # format 2: what its expressions may call
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)  # format 2: name -> argument presets
    inputs: dict[str, InputSpec] = field(default_factory=dict)
    checks: list[str] | None = None  # the forward checks its inputs against ``inputs`` and these conditions
    shapes: bool = False
    passes: list[Any] = field(default_factory=list)
    weights_digest: str | None = None  # the digest of the weights file exported with the spec
    document: Document | None = field(default=None, compare=False, repr=False)
    scope: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def locate(self, key: tuple[str | int, ...]) -> Location:
        """Where ``key`` (a JSON path into this class's part of the spec) is in the file it was
        read from; a Spec made in memory has no file, so errors about it name the class instead."""
        if self.document is not None:
            return self.document.locate((*self.scope, *key))
        return Location(f"<spec {self.name}>")

    def block(self, name: str) -> Spec:
        """The block ``name`` as a Spec of its own (its graph and declarations; the spec's other
        blocks, which it may use; located inside ``classes:``): what builds and renders a
        block is what builds and renders the top class."""
        body = self.classes[name]
        return Spec(name=name, nodes=body.nodes, doc=body.doc, modules=body.modules, parameters=body.parameters,
                    buffers=body.buffers, fxgen=self.fxgen, args=body.args, values=body.values,
                    classes=self.classes, functions=self.functions,
                    document=self.document, scope=("classes", name))  # fmt: skip

    # -- dict form -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], document: Document | None = None) -> Spec:
        """Build from schema-valid data (see ``fxgen.validate`` for untrusted data)."""
        return cls(
            fxgen=data["fxgen"],
            name=data["name"],
            classes={name: ClassSpec.from_dict(c) for name, c in data.get("classes", {}).items()},
            functions={name: FunctionSpec.from_data(f) for name, f in data.get("functions", {}).items()},
            variants={name: dict(v) for name, v in data.get("variants", {}).items()},
            inputs={name: InputSpec(**i) for name, i in data.get("inputs", {}).items()},
            checks=list(data["checks"]) if "checks" in data else None,
            shapes=data.get("shapes", False),
            passes=list(data.get("passes", [])),
            weights_digest=data.get("weights_digest"),
            document=document,
            **_body(data),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data in the canonical key order; defaults are left out."""
        out: dict[str, Any] = {"fxgen": self.fxgen, "name": self.name}
        body = _body_dict(self)
        if "doc" in body:
            out["doc"] = body.pop("doc")
        if "args" in body:
            out["args"] = body.pop("args")
        if "values" in body:
            out["values"] = body.pop("values")
        if self.functions:
            out["functions"] = {name: f.to_dict() for name, f in self.functions.items()}
        if self.variants:
            out["variants"] = self.variants
        if self.classes:
            out["classes"] = {name: c.to_dict() for name, c in self.classes.items()}
        out.update(body)
        if self.inputs:
            out["inputs"] = {name: i.to_dict() for name, i in self.inputs.items()}
        if self.checks is not None:
            out["checks"] = list(self.checks)
        if self.shapes:
            out["shapes"] = True
        if self.passes:
            out["passes"] = self.passes
        if self.weights_digest is not None:
            out["weights_digest"] = self.weights_digest
        return out

    # -- text forms --------------------------------------------------------------------------
    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False) + "\n"

    def to_yaml(self, *, schema_ref: str | None = None, compact: bool = True) -> str:
        """Readable YAML: block style at the top, one flow mapping per entry where it fits; the
        nodes in the compact form wherever it says them exactly (``fxgen.spec.compacting``:
        the text loads as this Spec), or with ``compact=False`` all canonical."""
        if not compact:
            return yaml_text(self.to_dict(), schema_ref=schema_ref)
        from fxgen.spec.compacting import compacted

        return yaml_text(compacted(self.to_dict()), schema_ref=schema_ref)

    def to_file(self, path: str | Path) -> None:
        """Write as YAML or JSON (by suffix), atomically."""
        from fxgen.write.atomic import write_atomic

        path = Path(path)
        text = self.to_json() if path.suffix == ".json" else self.to_yaml()
        write_atomic(path, text)


def yaml_text(data: dict[str, Any], *, schema_ref: str | None = None) -> str:
    """A spec's data as readable YAML: block style at the top, one flow mapping per entry where it
    fits (``Spec.to_yaml``, and ``fxgen expand``'s canonical nodes of a compact spec)."""
    lines: list[str] = []
    if schema_ref:
        lines.append(f"# yaml-language-server: $schema={schema_ref}")
    _yaml_body(data, "", lines)
    return "\n".join(lines) + "\n"


def _yaml_body(data: dict[str, Any], indent: str, lines: list[str]) -> None:
    """A graph body's keys in block style (a block's body one level deeper, under its name)."""
    inner = indent + "  "
    for key, value in data.items():
        if key in (*_TABLES, "args", "values", "functions", "variants", "inputs"):
            lines.append(f"{indent}{key}:")
            for path, item in value.items():
                lines.append(_flow_entry(f"{inner}{_scalar(path)}: ", item, inner + "  "))
        elif key == "classes":
            lines.append(f"{indent}classes:")
            for name, body in value.items():
                lines.append(f"{inner}{_scalar(name)}:")
                _yaml_body(body, inner + "  ", lines)
        elif key == "checks" and not value:
            lines.append(f"{indent}checks: []")
        elif key in ("nodes", "passes", "checks"):
            lines.append(f"{indent}{key}:")
            entry = _item_entry if key == "nodes" else _flow_entry
            for node in value:
                lines.append(entry(f"{inner}- ", node, inner + "  "))
        else:
            lines.append(_flow_entry(f"{indent}{key}: ", value, inner))


_FLOW_WIDTH = 100


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """PyYAML's safe dumper, also quoting strings that YAML 1.2 (fxgen's reader) reads as numbers."""


# PyYAML resolves YAML 1.1 only: without these, the strings "1e5" and "0o17" would be written
# plain and read back as a float and an int.
_Dumper.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$"),
    list("-+.0123456789"),
)


_Dumper.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^0o[0-7]+$"), ["0"])


def _dump(value: Any, *, flow: bool, width: int = 10**9, style: str | None = None) -> str:
    return yaml.dump(
        value, Dumper=_Dumper, default_flow_style=flow, default_style=style, sort_keys=False, allow_unicode=True,
        width=width,
    ).rstrip("\n").removesuffix("\n...")  # fmt: skip


# What YAML (1.1, as libyaml reads it) takes as a line break, also inside quoted scalars.
_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")


def _one_line(text: str) -> bool:
    return not any(b in text for b in _BREAKS)


def _scalar(value: Any) -> str:
    return _dump(value, flow=True)


def _flow_entry(prefix: str, value: Any, indent: str) -> str:
    """``prefix`` + value as one flow line if short enough, else as an indented block."""
    flow = _scalar(value)
    if _one_line(flow) and len(prefix) + len(flow) <= _FLOW_WIDTH:
        return prefix + flow
    if not isinstance(value, (dict, list)):
        # A long string: the emitter folds it at spaces into continuation lines (it may overrun
        # its width by a word, hence the margin), indented under the key. Breaks other than
        # "\n" are written escaped, in double quotes, so that every line gets the indent.
        exotic = isinstance(value, str) and not _one_line(value.replace("\n", ""))
        wrapped = _dump(value, flow=True, width=max(_FLOW_WIDTH - len(prefix) - 12, 20), style='"' if exotic else None)
        return prefix + wrapped.replace("\n", "\n" + indent)
    block = _block(value, indent)
    if prefix.endswith("- "):
        return prefix + block.lstrip()
    return prefix.rstrip() + "\n" + block


def _item_entry(prefix: str, item: Any, indent: str) -> str:
    """A list item; a compact step (a mapping of one key, its name) as ``- name: value``, as a
    person writes it, the value in flow style."""
    if isinstance(item, dict) and len(item) == 1:
        ((key, value),) = item.items()
        head = f"{prefix}{_key(key)}: "
        if len(head) <= _MAX_IMPLICIT_KEY and isinstance(key, str) and key not in ("if", "for", "op"):
            return _flow_entry(head, value, indent + "  ")
    return _flow_entry(prefix, item, indent)


def _block(value: dict[str, Any] | list[Any], indent: str) -> str:
    """Block style for the outer level, flow style (one line each) for the parts."""
    lines = []
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    for key, item in items:
        if key is None:
            head = f"{indent}- "
        else:
            head = f"{indent}{_key(key)}: "
            if len(head) > _MAX_IMPLICIT_KEY:
                head = f"{indent}? {_key(key)}\n{indent}: "  # YAML limits implicit keys to 1024 characters
        lines.append(_flow_entry(head, item, indent + "  "))
    return "\n".join(lines)


_MAX_IMPLICIT_KEY = 1000


def _key(key: str) -> str:
    """A mapping key on one line: double-quoted (escapes and all) when it holds a line break."""
    text = _scalar(key)
    return text if _one_line(text) else _dump(key, flow=True, style='"')
