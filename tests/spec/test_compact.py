"""The compact node form (fxgen/spec/compact.py): each compact item desugars to exactly the
canonical nodes it stands for, every later error points into the compact text, and `fxgen
expand` prints the canonical spec, which loads to the same Spec."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import ROOT
from helpers import HANG_WATCHDOG

import fxgen
from fxgen.check.checker import RESERVED_NAMES
from fxgen.check.validate import validate_document
from fxgen.cli.main import main
from fxgen.read.reader import parse_text
from fxgen.spec.compact import desugar, desugared

_HEAD = """\
fxgen: 2
name: Net
modules:
  fc: {class: torch.nn.Linear, args: [4, 4]}
  seq: {class: torch.nn.Sequential, args: [{module: {class: torch.nn.ReLU}}]}
parameters:
  gamma: {shape: [4]}
"""


def _nodes(text: str) -> list[dict[str, Any]]:
    data, _ = desugar(parse_text(_HEAD + text).data, RESERVED_NAMES)
    nodes: list[dict[str, Any]] = data["nodes"]
    return nodes


def test_a_chain_needs_no_placeholder_output_names_or_ops() -> None:
    assert _nodes("nodes: [fc, torch.relu, seq.0, .t, gamma]") == [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "call_module", "name": "fc", "target": "fc", "args": ["%x"]},
        {"op": "call_function", "name": "relu", "target": "torch.relu", "args": ["%fc"]},
        {"op": "call_module", "name": "seq_0", "target": "seq.0", "args": ["%relu"]},
        {"op": "call_method", "target": "t", "args": ["%seq_0"]},  # used by none: unnamed, as written
        {"op": "get_attr", "name": "gamma", "target": "gamma"},
        {"op": "output", "args": ["%gamma"], "type": "torch.Tensor"},
    ]


def test_the_inputs_imply_the_top_levels_placeholders_in_their_order() -> None:
    inputs = "inputs: {idx: {shape: [2]}, mask: {shape: [2]}}\n"
    placeholders = [{"op": "placeholder", "name": name, "type": "torch.Tensor"} for name in ("idx", "mask")]
    # the first step's previous value is the first input
    assert _nodes(inputs + 'nodes: [fc, out: [operator.mul, "%", "%mask"]]')[:3] == [
        *placeholders, {"op": "call_module", "name": "fc", "target": "fc", "args": ["%idx"]}]
    # implied too when no step takes the previous value: the inputs declare them
    assert _nodes(inputs + 'nodes: [out: [operator.add, "%mask", "%idx"]]')[:2] == placeholders
    # a step nobody named is not named as an input
    assert _nodes('inputs: {fc: {shape: [2]}}\nnodes: [fc, torch.relu]')[1]["name"] == "fc_1"


def test_written_placeholders_win_and_without_inputs_the_chains_input_is_x() -> None:
    written = 'nodes: [{op: placeholder, name: mask}, out: [torch.relu, "%"]]'
    assert _nodes("inputs: {idx: {shape: [2]}}\n" + written) == _nodes(written)
    assert _nodes(written)[0] == {"op": "placeholder", "name": "mask"}
    for inputs in ("", "inputs: {}\n", "inputs: {x: {shape: [2]}}\n"):
        assert _nodes(inputs + "nodes: [fc]")[0] == {"op": "placeholder", "name": "x", "type": "torch.Tensor"}
    # a class has no inputs: its chain's input is x
    text = "classes:\n  Block: {modules: {fc: torch.nn.Linear(4, 4)}, nodes: [fc]}\ninputs: {idx: {shape: [2]}}\nnodes: [fc]"
    data, _ = desugar(parse_text(_HEAD + text).data, RESERVED_NAMES)
    assert data["classes"]["Block"]["nodes"][0]["name"] == "x" and data["nodes"][0]["name"] == "idx"


def test_a_chain_that_reads_its_input_by_name_has_it_implied_too() -> None:
    """A body beginning with an `if:` (or a call of "%x") takes no previous value, yet reads `x`:
    its input is implied all the same (it was 'node x is not defined; write %%x')."""
    implied = {"op": "placeholder", "name": "x", "type": "torch.Tensor"}
    first_if = 'nodes: [{if: "True", then: [y: [torch.relu, "%x"]], else: [y: [torch.neg, "%x"]]}]'
    assert _nodes(first_if)[0] == implied
    assert _nodes('nodes: [y: [operator.add, "%x", 1]]')[:2] == [
        implied, {"op": "call_function", "name": "y", "target": "operator.add", "args": ["%x", 1]}]
    # not where a value of the nodes is called x, or the nodes write a placeholder
    assert _nodes('nodes: [x: [torch.zeros, 2], y: [torch.relu, "%x"]]')[0]["name"] == "x"
    assert _nodes('nodes: [x: [torch.zeros, 2], y: [torch.relu, "%x"]]')[0]["op"] == "call_function"
    assert _nodes('nodes: [{op: placeholder, name: a}, y: [torch.relu, "%x"]]')[0] == {"op": "placeholder", "name": "a"}
    block = ("fxgen: 2\nname: Net\nclasses:\n  Block:\n    args: {res: {type: bool, default: true}}\n"
             '    nodes:\n      - {if: res, then: [y: [torch.relu, "%x"]], else: [y: [torch.neg, "%x"]]}\n'
             "modules: {b: {class: Block}}\nnodes: [b]\n")
    gm = fxgen.load(parse_text(block).data)
    assert torch.equal(gm(torch.tensor([-1.0, 2.0])), torch.tensor([0.0, 2.0]))


@pytest.mark.parametrize("json_syntax", [False, True])
def test_an_implied_placeholder_is_located_at_its_inputs_key(json_syntax: bool) -> None:
    text = _HEAD + "inputs:\n  x: {shape: [2, 4]}\n  lambda:\n    shape: [2, 4]\nnodes: [fc]"
    key = "lambda:"
    if json_syntax:
        text, key = json.dumps(parse_text(text).data, indent=1), '"lambda":'
    [(line, column)] = [(i + 1, row.index(key) + 1) for i, row in enumerate(text.splitlines()) if key in row]
    with pytest.raises(fxgen.SpecError) as info:
        validate_document(parse_text(text, json_syntax=json_syntax))
    found = [(d.location.line, d.location.column, d.message) for d in info.value.diagnostics]
    assert found == [(line, column, "node name 'lambda' is a Python keyword; choose another name")]


def test_named_steps_arguments_aliases_and_unpacking() -> None:
    nodes = _nodes('nodes: [h: fc, y: [torch.add, "%", "%x"], z: "%y", "a, b": [.chunk, "%", 2], out: [torch.cat, ["%a", "%b"]]]')
    assert nodes[1:] == [
        {"op": "call_module", "name": "h", "target": "fc", "args": ["%x"]},
        {"op": "call_function", "name": "y", "target": "torch.add", "args": ["%h", "%x"]},
        {"op": "alias", "name": "z", "args": ["%y"]},
        {"op": "call_method", "name": "chunk", "target": "chunk", "args": ["%z", 2]},
        {"op": "call_function", "name": "a", "target": "operator.getitem", "args": ["%chunk", 0]},
        {"op": "call_function", "name": "b", "target": "operator.getitem", "args": ["%chunk", 1]},
        {"op": "call_function", "name": "out", "target": "torch.cat", "args": [["%a", "%b"]]},
        {"op": "output", "args": ["%out"], "type": "torch.Tensor"},
    ]


def test_the_names_a_step_gets_avoid_builtins_reserved_and_written_names() -> None:
    nodes = _nodes("nodes: [getattr, torch.relu, torch.relu, {name: relu_2, target: torch.relu, args: ['%']}, operator.add]")
    assert [n.get("name") for n in nodes] == ["x", "getattr_1", "relu", "relu_1", "relu_2", "add", None]
    assert _nodes("nodes: [fc, operator.__add__]")[2]["name"] == "add"  # as torch.fx's snake case, no dunders
    assert "operator" in RESERVED_NAMES and _nodes("nodes: [torch.F]")[1]["name"] == "f"


def test_nodes_without_op_compose_with_if_for_and_canonical_nodes() -> None:
    text = """\
