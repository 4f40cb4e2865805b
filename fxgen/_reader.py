"""Read stage: spec bytes -> plain data plus a map from each value's path to its source location.

YAML is composed (not constructed) with the safe loader and turned into plain values here, so
no tag can make PyYAML build an object, duplicate keys are caught (PyYAML silently keeps the
last), and aliases are expanded under a budget (a "billion laughs" document is refused after a
bounded amount of work). JSON is parsed by :mod:`json` (PyYAML reads ``1e5`` as a string) and
located through the same YAML composer, JSON being YAML flow syntax.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fxgen._errors import Diagnostic, Location, SpecError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_VALUES", "Document", "JsonPath", "parse_text", "read_document"]

JsonPath = tuple[str | int, ...]

MAX_BYTES = 64 * 1024 * 1024  # a 100,000-node spec is about 8 MiB
MAX_DEPTH = 64  # values nest a few levels; anything deeper is an attack or a mistake
MAX_VALUES = 5_000_000  # scalars + collections after alias expansion

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_constructor = yaml.SafeLoader.__new__(yaml.SafeLoader)  # only its scalar constructors are used
yaml.constructor.SafeConstructor.__init__(_constructor)


@dataclass
class Document:
    """A parsed spec file: plain data, where each part of it came from, and the raw bytes."""

    data: Any
    path: str
    locations: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)
    raw: bytes = b""

    def locate(self, path: JsonPath) -> Location:
        """The location of the value at ``path``, or of its nearest located ancestor."""
        while True:
            pos = self.locations.get(path)
            if pos is not None:
                return Location(self.path, *pos)
            if not path:
                return Location(self.path, 1, 1)
            path = path[:-1]

    def key_location(self, path: JsonPath) -> Location:
        """The location of the *key* of a mapping entry (where editors should point)."""
        pos = self.locations.get((*path, _KEY))
        return Location(self.path, *pos) if pos else self.locate(path)


_KEY = "\x00key"  # suffix marking a key position in ``Document.locations``


def read_document(path: str | Path, *, display_path: str | None = None) -> Document:
    """Read a spec file from disk; the only place fxgen reads specs from the file system."""
    shown = display_path if display_path is not None else str(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise SpecError.at(Location(shown), f"cannot read spec: {exc.strerror or exc}") from None
    return parse_text(raw, shown, json_syntax=str(path).endswith(".json"))


def parse_text(raw: bytes | str, path: str = "<spec>", *, json_syntax: bool = False) -> Document:
    """Parse spec text (YAML unless ``json_syntax``) into a located :class:`Document`."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    where = Location(path, 1, 1)
    if len(raw) > MAX_BYTES:
        raise SpecError.at(where, f"spec is larger than {MAX_BYTES // 2**20} MiB; split the model")
    if raw.startswith(b"\xef\xbb\xbf"):
        raise SpecError.at(where, "file starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SpecError.at(
            Location(path, line, col), f"invalid UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as UTF-8"
        ) from None
    if not text.strip() or (not json_syntax and _only_comments(text)):
        raise SpecError.at(where, "spec is empty; it needs at least `fxgen: 1`, `name` and `nodes`")
    doc = Document(data=None, path=path, raw=raw)
    if json_syntax:
        doc.data = _parse_json(text, path)
        try:
            root = yaml.compose(text, Loader=_Loader)
        except (yaml.YAMLError, RecursionError):
            root = None  # valid JSON that YAML cannot read: errors fall back to line 1
        if root is not None:
            _Walker(doc, construct=False).walk(root, ())
        return doc
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = Location(path, mark.line + 1, mark.column + 1) if mark else where
        raise SpecError.at(loc, f"YAML syntax error: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise SpecError.at(where, f"YAML syntax error: {exc}") from None
    except RecursionError:
        raise SpecError.at(where, f"YAML nests deeper than {MAX_DEPTH} levels") from None
    if root is None:
        raise SpecError.at(where, "spec is empty; it needs at least `fxgen: 1`, `name` and `nodes`")
    doc.data = _Walker(doc, construct=True).walk(root, ())
    return doc


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines())


