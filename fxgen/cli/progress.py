"""Progress of a long run, on a terminal only.

A counter on one line of standard error, rewritten in place (``fxgen: rendering 12/40
resnet.yaml``) and cleared at the end. When standard error is not a terminal (a log, a pipe, CI,
pre-commit) or the run is quiet, nothing is written at all: the output stays what it would be
without progress.
"""

from __future__ import annotations

import shutil
import sys
from types import TracebackType
from typing import TextIO

from fxgen._errors import printable_path

__all__ = ["Progress"]


class Progress:
    """``with Progress("rendering", len(jobs)) as progress: progress.step(i, name)``."""

    def __init__(self, what: str, total: int, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.what = what
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and total > 1 and _is_terminal(self.stream)

    def step(self, done: int, label: str = "") -> None:
        if not self.enabled:
            return
        width = shutil.get_terminal_size((80, 24)).columns - 1
        text = f"fxgen: {self.what} {done}/{self.total} {printable_path(label)}".rstrip()  # a file name: one line
        self.stream.write("\r\x1b[K" + text[:width])
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")  # the line is cleared: what follows starts on a clean line
            self.stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False