args: {n: {type: int, default: 2}}
nodes:
  - {op: placeholder, name: inp, type: torch.Tensor}
  - {target: fc, args: ["%"], kwargs: {}}
  - if: n > 1
    then: [y: torch.relu]
    else: [y: torch.sigmoid]
  - {for: i, in: n, nodes: [h: [seq, "%y"]], carry: {y: "%h"}}
  - {op: output, args: ["%y"]}
"""
    nodes = _nodes(text)
    assert nodes[1] == {"op": "call_module", "name": "fc", "target": "fc", "args": ["%inp"], "kwargs": {}}
    assert nodes[2]["then"] == [{"op": "call_function", "name": "y", "target": "torch.relu", "args": ["%fc"]}]
    assert nodes[3]["nodes"] == [{"op": "call_module", "name": "h", "target": "seq", "args": ["%y"]}]
    assert nodes[4] == {"op": "output", "args": ["%y"]}


def test_a_spec_without_compact_items_is_left_as_it_is() -> None:
    doc = parse_text((ROOT / "model_specs" / "resnet_block.yaml").read_text())
    assert desugared(doc, RESERVED_NAMES) is doc


def test_a_group_of_steps_is_its_steps_in_its_place() -> None:
    assert _nodes("nodes: [[fc, torch.relu], [seq]]") == _nodes("nodes: [fc, torch.relu, seq]")


@pytest.mark.parametrize(
    ("nodes", "line", "column", "message"),
    [
        # an error found after desugaring points at the compact item, or at its argument
        ('  - h: fc\n  - y: [torch.add, "%", "%nope"]\n', 10, 25, "node 'nope' is not defined"),
        ("  - h: fc\n  - y: [torch.nosuch, '%']\n", 10, 9, "cannot resolve 'torch.nosuch'"),
        ("  - h: fc\n  - [torch.relu, torch.nosuch]\n", 10, 18, "cannot resolve 'torch.nosuch'"),
        ("  - h: fc\n  - {target: torch.add, args: ['%', '%nope']}\n", 10, 37, "node 'nope' is not defined"),
        ("  - h: fc\n  - {if: true, then: [y: [torch.nosuch, '%']], else: [y: torch.relu]}\n", 10, 27, "cannot resolve 'torch.nosuch'"),
    ],
)
def test_errors_after_desugaring_point_into_the_compact_text(nodes: str, line: int, column: int, message: str) -> None:
    with pytest.raises(fxgen.SpecError) as info:
        validate_document(parse_text(_HEAD + "nodes:\n" + nodes))
    found = [(d.location.line, d.location.column, d.message) for d in info.value.diagnostics]
    assert len(found) == 1 and found[0][:2] == (line, column) and message in found[0][2], found


def test_a_dict_spec_may_be_compact() -> None:
    gm = fxgen.load(parse_text(_HEAD + "nodes: [fc, torch.relu]").data)
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "call_module", "call_function", "output"]


def _is_compact(path: Path) -> bool:
    doc = parse_text(path.read_bytes(), str(path))
    return desugared(doc, RESERVED_NAMES) is not doc


COMPACT_EXAMPLES = [p for p in sorted((ROOT / "model_specs").glob("*.yaml")) if _is_compact(p)]


def test_the_three_families_are_written_compactly() -> None:
    assert {p.name for p in COMPACT_EXAMPLES} >= {"mobilenet_v2.yaml", "yolov8.yaml", "gpt2.yaml"}


@pytest.mark.parametrize("path", COMPACT_EXAMPLES, ids=[p.name for p in COMPACT_EXAMPLES])
def test_expand_prints_the_canonical_spec_which_loads_and_generates_the_same(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = path.name
    assert main(["expand", str(path)]) == 0
    text = capsys.readouterr().out
    assert main(["expand", str(path)]) == 0
    assert capsys.readouterr().out == text, "deterministic"
    canonical = tmp_path / example
    canonical.write_text(text)
    assert fxgen.load_spec(canonical) == fxgen.load_spec(path)
    # the generated file is the same but for its header (which names the spec and hashes its bytes)
    assert fxgen.generate(canonical).split("\n", 3)[3] == fxgen.generate(path).split("\n", 3)[3]
    data = parse_text(text).data
    assert all(isinstance(item, dict) and ("op" in item or "if" in item or "for" in item)
               for body in (data, *data.get("classes", {}).values()) for item in body["nodes"])  # fmt: skip


def test_expand_of_a_bad_compact_spec_is_a_located_error_without_a_traceback(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(_HEAD + "nodes:\n  - h: fc\n  - {a: 1, b: 2}\n")
    result = subprocess.run([sys.executable, "-m", "fxgen", "expand", str(spec)], capture_output=True, text=True,
                            timeout=HANG_WATCHDOG, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"{spec}:10:5: error: ") and "Traceback" not in result.stderr


def _importing(folder: Path, double_nodes: str) -> Path:
    """A project in ``folder``: blocks.yaml declaring the compact class Double(c) with these nodes,
    and net.yaml importing it; returns net.yaml's path."""
    (folder / ".fxgen-root").write_text("")
    (folder / "blocks.yaml").write_text("fxgen: 2\nname: Blocks\nclasses:\n  Double:\n    args: {c: int}\n    modules:\n"
                                        "      fc: {class: torch.nn.Linear, args: [{arg: c}, {arg: c}]}\n"
                                        f"    nodes: {double_nodes}\nnodes: [torch.relu]\n")  # fmt: skip
    net = folder / "net.yaml"
    net.write_text("fxgen: 2\nname: Net\nimports:\n  - {from: blocks.yaml, classes: [Double]}\n"
                   "modules:\n  body: {class: Double, args: [8]}\nnodes: [body]\n")  # fmt: skip
    return net


