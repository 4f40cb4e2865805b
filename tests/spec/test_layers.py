"""The layer table (fxgen/spec/layers.py): `layers: {model: [[FROM, MODULE], ...]}` desugars to
exactly a Sequential and the compact nodes that route it, every later error points at its row,
and a spec without one is left as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT
from helpers import diagnostics

import fxgen
from fxgen.check.checker import RESERVED_NAMES
from fxgen.check.validate import validate_document
from fxgen.cli.main import main
from fxgen.read.reader import parse_text
from fxgen.spec.compact import desugared, fx_name
from fxgen.spec.layers import FROM_ALLOWED, desugar_layers

_HEAD = """\
fxgen: 2
name: Net
args: {c: 8}
classes:
  Cat:
    args: {d: 1}
    nodes: [{op: placeholder, name: x, type: "list[torch.Tensor]"}, out: [torch.cat, "%", {arg: d}]]
modules:
  head: torch.nn.Identity()
"""

_LAYERS = _HEAD + """\
layers:
  model:
    - [-1, "torch.nn.Conv2d(3, c, 3, padding=1)"]     # 0
    - [-1, torch.nn.ReLU()]                           # 1
    - [[-1, 0], "Cat(1)"]                             # 2
    - [-2, {class: torch.nn.Conv2d, args: [{arg: c}, {arg: 2 * c}, 1]}]
    - [[2, -1], "Cat(1)"]                             # 4
inputs: {x: {shape: [1, 3, 8, 8]}}
"""

_CANONICAL = _HEAD + """\
  model:
    class: torch.nn.Sequential
    args:
      - {module: "torch.nn.Conv2d(3, c, 3, padding=1)"}
      - {module: torch.nn.ReLU()}
      - {module: "Cat(1)"}
      - {module: {class: torch.nn.Conv2d, args: [{arg: c}, {arg: 2 * c}, 1]}}
      - {module: "Cat(1)"}
nodes:
  - [model_0: [model.0, "%"], model_1: [model.1, "%model_0"], model_2: [model.2, ["%model_1", "%model_0"]]]
  - [model_3: [model.3, "%model_1"], model_4: [model.4, ["%model_2", "%model_3"]]]
inputs: {x: {shape: [1, 3, 8, 8]}}
"""


def _name(path: str) -> str:
    return fx_name("call_module", path)


def _spec(text: str) -> fxgen.Spec:
    return validate_document(parse_text(text))


def test_a_layer_table_is_exactly_its_sequential_and_its_routing_nodes() -> None:
    assert _spec(_LAYERS) == _spec(_CANONICAL)
    assert fxgen.generate(_spec(_LAYERS)).split("\n", 3)[3] == fxgen.generate(_spec(_CANONICAL)).split("\n", 3)[3]
    data, sources, problems = desugar_layers(parse_text(_LAYERS).data, _name)
    assert not problems and sources
    assert "layers" not in data and list(data["modules"]) == ["head", "model"]  # after the body's own modules
    assert data["nodes"] == [
        {"model_0": ["model.0", "%"]},
        {"model_1": ["model.1", "%model_0"]},
        {"model_2": ["model.2", ["%model_1", "%model_0"]]},
        {"model_3": ["model.3", "%model_1"]},
        {"model_4": ["model.4", ["%model_2", "%model_3"]]},
    ]


def test_the_rows_come_before_the_bodys_own_nodes_and_after_its_placeholders() -> None:
    text = """\
fxgen: 2
name: Net
classes:
  Two:
    layers:
      body:
        - [-1, torch.nn.ReLU()]
        - [[0, -1], "torch.nn.Identity()"]
    nodes:
      - {op: placeholder, name: a, type: torch.Tensor}
      - {op: placeholder, name: b, type: torch.Tensor}
      - {op: output, args: ["%body_1"], type: "list[torch.Tensor]"}
modules:
  two: Two()
nodes:
  - {op: placeholder, name: x, type: torch.Tensor}
  - {op: call_module, name: out, target: two, args: ["%x", "%x"]}
  - {op: output, args: ["%out"], type: "list[torch.Tensor]"}
