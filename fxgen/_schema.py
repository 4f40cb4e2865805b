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
                f"{where}unknown key {extra[0]!r} (allowed here: {known})",
            )
    if error.validator == "propertyNames":
        return Diagnostic(doc.locate(path), f"{where}{_message(error)}")
    return Diagnostic(doc.locate(path), f"{where}{_message(error)}")


def _deepest(error: ValidationError) -> ValidationError:
    """For anyOf/oneOf, the alternative that got furthest says what is actually wrong."""
    best = best_match(error.context or [])
    while best.validator in ("anyOf", "oneOf") and best.context:
        best = best_match(best.context)
    return best


def _message(error: ValidationError) -> str:
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "pattern":
        hint = schema.get("description", "")
        return f"{error.instance!r} is not valid here" + (f": {hint}" if hint else "")
    if error.validator == "enum":
        options = ", ".join(map(str, error.validator_value))
        return f"{error.instance!r} is not one of: {options}"
    if error.validator == "const":
        return f"{error.instance!r} must be {error.validator_value!r}"
    return str(error.message)


def _describe(path: tuple[Any, ...]) -> str:
    """``("nodes", 3, "args", 0)`` -> ``"nodes[3].args[0]: "``."""
    if not path:
        return ""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text + ": "
