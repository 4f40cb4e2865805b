"""The JSON Schema of the spec format, read from ``schemas/fxgen.schema.json``: the installed copy
in a wheel, or the repository's own in a source checkout. The schema is the one definition of the
format's shape (``fxgen.check.schema`` checks documents against it).
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

from fxgen.read.files import CONFIG_BYTES, bounded_text

__all__ = ["SCHEMA_PATH", "load_schema"]

_REPO_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "fxgen.schema.json"


def _schema_file() -> Path:
    """The installed copy (wheel) or the repository's ``schemas/`` (source checkout)."""
    packaged = resources.files("fxgen").joinpath("schemas/fxgen.schema.json")
    if packaged.is_file():
        return Path(str(packaged))
    return _REPO_SCHEMA


SCHEMA_PATH = _schema_file()


@functools.cache
def load_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(bounded_text(SCHEMA_PATH, CONFIG_BYTES))
    return schema
