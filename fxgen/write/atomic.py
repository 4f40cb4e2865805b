"""Write stage: the only place fxgen writes files, always atomically; and what a killed write leaves.

A temporary file in the target's directory, ``.NAME.fxgen-XXXXXXXX.tmp``, is written, flushed,
fsynced and renamed over the target, so an interrupted run leaves either the old file or the new
one, never half of one. Ctrl-C and SIGTERM remove the temporary file; ``kill -9``, a crash or a
power cut cannot, so a later run has to.

**Which temporary files are stale.** The writer holds an exclusive ``flock`` on its temporary
file from the moment it exists until it has been renamed or removed. The kernel drops the lock
when the process ends, however it ends. So a file of this naming scheme that nobody holds locked
was left by a run that no longer exists, and :func:`remove_stale` removes it; the file of a run
still writing in parallel is locked and left alone. No pid or age is involved: pids are reused
and are per container, ages depend on clocks and on how long a write takes (a weights file may
take minutes). The one race, a cleaner locking a file between the writer's ``mkstemp`` and its
``flock``, is closed by the writer: once it holds the lock it checks that its path still names its
file, and starts again under a new name if a cleaner removed it. Where ``flock`` is missing
(Windows), or a file system refuses it, a temporary file is never called stale; on Windows a file
another process has open cannot be deleted anyway.

**Replacing only what was checked.** ``check`` sees the target's bytes right before the rename
and may refuse (a generated file edited by hand while fxgen was rendering). A target that did not
exist is created with ``link``, which fails if something appeared in the meantime, so that is
checked too; an existing target is replaced with ``rename``, and POSIX has no rename that
compares first: an edit saved in the microseconds between the check and the rename is lost.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from fxgen._errors import GenerateError, Location, printable_path
from fxgen.read.files import GENERATED_BYTES, bounded_bytes

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["ensure_writable", "remove_stale", "replacing", "stale_temporaries", "write_atomic"]


_MARK = ".fxgen-"
_SUFFIX = ".tmp"
# `.NAME.fxgen-` + tempfile's random characters + `.tmp`: only files of fxgen's own making
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.fxgen-[a-z0-9_]+\.tmp")

# sees the bytes at the target right before it is replaced: None when there is no file, b"" for a
# symlink to nothing (the name is taken, with nothing to read)
Check = Callable[[bytes | None], None]


def write_atomic(path: str | Path, data: str | bytes, *, check: Check | None = None, sweep: bool = True) -> list[Path]:
    """Replace ``path`` with ``data`` atomically (creating parent directories); ``check`` as in
    :func:`replacing`. With ``sweep``, first remove the stale temporary files earlier writes of
    ``path`` left (:func:`remove_stale`); returns those removed."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    removed = remove_stale(path.parent, path.name) if sweep else []
    with replacing(path, check=check) as f:
        f.write(payload)
    return removed


@contextlib.contextmanager
def replacing(path: str | Path, *, check: Check | None = None) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new contents to (creating parent directories). When the
    block ends, the file is flushed, fsynced and renamed over ``path``, after ``check`` has seen the
    bytes at ``path`` then (``None``: no file; ``b""``: a symlink to nothing) and not raised; on any error or interruption it is
    removed and ``path`` is as it was. I/O errors are ``GenerateError``s naming ``path``. Stale
    temporary files of ``path`` are not removed here: call :func:`remove_stale` first."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _locked_temporary(path)
    except OSError as exc:
        raise _cannot("write", path, exc) from None
    done = False
    try:
        with os.fdopen(fd, "wb") as f:  # closing it drops the lock: only once tmp is renamed or removed
            try:
                yield f
                f.flush()
                os.fsync(f.fileno())
                with contextlib.suppress(OSError):
                    os.chmod(tmp, 0o644 & ~_umask())
                _put(tmp, path, check)
                done = True
            finally:
                if not done:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
    except OSError as exc:
        raise _cannot("write", path, exc) from None


