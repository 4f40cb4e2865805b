"""Shape propagation from declared inputs: what it reports is what a real run produces.

Every example is run for real (``fxgen.load``, an ``Interpreter`` recording each node's value)
and propagated on the meta device from its declared inputs; each node's shape and dtype, and
each node's FLOPs as ``FlopCounterMode`` counts them on the real run, must agree.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.fx
from conftest import marked_examples
from torch.utils.flop_counter import FlopCounterMode

import fxgen
from fxgen._errors import SpecError
from fxgen.analysis.shapes import _value_text, analyse, stand_in_sizes
from fxgen.assemble.modes import ModeGraphModule
from fxgen.check.validate import validate_data
from fxgen.policy.policy import DEFAULT_POLICY
from fxgen.spec.model import InputSpec
from fxgen.spec.values import dtype_name
from tests.helpers import example_graph, example_inputs


class _Recorder(torch.fx.Interpreter):
    """Runs the graph for real, keeping each node's value and FLOPs."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__(gm)
        self.values: dict[str, Any] = {}
        self.flops: dict[str, int] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        with FlopCounterMode(display=False) as counter:
            result = super().run_node(n)
        self.values[n.name] = result
        self.flops[n.name] = counter.get_total_flops()
        return result


@pytest.mark.parametrize("example", marked_examples())  # the large examples: CI's second step
def test_every_example_propagates_what_a_real_run_computes(example: Path) -> None:
    spec = example_graph(example)
    inputs = example_inputs(example)
    spec.inputs = {name: InputSpec(list(t.shape), dtype_name(t.dtype)) for name, t in inputs.items()}
    analysis = analyse(spec, DEFAULT_POLICY)
    torch.manual_seed(0)
    model = fxgen.load(example)
    if isinstance(model, ModeGraphModule):
        model.eval()  # the mode example_graph resolves (no fast paths elsewhere: nn.TransformerEncoder's in eval mode)
    recorder = _Recorder(model)
    with torch.no_grad():
        recorder.run(*inputs.values())
    assert [n.name for n in analysis.nodes] == list(recorder.values)
    for info in analysis.nodes:
        assert info.value == _value_text(recorder.values[info.name], {}), info.name
        if not _attends(spec, info.target):
            assert info.flops == recorder.flops[info.name], info.name
    assert analysis.flops == sum(n.flops for n in analysis.nodes)
    gm = fxgen.load(example)
    assert analysis.total_parameters == sum(p.numel() for p in gm.parameters())


def _attends(spec: fxgen.Spec, target: str) -> bool:
    """Attention's FLOPs differ between a real CPU run and propagation: on the CPU, torch runs
    its flash-attention kernel, which torch.utils.flop_counter has no formula for (it counts 0),
    while FakeTensors take the kernel it does count. Those nodes are compared on shapes only."""
    cls = spec.modules[target].cls if target in spec.modules else ""
    return "scaled_dot_product_attention" in target or cls.endswith(("MultiheadAttention", "TransformerEncoder"))


SMALL = textwrap.dedent("""\
    fxgen: 1
    name: Small
    modules:
      conv: {class: torch.nn.Conv2d, args: [3, 8, 3]}
      fc: {class: torch.nn.Linear, args: [8, 4]}
    nodes:
      - {op: placeholder, name: x}
      - {op: call_module, name: c, target: conv, args: ["%x"]}
      - {op: call_method, name: m, target: mean, args: ["%c", {tuple: [2, 3]}]}
      - {op: call_module, name: y, target: fc, args: ["%m"]}
      - {op: call_method, name: flat, target: reshape, args: ["%y", -1]}
      - {op: output, args: ["%flat"]}
    inputs:
      x: {shape: [batch, 3, 16, 16]}
    """)


def _spec(tmp_path: Path, text: str) -> fxgen.Spec:
    path = tmp_path / "small.yaml"
    path.write_text(text)
    return fxgen.load_spec(path)