def test_a_compact_class_imported_from_another_file_is_located_in_that_file(tmp_path: Path) -> None:
    with pytest.raises(fxgen.SpecError) as info:
        fxgen.load_spec(_importing(tmp_path, "[h: fc, y: [torch.nosuch, '%']]"))
    [found] = info.value.diagnostics
    assert (found.location.path, found.location.line, found.location.column) == (str(tmp_path / "blocks.yaml"), 8, 24)
    assert "cannot resolve 'torch.nosuch'" in found.message and "built at" in found.message


def test_expand_keeps_a_specs_imports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    net = _importing(tmp_path, "[h: fc, torch.relu]")
    assert main(["expand", str(net)]) == 0
    canonical = tmp_path / "canonical.yaml"
    canonical.write_text(capsys.readouterr().out)
    assert "imports:" in canonical.read_text() and "\nclasses:" not in canonical.read_text()
    assert fxgen.load_spec(canonical) == fxgen.load_spec(net)


def test_a_body_without_nodes_runs_its_modules_in_the_order_declared() -> None:
    text = """\
fxgen: 2
name: Net
classes:
  ConvNormAct:
    args: {c: int}
    modules:
      "0": torch.nn.Conv2d(c, c, 3, padding=1)
      "1": torch.nn.BatchNorm2d(c)
      "2": torch.nn.ReLU()
modules:
  block: ConvNormAct(4)
  head: torch.nn.Flatten()
"""
    doc = desugared(parse_text(text, "net.yaml"), RESERVED_NAMES)
    assert doc.data["classes"]["ConvNormAct"]["nodes"] == [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "call_module", "name": "_0", "target": "0", "args": ["%x"]},
        {"op": "call_module", "name": "_1", "target": "1", "args": ["%_0"]},
        {"op": "call_module", "name": "_2", "target": "2", "args": ["%_1"]},
        {"op": "output", "args": ["%_2"], "type": "torch.Tensor"},
    ]
    assert [node.get("target") for node in doc.data["nodes"]] == [None, "block", "head", None]
    # each step is located at its module's declaration (the nodes are written nowhere)
    assert doc.locate(("classes", "ConvNormAct", "nodes", 2)).line == 8
    assert doc.locate(("nodes", 2)).line == 12
    module = fxgen.load(parse_text(text).data)
    x = torch.randn(2, 4, 5, 5)
    assert torch.equal(module(x), module.head(module.block(x)))


