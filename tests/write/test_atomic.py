"""``fxgen.write.atomic``: which temporary files are stale (nobody holds their lock), removing only
those, a writer that loses its temporary file to a cleaner starting again, and replacing only a
target the check accepted, however late it changed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from helpers import HANG_WATCHDOG

from fxgen._errors import GenerateError
from fxgen.write import atomic

pytestmark = pytest.mark.skipif(atomic.fcntl is None, reason="stale temporary files are found with flock (POSIX)")


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _killed_writer(target: Path) -> Path:
    """The temporary file a writer of ``target`` leaves when it is killed with SIGKILL mid-write."""
    script = textwrap.dedent(f"""
        import os, time
        from fxgen.write import atomic
        with atomic.replacing({str(target)!r}) as f:
            f.write(b"half")
            f.flush()
            print("writing", flush=True)
            time.sleep(60)
        """)  # fmt: skip
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "writing\n"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=HANG_WATCHDOG)
    finally:
        process.kill()
    (left,) = [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]
    return left


def test_a_killed_writes_temporary_file_is_stale_and_removed_by_the_next_write(tmp_path: Path) -> None:
    """The weights case of issue 34: a 270 MB `.NAME.XXXX.tmp` stayed forever."""
    target = tmp_path / "model.safetensors"
    target.write_bytes(b"old")
    left = _killed_writer(target)
    assert left.name.startswith(".model.safetensors.fxgen-") and target.read_bytes() == b"old"
    assert atomic.stale_temporaries(tmp_path) == [left]
    assert atomic.stale_temporaries(tmp_path, "other.safetensors") == []
    assert atomic.write_atomic(target, b"new") == [left]  # and says so
    assert target.read_bytes() == b"new" and _temporaries(tmp_path) == []


def test_a_temporary_file_being_written_is_not_stale(tmp_path: Path) -> None:
    target = tmp_path / "model.safetensors"
    with atomic.replacing(target) as f:
        f.write(b"new")
        (live,) = _temporaries(tmp_path)
        assert atomic.stale_temporaries(tmp_path) == []
        assert atomic.remove_stale(tmp_path) == []
        assert atomic.write_atomic(target, b"other") == []  # a parallel write of the same file
        assert _temporaries(tmp_path) == [live]
    assert target.read_bytes() == b"new" and _temporaries(tmp_path) == []


def test_files_that_are_not_fxgen_temporaries_are_never_touched(tmp_path: Path) -> None:
    keep = [".model.py.abcd1234.tmp", "model.fxgen-x.tmp", ".model.py.fxgen-.tmp", ".model.py.fxgen-abc.tmp.bak"]
    for name in keep:
        (tmp_path / name).write_text("mine")
    (tmp_path / "real").mkdir()
    (tmp_path / ".dir.fxgen-abcdefgh.tmp").mkdir()  # not a regular file
    (tmp_path / ".link.fxgen-abcdefgh.tmp").symlink_to(tmp_path / "real")  # not followed
    assert atomic.remove_stale(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*keep, "real", ".dir.fxgen-abcdefgh.tmp",
                                                                 ".link.fxgen-abcdefgh.tmp"])  # fmt: skip


def test_a_writer_whose_temporary_file_a_cleaner_took_starts_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cleaner may lock a new temporary file before its writer does (between mkstemp and flock):
    it is removed as stale, and the writer notices once it holds the lock and makes another."""
    real_mkstemp = tempfile.mkstemp
    taken: list[Path] = []

    def mkstemp_then_cleaner(**kwargs: object) -> tuple[int, str]:
        fd, name = real_mkstemp(**kwargs)  # type: ignore[call-overload]
        if not taken:
            taken.extend(atomic.remove_stale(tmp_path))
        return fd, name

    monkeypatch.setattr(atomic.tempfile, "mkstemp", mkstemp_then_cleaner)
    atomic.write_atomic(tmp_path / "out.py", "text", sweep=False)
    assert len(taken) == 1 and not taken[0].exists()
    assert (tmp_path / "out.py").read_text() == "text" and _temporaries(tmp_path) == []


