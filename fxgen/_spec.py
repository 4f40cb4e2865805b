"""The spec model: plain dataclasses holding a validated spec in its encoded (JSON) form.

Values stay encoded (``"%x"``, ``{"tuple": [...]}``) so a Spec compares, hashes into files and
serialises without torch; the graph builder decodes them. ``Spec.from_dict`` trusts its input
to be schema-valid — validation (``fxgen._validate``) is the way in from untrusted data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from fxgen._reader import Document

__all__ = ["FORMAT_VERSION", "NO_DEFAULT", "BufferSpec", "ModuleSpec", "Node", "ParameterSpec", "Spec"]

FORMAT_VERSION = 1


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
    """A submodule built by ``cls(*args, **kwargs)``."""

    cls: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": self.cls}
        if self.args:
            out["args"] = self.args
        if self.kwargs:
            out["kwargs"] = self.kwargs
        return out


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
    """A registered buffer: either ``shape`` + ``init`` or a literal ``value``."""

    shape: list[int] | None = None
    dtype: str = "float32"
    init: Any = "zeros"
    value: Any = None
    persistent: bool = True

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.value is not None:
            out["value"] = self.value
        else:
            out["shape"] = self.shape
        if self.dtype != "float32":
            out["dtype"] = self.dtype
        if self.value is None and self.init != "zeros":
            out["init"] = self.init
        if not self.persistent:
            out["persistent"] = False
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
class Spec:
    """A whole model spec. ``document`` (where it was read from) takes no part in equality."""

    name: str
    nodes: list[Node]
    doc: str | None = None
    modules: dict[str, ModuleSpec] = field(default_factory=dict)
    parameters: dict[str, ParameterSpec] = field(default_factory=dict)
    buffers: dict[str, BufferSpec] = field(default_factory=dict)
    fxgen: int = FORMAT_VERSION
    document: Document | None = field(default=None, compare=False, repr=False)

    # -- dict form -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], document: Document | None = None) -> Spec:
        """Build from schema-valid data (see ``fxgen.validate`` for untrusted data)."""
        return cls(
            fxgen=data["fxgen"],
            name=data["name"],
            doc=data.get("doc"),
            modules={
                path: ModuleSpec(m["class"], list(m.get("args", [])), dict(m.get("kwargs", {})))
                for path, m in data.get("modules", {}).items()
            },
            parameters={path: ParameterSpec(**p) for path, p in data.get("parameters", {}).items()},
            buffers={path: BufferSpec(**b) for path, b in data.get("buffers", {}).items()},
            nodes=[Node(**n) for n in data["nodes"]],
            document=document,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data in the canonical key order; defaults are left out."""
        out: dict[str, Any] = {"fxgen": self.fxgen, "name": self.name}
        if self.doc is not None:
            out["doc"] = self.doc
        for key in ("modules", "parameters", "buffers"):
            table = getattr(self, key)
            if table:
                out[key] = {path: item.to_dict() for path, item in table.items()}
        out["nodes"] = [node.to_dict() for node in self.nodes]
        return out

    # -- text forms --------------------------------------------------------------------------
    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False) + "\n"

    def to_yaml(self, *, schema_ref: str | None = None) -> str:
        """Readable YAML: block style at the top, one flow mapping per entry where it fits."""
        lines: list[str] = []
        if schema_ref:
            lines.append(f"# yaml-language-server: $schema={schema_ref}")
        data = self.to_dict()
        for key, value in data.items():
            if key in ("modules", "parameters", "buffers"):
                lines.append(f"{key}:")
                for path, item in value.items():
                    lines.append(_flow_entry(f"  {_scalar(path)}: ", item, "    "))
            elif key == "nodes":
                lines.append("nodes:")
                for node in value:
                    lines.append(_flow_entry("  - ", node, "    "))
            else:
                lines.append(_flow_entry(f"{key}: ", value, "  "))
        return "\n".join(lines) + "\n"

    def to_file(self, path: str | Path) -> None:
        """Write as YAML or JSON (by suffix), atomically."""
        from fxgen._writer import write_atomic

        path = Path(path)
        text = self.to_json() if path.suffix == ".json" else self.to_yaml()
        write_atomic(path, text)


_FLOW_WIDTH = 100


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    pass


def _dump(value: Any, *, flow: bool) -> str:
    return yaml.dump(
        value, Dumper=_Dumper, default_flow_style=flow, sort_keys=False, allow_unicode=True, width=10**9
    ).rstrip("\n").removesuffix("\n...")


def _scalar(value: Any) -> str:
    return _dump(value, flow=True)


def _flow_entry(prefix: str, value: Any, indent: str) -> str:
    """``prefix`` + value as one flow line if short enough, else as an indented block."""
    flow = _scalar(value)
    if "\n" not in flow and len(prefix) + len(flow) <= _FLOW_WIDTH:
        return prefix + flow
    if not isinstance(value, (dict, list)):
        return prefix + flow.replace("\n", "\n" + indent)
    block = _block(value, indent)
    if prefix.endswith("- "):
        return prefix + block.lstrip()
    return prefix.rstrip() + "\n" + block


def _block(value: dict[str, Any] | list[Any], indent: str) -> str:
    """Block style for the outer level, flow style (one line each) for the parts."""
    lines = []
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    for key, item in items:
        head = f"{indent}{_scalar(key)}: " if key is not None else f"{indent}- "
        lines.append(_flow_entry(head, item, indent + "  ") if len(head) < _FLOW_WIDTH else head + _scalar(item))
    return "\n".join(lines)
