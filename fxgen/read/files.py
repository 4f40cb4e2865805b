"""Read stage: the one way fxgen opens a file to read it, so that one rule holds for every file.

**Regular files only, never more than a limit.** A path may be a symlink to ``/dev/zero``, a
FIFO that blocks until a writer comes, or a device, however it was named (on the command line,
found in a folder, a generated file, an orphan candidate). Its type is looked at before it is
opened (a device is never opened) and again on the open file, which is opened without blocking
(a FIFO swapped in between cannot hang the read); its size is compared with the limit before
anything is read, and at most the limit plus one byte is ever read, so a file that grows while
it is read is caught too. Symlinks to regular files are followed: a symlinked spec is a spec.
Refusals are ``OSError``s (:class:`Refused`, :class:`TooLarge`) whose ``strerror`` says what the
path is, so a caller's own ``except OSError`` reports them in its words, located at the file.

The limits of each kind of file are here, in one place.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path

from fxgen._errors import printable_path

__all__ = ["CONFIG_BYTES", "GENERATED_BYTES", "SPEC_BYTES", "Refused", "TooLarge", "bounded_bytes", "bounded_text",
           "open_regular"]  # fmt: skip


SPEC_BYTES = 64 * 1024 * 1024  # a 100,000-node spec is about 8 MiB (fxgen.read.reader.MAX_BYTES)
GENERATED_BYTES = 4 * SPEC_BYTES  # a generated file: its spec's packed data, and a few lines per node
CONFIG_BYTES = 16 * 1024 * 1024  # a pyproject.toml, the package's JSON Schema


class Refused(OSError):
    """A path fxgen does not read: no regular file (a FIFO, a device, a directory, a socket)."""


class TooLarge(Refused):
    """A regular file larger than the limit of its kind."""


def open_regular(path: str | Path) -> io.FileIO:
    """``path`` open for reading, unbuffered, if it is a regular file (after symlinks); else
    :class:`Refused`. Other ``OSError``s (no such file, no permission) pass through."""
    kind = _kind(os.stat(path).st_mode)
    if kind is not None:  # looked at before opening: a device is never opened
        raise _refused(path, kind)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        kind = _kind(os.fstat(fd).st_mode)  # what was opened: the path may have been swapped since
        if kind is not None:
            raise _refused(path, kind)
        return io.FileIO(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def bounded_bytes(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (:class:`TooLarge` when
    it is larger, told by its size before reading and by reading one byte more than the limit)."""
    with open_regular(path) as raw:
        size = os.fstat(raw.fileno()).st_size
        if size > limit:
            raise _too_large(limit)
        data = io.BufferedReader(raw).read(limit + 1)  # reads until the end or limit + 1 bytes
    if len(data) > limit:  # it grew while being read
        raise _too_large(limit)
    return data


def bounded_text(path: str | Path, limit: int) -> str:
    """:func:`bounded_bytes` read as UTF-8 (a ``UnicodeDecodeError`` when it is not)."""
    return bounded_bytes(path, limit).decode("utf-8")


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def _kind(mode: int) -> str | None:
    """What a file of ``mode`` is, None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "an unknown kind of file")


def _refused(path: str | Path, kind: str) -> Refused:
    target = ""
    if os.path.islink(path):
        target = f" (a symlink to {printable_path(os.path.realpath(path))})"
    return Refused(errno.EINVAL, f"{kind}{target}, not a regular file; fxgen reads regular files only")


def _too_large(limit: int) -> TooLarge:
    return TooLarge(errno.EFBIG, f"larger than {limit // 2**20} MiB, the limit for this kind of file")