"""
    nodes = _spec(text).classes["Two"].nodes
    assert [(n.op, n.name, n.args) for n in nodes] == [
        ("placeholder", "a", []),
        ("placeholder", "b", []),
        ("call_module", "body_0", ["%b"]),  # row 0's -1: the previous value, the last placeholder
        ("call_module", "body_1", [["%body_0", "%body_0"]]),
        ("output", None, ["%body_1"]),
    ]


def test_a_spec_without_a_layer_table_is_left_as_it_is() -> None:
    for path in sorted((ROOT / "model_specs").glob("*.yaml")):
        data = parse_text(path.read_bytes()).data
        if "layers" not in data and not any("layers" in body for body in data.get("classes", {}).values()):
            assert desugar_layers(data, _name) == (data, None, []), path.name


@pytest.mark.parametrize(
    ("old", "new", "line", "column", "message"),
    [
        ("[-1, torch.nn.ReLU()]", "[2, torch.nn.ReLU()]", 13, 8, "row 1 takes row 2's value, which is not computed yet"),
        ("[-1, torch.nn.ReLU()]", "[1, torch.nn.ReLU()]", 13, 8, "row 1 takes row 1's value"),
        ("[[-1, 0], ", "[[-1, -3], ", 14, 13, "row 2 takes the value 3 rows back, before row 0"),
        ("[-1, \"torch.nn.Conv2d", "[-2, \"torch.nn.Conv2d", 12, 8, "row 0 takes the value 2 rows back"),
        ("[-1, torch.nn.ReLU()]", "[true, torch.nn.ReLU()]", 13, 8, "True is no FROM of row 1"),
        ("[-1, torch.nn.ReLU()]", "[1.0, torch.nn.ReLU()]", 13, 8, "1.0 is no FROM of row 1"),
        ("[[-1, 0], ", "[[], ", 14, 8, "[] is no FROM of row 2"),
        ("[[-1, 0], ", "[[-1, [0]], ", 14, 8, "is no FROM of row 2"),
        ("[-1, torch.nn.ReLU()]", "[-1]", 13, 7, "row 1 of 'model' is not [FROM, MODULE]"),
        ("[-1, torch.nn.ReLU()]", "[-1, 3]", 13, 7, "row 1 of 'model' is not [FROM, MODULE]"),
        ("  model:\n", "  head:\n", 11, 3, "which `modules:` declares too"),
        # errors found after desugaring point at the row's text
        ("torch.nn.ReLU()]", "torch.nn.Nope()]", 13, 12, "cannot resolve 'torch.nn.Nope'"),
        ("Conv2d(3, c, 3, padding=1)", "Conv2d(3, c, 3, padding=nope)", 12, 12, "'nope'"),
        ("Conv2d(3, c, 3, padding=1)", "Conv2d(3, c, 3,, 1)", 12, 12, "missing between two commas"),
        ("args: [{arg: c}, {arg: 2 * c}, 1]", "args: [{arg: c}, {arg: 2 * d}, 1]", 15, 60, "'d'"),
    ],
)
def test_errors_point_at_the_row(old: str, new: str, line: int, column: int, message: str) -> None:
    assert old in _LAYERS
    found = diagnostics(_LAYERS.replace(old, new))  # not one more for each node calling a refused Sequential's items
    assert len(found) == 1 and found[0][:2] == (line, column) and message in found[0][2], found


@pytest.mark.parametrize("table", ["layers: []", "layers: {}", "layers: {a: [[-1, torch.nn.ReLU()]], b: [[-1, torch.nn.ReLU()]]}"])
def test_a_table_is_one_container_and_its_rows(table: str) -> None:
    with pytest.raises(fxgen.SpecError) as info:
        desugared(parse_text(f"fxgen: 2\nname: Net\n{table}\n"), RESERVED_NAMES)
    [diagnostic] = info.value.diagnostics
    assert diagnostic.location.line == 3 and "maps one container name to its rows" in diagnostic.message


def test_a_bad_from_says_what_is_allowed_and_the_other_problems_are_reported_with_it() -> None:
    text = _LAYERS.replace("[-1, torch.nn.ReLU()]", "[5, torch.nn.ReLU()]").replace("padding=1", "padding=1,,")
    with pytest.raises(fxgen.SpecError) as info:
        desugared(parse_text(text), RESERVED_NAMES)
    found = [(d.location.line, d.message) for d in info.value.diagnostics]
    assert [line for line, _ in found] == [12, 13] and FROM_ALLOWED in found[1][1], found


def test_the_bodys_nodes_name_the_rows_values(tmp_path: Path) -> None:
    spec = tmp_path / "net.yaml"
    spec.write_text( _LAYERS.replace("inputs:", 'nodes: [{op: output, args: [["%model_4", "%model_1"]], type: "list[torch.Tensor]"}]\ninputs:'))
    import torch

    outputs = fxgen.load(spec)(torch.zeros(1, 3, 8, 8))
    assert isinstance(outputs, list) and [tuple(o.shape) for o in outputs] == [(1, 32, 8, 8), (1, 8, 8, 8)]


def test_expand_prints_the_canonical_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "net.yaml"
    spec.write_text(_LAYERS)
    assert main(["expand", str(spec)]) == 0
    canonical = tmp_path / "canonical.yaml"
    canonical.write_text(capsys.readouterr().out)
    data = parse_text(canonical.read_bytes()).data
    assert "layers" not in data and data["modules"]["model"]["class"] == "torch.nn.Sequential"
    assert fxgen.load_spec(canonical) == fxgen.load_spec(spec)


def test_a_class_imported_from_a_file_brings_the_classes_its_rows_build(tmp_path: Path) -> None:
    (tmp_path / ".fxgen-root").write_text("")
    (tmp_path / "blocks.yaml").write_text(
        "fxgen: 2\nname: Blocks\nclasses:\n"
        "  Leaf:\n    args: {c: int}\n    modules: {fc: 'torch.nn.Linear(c, c)'}\n    nodes: [fc]\n"
        "  Outer:\n    args: {c: int}\n"
        "    layers:\n      body: [[-1, 'Leaf(c)'], [-1, torch.nn.ReLU()]]\n"
        "nodes: [torch.relu]\n"
    )  # fmt: skip
    net = tmp_path / "net.yaml"
    net.write_text("fxgen: 2\nname: Net\nimports:\n  - {from: blocks.yaml, classes: [Outer]}\n"
                   "modules:\n  body: Outer(8)\nnodes: [body]\n")  # fmt: skip
    spec = fxgen.load_spec(net)
    assert list(spec.classes) == ["Leaf", "Outer"]
    assert [n.target for n in spec.classes["Outer"].nodes if n.op == "call_module"] == ["body.0", "body.1"]
