"""YAML events -> plain values and their locations, for the read stage (:mod:`fxgen.read.reader`).

The parser's event stream (libyaml when available) is turned into plain values iteratively: no
tag can make PyYAML build an object, duplicate keys are caught (PyYAML silently keeps the last),
nesting is bounded before anything recurses (libyaml's own composer overflows the C stack on
deeply nested input), and aliases are expanded under a budget (a "billion laughs" document is
refused after a bounded amount of work and memory). Scalars are resolved by :mod:`fxgen.read.scalars`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from fxgen._errors import Diagnostic, Location, SpecError
from fxgen.read.scalars import (
    MAYBE_TYPED,
    SCALAR_TAGS,
    TAG,
    Refusal,
    resolve_plain,
    resolve_tagged,
    shown_tag,
)

__all__ = ["KEY", "MAX_DEPTH", "MAX_VALUES", "Builder", "JsonPath", "duplicate"]


JsonPath = tuple[str | int, ...]


MAX_DEPTH = 64  # values nest a few levels; anything deeper is an attack or a mistake


_TOO_DEEP = f"spec nests deeper than {MAX_DEPTH} levels; flatten it"


# libyaml's own nesting limit (1000 levels, in the libyaml that PyYAML 6.0.4's wheels bundle): its
# scanner looks ahead past a flow collection's start, so it can fire before ``MAX_DEPTH`` is seen
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"


_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # what libyaml counts as a new line


MAX_VALUES = 1_600_000  # values after alias expansion (a 100,000-node spec has ~700,000); caps memory near 1 GiB


KEY = "\x00key"  # path suffix marking where a mapping key (not its value) is


_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_SEQ, _MAP = TAG + "seq", TAG + "map"


_NO_KEY: Any = object()  # a mapping waiting for its next key


_BAD_KEY: Any = object()  # a refused key: its value is read (for errors) but not stored


_IN_LIST: Any = object()  # the ``key`` of a sequence, which never waits for one


_REFUSED = "\x00refused"  # path segment under a refused key (never looked up)


_Scalar, _Alias = yaml.ScalarEvent, yaml.AliasEvent


_SeqStart, _MapStart = yaml.SequenceStartEvent, yaml.MappingStartEvent


_SeqEnd, _MapEnd = yaml.SequenceEndEvent, yaml.MappingEndEvent


_HINTS = {
    "\t": "YAML indents with spaces, not tabs",
    "%": 'a node reference is a string, and YAML reserves "%" at the start of a plain value: quote it, "%x"',
    "@": 'YAML reserves "@" at the start of a plain value: quote the string',
    "`": 'YAML reserves "`" at the start of a plain value: quote the string',
}  # the characters users type where YAML cannot start a value, and what to do instead


@dataclass(slots=True)
class _Frame:
    """An open sequence or mapping while its events are read."""

    value: Any  # the list or dict being filled
    path: JsonPath  # only when locating
    depth: int
    anchor: str | None
    first: int  # the value count when the collection started (its size is the difference)
    key: Any  # mappings: the key whose value comes next (_NO_KEY, _BAD_KEY or a string); lists: _IN_LIST
    height: int = 0  # levels of nesting below this collection
    is_key: bool = False  # a collection used as a mapping key (refused, read only to skip it)


class Builder:
    """Plain values (``construct``) and their locations (``locate``) from a YAML event stream,
    without recursion. Both passes see the same events and raise and report the same problems,
    except that only ``construct`` reads scalars (and reports bad ones)."""

    def __init__(self, path: str, *, construct: bool, locate: bool = False) -> None:
        self.path = path
        self.construct = construct
        self.locate = locate
        self.locations: dict[JsonPath, tuple[int, int]] = {}
        self.errors: list[Diagnostic] = []
        self.count = 0  # values read so far, aliases counted expanded
        self.anchors: dict[str, tuple[Any, int, int]] = {}  # anchor -> (value, size, height)
        self.open_anchors: set[str] = set()
        self.plain: dict[str, Any] = {}  # memo of resolve_plain, for this read only

    def build(self, text: str) -> Any:
        try:
            loader = _Loader(text)  # pure-Python PyYAML checks the characters here
            try:
                return self._build(iter(loader.get_event, None))  # yaml.parse, without a generator
            finally:
                loader.dispose()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            if exc.problem == _LIBYAML_TOO_DEEP and mark is not None:
                self._too_deep(text, mark)
            loc = Location(self.path, mark.line + 1, mark.column + 1) if mark else Location(self.path, 1, 1)
            problem = exc.problem or exc.context or "invalid YAML"
            if exc.problem and exc.context and exc.context_mark and exc.context_mark is not mark:
                where = exc.context_mark
                problem += f" ({exc.context} that starts at line {where.line + 1}, column {where.column + 1})"
            if mark and (hint := _HINTS.get(_char_at(text, mark.line, mark.column))):
                problem += "; " + hint
            raise SpecError.at(loc, "YAML syntax error: " + problem.replace("\n", " ")) from None
        except yaml.YAMLError as exc:
            raise SpecError.at(Location(self.path, 1, 1), f"YAML syntax error: {exc}") from None

    def _too_deep(self, text: str, mark: yaml.Mark) -> None:
        """Refuse text that libyaml found nested too deeply as any deeper than ``MAX_DEPTH``:
        with fxgen's message, at the value that passes ``MAX_DEPTH`` (the text before libyaml's
        mark, read again, gets that far: its end lets the scanner hand on every token it holds),
        whichever release of PyYAML a fresh install picked."""
        start = 0
        for _, found in zip(range(mark.line), _LINE_BREAK.finditer(text), strict=False):
            start = found.end()
        try:
            Builder(self.path, construct=False).build(text[: start + mark.column])
        except SpecError as exc:
            if exc.diagnostics[0].message == _TOO_DEEP:
                raise
        raise SpecError.at(Location(self.path, mark.line + 1, mark.column + 1), _TOO_DEEP) from None

    def _loc(self, event: yaml.Event) -> Location:
        return Location(self.path, *_position(event))

    def _error(self, event: yaml.Event, message: str) -> None:
        self.errors.append(Diagnostic(self._loc(event), message))

    def _build(self, events: Iterable[Any]) -> Any:  # one loop: the per-event cost is most of a read
        stack: list[_Frame] = []
        parent: _Frame | None = None  # stack[-1]
        root: Any = None
        documents = 0
        construct, locate, locations, plain = self.construct, self.locate, self.locations, self.plain
        for event in events:
            kind = event.__class__
            if kind is _Scalar and parent is not None:  # most events: the general case below, inlined
                key = parent.key
                if key is _NO_KEY:  # a mapping key; the refused ones in _key
                    if event.tag is None and event.value not in parent.value and (
                            event.value != "<<" or not event.implicit[0]):  # fmt: skip
                        parent.key = event.value
                        if locate:
                            locations[(*parent.path, event.value, KEY)] = _position(event)
                    else:
                        self._key(stack, event)
                    continue
                if parent.depth >= MAX_DEPTH:
                    raise SpecError.at(self._loc(event), _TOO_DEEP)
                self.count += 1
                if self.count > MAX_VALUES:
                    raise SpecError.at(self._loc(event), f"spec has more than {MAX_VALUES} values; split the model")
                if locate:
                    step = len(parent.value) if key is _IN_LIST else key if key is not _BAD_KEY else _REFUSED
                    locations.setdefault((*parent.path, step), _position(event))
                if not construct:
                    value = None
                elif event.tag is None:  # _scalar, inlined
                    value = event.value
                    if event.implicit[0] and value[:1] in MAYBE_TYPED:  # plain, and perhaps not a string
                        result = plain.get(value, _UNKNOWN)  # _plain's memo, read here first
                        value = self._plain(event) if result is _UNKNOWN or type(result) is Refusal else result
                else:
                    value = self._scalar(event)
                if event.anchor is not None:
                    self.anchors[event.anchor] = (value, 1, 0)
                if not parent.height:  # _add(parent, value, 0), inlined: the per-scalar hot path
                    parent.height = 1
                if key is _IN_LIST:
                    parent.value.append(value)
                else:
                    if key is not _BAD_KEY:
                        parent.value[key] = value
                    parent.key = _NO_KEY
                continue
            if kind is _SeqEnd or kind is _MapEnd:
                frame = stack.pop()
                parent = stack[-1] if stack else None
                if frame.anchor is not None:
                    self.open_anchors.discard(frame.anchor)
                    self.anchors[frame.anchor] = (frame.value, self.count - frame.first, frame.height)
                if frame.is_key:
                    stack[-1].key = _BAD_KEY
                elif parent is not None:  # _add(parent, frame.value, frame.height), inlined
                    if parent.height <= frame.height:
                        parent.height = frame.height + 1
                    key = parent.key
                    if key is _IN_LIST:
                        parent.value.append(frame.value)
                    else:
                        if key is not _BAD_KEY:
                            parent.value[key] = frame.value
                        parent.key = _NO_KEY
                else:
                    root = frame.value
                continue
            if kind is not _Scalar and kind is not _MapStart and kind is not _SeqStart and kind is not _Alias:
                if kind is yaml.DocumentStartEvent:
                    documents += 1
                    if documents > 1:
                        raise SpecError.at(self._loc(event), "a spec file holds one YAML document; "
                                           "remove the second `---` or split the file")  # fmt: skip
                continue  # stream start/end, document end
            path: JsonPath = ()
            if parent is not None:
                key = parent.key
                if key is _NO_KEY:
                    self._key(stack, event)
                    parent = stack[-1]
                    continue
                if locate:
                    step = len(parent.value) if key is _IN_LIST else key if key is not _BAD_KEY else _REFUSED
                    path = (*parent.path, step)
                depth = parent.depth + 1
                if depth > MAX_DEPTH:
                    raise SpecError.at(self._loc(event), _TOO_DEEP)
            else:
                depth = 0
            if kind is _Alias:
                value, height = self._alias(event, depth)
            else:
                self.count += 1
                if self.count > MAX_VALUES:
                    raise SpecError.at(self._loc(event), f"spec has more than {MAX_VALUES} values; split the model")
                if locate:
                    locations.setdefault(path, _position(event))
                if kind is _Scalar:  # the document is a single scalar
                    value, height = self._scalar(event), 0
                    if event.anchor is not None:
                        self.anchors[event.anchor] = (value, 1, 0)
                else:
                    if event.tag is not None:
                        self._check_collection_tag(event)
                    if event.anchor is not None:
                        self.open_anchors.add(event.anchor)
                    is_list = kind is _SeqStart
                    parent = _Frame([] if is_list else {}, path, depth, event.anchor, self.count - 1,
                                    _IN_LIST if is_list else _NO_KEY)  # fmt: skip
                    stack.append(parent)
                    continue
            if parent is None:
                root = value
            else:
                self._add(parent, value, height)
        return root

    @staticmethod
    def _add(parent: _Frame, value: Any, height: int) -> None:
        if parent.height <= height:
            parent.height = height + 1
        key = parent.key
        if key is _IN_LIST:
            parent.value.append(value)
        else:
            if key is not _BAD_KEY:
                parent.value[key] = value
            parent.key = _NO_KEY

    def _key(self, stack: list[_Frame], event: yaml.NodeEvent) -> None:
        parent = stack[-1]
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            self._error(event, "mapping keys must be plain strings")
            is_list = isinstance(event, yaml.SequenceStartEvent)
            frame = _Frame([] if is_list else {}, (*parent.path, _REFUSED), parent.depth + 1, None, self.count,
                           _IN_LIST if is_list else _NO_KEY, is_key=True)  # fmt: skip
            if frame.depth > MAX_DEPTH:
                raise SpecError.at(self._loc(event), _TOO_DEEP)
            stack.append(frame)
            return
        parent.key = _BAD_KEY
        if not isinstance(event, yaml.ScalarEvent):
            self._error(event, "mapping keys must be plain strings, not aliases")
            return
        key = event.value
        if event.tag not in (None, "!") and event.tag not in SCALAR_TAGS:
            self._error(event, f"tag {shown_tag(event.tag)} is not allowed in a spec; remove it")
        elif key == "<<" and event.tag is None and event.implicit[0]:
            self._error(event, "merge keys (<<) are not supported in specs; write the keys out")
        elif key in parent.value:
            self.errors.append(duplicate(self._loc(event), key))
        else:
            parent.key = key
            if self.locate:
                self.locations[(*parent.path, key, KEY)] = _position(event)

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
            self._error(event, f"tag {shown_tag(event.tag)} is not allowed in a spec; remove it")

    def _scalar(self, event: yaml.ScalarEvent) -> Any:
        """The value of a scalar (``None`` when only locating); a bad one is reported."""
        if not self.construct:
            return None
        if event.tag is None:  # plain or quoted
            value = event.value
            return self._plain(event) if event.implicit[0] and value[:1] in MAYBE_TYPED else value
        result = resolve_tagged(event.value, event.tag)
        if type(result) is Refusal:
            self._error(event, result.message)
            return result.value
        return result

    def _plain(self, event: yaml.ScalarEvent) -> Any:
        value: str = event.value
        result = self.plain.get(value, _UNKNOWN)  # a spec repeats its plain scalars thousands of times
        if result is _UNKNOWN:
            result = resolve_plain(value)
            if type(result) is not dict:  # non-finite floats are dicts: each use gets its own
                if len(self.plain) >= _MEMO_SIZE:
                    self.plain.clear()
                self.plain[value] = result
        if type(result) is Refusal:
            self._error(event, result.message)
            return result.value
        return result


_UNKNOWN: Any = object()


_MEMO_SIZE = 4096  # distinct plain scalars remembered (then forgotten all at once)


def _char_at(text: str, line: int, column: int) -> str:
    lines = text.split("\n", line + 1)
    return lines[line][column : column + 1] if line < len(lines) else ""


def _position(event: yaml.Event) -> tuple[int, int]:
    """1-based (line, column) where ``event`` starts; libyaml counts columns in characters."""
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def duplicate(location: Location, key: str) -> Diagnostic:
    return Diagnostic(location, f"duplicate key {key!r}; each key may appear once per mapping, delete one")
