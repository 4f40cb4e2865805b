"""Documents that are not a spec file: an in-memory dict (located in its JSON rendering) and a
small spec inside another document (a pass's pattern), located where it is in the outer file."""

from __future__ import annotations

from typing import Any

from fxgen._errors import Location, SpecError
from fxgen.read.imports import with_imports
from fxgen.read.reader import Document, parse_text
from fxgen.read.yaml_events import JsonPath

__all__ = ["BodyDocument", "parse_data"]


class BodyDocument(Document):
    """A small spec inside another document (a pass's pattern): ``{nodes: [...]}`` read as a
    whole format-1 spec, each part located where it is in the outer file."""

    def __init__(self, outer: Document, prefix: JsonPath, body: dict[str, Any]) -> None:
        super().__init__({"fxgen": 1, "name": "Body", "nodes": body["nodes"]}, outer.path, outer.raw)
        self.outer = outer
        self.prefix = prefix

    def _outer(self, path: JsonPath) -> JsonPath:
        return (*self.prefix, *path) if path[:1] == ("nodes",) else self.prefix

    def locate(self, path: JsonPath) -> Location:
        return self.outer.locate(self._outer(path))

    def key_location(self, path: JsonPath) -> Location:
        return self.outer.key_location(self._outer(path)) if path[:1] == ("nodes",) else self.locate(path)


def parse_data(data: dict[str, Any], path: str = "<spec>") -> Document:
    """An in-memory dict as a located Document: its JSON rendering, parsed (to be validated)."""
    import json

    try:
        text = json.dumps(data, indent=1, ensure_ascii=False)  # characters as they are, to be checked and located
    except (TypeError, ValueError, RecursionError) as exc:  # not JSON data: sets, huge ints, cycles, objects
        raise SpecError.at(Location(path), f"the spec is not plain JSON data: {exc}") from None
    return with_imports(parse_text(text, path, json_syntax=True))  # refuses `imports:`: there is no file to import from
