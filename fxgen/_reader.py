"""Read stage: spec bytes -> plain data plus a map from each value's path to its source location.

YAML is read from the parser's event stream (libyaml when available) and turned into plain
values here, iteratively: no tag can make PyYAML build an object, duplicate keys are caught
(PyYAML silently keeps the last), nesting is bounded before anything recurses (libyaml's own
composer overflows the C stack on deeply nested input), and aliases are expanded under a budget
(a "billion laughs" document is refused after a bounded amount of work and memory).

Plain scalars are resolved with the YAML 1.2 core schema, the one JSON agrees with (``1e-5``
is a float, ``yes`` is a string). A plain scalar that PyYAML's YAML 1.1 rules would read as a
different value (``yes``/``no``/``on``/``off``, ``010``, ``1_000``, ``1:30``) is refused as
ambiguous instead of being guessed.

JSON is parsed by :mod:`json` and located through the same YAML event stream, JSON being YAML
flow syntax.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.resolver import Resolver

from fxgen._errors import Diagnostic, Location, SpecError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_VALUES", "Document", "JsonPath", "parse_text", "read_document"]

JsonPath = tuple[str | int, ...]

MAX_BYTES = 64 * 1024 * 1024  # a 100,000-node spec is about 8 MiB
MAX_DEPTH = 64  # values nest a few levels; anything deeper is an attack or a mistake
MAX_VALUES = 1_600_000  # values after alias expansion (a 100,000-node spec has ~700,000); caps memory near 1 GiB

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
_STR, _SEQ, _MAP = _TAG + "str", _TAG + "seq", _TAG + "map"
_SCALAR_TAGS = {_STR, _TAG + "int", _TAG + "float", _TAG + "bool", _TAG + "null"}
_EMPTY_SPEC = "spec is empty; it needs at least `fxgen: 1`, `name` and `nodes`"

# The YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution).
_NULL_12 = frozenset({"", "~", "null", "Null", "NULL"})
_BOOL_12 = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT_12 = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT_12 = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INF_12 = re.compile(r"[-+]?\.(?:inf|Inf|INF)")
_NAN_12 = re.compile(r"\.(?:nan|NaN|NAN)")
_RESOLVER_11 = Resolver()  # PyYAML's YAML 1.1 rules, only to detect ambiguous scalars
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
        text = raw
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates: possible in a str, never in a file
            char = text[exc.start]
            message = f"text contains the lone surrogate {char!r} (U+{ord(char):04X}), which UTF-8 cannot encode"
            raise SpecError.at(_offset_location(path, text, exc.start), message + "; remove it") from None
    where = Location(path, 1, 1)
    if len(raw) > MAX_BYTES:
        raise SpecError.at(where, f"spec is larger than {MAX_BYTES // 2**20} MiB; split the model")
    if raw.startswith(b"\xef\xbb\xbf"):
        raise SpecError.at(where, "file starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = raw.rfind(b"\n", 0, exc.start) + 1
        line = raw.count(b"\n", 0, exc.start) + 1
        col = len(raw[start : exc.start].decode("utf-8", "replace")) + 1
        raise SpecError.at(
            Location(path, line, col), f"invalid UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as UTF-8"
        ) from None
    if not text.strip() or (not json_syntax and _only_comments(text)):
        raise SpecError.at(where, _EMPTY_SPEC)
    doc = Document(data=None, path=path, raw=raw)
    if json_syntax:
        _parse_json(doc, text)
        return doc
    builder = _Builder(doc, construct=True)
    data = builder.build(text)
    if builder.errors:
        raise SpecError(builder.errors)
    if data is None:
        raise SpecError.at(where, _EMPTY_SPEC)
    doc.data = data
    return doc


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines())


# -- JSON ----------------------------------------------------------------------------------------
# Strings as an "unrolled loop" (runs of plain characters, then an escape): a 4 MB string costs
# no backtracking state, where "(?:[^"\\]|\\.)*" kept one per character (hundreds of MiB).
_JSON_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|(-?Infinity|NaN)', re.DOTALL)
_JSON_HINTS = {
    "Extra data": "unexpected text after the end of the JSON document; a spec is one JSON object",
    "Expecting value": "expecting a value (JSON has no trailing commas, comments or unquoted strings)",
    "Expecting property name enclosed in double quotes": (
        "expecting a key in double quotes (JSON has no trailing commas or single quotes)"
    ),
}


def _parse_json(doc: Document, text: str) -> None:
    """``json.loads`` for the data, the YAML event stream for the locations."""
    depth = 0
    constants: list[tuple[int, str]] = []
    for match in _JSON_TOKENS.finditer(text):  # refuse deep nesting before json recurses into it
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise SpecError.at(_offset_location(doc.path, text, match.start()),
                                   f"JSON nests deeper than {MAX_DEPTH} levels; flatten the value")  # fmt: skip
        elif token in "]}":
            depth -= 1
        elif match.group(1):
            constants.append((match.start(), match.group(1)))
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                duplicates.append(key)
            out.setdefault(key, value)
        return out

    try:
        doc.data = json.loads(text, object_pairs_hook=pairs, parse_constant=lambda name: None, parse_int=_json_int)
    except _ScalarError as exc:
        long_int = _LONG_INT.search(text)
        at = _offset_location(doc.path, text, long_int.start()) if long_int else Location(doc.path, 1, 1)
        raise SpecError.at(at, str(exc)) from None
    except json.JSONDecodeError as exc:
        message = _JSON_HINTS.get(exc.msg, exc.msg)
        raise SpecError.at(Location(doc.path, exc.lineno, exc.colno), f"JSON syntax error: {message}") from None
    surrogate = _SURROGATE_ESCAPE.search(text)
    if surrogate is not None and _has_lone_surrogate(doc.data):
        raise SpecError.at(_offset_location(doc.path, text, surrogate.start()),
                           "a \\ud800-\\udfff escape that is not part of a surrogate pair is not text; remove it")  # fmt: skip
    errors = [
        Diagnostic(_offset_location(doc.path, text, at), f"JSON does not allow {name}; write "
                   f'{{"float": "{name.lower().replace("infinity", "inf")}"}} instead')
        for at, name in constants
    ]  # fmt: skip
    builder = _Builder(doc, construct=False)
    try:
        builder.build(text)
    except SpecError:
        doc.locations.clear()  # valid JSON that YAML cannot read: errors fall back to line 1
    if duplicates:
        found = [d for d in builder.errors if d.message.startswith("duplicate key")]
        errors += found or [_duplicate(_find_json_key(doc.path, text, key), key) for key in duplicates]
    if errors:
        raise SpecError(errors)


MAX_INT_DIGITS = 400  # far beyond any real size; Python refuses to parse > 4300 digits anyway
_LONG_INT = re.compile(r"(?<![\w.\"])-?\d{" + str(MAX_INT_DIGITS + 1) + ",}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _json_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise _ScalarError(f"integer with {len(text)} digits is too long for a spec")
    return int(text)


def _has_lone_surrogate(value: Any) -> bool:
    """Does decoded JSON hold a string that is not valid Unicode text (a lone surrogate)?"""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
    return False


def _offset_location(path: str, text: str, offset: int) -> Location:
    line_start = text.rfind("\n", 0, offset) + 1
    return Location(path, text.count("\n", 0, offset) + 1, offset - line_start + 1)


def _find_json_key(path: str, text: str, key: str) -> Location:
    """Second occurrence of ``"key"`` — good enough to point at a duplicate YAML cannot locate."""
    needle = json.dumps(key)
    first = text.find(needle)
    second = text.find(needle, first + 1) if first >= 0 else -1
    return _offset_location(path, text, second if second >= 0 else max(first, 0))


def _duplicate(location: Location, key: str) -> Diagnostic:
    return Diagnostic(location, f"duplicate key {key!r}; each key may appear once per mapping, delete one")


# -- YAML ----------------------------------------------------------------------------------------
_NO_KEY: Any = object()  # a mapping waiting for its next key
_BAD_KEY: Any = object()  # a refused key: its value is read (for errors) but not stored
_REFUSED = "\x00refused"  # path segment under a refused key (never looked up)


@dataclass(slots=True)
class _Frame:
    """An open sequence or mapping while its events are read."""

    value: list[Any] | dict[str, Any]
    path: JsonPath
    depth: int
    anchor: str | None
    first: int  # the value count when the collection started (its size is the difference)
    height: int = 0  # levels of nesting below this collection
    key: Any = _NO_KEY  # mappings: the key whose value comes next
    is_key: bool = False  # a collection used as a mapping key (refused, read only to skip it)


class _Builder:
    """Plain values and their locations from a YAML event stream, without recursion."""

    def __init__(self, doc: Document, *, construct: bool) -> None:
        self.doc = doc
        self.construct = construct
        self.errors: list[Diagnostic] = []
        self.count = 0  # values read so far, aliases counted expanded
        self.anchors: dict[str, tuple[Any, int, int]] = {}  # anchor -> (value, size, height)
        self.open_anchors: set[str] = set()

    def build(self, text: str) -> Any:
        try:
            return self._build(yaml.parse(text, Loader=_Loader))
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            loc = Location(self.doc.path, mark.line + 1, mark.column + 1) if mark else Location(self.doc.path, 1, 1)
            problem = exc.problem or exc.context or "invalid YAML"
            if exc.problem and exc.context and exc.context_mark and exc.context_mark is not mark:
                where = exc.context_mark
                problem += f" ({exc.context} that starts at line {where.line + 1}, column {where.column + 1})"
            if mark and _char_at(text, mark.line, mark.column) == "\t":
                problem += "; YAML indents with spaces, not tabs"
            raise SpecError.at(loc, "YAML syntax error: " + problem.replace("\n", " ")) from None
        except yaml.YAMLError as exc:
            raise SpecError.at(Location(self.doc.path, 1, 1), f"YAML syntax error: {exc}") from None

    def _loc(self, event: yaml.Event) -> Location:
        return Location(self.doc.path, *_position(event))

    def _error(self, event: yaml.Event, message: str) -> None:
        self.errors.append(Diagnostic(self._loc(event), message))

    def _build(self, events: Iterable[yaml.Event]) -> Any:
        stack: list[_Frame] = []
        root: Any = None
        documents = 0
        for event in events:
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise SpecError.at(self._loc(event), "a spec file holds one YAML document; "
                                       "remove the second `---` or split the file")  # fmt: skip
                continue
            if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                frame = stack.pop()
                if frame.anchor is not None:
                    self.open_anchors.discard(frame.anchor)
                    self.anchors[frame.anchor] = (frame.value, self.count - frame.first, frame.height)
                if frame.is_key:
                    stack[-1].key = _BAD_KEY
                elif stack:
                    self._add(stack, frame.value, frame.height)
                else:
                    root = frame.value
                continue
            if not isinstance(event, yaml.NodeEvent):
                continue  # stream start/end, document end
            parent = stack[-1] if stack else None
            if parent is not None and isinstance(parent.value, dict) and parent.key is _NO_KEY:
                self._key(stack, event)
                continue
            path = self._child_path(parent)
            depth = parent.depth + 1 if parent is not None else 0
            if depth > MAX_DEPTH:
                raise SpecError.at(self._loc(event), f"spec nests deeper than {MAX_DEPTH} levels; flatten it")
            if isinstance(event, yaml.AliasEvent):
                value, height = self._alias(event, depth)
            else:
                self.count += 1
                if self.count > MAX_VALUES:
                    raise SpecError.at(self._loc(event), f"spec has more than {MAX_VALUES} values; split the model")
                self.doc.locations.setdefault(path, _position(event))
                if isinstance(event, yaml.ScalarEvent):
                    value, height = self._scalar(event), 0
                    if event.anchor is not None:
                        self.anchors[event.anchor] = (value, 1, 0)
                else:
                    assert isinstance(event, yaml.CollectionStartEvent)
                    self._check_collection_tag(event)
                    if event.anchor is not None:
                        self.open_anchors.add(event.anchor)
                    container: list[Any] | dict[str, Any] = [] if isinstance(event, yaml.SequenceStartEvent) else {}
                    stack.append(_Frame(container, path, depth, event.anchor, self.count - 1))
                    continue
            if parent is None:
                root = value
            else:
                self._add(stack, value, height)
        return root

    def _child_path(self, parent: _Frame | None) -> JsonPath:
        if parent is None:
            return ()
        if isinstance(parent.value, list):
            return (*parent.path, len(parent.value))
        return (*parent.path, parent.key if parent.key is not _BAD_KEY else _REFUSED)

    def _add(self, stack: list[_Frame], value: Any, height: int) -> None:
        parent = stack[-1]
        parent.height = max(parent.height, height + 1)
        if isinstance(parent.value, list):
            parent.value.append(value)
        else:
            if parent.key is not _BAD_KEY:
                parent.value[parent.key] = value
            parent.key = _NO_KEY

    def _key(self, stack: list[_Frame], event: yaml.NodeEvent) -> None:
        parent = stack[-1]
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            self._error(event, "mapping keys must be plain strings")
            frame = _Frame([] if isinstance(event, yaml.SequenceStartEvent) else {}, (*parent.path, _REFUSED),
                           parent.depth + 1, None, self.count, is_key=True)  # fmt: skip
            if frame.depth > MAX_DEPTH:
                raise SpecError.at(self._loc(event), f"spec nests deeper than {MAX_DEPTH} levels; flatten it")
            stack.append(frame)
            return
        parent.key = _BAD_KEY
        if not isinstance(event, yaml.ScalarEvent):
            self._error(event, "mapping keys must be plain strings, not aliases")
            return
        key = event.value
        if event.tag not in (None, "!") and event.tag not in _SCALAR_TAGS:
            self._error(event, f"tag {_shown(event.tag)} is not allowed in a spec; remove it")
        elif key == "<<" and event.tag is None and event.implicit[0]:
            self._error(event, "merge keys (<<) are not supported in specs; write the keys out")
        elif key in parent.value:
            self.errors.append(_duplicate(self._loc(event), key))
        else:
            parent.key = key
            self.doc.locations[(*parent.path, key, _KEY)] = _position(event)

    def _alias(self, event: yaml.AliasEvent, depth: int) -> tuple[Any, int]:
        name = event.anchor
        if name in self.open_anchors:
            raise SpecError.at(self._loc(event), f"alias *{name} refers to a collection that contains it "
                               "(a recursive alias); a spec must be a tree")  # fmt: skip
        if name not in self.anchors:
            self._error(event, f"alias *{name} has no anchor &{name} before it; define the anchor first")
            return None, 0
        value, size, height = self.anchors[name]
        self.count += size
        if self.count > MAX_VALUES:
            raise SpecError.at(self._loc(event), f"aliases expand the spec to more than {MAX_VALUES} values "
                               "(an alias bomb?); write the values out instead")  # fmt: skip
        if depth + height > MAX_DEPTH:
            raise SpecError.at(self._loc(event), f"alias *{name} nests the spec deeper than {MAX_DEPTH} levels")
        return value, height

    def _check_collection_tag(self, event: yaml.CollectionStartEvent) -> None:
        expected = _SEQ if isinstance(event, yaml.SequenceStartEvent) else _MAP
        if event.tag not in (None, "!", expected):
            self._error(event, f"tag {_shown(event.tag)} is not allowed in a spec; remove it")

    def _scalar(self, event: yaml.ScalarEvent) -> Any:
        if not self.construct:
            return None
        value: str = event.value
        tag = event.tag
        if tag in (None, "!"):
            if tag is not None or not event.implicit[0]:
                return value  # quoted, or the non-specific tag `!`: a string
            return self._plain(event)
        if tag not in _SCALAR_TAGS:
            self._error(event, f"tag {_shown(tag)} is not allowed in a spec; remove it")
            return None
        if tag == _STR:
            return value
        try:
            result = _resolve_12(value)
        except _ScalarError as exc:
            self._error(event, str(exc))
            return None
        kind = tag.removeprefix(_TAG)
        if kind == "float" and isinstance(result, int) and not isinstance(result, bool):
            result = float(result)
        expected = {"int": int, "float": float, "bool": bool, "null": type(None)}[kind]
        if type(result) is not expected and not (kind == "float" and isinstance(result, dict)):
            self._error(event, f"{value!r} is not a valid !!{kind}; fix the value or remove the tag")
            return None
        return result

    def _plain(self, event: yaml.ScalarEvent) -> Any:
        value: str = event.value
        try:
            result = _resolve_12(value)
        except _ScalarError as exc:
            self._error(event, str(exc))
            return None
        tag_11 = _RESOLVER_11.resolve(yaml.ScalarNode, value, (True, False))
        if tag_11 != _STR:
            try:
                old = _constructor.yaml_constructors[tag_11](_constructor, yaml.ScalarNode(tag_11, value))
            except (ValueError, KeyError, TypeError):
                old = value
            if isinstance(old, float) and not math.isfinite(old):
                old = _nonfinite(old)
            if type(old) is not type(result) or old != result:
                self._error(event, _ambiguous(value, old, result))
        return result


def _char_at(text: str, line: int, column: int) -> str:
    lines = text.split("\n", line + 1)
    return lines[line][column : column + 1] if line < len(lines) else ""


def _position(event: yaml.Event) -> tuple[int, int]:
    """1-based (line, column) where ``event`` starts; libyaml counts columns in characters."""
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _shown(tag: str) -> str:
    """A tag as it is written: ``!!python/object``, ``!local``."""
    return "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag


class _ScalarError(ValueError):
    """A scalar that cannot be read (the caller reports it at the scalar's location)."""


def _resolve_12(value: str) -> Any:
    """A plain scalar under the YAML 1.2 core schema; non-finite floats in the spec encoding."""
    if value in _NULL_12:
        return None
    if value in _BOOL_12:
        return _BOOL_12[value]
    if _INT_12.fullmatch(value):
        if len(value) > MAX_INT_DIGITS:
            raise _ScalarError(f"integer with {len(value)} digits is too long for a spec")
        if value.startswith(("0o", "0x")):
            return int(value[2:], 8 if value[1] == "o" else 16)
        return int(value)
    if _FLOAT_12.fullmatch(value):
        result = float(value)
        return result if math.isfinite(result) else _nonfinite(result)
    if _INF_12.fullmatch(value):
        return _nonfinite(-math.inf if value.startswith("-") else math.inf)
    if _NAN_12.fullmatch(value):
        return _nonfinite(math.nan)
    return value


def _ambiguous(value: str, old: Any, new: Any) -> str:
    def show(x: Any) -> str:
        if isinstance(x, str):
            return f"the string {x!r}"
        return json.dumps(x) if x is None or isinstance(x, (bool, int, float)) else f"a {type(x).__name__}"

    plain = [json.dumps(x) for x in (old, new) if x is not None and isinstance(x, (bool, int, float))]
    return (f"{value!r} is read as {show(old)} by YAML 1.1 and as {show(new)} by YAML 1.2; quote it "
            f"({json.dumps(value)}) for the string" + "".join(f" or write {x}" for x in plain))  # fmt: skip


def _nonfinite(value: float) -> dict[str, str]:
    return {"float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