def test_a_body_with_nodes_or_without_modules_is_not_a_module_chain() -> None:
    assert "nodes" not in desugar({"fxgen": 2, "name": "N", "parameters": {"w": {"shape": [2]}}})[0]
    written = {"fxgen": 2, "name": "N", "modules": {"fc": "torch.nn.Linear(2, 2)"}, "nodes": [{"op": "output", "args": [1]}]}
    assert desugar(written)[0]["nodes"] == written["nodes"]


@pytest.mark.parametrize(
    ("loop", "after"),
    [
        ('{for: i, in: 2, nodes: [h: fc], carry: {x: "%h"}}', "%x"),  # the carried value
        ("{for: i, in: 2, nodes: [h: fc], collect: hs}", "%hs"),  # the list collected
    ],
)
def test_the_previous_value_after_a_repeat_is_the_one_value_it_leaves(loop: str, after: str) -> None:
    nodes = _nodes(f"nodes: [x: fc, {loop}, y: [torch.add, '%', 1]]")
    assert nodes[-2] == {"op": "call_function", "name": "y", "target": "torch.add", "args": [after, 1]}
    assert nodes[-1] == {"op": "output", "args": ["%y"], "type": "torch.Tensor"}
    ending = _nodes(f"nodes: [x: fc, {loop}]")  # the last value is returned
    kind = "list[torch.Tensor]" if "collect" in loop else "torch.Tensor"
    assert ending[-1] == {"op": "output", "args": [after], "type": kind}


