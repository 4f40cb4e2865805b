"""Write stage: a run's outputs told apart from each other and from its inputs, before anything is
written.

``fxgen export --out P --weights P`` wrote the weights, then the spec over them, and reported
success; ``fxgen transform -o W --weights W`` replaced the weights it read. So every command that
writes names its outputs and inputs here first, and a run whose outputs name one file twice, or
name a file it reads, is refused with nothing written.

Paths are compared as the operations see them. A write renames a new file over the directory
entry it names (``fxgen.write.atomic``): a symlink there is replaced itself, never written
through, so an output is its folder's real path and its own name. A read follows symlinks, so
an input is its real path. Two outputs that are hard links of one file, or a symlink to an
input, are therefore two entries, each replaced on its own, and nothing is lost.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from fxgen._errors import GenerateError, Location

__all__ = ["check_targets"]


def check_targets(outputs: Iterable[tuple[str, Path]], inputs: Iterable[tuple[str, Path]] = ()) -> None:
    """Refuse (a ``GenerateError`` at the output) two of ``outputs`` that name one file, and an
    output that names one of ``inputs``; each is ``(what it is, its path)``, ``what`` as a user
    names it (``--weights``, ``the spec net.yaml``)."""
    read: dict[str, str] = {}
    for what, path in inputs:
        read.setdefault(os.path.realpath(path), what)
    written: dict[str, str] = {}
    for what, path in outputs:
        entry = os.path.join(os.path.realpath(path.parent), path.name)
        if entry in written:
            raise GenerateError(f"{written[entry]} and {what} both name this file; give each output a file of its "
                                "own; nothing was written", Location(str(path)))  # fmt: skip
        if entry in read:
            raise GenerateError(f"{what} names {read[entry]}, which this run reads; write it to another file; "
                                "nothing was written", Location(str(path)))  # fmt: skip
        written[entry] = what
