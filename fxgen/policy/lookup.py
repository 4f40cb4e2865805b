"""Where fxgen looks for a module that trusted code names: on ``sys.path``, then in the working
directory.

The modules are those of ``--allow`` and ``[tool.fxgen] allow`` entries (imported only when a spec
names something inside them), ``fxgen export PKG.MODULE:ATTR``'s and ``[tool.fxgen] passes``'.
Every command and the API look them up here, so a package in the directory fxgen runs from is
found by all of them, whether fxgen runs as the ``fxgen`` command (whose ``sys.path`` does not hold
that directory) or as ``python -m fxgen`` (whose does, first). The working directory comes last
and only while such a module is imported, so it never shadows an installed package, and nothing
fxgen imports for itself is looked for there (docs/security.md, "Your working directory").
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Iterator

__all__ = ["findable", "import_named", "where_looked"]


def import_named(name: str) -> types.ModuleType:
    """The module ``name`` (dotted), imported from ``sys.path`` or the working directory; its own
    imports, while it is imported, search the same places. Raises what importing raises."""
    with _searching():
        return importlib.import_module(name)


def findable(name: str) -> bool:
    """Whether the top-level module ``name`` is imported or would be found, without importing it
    (its finder only looks at the file system: no code of the module runs)."""
    if name in sys.modules:
        return True
    with _searching():
        return importlib.util.find_spec(name) is not None


def where_looked() -> str:
    """Where :func:`import_named` looks, for a message saying a module was not found."""
    here = os.getcwd()
    entries = [entry or here for entry in sys.path]
    where = f"on sys.path ({', '.join(entries)})" if entries else "on sys.path (empty)"
    return where if here in entries else f"{where} or in the working directory {here}"


@contextlib.contextmanager
def _searching() -> Iterator[None]:
    """``sys.path`` with the working directory appended while the block runs (when it is not on
    it already, as ``python -m`` and an interactive session put it)."""
    here = os.getcwd()
    if here in sys.path or "" in sys.path:
        yield
        return
    sys.path.append(here)
    try:
        yield
    finally:
        for index in range(len(sys.path) - 1, -1, -1):  # ours: the last one, whatever the import added
            if sys.path[index] == here:
                del sys.path[index]
                break