def test_after_a_repeat_carrying_two_values_there_is_no_previous_one() -> None:
    with pytest.raises(fxgen.SpecError, match="previous"):
        validate_document(parse_text(_HEAD + 'nodes: [x: fc, y: fc, {for: i, in: 2, nodes: [h: fc], carry: {x: "%h", y: "%h"}}, fc]'))


@pytest.mark.parametrize("written", [True, False])
def test_an_implied_output_returns_what_the_block_it_calls_returns(written: bool) -> None:
    """Detect returns a list (written, or implied by the list its repeat collects): a chain whose
    last step is a Detect, directly or as an item of a Sequential, returns a list too."""
    detect = ('[{op: placeholder, name: x, type: "list[torch.Tensor]"}, {for: i, in: 2, nodes: [p: [operator.getitem, '
              '"%x", {arg: i}], out: ["heads.{i}", "%p"]], collect: outs}]')  # fmt: skip
    if written:
        detect = detect[:-1] + ', {op: output, args: ["%outs"], type: "list[torch.Tensor]"}]'
    text = f"""\
fxgen: 2
name: Net
classes:
  Top:
    modules: {{stem: torch.nn.Identity(), head: Detect()}}
    nodes: [y: stem, out: [head, ["%y", "%y"]]]
  Detect:
    modules: {{heads: {{repeat: 2, module: torch.nn.ReLU()}}}}
    nodes: {detect}
modules:
  model: [torch.nn.Identity(), Top()]
nodes: [model.1]
"""
    doc = desugared(parse_text(text, "net.yaml"), RESERVED_NAMES)
    assert doc.data["classes"]["Top"]["nodes"][-1]["type"] == "list[torch.Tensor]"
    assert doc.data["nodes"][-1] == {"op": "output", "args": ["%model_1"], "type": "list[torch.Tensor]"}
    assert list(doc.data["classes"]) == ["Top", "Detect"]  # written order kept


def test_blocks_are_desugared_callees_first_and_items_of_containers_have_their_class() -> None:
    from fxgen.spec.returns import callees_first, class_at

    classes = {"Top": {"modules": {"a": {"class": "Mid"}}}, "Mid": {"modules": {"b": {"class": "torch.nn.Sequential",
               "args": [{"module": {"class": "Leaf"}}]}}}, "Leaf": {"nodes": []}, "Loop": {"modules": {"x": {"class": "Loop"}}}}  # fmt: skip
    assert callees_first(classes) == ["Leaf", "Mid", "Top", "Loop"]
    modules = {"seq": {"class": "torch.nn.Sequential", "args": [{"module": {"class": "A"}}, {"module": {"class": "B"}}]},
               "rep": {"class": "torch.nn.ModuleList", "args": [[{"repeat": 2, "module": {"class": "C"}}]]},
               "x.y": {"class": "D"}}  # fmt: skip
    assert [class_at(modules, t) for t in ("seq.1", "seq", "rep.0", "x.y", "x.y.0", "nope")] == ["B", "torch.nn.Sequential", None, "D", None, None]


def test_a_module_chain_is_its_module_names_and_refuses_what_cannot_run() -> None:
    from fxgen.spec.chains import module_chain

    problems: list[Any] = []
    assert module_chain({"modules": {"a": {"class": "X"}, "0": {"class": "Y"}}}, (), problems) == ["a", "0"]
    assert module_chain({"modules": {"a": {"class": "X"}}, "nodes": []}, (), problems) == [] and not problems
    assert module_chain({"modules": {"a": {"class": "torch.nn.ModuleDict"}}}, ("classes", "C"), problems) == []
    assert problems[0][0] == ("classes", "C", "modules", "a") and "cannot be called" in problems[0][1]