def test_a_stale_temporary_file_that_cannot_be_removed_is_a_located_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    left = tmp_path / ".out.py.fxgen-abcdefgh.tmp"
    left.write_text("x")

    def read_only(path: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(atomic.os, "unlink", read_only)
    with pytest.raises(GenerateError) as info:
        atomic.remove_stale(tmp_path)
    assert str(info.value).startswith(f"{left}: error: cannot remove") and "Read-only file system" in str(info.value)


def test_the_check_sees_the_target_as_it_is_right_before_the_rename(tmp_path: Path) -> None:
    target = tmp_path / "out.py"
    seen: list[bytes | None] = []

    def refuse_edits(current: bytes | None) -> None:
        seen.append(current)
        if current == b"edited":
            raise GenerateError("edited")

    target.write_bytes(b"old")
    with pytest.raises(GenerateError), atomic.replacing(target, check=refuse_edits) as f:
        f.write(b"new")
        target.write_bytes(b"edited")  # while the new text is being written
    assert seen == [b"edited"] and target.read_bytes() == b"edited" and _temporaries(tmp_path) == []


def test_a_refused_check_keeps_the_target_and_removes_the_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "out.py"

    def refuse(current: bytes | None) -> None:
        raise GenerateError("no")

    target.write_bytes(b"edited")
    with pytest.raises(GenerateError):
        atomic.write_atomic(target, b"new", check=refuse)
    assert target.read_bytes() == b"edited" and _temporaries(tmp_path) == []


def test_a_missing_target_is_only_created_while_it_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked as missing, then created by someone else before the write: link() refuses to
    replace it, and the check looks at what is there now."""
    target = tmp_path / "out.py"
    real_link = os.link
    seen: list[bytes | None] = []

    def link_after_someone(src: str, dst: str) -> None:
        if not target.exists():
            target.write_bytes(b"hand-made")
        real_link(src, dst)

    def check(current: bytes | None) -> None:
        seen.append(current)
        if current is not None:
            raise GenerateError("not mine")

    monkeypatch.setattr(atomic.os, "link", link_after_someone)
    with pytest.raises(GenerateError, match="not mine"):
        atomic.write_atomic(target, b"new", check=check)
    assert seen == [None, b"hand-made"] and target.read_bytes() == b"hand-made" and _temporaries(tmp_path) == []


def test_a_symlink_to_nothing_is_seen_as_an_entry_and_replaced_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check sees b"" (a name with nothing to read), and the link, not its target, is replaced
    (the counting link stops a regression that would retry for ever)."""
    target = tmp_path / "out.py"
    target.symlink_to(tmp_path / "nowhere.py")
    seen: list[bytes | None] = []
    real_link, calls = os.link, []

    def counted(src: str, dst: str) -> None:
        calls.append(dst)
        if len(calls) > 1000:
            raise AssertionError("retried without end")
        real_link(src, dst)

    monkeypatch.setattr(atomic.os, "link", counted)
    atomic.write_atomic(target, b"new", check=seen.append)
    assert seen == [b""] and not target.is_symlink() and target.read_bytes() == b"new"
    assert not (tmp_path / "nowhere.py").exists() and _temporaries(tmp_path) == []


def test_a_name_that_keeps_appearing_and_vanishing_is_given_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each link finds the name taken and each look finds it gone: a few rounds, then an error
    (the fake link stops a regression that would retry for ever)."""
    target = tmp_path / "out.py"
    calls = []

    def taken(src: str, dst: str) -> None:
        calls.append(dst)
        if len(calls) > 1000:
            raise AssertionError("retried without end")
        raise FileExistsError(dst)

    monkeypatch.setattr(atomic.os, "link", taken)
    with pytest.raises(GenerateError, match="kept appearing and vanishing"):
        atomic.write_atomic(target, b"new", check=lambda current: None)
    assert 1 < len(calls) <= 100 and not target.exists() and _temporaries(tmp_path) == []


def test_ensure_writable_reports_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    atomic.ensure_writable(tmp_path / "new" / "gen")
    assert (tmp_path / "new" / "gen").is_dir() and list((tmp_path / "new" / "gen").iterdir()) == []

    def read_only(**kwargs: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(atomic.tempfile, "mkstemp", read_only)
    with pytest.raises(GenerateError) as info:
        atomic.ensure_writable(tmp_path)
    assert str(info.value) == f"{tmp_path}: error: cannot write files to this directory: Read-only file system; nothing was written"
