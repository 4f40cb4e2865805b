"""``imports:``: classes used from other spec files of the project (fxgen.read.imports)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
import torch

import fxgen
from fxgen._errors import SpecError
from fxgen.check.validate import validate_data
from fxgen.cli.main import main
from fxgen.read.imports import read_spec

BLOCKS = """\
fxgen: 2
name: Blocks
classes:
  ConvAct:
    args: {cin: int, cout: int}
    modules:
      conv: {class: torch.nn.Conv2d, args: [{arg: cin}, {arg: cout}, 3], kwargs: {padding: 1}}
      act: {class: torch.nn.ReLU}
    nodes:
      - {op: placeholder, name: x}
      - {op: call_module, name: c, target: conv, args: ["%x"]}
      - {op: call_module, name: y, target: act, args: ["%c"]}
      - {op: output, args: ["%y"]}
  Double:
    args: {c: int}
    modules:
      a: {class: ConvAct, args: [{arg: c}, {arg: c}]}
      b: {class: ConvAct, args: [{arg: c}, {arg: c}]}
    nodes:
      - {op: placeholder, name: x}
      - {op: call_module, name: h, target: a, args: ["%x"]}
      - {op: call_module, name: y, target: b, args: ["%h"]}
      - {op: output, args: ["%y"]}
  Unused:
    nodes: [{op: placeholder, name: x}, {op: output, args: ["%x"]}]
nodes: [{op: placeholder, name: x}, {op: output, args: ["%x"]}]
"""

NET_BODY = """\
modules:
  stem: {class: torch.nn.Conv2d, args: [3, 8, 1]}
  body: {class: Double, args: [8]}
nodes:
  - {op: placeholder, name: x}
  - {op: call_module, name: s, target: stem, args: ["%x"]}
  - {op: call_module, name: y, target: body, args: ["%s"]}
  - {op: output, args: ["%y"]}