def _parse_json(text: str, path: str) -> Any:
    depth_guard = _json_depth_guard()

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise _DuplicateKey(key)
            out[key] = value
        return out

    try:
        depth_guard(text)
        return json.loads(text, object_pairs_hook=pairs, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise SpecError.at(Location(path, exc.lineno, exc.colno), f"JSON syntax error: {exc.msg}") from None
    except _DuplicateKey as exc:
        loc = _find_json_key(text, path, exc.key)
        raise SpecError.at(loc, f"duplicate key {exc.key!r}; each key may appear once per mapping") from None
    except _TooDeep:
        raise SpecError.at(Location(path, 1, 1), f"JSON nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # NaN/Infinity literals
        raise SpecError.at(Location(path, 1, 1), str(exc)) from None


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


class _TooDeep(Exception):
    pass


def _reject_constant(name: str) -> Any:
    raise ValueError(f"JSON does not allow {name}; write {{\"float\": \"{name.lower().replace('infinity', 'inf')}\"}}")


def _json_depth_guard() -> Callable[[str], None]:
    """Refuse deeply nested JSON before json.loads recurses into it."""

    def check(text: str) -> None:
        depth = 0
        in_string = escaped = False
        for ch in text:
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch in "[{":
                depth += 1
                if depth > MAX_DEPTH:
                    raise _TooDeep
            elif ch in "]}":
                depth -= 1

    return check


def _find_json_key(text: str, path: str, key: str) -> Location:
    """Second occurrence of ``"key":`` — good enough to point at a duplicate."""
    needle = json.dumps(key)
    first = text.find(needle)
    second = text.find(needle, first + 1) if first >= 0 else -1
    at = second if second >= 0 else max(first, 0)
    line = text.count("\n", 0, at) + 1
    return Location(path, line, at - (text.rfind("\n", 0, at) + 1) + 1)


class _Walker:
    """Turns a composed YAML node tree into plain values while recording locations."""

    def __init__(self, doc: Document, *, construct: bool) -> None:
        self.doc = doc
        self.construct = construct
        self.budget = MAX_VALUES
        self.errors: list[Diagnostic] = []

    def walk(self, node: yaml.Node, path: JsonPath) -> Any:
        value = self._walk(node, path, 0)
        if self.errors:
            raise SpecError(self.errors)
        return value

    def _loc(self, node: yaml.Node) -> Location:
        return Location(self.doc.path, node.start_mark.line + 1, node.start_mark.column + 1)

    def _walk(self, node: yaml.Node, path: JsonPath, depth: int) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise SpecError.at(
                self._loc(node), f"spec expands to more than {MAX_VALUES} values (alias bomb?); refusing it"
            )
        if depth > MAX_DEPTH:
            raise SpecError.at(self._loc(node), f"spec nests deeper than {MAX_DEPTH} levels (recursive alias?)")
        self.doc.locations.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node) if self.construct else None
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ:
                self.errors.append(Diagnostic(self._loc(node), f"tag {node.tag!r} is not allowed in a spec"))
            return [self._walk(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.MappingNode)
        if node.tag != _MAP:
            self.errors.append(Diagnostic(self._loc(node), f"tag {node.tag!r} is not allowed in a spec"))
        out: dict[str, Any] = {}
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.errors.append(Diagnostic(self._loc(key_node), "mapping keys must be plain strings"))
                continue
            if key_node.tag.endswith(":merge"):
                self.errors.append(Diagnostic(self._loc(key_node), "merge keys (<<) are not supported in specs"))
                continue
            key = key_node.value
            if key in seen:
                self.errors.append(
                    Diagnostic(self._loc(key_node), f"duplicate key {key!r}; each key may appear once per mapping")
                )
                continue
            seen.add(key)
            self.doc.locations[(*path, key, _KEY)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = self._walk(value_node, (*path, key), depth + 1)
        return out

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag not in _SCALAR_TAGS:
            hint = " (quote it to make it a string)" if node.tag.endswith("timestamp") else ""
            self.errors.append(Diagnostic(self._loc(node), f"tag {node.tag!r} is not allowed in a spec{hint}"))
            return None
        value = _constructor.yaml_constructors[node.tag](_constructor, node)
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return {"float": "nan" if value != value else ("inf" if value > 0 else "-inf")}
        return value
