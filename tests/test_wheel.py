"""The wheel: what an installed fxgen needs besides its modules.

Built as pip builds it (the build backend of pyproject.toml, hatchling, from the dev extras: no
network, no isolated build environment), into a temporary directory; it must hold the JSON Schema
(read at run time to validate specs), the code template and ``py.typed``, the marker that tells
type checkers fxgen's annotations are meant for its users (PEP 561). CI installs the dev extras, so
there a missing hatchling fails the test; elsewhere it skips it. And the dependencies: what fxgen's
own code needs is declared, not left to whatever else installs it (numpy).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tomllib
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


def test_numpy_is_a_dependency_because_fxgen_calls_tensor_numpy(tmp_path: Path) -> None:
    """torch leaves numpy optional. Without it, every ``import torch`` warns "Failed to initialize
    NumPy" (each pre-commit hook run that rendered printed it) and ``Tensor.numpy()``, which
    ``fxgen.save_weights`` and export's packed tensors call, raises: so fxgen depends on numpy."""
    hidden = tmp_path / "hidden" / "numpy"  # an environment without numpy, as the hooks' own was
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')\n")
    code = "import torch, fxgen; fxgen.save_weights(torch.nn.Linear(2, 3), 'w.safetensors')"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden.parent), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=HANG_WATCHDOG, check=False)  # fmt: skip
    assert done.returncode != 0 and "Numpy is not available" in done.stderr, done.stderr
    assert "Failed to initialize NumPy" in done.stderr
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert [d for d in dependencies if d.split(">")[0].split("=")[0].strip() == "numpy"], dependencies