def test_named_dimensions_stay_symbolic(tmp_path: Path) -> None:
    analysis = analyse(_spec(tmp_path, SMALL), DEFAULT_POLICY)
    values = {n.name: n.value for n in analysis.nodes}
    assert values == {"x": "float32[batch, 3, 16, 16]", "c": "float32[batch, 8, 14, 14]",
                      "m": "float32[batch, 8]", "y": "float32[batch, 4]", "flat": "float32[4*batch]",
                      "output": "float32[4*batch]"}  # fmt: skip
    # conv: 2 * (3*3*3) * 8 * 14 * 14 per sample; linear: 2 * 8 * 4 per sample
    assert {n.name: n.flops for n in analysis.nodes if n.flops} == {"c": f"{2 * 27 * 8 * 14 * 14}*batch",
                                                                    "y": "64*batch"}  # fmt: skip
    assert analysis.flops == f"{2 * 27 * 8 * 14 * 14 + 64}*batch"
    assert analysis.parameters == {"conv": 3 * 8 * 9 + 8, "fc": 8 * 4 + 4}


def test_a_huge_input_allocates_nothing(tmp_path: Path) -> None:
    """10**12 floats (4 TB) propagate: nothing of the input's size is ever allocated."""
    text = SMALL.replace("[batch, 3, 16, 16]", "[1000, 3, 1000, 1000000]")
    analysis = analyse(_spec(tmp_path, text), DEFAULT_POLICY)
    assert analysis.nodes[1].value == "float32[1000, 8, 998, 999998]"


def test_inputs_that_do_not_flow_are_a_located_error(tmp_path: Path) -> None:
    text = SMALL.replace("args: [8, 4]", "args: [10, 4]")
    with pytest.raises(SpecError) as caught:
        analyse(_spec(tmp_path, text), DEFAULT_POLICY)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'small.yaml'}:10:5: error: the declared inputs do not flow through node 'y'")
    assert "module 'fc' (torch.nn.Linear(10, 4))" in message
    assert "(m: float32[batch, 8])" in message and "[batch, 8] X [10, 4]" in message


def test_the_cli_validate_and_show_report_a_flow_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fxgen.cli.main import main

    path = tmp_path / "small.yaml"
    path.write_text(SMALL.replace("args: [8, 4]", "args: [10, 4]"))
    for argv in (["validate", str(path)], ["show", str(path)]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert f"{path}:10:5: error: the declared inputs do not flow through node 'y'" in err
        assert "Traceback" not in err and "E1" not in err  # nor torch's logging


BLOCKS = textwrap.dedent("""\
    fxgen: 2
    name: Net
    classes:
      MLP:
        args: {dim: int, hidden: int}
        modules:
          fc1: {class: torch.nn.Linear, args: [{arg: dim}, {arg: hidden}]}
          fc2: {class: torch.nn.Linear, args: [{arg: dim}, {arg: dim}]}
        nodes:
          - fc1
          - {if: hidden > 0, then: [a: torch.relu], else: [a: torch.tanh]}
          - fc2
      Heads:
        args: {dim: int, heads: int}
        modules:
          qkv: {class: torch.nn.Linear, args: [{arg: dim}, {arg: dim}]}
          mlp: {class: MLP, args: [{arg: dim}, {arg: dim}]}
        nodes:
          - {op: placeholder, name: x}
          - "B, T, C": [.size, "%x"]
          - q: [qkv, "%x"]
          - m: [mlp, "%q"]
          - h: [.view, "%", "%B", "%T", {arg: heads}, {arg: dim // heads}]
          - {op: output, args: ["%h"]}
    modules:
      mlp: {class: MLP, args: [8, 8]}
      heads: {class: Heads, kwargs: {dim: 8, heads: 2}}
    inputs:
      x: {shape: [batch, seq, 8]}
    nodes:
      - mlp
      - heads
    """)


@pytest.mark.parametrize("check", ["validate", "show"])
def test_a_flow_error_inside_a_block_is_reported_at_the_block_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], check: str
) -> None:
    """Issue 32: a block instance that the inputs do not flow through is reported at the node of the
    class's own declaration that fails (its module shown with the instance's values), with the
    instance's argument values and the line that builds it; at any depth, innermost first."""
    from fxgen.cli.main import main

    path = tmp_path / "net.yaml"
    path.write_text(BLOCKS)
    assert main([check, str(path)]) == 0
    capsys.readouterr()

    def first_error(text: str) -> str:
        path.write_text(text)
        assert main([check, str(path)]) == 1
        return capsys.readouterr().err.splitlines()[0]

    err = first_error(BLOCKS.replace("args: [8, 8]", "args: [8, 16]"))  # a wrong Linear width in an MLP
    assert err == (f"{path}:12:9: error: the declared inputs do not flow through node 'fc2', module 'fc2' "
                   "(torch.nn.Linear(8, 8)): it was given (a: float32[batch, seq, 16]), and torch says: a and b "
                   "must have same reduction dim, but got [batch*seq, 16] X [8, 8]; fix the declaration or `inputs:` "
                   f"(in MLP(dim=8, hidden=16), built at {path}:26:8)")  # fmt: skip
    err = first_error(BLOCKS.replace("heads: 2}", "heads: 3}"))  # heads that do not divide the width
    assert err.startswith(f"{path}:23:9: error: the declared inputs do not flow through node 'h', view: it was "
                          "given (m: float32[batch, seq, 8], B: int, T: int), and torch says: shape '[batch, seq, 3, 2]'")
    assert err.endswith(f"(in Heads(dim=8, heads=3), built at {path}:27:10)")
    err = first_error(BLOCKS.replace("MLP, args: [{arg: dim}, {arg: dim}]", "MLP, args: [{arg: dim}, {arg: dim * 2}]"))
    assert err.startswith(f"{path}:12:9: error: the declared inputs do not flow through node 'fc2'")  # one block deeper
    assert err.endswith(f"(in MLP(dim=8, hidden=16), built at {path}:17:12; in Heads(dim=8, heads=2), built at "
                        f"{path}:27:10)")  # fmt: skip