def ensure_writable(folder: Path) -> None:
    """Fail now, not after minutes of rendering, when files cannot be written to ``folder``
    (creating it): a temporary file is made and removed, the only test that sees read-only
    mounts, full disks and permissions alike (root ignores permission bits)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = _locked_temporary(folder / "probe")
        try:
            os.unlink(tmp)
        finally:
            os.close(fd)
    except OSError as exc:
        raise GenerateError(f"cannot write files to this directory: {exc.strerror or exc}; nothing was written",
                            Location(str(folder))) from None  # fmt: skip


def stale_temporaries(folder: Path, name: str | None = None) -> list[Path]:
    """fxgen's temporary files in ``folder`` (of the target ``name`` only, if given) that no
    running write holds: left by a run that was killed. Nothing is changed."""
    found = []
    for path in _temporaries(folder, name):
        with _claimed(path) as claimed:
            if claimed:
                found.append(path)
    return found


def remove_stale(folder: Path, name: str | None = None) -> list[Path]:
    """Remove the stale temporary files :func:`stale_temporaries` finds, each while holding its
    lock (so no writer can take it up meanwhile); return those removed. A file that cannot be
    removed is a ``GenerateError`` located at it."""
    removed = []
    for path in _temporaries(folder, name):
        with _claimed(path) as claimed:
            if not claimed:
                continue
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise GenerateError(
                    f"cannot remove this temporary file left by an interrupted fxgen run: {exc.strerror or exc}; "
                    "delete it", Location(str(path)),
                ) from None  # fmt: skip
            removed.append(path)
    return removed


def _temporaries(folder: Path, name: str | None) -> list[Path]:
    try:
        entries = sorted(os.listdir(folder))
    except OSError:  # no folder (yet), or not a folder: no temporary files
        return []
    return [folder / e for e in entries if (m := _TEMPORARY.fullmatch(e)) and name in (None, m["name"])]


@contextlib.contextmanager
def _claimed(path: Path) -> Iterator[bool]:
    """Whether ``path`` is a temporary file no writer holds; if so, its lock is held by us for the
    block. Anything unclear (cannot open or lock it, not a regular file, a symlink) counts as
    held: a file is only ever called stale when that is certain."""
    if fcntl is None:
        yield False
        return
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        yield False
        return
    try:
        yield _lock(fd, blocking=False) and stat.S_ISREG(os.fstat(fd).st_mode) and _names(path, fd)
    finally:
        os.close(fd)


def _locked_temporary(path: Path) -> tuple[int, str]:
    """A new temporary file next to ``path``, open and locked by this process."""
    while True:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{_MARK}", suffix=_SUFFIX, dir=path.parent)
        _lock(fd, blocking=True)  # a cleaner holding it a moment: wait, then see whether it removed it
        if _names(Path(tmp), fd):
            return fd, tmp
        os.close(fd)  # a cleaner took it as stale between mkstemp and flock: start again


def _lock(fd: int, *, blocking: bool) -> bool:
    """Lock ``fd`` exclusively; False when another process holds it (or locks are unavailable)."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except OSError:
        return False
    return True


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` is (still) the name of the file open as ``fd``."""
    try:
        there, held = os.stat(path, follow_symlinks=False), os.fstat(fd)
    except OSError:
        return False
    return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)


def _put(tmp: str, path: Path, check: Check | None) -> None:
    """Rename ``tmp`` to ``path``; with ``check``, only over the bytes ``check`` accepted. A name
    that keeps appearing and vanishing between the look and the link is given up after a few
    rounds (a ``GenerateError``), never retried for ever."""
    if check is None:
        os.replace(tmp, path)
        return
    for _ in range(_ROUNDS):
        current = _current(path)
        check(current)
        if current is not None:
            os.replace(tmp, path)  # a symlink there is replaced itself, never written through
            return
        try:
            os.link(tmp, path)  # creates path only if there is still none
        except FileExistsError:
            continue  # something appeared since the check: check that
        except OSError:  # no hard links on this file system
            os.replace(tmp, path)
            return
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return
    raise GenerateError(f"cannot write {printable_path(path)}: files kept appearing and vanishing there while fxgen wrote it; "
                        "nothing was written: run again once nothing else writes there")  # fmt: skip


_ROUNDS = 10  # looks at a target, each after another process created or removed it: plenty for any race


def _current(path: Path) -> bytes | None:
    """The bytes at ``path`` for a check: None when there is no entry, b"" for an entry with
    nothing to read (a symlink to nothing: it is there, so ``link`` cannot create the name)."""
    try:
        return bounded_bytes(path, GENERATED_BYTES)  # what a check looks at: a generated file
    except FileNotFoundError:
        return b"" if path.is_symlink() else None


def _cannot(what: str, path: Path, exc: OSError) -> GenerateError:
    return GenerateError(f"cannot {what} {printable_path(path)}: {exc.strerror or exc}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
