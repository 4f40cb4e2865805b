"""Temporary files a killed fxgen run left next to the files a command is about to write.

Every command that writes removes them first and names each (``fxgen.write.atomic`` decides what
is stale: a temporary file of fxgen's naming that no running process holds locked), so a user sees
what an interrupted run had left, whichever command cleans it up.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from fxgen._errors import printable_path

__all__ = ["LEFT_BY", "sweep"]

LEFT_BY = "a temporary file left by an interrupted fxgen run"


def sweep(targets: Iterable[Path | None], *, quiet: bool = False) -> list[Path]:
    """Remove the stale temporary files of each target (None: no such output); name each."""
    from fxgen.write.atomic import remove_stale

    removed = [path for target in targets if target is not None for path in remove_stale(target.parent, target.name)]
    for path in removed if not quiet else ():
        print(f"fxgen: removed {printable_path(path)} ({LEFT_BY})", file=sys.stderr)
    return removed
