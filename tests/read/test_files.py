"""``fxgen.read.files``: regular files only, the type and size looked at before reading, never
more than the limit plus one byte read. (FIFOs, which would block a regression, are tested
through the CLI under a watchdog: tests/cli/test_hostile_paths.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fxgen.read import files
from fxgen.read.files import Refused, TooLarge, bounded_bytes, bounded_text, open_regular


def test_a_regular_file_is_read_up_to_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"x" * 100)
    assert bounded_bytes(path, 100) == b"x" * 100
    with pytest.raises(TooLarge, match="larger than"):
        bounded_bytes(path, 99)


@pytest.mark.parametrize("size", [0, 5, 9, 10, 11, 40])
def test_the_limit_is_exact(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(bytes(range(65, 65 + size)))
    if size <= 10:
        assert bounded_bytes(path, 10) == path.read_bytes()
    else:
        with pytest.raises(TooLarge):
            bounded_bytes(path, 10)


def test_a_symlink_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.yaml").write_text("a: 1\n")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real.yaml")
    assert bounded_text(tmp_path / "link.yaml", 100) == "a: 1\n"


def test_a_larger_file_is_refused_by_its_size_before_a_byte_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as f:
        f.truncate(2**40)  # sparse: costs no disk
    monkeypatch.setattr(files.io, "BufferedReader", None)  # reading at all would fail otherwise
    with pytest.raises(TooLarge):
        bounded_bytes(path, 2**20)


def test_a_file_whose_size_says_less_than_it_holds_is_read_to_the_limit_plus_one_byte() -> None:
    """/proc files say 0 bytes and hold more: what is read, not the size, decides."""
    text = Path("/proc/self/status")
    if not text.exists():
        pytest.skip("no /proc")
    assert os.stat(text).st_size == 0
    assert b"Name:" in bounded_bytes(text, 2**20)
    with pytest.raises(TooLarge):
        bounded_bytes(text, 10)


@pytest.mark.parametrize(("make", "kind"), [
    (lambda p: p.symlink_to("/dev/zero"), "a character device (a symlink to /dev/zero)"),
    (lambda p: p.mkdir(), "a directory"),
])  # fmt: skip
def test_what_is_no_regular_file_is_refused_with_what_it_is(tmp_path: Path, make: object, kind: str) -> None:
    path = tmp_path / "odd.yaml"
    make(path)  # type: ignore[operator]
    with pytest.raises(Refused) as info:
        bounded_bytes(path, 2**20)
    assert info.value.strerror == f"{kind}, not a regular file; fxgen reads regular files only"
    with pytest.raises(Refused):
        open_regular(path)


def test_a_device_is_never_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its type is looked at first: opening some devices does something (a tape rewinds)."""
    opened = []
    monkeypatch.setattr(files.os, "open", lambda *args: opened.append(args))
    with pytest.raises(Refused):
        open_regular("/dev/null")
    assert opened == []


def test_missing_files_are_the_usual_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        bounded_bytes(tmp_path / "nope.yaml", 10)