"""


def net(imports: str, extra: str = "") -> str:
    return f"fxgen: 2\nname: Net\nimports: {imports}\n{extra}{NET_BODY}"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (pyproject.toml at its root) with common/blocks.yaml; the working directory."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "common").mkdir()
    (tmp_path / "models").mkdir()
    (tmp_path / "common" / "blocks.yaml").write_text(BLOCKS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(project: Path, name: str, text: str) -> Path:
    """``text`` written to ``name`` in the project; its path as a user types it (relative)."""
    (project / name).write_text(textwrap.dedent(text))
    return Path(name)


def errors(path: Path) -> list[str]:
    with pytest.raises(SpecError) as info:
        fxgen.load_spec(path)
    return [str(d) for d in info.value.diagnostics]


def test_imported_classes_join_the_spec_and_the_generated_file_is_standalone(project: Path) -> None:
    spec_path = write(project, "models/net.yaml", net("[{from: ../common/blocks.yaml, classes: [Double]}]"))
    spec = fxgen.load_spec(spec_path)
    assert list(spec.classes) == ["ConvAct", "Double"]  # what Double builds comes along; Unused does not
    source = fxgen.generate(spec_path)
    classes = [n.name for n in ast.parse(source).body if isinstance(n, ast.ClassDef)]
    assert classes == ["ConvAct", "Double", "Net"]
    namespace: dict[str, object] = {}
    exec(compile(source, "net.py", "exec"), namespace)
    torch.manual_seed(0)
    gm = fxgen.load(spec_path)
    model = namespace["Net"]()  # type: ignore[operator]
    model.load_state_dict(gm.state_dict(), strict=True)  # type: ignore[attr-defined]
    x = torch.randn(1, 3, 8, 8)
    assert torch.equal(model(x), gm(x))  # type: ignore[operator]


def test_imports_are_followed_through_files(project: Path) -> None:
    write(project, "common/mid.yaml", """\
        fxgen: 2
        name: Mid
        imports: [{from: blocks.yaml, classes: [Double]}]
        classes:
          Pair:
            modules: {d: {class: Double, args: [8]}}
            nodes: [{op: placeholder, name: x}, {op: call_module, name: y, target: d, args: ["%x"]}, {op: output, args: ["%y"]}]
        nodes: [{op: placeholder, name: x}, {op: output, args: ["%x"]}]
        """)  # fmt: skip
    # Double reached twice (directly and through Pair) is one class, not a clash
    path = write(project, "models/net.yaml", net("[{from: ../common/mid.yaml, classes: [Pair]}, "
                                                 "{from: ../common/blocks.yaml, classes: [Double]}]"))  # fmt: skip
    assert list(fxgen.load_spec(path).classes) == ["ConvAct", "Double", "Pair"]


def test_an_error_in_an_imported_class_is_reported_in_its_own_file(project: Path) -> None:
    write(project, "common/blocks.yaml", BLOCKS.replace("a: {class: ConvAct, args: [{arg: c}, {arg: c}]}",
                                                        "a: {class: ConvAct, args: [{arg: c}, {arg: width}]}"))  # fmt: skip
    path = write(project, "models/net.yaml", net("[{from: ../common/blocks.yaml, classes: [Double]}]"))
    (message,) = errors(path)
    assert message.startswith("common/blocks.yaml:17:") and "'width' is not an argument of block 'Double'" in message


@pytest.mark.parametrize(
    ("imports", "expected"),
    [
        ("[{from: ../common/nope.yaml, classes: [Double]}]", "models/net.yaml:3:18: error: '../common/nope.yaml' does not exist"),
        ("[{from: ../common/blocks.yaml, classes: [Triple]}]", "models/net.yaml:3:51: error: common/blocks.yaml declares no class 'Triple'"),
        ("[{from: 'https://example.org/b.yaml', classes: [Double]}]", "nothing is fetched from the network"),
        ("[{from: /etc/blocks.yaml, classes: [Double]}]", "an import is a relative path"),
        ("[{from: '..\\\\common\\\\blocks.yaml', classes: [Double]}]", "with '/' between folders"),
        ("[{from: ../../outside.yaml, classes: [Double]}]", "is outside the project"),
        ("[{from: ../common/blocks.py, classes: [Double]}]", "an import names a spec file (.yaml, .yml, .json)"),
        ("[{from: net.yaml, classes: [Double]}]", "imports form a cycle (models/net.yaml -> models/net.yaml)"),
        ("[{from: ../common/blocks.yaml}]", "missing key 'classes'"),
    ],
)  # fmt: skip
def test_bad_imports_get_located_errors(project: Path, imports: str, expected: str) -> None:
    (project.parent / "outside.yaml").write_text(BLOCKS)
    (message,) = errors(write(project, "models/net.yaml", net(imports)))
    assert expected in message, message


def test_a_cycle_through_two_files_names_the_chain(project: Path) -> None:
    for this, other in (("a", "b"), ("b", "a")):
        write(project, f"common/{this}.yaml", f"""\
            fxgen: 2
            name: {this.upper()}
            imports: [{{from: {other}.yaml, classes: [{other.upper()}]}}]
            classes: {{{this.upper()}: {{nodes: [{{op: placeholder, name: x}}, {{op: output, args: ["%x"]}}]}}}}
            nodes: [{{op: placeholder, name: x}}, {{op: output, args: ["%x"]}}]
            """)  # fmt: skip
    (message,) = errors(Path("common/a.yaml"))
    assert "imports form a cycle (common/a.yaml -> common/b.yaml -> common/a.yaml)" in message


def test_a_class_declared_here_and_imported_is_a_clash(project: Path) -> None:
    local = 'classes:\n  ConvAct: {nodes: [{op: placeholder, name: x}, {op: output, args: ["%x"]}]}\n'
    (message,) = errors(write(project, "models/net.yaml", net("[{from: ../common/blocks.yaml, classes: [Double]}]", local)))
    assert "class 'ConvAct' (from common/blocks.yaml) is already declared at models/net.yaml:5:3" in message


def test_imports_need_a_file_and_format_2(project: Path) -> None:
    data = {"fxgen": 2, "name": "Net", "imports": [{"from": "blocks.yaml", "classes": ["Double"]}],
            "nodes": [{"op": "placeholder", "name": "x"}, {"op": "output", "args": ["%x"]}]}  # fmt: skip
    with pytest.raises(SpecError, match="not read from a file cannot import"):
        validate_data(data)
    path = write(project, "models/net.yaml", net("[{from: ../common/blocks.yaml, classes: [Double]}]").replace("fxgen: 2", "fxgen: 1"))
    assert any("`imports` needs `fxgen: 2`" in message for message in errors(path))


def test_hostile_import_paths_are_refused_and_never_reach_source(project: Path) -> None:
    for hostile in ['"\\n\\"; import os"', '"x.yaml\\u0000"', '"file:///etc/x.yaml"', '"~/x.yaml"', '"C:/x.yaml"']:
        with pytest.raises(SpecError):
            fxgen.load_spec(write(project, "models/net.yaml", net(f"[{{from: {hostile}, classes: [Double]}}]")))
    write(project, "common/bad.yaml", BLOCKS.replace("ConvAct", "Conv-Act();"))  # a class Double builds
    message = " ".join(errors(write(project, "models/net.yaml", net("[{from: ../common/bad.yaml, classes: [Double]}]"))))
    assert message.startswith("common/bad.yaml:")  # the schema refuses the name, in the file that has it


def test_generate_check_sees_a_change_in_an_imported_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project, "models/net.yaml", net("[{from: ../common/blocks.yaml, classes: [Double]}]"))
    assert main(["generate", "models", "--out-dir", "out", "--jobs", "1"]) == 0
    assert main(["generate", "--check", "models", "--out-dir", "out", "--jobs", "1"]) == 0
    write(project, "common/blocks.yaml", BLOCKS.replace("padding: 1}", "padding: 1, bias: false}"))
    capsys.readouterr()
    assert main(["generate", "--check", "models", "--out-dir", "out", "--jobs", "1"]) == 1
    assert "out/net.py: error: stale" in capsys.readouterr().err
    assert main(["generate", "models", "--out-dir", "out", "--jobs", "1"]) == 0
    assert "bias=False" in (project / "out" / "net.py").read_text()


def test_a_spec_without_imports_reads_as_before(project: Path) -> None:
    path = write(project, "common/blocks.yaml", BLOCKS)
    doc = read_spec(path)
    assert type(doc).__name__ == "Document" and list(doc.data["classes"]) == ["ConvAct", "Double", "Unused"]


def test_every_spec_file_is_read_with_its_imports() -> None:
    """Only read/imports.py reads a spec file without resolving its imports: every other reader
    of spec files goes through read_spec (a new entry point reading files itself would validate
    a spec without the classes it imports)."""
    package = Path(fxgen.__file__).parent
    readers = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                     if "read_document" in p.read_text() and p.parent.name != "read")  # fmt: skip
    assert readers == []


FUNCTION_BLOCKS = """\
fxgen: 2
name: Blocks
functions:
  make_divisible:
    args: {v: float, divisor: 8}
    values: {down: "max(divisor, int(v + divisor / 2) // divisor * divisor)"}
    return: down + divisor if down < 0.9 * v else down
    type: int
  half: {args: {v: int}, return: make_divisible(v / 2), type: int}
  other: {args: {v: int}, return: v + 1, type: int}
