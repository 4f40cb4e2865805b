"""Where the modules trusted code names are looked for (``fxgen.policy.lookup``): every command
finds a package in the working directory alike, as the ``fxgen`` command runs (its ``sys.path``
does not hold that directory), and a module found nowhere is reported with where fxgen looked
and, when it is not allowed either, how to allow it."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import fxgen
from fxgen.cli.main import main

PACKAGE = "lookup_fixture_pkg"  # a name nothing installed has

SPEC = textwrap.dedent(f"""\
    fxgen: 1
    name: Net
    modules:
      s: {{class: {PACKAGE}.Scale, args: [3.0]}}
    nodes:
      - {{op: placeholder, name: x}}
      - {{op: call_module, name: y, target: s, args: ["%x"]}}
      - {{op: output, args: ["%y"]}}
    """)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory holding a package (not installed) and a spec naming its module class,
    with ``sys.path`` as the ``fxgen`` command has it: without the working directory."""
    (tmp_path / PACKAGE).mkdir()
    (tmp_path / PACKAGE / "__init__.py").write_text(textwrap.dedent("""\
        import torch


        class Scale(torch.nn.Module):
            def __init__(self, k: float = 2.0) -> None:
                super().__init__()
                self.k = k

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x * self.k
        """))
    (tmp_path / "model_specs").mkdir()
    (tmp_path / "model_specs" / "net.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    importlib.invalidate_caches()
    assert importlib.util.find_spec(PACKAGE) is None  # not found the way Python alone looks
    yield tmp_path
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


def test_every_command_finds_a_package_in_the_working_directory(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = list(sys.path)
    code, err = run(capsys, "validate", "--allow", PACKAGE, "model_specs/")
    assert code == 0 and err.startswith("fxgen: 1 spec valid"), err  # (then: which specs had no shapes checked)
    assert run(capsys, "show", "--allow", PACKAGE, "-q", "model_specs/net.yaml")[0] == 0
    code, err = run(capsys, "generate", "--allow", PACKAGE, "--jobs", "1", "model_specs/")
    assert code == 0, err
    assert (project / "generated" / "net.py").read_text() == fxgen.generate("model_specs/net.yaml", allow=[PACKAGE])
    assert run(capsys, "generate", "--check", "--allow", PACKAGE, "model_specs/")[0] == 0
    code, err = run(capsys, "export", f"{PACKAGE}:Scale", "--out", "scale.yaml")
    assert code == 0 and (project / "scale.yaml").exists(), err
    assert sys.path == path  # the working directory was searched only while importing


def test_a_module_found_nowhere_says_where_fxgen_looked(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = project / "model_specs" / "net.yaml"
    spec.write_text(SPEC.replace(PACKAGE, "nowhere_pkg"))
    code, err = run(capsys, "validate", "model_specs/")
    assert code == 1
    where = f"no module 'nowhere_pkg' on sys.path ({', '.join(sys.path)}) or in the working directory {project}"
    assert where in err, err
    assert "it must be allowed too: allow it from trusted code with --allow nowhere_pkg.Scale" in err  # the policy's word
    code, err = run(capsys, "validate", "--allow", "nowhere_pkg", "model_specs/")
    assert code == 1 and where in err and "--allow" not in err, err
    code, err = run(capsys, "export", "nowhere_pkg:Scale", "--out", "scale.yaml")
    assert code == 1 and f"cannot import 'nowhere_pkg': {where}" in err, err


def test_an_installed_module_is_never_shadowed_by_the_working_directory(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The working directory comes after ``sys.path``: a file there named like an installed
    module does not replace it (its code never runs)."""
    from fxgen.policy.lookup import import_named

    (project / "colorsys.py").write_text("raise SystemExit('the working directory shadowed colorsys')\n")
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    assert Path(import_named("colorsys").__file__ or "").parent != project
