"""Read stage: spec bytes -> plain data plus a map from each value's path to its source location.

YAML is read from the parser's event stream by :mod:`fxgen.read.yaml_events` (safely: no tag builds
an object; duplicate keys, deep nesting and alias bombs are refused) with the YAML 1.2 core
schema, refusing scalars YAML 1.1 reads differently (:mod:`fxgen.read.scalars`).

JSON is parsed by :mod:`json` and located through the same YAML event stream, JSON being YAML
flow syntax.

Locations are only needed for diagnostics: they are worked out on the first lookup
(``Document.locate``), by a second pass over the text, never while reading.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fxgen._errors import Diagnostic, Location, SpecError
from fxgen.read.files import SPEC_BYTES, TooLarge, bounded_bytes
from fxgen.read.scalars import MAX_INT_DIGITS, ScalarError, check_int_length
from fxgen.read.yaml_events import KEY, MAX_DEPTH, Builder, JsonPath, duplicate

__all__ = ["MAX_BYTES", "Document", "parse_text", "read_document"]


MAX_BYTES = SPEC_BYTES  # a 100,000-node spec is about 8 MiB
_TOO_LARGE = f"spec is larger than {MAX_BYTES // 2**20} MiB; split the model"


_EMPTY_SPEC = "spec is empty; it needs at least `fxgen: 1`, `name` and `nodes`"


@dataclass
class Document:
    """A parsed spec file: plain data, where each part of it came from, and the raw bytes.

    ``locations`` (path -> 1-based line and column) is built from ``raw`` on first use: reading
    does not need it, and most documents never report a diagnostic.
    """

    data: Any
    path: str
    raw: bytes = b""
    # ``data`` is what the reader built: exact JSON types, nested at most MAX_DEPTH deep (the
    # schema check may then skip its own walk making sure of that)
    plain_json: bool = field(default=False, compare=False)
    _locations: dict[JsonPath, tuple[int, int]] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def locations(self) -> dict[JsonPath, tuple[int, int]]:
        if self._locations is None:
            self._locations = _locate(self.path, self.raw.decode("utf-8", "replace"))
        return self._locations

    def locate(self, path: JsonPath) -> Location:
        """The location of the value at ``path``, or of its nearest located ancestor."""
        locations = self.locations
        while True:
            pos = locations.get(path)
            if pos is not None:
                return Location(self.path, *pos)
            if not path:
                return Location(self.path, 1, 1)
            path = path[:-1]

    def key_location(self, path: JsonPath) -> Location:
        """The location of the *key* of a mapping entry (where editors should point)."""
        pos = self.locations.get((*path, KEY))
        return Location(self.path, *pos) if pos else self.locate(path)


def read_document(path: str | Path, *, display_path: str | None = None) -> Document:
    """Read a spec file from disk; the only place fxgen reads specs from the file system (a
    regular file, at most MAX_BYTES of it: :mod:`fxgen.read.files`)."""
    shown = display_path if display_path is not None else str(path)
    try:
        raw = bounded_bytes(path, MAX_BYTES)
    except TooLarge:
        raise SpecError.at(Location(shown, 1, 1), _TOO_LARGE) from None
    except OSError as exc:
        raise SpecError.at(Location(shown), f"cannot read spec: {exc.strerror or exc}") from None
    return parse_text(raw, shown, json_syntax=str(path).endswith(".json"))


def parse_text(raw: bytes | str, path: str = "<spec>", *, json_syntax: bool = False) -> Document:
    """Parse spec text (YAML unless ``json_syntax``) into a located :class:`Document`."""
    text: str | None = None
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
        raise SpecError.at(where, _TOO_LARGE)
    if raw.startswith(b"\xef\xbb\xbf"):
        raise SpecError.at(where, "file starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM")
    if text is None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            start = raw.rfind(b"\n", 0, exc.start) + 1
            line = raw.count(b"\n", 0, exc.start) + 1
            col = len(raw[start : exc.start].decode("utf-8", "replace")) + 1
            raise SpecError.at(
                Location(path, line, col), f"invalid UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as UTF-8"
            ) from None
    if not text or text.isspace():
        raise SpecError.at(where, _EMPTY_SPEC)
    doc = Document(data=None, path=path, raw=raw)
    if json_syntax:
        _parse_json(doc, text)
        doc.plain_json = True
        return doc
    builder = Builder(path, construct=True)
    # Only comments make an empty spec, whatever the parser refuses in them; that is checked
    # after parsing, when the parser found no document or a problem (most files are neither).
    try:
        data = builder.build(text)
    except SpecError:
        if not _only_comments(text):
            raise
        data = None
    else:
        if builder.errors and not _only_comments(text):
            raise SpecError(builder.errors)
    if data is None:
        raise SpecError.at(where, _EMPTY_SPEC)
    doc.data = data
    doc.plain_json = True
    return doc


def _locate(path: str, text: str) -> dict[JsonPath, tuple[int, int]]:
    """Where each value (and each mapping key) of ``text`` starts: the lazy half of a read."""
    builder = Builder(path, construct=False, locate=True)
    try:
        builder.build(text)
    except SpecError:
        return {}  # valid JSON that YAML cannot read: errors fall back to line 1
    return builder.locations


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
    """``json.loads`` for the data; the YAML event stream locates values, lazily (see :func:`_locate`).

    The checks run in this order, each refusing the text before the next: nesting depth (a
    token scan, run only when ``json.loads`` fails or the data nests too deeply: on valid JSON
    the two depths agree), syntax and huge integers, lone surrogates, then ``NaN``/``Infinity``
    literals and duplicate keys together.
    """
    duplicates: list[str] = []
    constants = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) == len(items):
            return out
        out = {}
        for key, value in items:  # the first of duplicate keys is kept
            if key in out:
                duplicates.append(key)
            out.setdefault(key, value)
        return out

    def constant(name: str) -> None:
        nonlocal constants
        constants = True

    try:
        doc.data = json.loads(text, object_pairs_hook=pairs, parse_constant=constant, parse_int=_json_int)
    except (ScalarError, json.JSONDecodeError, RecursionError) as exc:
        _json_literals(doc.path, text)  # a nesting error comes first
        if isinstance(exc, ScalarError):
            long_int = _LONG_INT.search(text)
            at = _offset_location(doc.path, text, long_int.start()) if long_int else Location(doc.path, 1, 1)
            raise SpecError.at(at, str(exc)) from None
        if isinstance(exc, json.JSONDecodeError):
            message = _JSON_HINTS.get(exc.msg, exc.msg)
            raise SpecError.at(Location(doc.path, exc.lineno, exc.colno), f"JSON syntax error: {message}") from None
        raise
    if _depth(doc.data) > MAX_DEPTH:
        _json_literals(doc.path, text)  # raises, located
    surrogate = _SURROGATE_ESCAPE.search(text)
    if surrogate is not None and _has_lone_surrogate(doc.data):
        raise SpecError.at(_offset_location(doc.path, text, surrogate.start()),
                           "a \\ud800-\\udfff escape that is not part of a surrogate pair is not text; remove it")  # fmt: skip
    if not (constants or duplicates):
        return
    errors = [
        Diagnostic(_offset_location(doc.path, text, at), f"JSON does not allow {name}; write "
                   f'{{"float": "{name.lower().replace("infinity", "inf")}"}} instead')
        for at, name in (_json_literals(doc.path, text) if constants else [])
    ]  # fmt: skip
    if duplicates:
        builder = Builder(doc.path, construct=False, locate=True)
        with contextlib.suppress(SpecError):  # valid JSON that YAML cannot read
            builder.build(text)
        found = [d for d in builder.errors if d.message.startswith("duplicate key")]
        errors += found or [duplicate(_find_json_key(doc.path, text, key), key) for key in duplicates]
    raise SpecError(errors)


def _json_literals(path: str, text: str) -> list[tuple[int, str]]:
    """Offsets of the ``NaN``/``Infinity`` literals; refuses nesting deeper than ``MAX_DEPTH``."""
    depth = 0
    constants: list[tuple[int, str]] = []
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise SpecError.at(_offset_location(path, text, match.start()),
                                   f"JSON nests deeper than {MAX_DEPTH} levels; flatten the value")  # fmt: skip
        elif token in "]}":
            depth -= 1
        elif match.group(1):
            constants.append((match.start(), match.group(1)))
    return constants


def _depth(value: Any) -> int:
    """How deeply lists and dicts nest in ``value`` (a scalar: 0, ``[]``: 1, ``[[1]]``: 2), counted
    to ``MAX_DEPTH + 1`` at most; level by level, so that C loops do most of the work."""
    level, depth = [value], 0
    while depth <= MAX_DEPTH:
        level = [item for item in level if type(item) is list or type(item) is dict]
        if not level:
            break
        depth += 1
        below: list[Any] = []
        for item in level:
            below.extend(item.values() if type(item) is dict else item)
        level = below
    return depth


_LONG_INT = re.compile(r"(?<![\w.\"])-?\d{" + str(MAX_INT_DIGITS + 1) + ",}")


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _json_int(text: str) -> int:
    check_int_length(text)
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
