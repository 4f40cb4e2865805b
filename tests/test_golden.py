"""Golden files: the exact generated source of every example, and generated/ kept current.

``tests/golden/<stem>.py`` holds what ``fxgen.generate`` gives for ``model_specs/<stem>.yaml``
(with the label the committed ``generated/`` files carry). A change in the output fails here
with a diff; ``python -m pytest --update-golden`` rewrites the files and says which it rewrote
(a pytest warning), never silently.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT

import fxgen
from fxgen._writer import write_atomic

GOLDEN = ROOT / "tests" / "golden"


class GoldenFileUpdated(UserWarning):
    """Shown in pytest's warnings summary for each golden file --update-golden rewrote."""


def _generate(example: Path) -> str:
    return fxgen.generate(example, label=example.relative_to(ROOT).as_posix())


def test_golden(example: Path, update_golden: bool) -> None:
    golden = GOLDEN / f"{example.stem}.py"
    actual = _generate(example)
    expected = golden.read_text(encoding="utf-8") if golden.exists() else None
    if actual == expected:
        return
    if update_golden:
        write_atomic(golden, actual)
        warnings.warn(GoldenFileUpdated(f"rewrote {golden.relative_to(ROOT)}"), stacklevel=1)
        return
    if expected is None:
        pytest.fail(f"{golden.relative_to(ROOT)} is missing; run `python -m pytest --update-golden`")
    diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "golden", "generated"))
    pytest.fail(f"generated code for {example.name} changed (if intended: `python -m pytest --update-golden`):\n{diff}")


def test_no_stray_golden_files(update_golden: bool) -> None:
    stray = sorted(p for p in GOLDEN.glob("*.py") if p.stem not in {e.stem for e in EXAMPLES})
    if stray and update_golden:
        for path in stray:
            path.unlink()
            warnings.warn(GoldenFileUpdated(f"removed {path.relative_to(ROOT)} (no such example)"), stacklevel=1)
        return
    assert not stray, f"golden files without an example: {stray}; run `python -m pytest --update-golden`"


def test_golden_files_are_the_committed_generated_files(example: Path) -> None:
    golden = GOLDEN / f"{example.stem}.py"
    committed = ROOT / "generated" / f"{example.stem}.py"
    assert committed.read_bytes() == golden.read_bytes(), f"run `fxgen generate model_specs/` ({committed} differs)"


def test_generated_directory_is_current() -> None:
    """What CI and the pre-commit hook check: nothing missing, stale, edited or orphaned."""
    result = subprocess.run(
        [sys.executable, "-m", "fxgen", "generate", "--check", "model_specs"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
