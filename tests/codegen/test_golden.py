"""Golden files: the committed ``generated/<stem>.py`` is the exact source ``fxgen.generate``
gives for ``model_specs/<stem>.yaml``.

``fxgen generate`` leaves a file alone while its header says it is current (same spec, same
fxgen version), so a renderer change would otherwise go unnoticed until the next release. Here
it fails with a diff; ``python -m pytest --update-golden`` rewrites the files and says which it
rewrote (a pytest warning), never silently.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conftest import ROOT
from helpers import HANG_WATCHDOG

import fxgen
from fxgen.write.atomic import write_atomic

GOLDEN = ROOT / "generated"  # the committed output is the golden copy: one file per example


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


def test_generated_directory_is_current() -> None:
    """What CI and the pre-commit hook check: nothing missing, stale, edited or orphaned (a
    golden file without an example is an orphan)."""
    result = subprocess.run(
        [sys.executable, "-m", "fxgen", "generate", "--check", "model_specs"],
        cwd=ROOT, capture_output=True, text=True, timeout=HANG_WATCHDOG,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