def test_show_prints_shapes_and_flops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from fxgen.cli.main import main

    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "float32[batch, 8, 14, 14]" in out and "total FLOPs: 84736*batch" in out
    assert "symbolic dimensions: batch (propagated as 17)" in out
    assert main(["show", "--format", "json", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["flops"] == "84736*batch" and data["total_parameters"] == 260
    assert data["nodes"][1]["value"] == "float32[batch, 8, 14, 14]" and data["nodes"][1]["module"] == "conv"


def test_a_placeholder_with_a_default_needs_no_example() -> None:
    spec = validate_data({"fxgen": 1, "name": "M", "nodes": [
        {"op": "placeholder", "name": "x"}, {"op": "placeholder", "name": "scale", "default": 2.0},
        {"op": "call_function", "name": "y", "target": "operator.mul", "args": ["%x", "%scale"]},
        {"op": "output", "args": ["%y"]}], "inputs": {"x": {"shape": [3], "dtype": "float64"}}})  # fmt: skip
    assert [n.value for n in analyse(spec, DEFAULT_POLICY).nodes] == ["float64[3]", "float", "float64[3]", "float64[3]"]


def test_two_named_dimensions_stay_apart(tmp_path: Path) -> None:
    """Two names never become one symbol (no duck sizing), and torch's words use the names."""
    data = {"fxgen": 1, "name": "M", "nodes": [
        {"op": "placeholder", "name": "a"}, {"op": "placeholder", "name": "b"},
        {"op": "call_function", "name": "p", "target": "torch.matmul", "args": ["%a", "%b"]},
        {"op": "output", "args": ["%p"]}],
        "inputs": {"a": {"shape": ["batch", "seq", 8]}, "b": {"shape": [8, "width"]}}}  # fmt: skip
    result = analyse(validate_data(data), DEFAULT_POLICY)
    assert result.nodes[2].value == "float32[batch, seq, width]"
    assert result.flops == "16*batch*seq*width"
    assert result.dims == {"batch": 17, "seq": 19, "width": 23}
    data["inputs"]["b"]["shape"] = [9, "width"]
    with pytest.raises(SpecError, match=r"it was given \(a: float32\[batch, seq, 8\], b: float32\[9, width\]\)"):
        analyse(validate_data(data), DEFAULT_POLICY)


def test_a_flow_error_after_passes_is_located_in_the_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The transformed spec is not a file: its failing node is reported where the spec declares
    a node of that name (a node a pass made would be reported at the spec's `passes:`)."""
    from fxgen.cli.main import main

    path = tmp_path / "small.yaml"
    path.write_text(SMALL.replace("args: [8, 4]", "args: [10, 4]") + "passes: [{decompose: {rules: [relu]}}]\n")
    assert main(["validate", str(path)]) == 1
    assert capsys.readouterr().err.startswith(f"{path}:10:5: error: the declared inputs do not flow through node 'y'")


def test_a_named_dimension_never_takes_a_size_the_spec_writes() -> None:
    """torch guards a symbol on its hint and goes on: were ``width`` propagated as 19, a
    ``Linear(19, 4)`` would pass for every width. Hints skip every integer the spec writes."""
    data = {"fxgen": 1, "name": "M", "modules": {"fc": {"class": "torch.nn.Linear", "args": [19, 4]}},
            "nodes": [{"op": "placeholder", "name": "x"}, {"op": "call_module", "name": "y", "target": "fc",
                                                            "args": ["%x"]}, {"op": "output", "args": ["%y"]}],
            "inputs": {"x": {"shape": ["batch", "width"]}}}  # fmt: skip
    with pytest.raises(SpecError, match=r"it was given \(x: float32\[batch, width\]\)"):
        analyse(validate_data(data), DEFAULT_POLICY)
    spec = validate_data(data)
    assert stand_in_sizes(spec) == {"batch": 17, "width": 23}
    spec.inputs["x"].shape = ["batch", 19]
    assert analyse(spec, DEFAULT_POLICY).nodes[2].value == "float32[batch, 4]"


def test_the_flow_check_passes_every_example_without_symbols(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``fxgen validate``'s check: named dimensions at their sizes, no ShapeEnv made."""
    from fxgen.analysis import shapes

    def no_symbols() -> None:
        raise AssertionError("the flow check made a ShapeEnv")

    monkeypatch.setattr(shapes, "_shape_env", no_symbols)
    shapes.check_flow(example_graph(example), DEFAULT_POLICY)


_TWO_DIMS = {"fxgen": 1, "name": "M", "nodes": [
    {"op": "placeholder", "name": "a"}, {"op": "placeholder", "name": "b"},
    {"op": "call_function", "name": "p", "target": "torch.add", "args": ["%a", "%b"]},
    {"op": "output", "args": ["%p"]}],
    "inputs": {"a": {"shape": ["batch", 8]}, "b": {"shape": ["seq", 8]}}}  # fmt: skip
_LITERAL = {"fxgen": 1, "name": "M", "modules": {"fc": {"class": "torch.nn.Linear", "args": [19, 4]}},
            "nodes": [{"op": "placeholder", "name": "x"}, {"op": "call_module", "name": "y", "target": "fc",
                                                            "args": ["%x"]}, {"op": "output", "args": ["%y"]}],
            "inputs": {"x": {"shape": ["batch", "width"]}}}  # fmt: skip


@pytest.mark.parametrize("case", ["module", "two_names", "literal"])
def test_the_flow_check_reports_what_the_analysis_reports(tmp_path: Path, case: str) -> None:
    """Every failure: the same located error, dimensions named as the spec names them."""
    from fxgen.analysis.shapes import check_flow

    if case == "module":
        spec = _spec(tmp_path, SMALL.replace("args: [8, 4]", "args: [10, 4]"))
    else:
        spec = validate_data(_TWO_DIMS if case == "two_names" else _LITERAL)
    with pytest.raises(SpecError) as analysed:
        analyse(spec, DEFAULT_POLICY)
    with pytest.raises(SpecError) as checked:
        check_flow(spec, DEFAULT_POLICY)
    assert str(checked.value) == str(analysed.value)
    assert "batch" in str(checked.value)


def test_a_flow_failure_stands_where_the_analysis_would_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis only names the failure; were it to pass, the failure at the sizes is reported."""
    from fxgen.analysis import shapes

    monkeypatch.setattr(shapes, "analyse", lambda *args, **kwargs: None)
    with pytest.raises(SpecError, match=r"node 'p'.*a: float32\[17, 8\], b: float32\[19, 8\]"):
        shapes.check_flow(validate_data(_TWO_DIMS), DEFAULT_POLICY)
