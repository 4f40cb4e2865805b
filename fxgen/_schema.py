"""Schema stage: check a document against ``schemas/fxgen.schema.json`` and locate every error.

The JSON Schema is the one definition of the format's shape; this module only loads it and
turns jsonschema's errors into ``PATH:LINE:COL`` diagnostics with messages a person can act on.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from fxgen._errors import Diagnostic
from fxgen._reader import Document

__all__ = ["SCHEMA_PATH", "check_schema", "load_schema"]

_REPO_SCHEMA = Path(__file__).resolve().parent.parent / "schemas" / "fxgen.schema.json"


def _schema_file() -> Path:
    """The installed copy (wheel) or the repository's ``schemas/`` (source checkout)."""
    packaged = resources.files("fxgen").joinpath("schemas/fxgen.schema.json")
    if packaged.is_file():
        return Path(str(packaged))
    return _REPO_SCHEMA


SCHEMA_PATH = _schema_file()


@functools.cache
def load_schema() -> dict[str, Any]:
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        schema: dict[str, Any] = json.load(f)
    return schema


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    schema = load_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def check_schema(doc: Document) -> list[Diagnostic]:
    """Every schema violation in ``doc``, located; empty when the shape is right."""
    return [_diagnostic(doc, error) for error in _validator().iter_errors(doc.data)]


def _diagnostic(doc: Document, error: ValidationError) -> Diagnostic:
    if error.validator in ("anyOf", "oneOf") and error.context:
        error = _deepest(error)
    path = tuple(error.absolute_path)
    where = _describe(path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        if extra:
            known = ", ".join(sorted(allowed)) or "none"
            return Diagnostic(
                doc.key_location((*path, extra[0])),
                f"{where}unknown key {extra[0]!r} (allowed here: {known}); remove or rename it",
            )
    if "propertyNames" in error.relative_schema_path and isinstance(error.instance, str):
        return Diagnostic(doc.key_location((*path, error.instance)), f"{where}{_key_message(error)}")
    return Diagnostic(doc.locate(path), f"{where}{_message(error, path)}")


def _deepest(error: ValidationError) -> ValidationError:
    """For anyOf/oneOf, the alternative that got furthest says what is actually wrong."""
    best = best_match(error.context or [])
    while best.validator in ("anyOf", "oneOf") and best.context:
        best = best_match(best.context)
    return best


_KINDS = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer",
          "number": "a number", "boolean": "true or false", "null": "null"}  # fmt: skip
_TAGS = ("tuple", "slice", "ellipsis", "dtype", "device", "memory_format", "layout", "float", "complex", "dict", "size")


def _message(error: ValidationError, path: tuple[Any, ...]) -> str:
    schema = error.schema if isinstance(error.schema, dict) else {}
    description = str(schema.get("description", ""))
    hint = _hint(description)
    instance = error.instance
    if error.validator == "pattern":
        if isinstance(instance, str) and instance.startswith("%"):
            return (f"{instance!r} is not a node reference ('%name'); write {'%' + instance!r} for the "
                    f"literal string {instance!r}")  # fmt: skip
        return f"{instance!r} is not valid here" + (f": {description}" if description else "")
    if error.validator == "enum":
        options = ", ".join(map(str, error.validator_value))
        return f"{_short(instance)} is not one of: {options}" + (hint if "write" in description else "")
    if error.validator == "const":
        return f"{_short(instance)} must be {error.validator_value!r}"
    if error.validator == "type":
        types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        expected = " or ".join(_KINDS.get(str(t), str(t)) for t in types)
        if not path:
            return f"a spec is a mapping with `fxgen: 1`, `name` and `nodes`, not {_kind(instance)}"
        return f"expected {expected}, not {_kind(instance)} {_short(instance)}"
    if error.validator == "required":
        missing = [k for k in error.validator_value if isinstance(instance, dict) and k not in instance]
        name = missing[0] if missing else str(error.message)
        if len(path) == 2 and path[0] == "nodes" and isinstance(instance, dict):
            return f"missing key {name!r}: {instance.get('op')} nodes need " + ", ".join(
                f"`{k}`" for k in error.validator_value
            )
        required = ", ".join(f"`{k}`" for k in error.validator_value)
        return f"missing key {name!r} (required here: {required})" + (hint if path else "")
    if error.validator in ("minItems", "maxItems") and isinstance(instance, list):
        bound = "at least" if error.validator == "minItems" else "at most"
        return f"has {len(instance)} item{'s' * (len(instance) != 1)}, {bound} {error.validator_value} allowed{hint}"
    if error.validator in ("minProperties", "maxProperties") and isinstance(instance, dict):
        if schema.get("minProperties") == schema.get("maxProperties") == 1:
            keys = ", ".join(map(repr, instance)) or "none"
            return f"expected a mapping with exactly one key, got {len(instance)} ({keys}){hint}"
        bound = "at least" if error.validator == "minProperties" else "at most"
        return f"has {len(instance)} keys, {bound} {error.validator_value} allowed{hint}"
    return " ".join(str(error.message).split())[:200]


def _key_message(error: ValidationError) -> str:
    """A mapping key that fails ``propertyNames`` (a tag, a kwarg name, a path)."""
    key = error.instance
    if error.validator == "enum" and tuple(error.validator_value) == _TAGS:
        return (f"unknown value tag {key!r}; a mapping in a value is a single-key tag ({', '.join(_TAGS)}), "
                "write a dict as {dict: {...}}")  # fmt: skip
    if error.validator == "enum":
        return f"key {key!r} is not one of: {', '.join(map(str, error.validator_value))}"
    schema = error.schema if isinstance(error.schema, dict) else {}
    hint = schema.get("description", "")
    return f"key {key!r} is not valid here" + (f": {hint}" if hint else "")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "a mapping"


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (a message stays one line)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _hint(description: str) -> str:
    """A schema description as the tail of a message: ``"; a list of ..."``."""
    text = description.rstrip(".")
    if text[:1].isupper() and (text[1:2].islower() or text[1:2] == " "):
        text = text[0].lower() + text[1:]
    return f"; {text}" if text else ""


def _describe(path: tuple[Any, ...]) -> str:
    """``("nodes", 3, "args", 0)`` -> ``"nodes[3].args[0]: "``."""
    if not path:
        return ""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text + ": "
