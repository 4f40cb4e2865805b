"""The wheel: what an installed fxgen needs besides its modules.

Built as pip builds it (the build backend of pyproject.toml, hatchling, from the dev extras: no
network, no isolated build environment), into a temporary directory; it must hold the JSON Schema
(read at run time to validate specs), the code template and ``py.typed``, the marker that tells
type checkers fxgen's annotations are meant for its users (PEP 561). CI installs the dev extras, so
there a missing hatchling fails the test; elsewhere it skips it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import HANG_WATCHDOG

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_holds_the_schema_the_template_and_the_typed_marker(tmp_path: Path) -> None:
    if importlib.util.find_spec("hatchling") is None:
        message = "hatchling not installed (pip install -c constraints.txt -e '.[dev]')"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: CI installs the dev extras")
        pytest.skip(message)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
               "--wheel-dir", str(tmp_path), str(ROOT)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=HANG_WATCHDOG, check=False)
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("fxgen-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert archive.read("fxgen/schemas/fxgen.schema.json") == (ROOT / "schemas" / "fxgen.schema.json").read_bytes()
        template = ROOT / "fxgen" / "codegen" / "templates" / "module.py.jinja"
        assert archive.read("fxgen/codegen/templates/module.py.jinja") == template.read_bytes()
    assert "fxgen/py.typed" in names
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "fxgen").rglob("*.py")}
    assert modules <= names, modules - names