classes:
  Wide:
    doc: Calls half(c), make_divisible(...) and other(c) in its docstring only for those two.
    args: {c: int, width: float}
    modules:
      fc: torch.nn.Linear(c, make_divisible(c * width))
      out: torch.nn.Linear(make_divisible(c * width), half(c))
    nodes: [h: fc, o: out]
  Plain:
    modules: {fc: "torch.nn.Linear(4, other(4))"}
    nodes: [o: fc]
modules: {w: "Wide(16, 0.75)", p: Plain()}
nodes: [y: w, z: p]
"""


def test_an_imported_class_brings_the_functions_it_calls(project: Path) -> None:
    write(project, "common/fblocks.yaml", FUNCTION_BLOCKS)
    path = write(project, "models/net.yaml", "fxgen: 2\nname: Net\nimports: [{from: ../common/fblocks.yaml, "
                                             "classes: [Wide]}]\nargs: {width: 1.5}\nmodules: {body: \"Wide(16, width)\"}\n"
                                             "nodes: [y: body]\n")  # fmt: skip
    spec = fxgen.load_spec(path)
    assert list(spec.functions) == ["make_divisible", "half"]  # what Wide calls, directly or through half; not other
    source = fxgen.generate(path)
    tree = ast.parse(source)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == ["make_divisible", "half"]
    namespace: dict[str, object] = {}
    exec(compile(source, "net.py", "exec"), namespace)  # standalone: every function it calls is in it
    gm = fxgen.load(path)
    model = namespace["Net"]()  # type: ignore[operator]
    assert [tuple(t.shape) for t in model.state_dict().values()] == [tuple(t.shape) for t in gm.state_dict().values()]  # type: ignore[attr-defined]
    assert gm.body.out.out_features == 8  # half(16) = make_divisible(8.0)


def test_an_error_in_an_imported_function_names_its_own_file(project: Path) -> None:
    write(project, "common/fblocks.yaml", FUNCTION_BLOCKS.replace("half(c))", "half(c - 16))")
          .replace("make_divisible(v / 2)", "make_divisible(16 / v)"))
    path = write(project, "models/net.yaml", "fxgen: 2\nname: Net\nimports: [{from: ../common/fblocks.yaml, "
                                             "classes: [Wide]}]\nmodules: {body: \"Wide(16, 1.0)\"}\nnodes: [y: body]\n")  # fmt: skip
    (message,) = errors(path)
    assert message.startswith("common/fblocks.yaml:17:"), message  # the call, in the class's file
    assert "half(v=0): its return at common/fblocks.yaml:9:" in message and "divides by zero" in message


def test_an_imported_function_clashing_with_one_declared_here_is_refused(project: Path) -> None:
    write(project, "common/fblocks.yaml", FUNCTION_BLOCKS)
    path = write(project, "models/net.yaml", "fxgen: 2\nname: Net\nimports: [{from: ../common/fblocks.yaml, "
                                             "classes: [Wide]}]\nfunctions: {half: {args: {v: int}, return: v, type: int}}\n"
                                             "modules: {body: \"Wide(16, 1.0)\"}\nnodes: [y: body]\n")  # fmt: skip
    (message,) = errors(path)
    assert "models/net.yaml:3:" in message and "function 'half' (from common/fblocks.yaml, called by class 'Wide') " \
           "is already declared at models/net.yaml:4:" in message  # fmt: skip
