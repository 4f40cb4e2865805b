"""The TorchDynamo capture frontend: what symbolic tracing cannot trace, exported with the same
promises (bench/parity.py: checkpoint parity, every tensor reproduced, the model left as it was)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import dynamo_fixtures as fx
import pytest
import torch

import fxgen
from fxgen._errors import ExportError
from fxgen.cli.export import example_tensors
from fxgen.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from parity import check_parity

IMAGE = torch.randn(1, 3, 6, 6, generator=torch.Generator().manual_seed(1))


def _node_ops(spec: fxgen.Spec) -> list[tuple[str, str | None]]:
    return [(n.op, n.target) for n in spec.nodes]


def test_auto_falls_back_to_dynamo_and_round_trips_exactly(tmp_path: Path) -> None:
    options = {"example_inputs": (IMAGE,)}
    with pytest.warns(UserWarning, match="captured with TorchDynamo"):
        fxgen.export(fx.ShapeLoop().eval(), **options)
    spec = check_parity(fx.ShapeLoop, (IMAGE,), tmp_path, export_options=options)
    assert {path: m.cls for path, m in spec.modules.items()} == {
        "conv": "torch.nn.Conv2d", "bn": "torch.nn.BatchNorm2d", "act": "torch.nn.ReLU", "head": "torch.nn.Linear"}
    placeholders = [n.name for n in spec.nodes if n.op == "placeholder"]
    assert placeholders == ["x"]  # the model's own input, no lifted parameters
    assert [n.target for n in spec.nodes if n.op == "call_module"] == ["conv", "bn", "act", "act", "head"]
    assert spec.buffers["scale"].persistent is False and spec.buffers["offsets"].value == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert "x: float32[1, 3, 6, 6]" in (spec.doc or "") and "checks declare" in (spec.doc or "")
    assert not any(str(n.target).startswith("torch._") for n in spec.nodes)


def test_capture_dynamo_declares_what_tracing_declares_and_computes_the_same(tmp_path: Path) -> None:
    traced = fxgen.export(fx.Traceable().eval())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto traces it: no fallback note
        assert fxgen.export(fx.Traceable().eval(), example_inputs=(IMAGE,)) == traced
    captured = check_parity(fx.Traceable, (IMAGE,), tmp_path, export_options={"capture": "dynamo",
                                                                              "example_inputs": IMAGE})
    assert captured.modules == traced.modules and captured.parameters == traced.parameters
    assert [n for n in _node_ops(captured) if n[0] == "call_module"] == [
        n for n in _node_ops(traced) if n[0] == "call_module"]


def test_output_structure_and_fixed_kwargs(tmp_path: Path) -> None:
    ids = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    mask = torch.ones(2, 4)
    options = {"capture": "dynamo", "example_inputs": {"mask": mask, "ids": ids},
               "example_kwargs": {"scale_by_length": True}}
    spec = check_parity(lambda: fx.DictOut().eval(), (ids, mask), tmp_path, export_options=options)
    assert [n.name for n in spec.nodes if n.op == "placeholder"] == ["ids", "mask"]  # forward's order
    output = spec.nodes[-1].args[0]["dict"]
    assert set(output) == {"hidden", "pair"} and output["pair"]["tuple"][1] == 2
    assert "scale_by_length=True" in (spec.doc or "")
    fixed = fxgen.export(fx.DictOut().eval(), **{**options, "example_kwargs": {"scale_by_length": False}})
    assert len(fixed.nodes) == len(spec.nodes) - 2  # no size read, no division: the kwarg was fixed while capturing


def test_tied_weights_buffers_and_caches_are_left_as_they_were(tmp_path: Path) -> None:
    ids = torch.tensor([[1, 2, 3, 4]])
    model = fx.Tied().train()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.warns(UserWarning, match="tied weights"):
        spec = fxgen.export(model, capture="dynamo", example_inputs=(ids,))
    assert model.cache == {} and model.training
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    assert set(spec.modules) == {"emb", "bn", "out"}  # each declares its own (tied) weight
    assert fxgen.export(model, capture="dynamo", example_inputs=(ids,)) == spec
    check_parity(lambda: fx.Tied().eval(), (ids,), tmp_path, export_options={"capture": "dynamo",
                                                                              "example_inputs": (ids,)})


def test_a_graph_break_is_one_line_naming_the_users_line() -> None:
    with pytest.raises(ExportError) as caught:
        fxgen.export(fx.Branchy(), capture="dynamo", example_inputs=(torch.ones(2, 3),))
    message = str(caught.value)
    assert "\n" not in message and "Data-dependent branching" in message
    assert "if x.sum() > 0:" in message and caught.value.location is not None
    assert caught.value.location.path.endswith("dynamo_fixtures.py")


def test_auto_names_the_missing_example_inputs_and_dynamo_requires_them() -> None:
    with pytest.raises(ExportError, match="pass example_inputs"):
        fxgen.export(fx.ShapeLoop())
    with pytest.raises(ExportError, match="needs example inputs"):
        fxgen.export(fx.Traceable(), capture="dynamo")
    with pytest.raises(ExportError, match="capture='magic'"):
        fxgen.export(fx.Traceable(), capture="magic")
    with pytest.raises(ExportError, match="'y' is not a parameter"):
        fxgen.export(fx.Traceable(), capture="dynamo", example_inputs={"y": IMAGE})
    with pytest.raises(ExportError, match="not a tensor"):
        fxgen.export(fx.Traceable(), capture="dynamo", example_inputs=(3,))


def test_disabled_autocast_is_dropped_with_a_note_and_enabled_autocast_refused(tmp_path: Path) -> None:
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(2))
    with pytest.warns(UserWarning, match="autocast.*enabled=False"):
        spec = fxgen.export(fx.NoAutocast().eval(), example_inputs=(x,))
    assert "autocast" not in spec.to_yaml()
    check_parity(fx.NoAutocast, (x,), tmp_path, export_options={"capture": "dynamo", "example_inputs": (x,)})
    with pytest.raises(ExportError, match=r"_enter_autocast.*no public torch function a spec may name"):
        fxgen.export(fx.Autocast(), capture="dynamo", example_inputs=(x,))


def test_example_input_syntax() -> None:
    tensors = example_tensors(["x=float32[1,3,4,4]", "ids=int64[2,7]", "flag=bool[]"])
    assert tensors["x"].shape == (1, 3, 4, 4) and tensors["ids"].dtype == torch.int64
    assert torch.equal(tensors["ids"], torch.ones(2, 7, dtype=torch.int64)) and tensors["flag"].shape == ()
    assert torch.equal(example_tensors(["x=float32[2]"])["x"], example_tensors(["x=float32[2]"])["x"])
    for bad, message in (("x=float32", "NAME=DTYPE"), ("x=floaty[2]", "not a torch dtype"),
                         ("x=float32[2,a]", "NAME=DTYPE")):  # fmt: skip
        with pytest.raises(ExportError, match=message):
            example_tensors([bad])


def test_cli_exports_with_dynamo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "loop.yaml"
    assert main(["export", "dynamo_fixtures:ShapeLoop", "--example-input", "x=float32[1,3,6,6]",
                 "--out", str(out), "--weights", str(tmp_path / "w.safetensors")]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "captured with TorchDynamo" in err and "Traceback" not in err
    assert fxgen.load_spec(out).modules["conv"].cls == "torch.nn.Conv2d"
    assert main(["export", "dynamo_fixtures:DictOut", "--capture", "dynamo", "--example-input", "ids=int64[2,5]",
                 "--example-input", "mask=float32[2,5]", "--example-kwargs", '{"scale_by_length": false}',
                 "--out", str(tmp_path / "d.yaml")]) == 0  # fmt: skip
    for argv, message in (
        (["--example-input", "x=float32[1,3"], "expected NAME=DTYPE[SHAPE]"),
        (["--example-input", "x=float32[1,3,6,6]", "--example-kwargs", "[1]"], "must be a JSON object"),
        (["--capture", "dynamo"], "needs example inputs"),
        (["--capture", "trace"], "cannot trace the module"),
    ):
        capsys.readouterr()
        assert main(["export", "dynamo_fixtures:ShapeLoop", *argv, "--out", str(tmp_path / "x.yaml")]) == 1
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_node_names_python_keeps_are_renamed() -> None:
    """Dynamo names nodes after the forward's variables; ``_`` and ``match`` are soft keywords."""
    from fxgen.describe.to_spec import avoid_reserved_names

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    first = graph.call_function(torch.relu, (x,), name="_")
    second = graph.call_function(torch.relu, (first,), name="match")
    graph.output(second)
    avoid_reserved_names(graph)
    assert [n.name for n in graph.nodes] == ["x", "__1", "match_1", "output"]


def test_sizes_that_depend_on_data_are_read_with_tensor_size(tmp_path: Path) -> None:
    x = torch.randn(6, 4, generator=torch.Generator().manual_seed(3))
    spec = check_parity(fx.Routed, (x,), tmp_path, export_options={"capture": "dynamo", "example_inputs": (x,)})
    assert ("call_method", "size") in _node_ops(spec)
    assert not any("aten" in str(n.target) or "_assert" in str(n.target) for n in spec.nodes)


def test_a_fold_that_changes_the_outputs_falls_back_to_the_recorded_functions(tmp_path: Path) -> None:
    """Folded into one call_module, the leaf would hand its caller a tuple where Dynamo's graph
    used one of its values: the check against Dynamo's outputs catches it, and export writes
    the functions Dynamo recorded instead."""
    fxgen.register_constructor(fx.Pair, lambda module: ((), {}))
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(4))
    options = {"capture": "dynamo", "example_inputs": (x,), "leaf_modules": (fx.Pair,)}
    with pytest.warns(UserWarning, match="written as the functions TorchDynamo recorded"):
        spec = fxgen.export(fx.UsesOne(), **options)
    assert spec.modules == {} and all(n.op != "call_module" for n in spec.nodes)
    check_parity(fx.UsesOne, (x,), tmp_path, export_options=options)


class _SliceThenLinear(torch.nn.Module):
    """torch.nn.functional.linear on a sliced 3-D input computes a last bit differently when its weight
    requires a gradient (even under torch.no_grad): rtdl's FTTransformer does this in its last block."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x[:, :1])


def test_the_conversion_is_proven_as_dynamo_ran_the_graph(tmp_path: Path) -> None:
    inputs = (torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(0)),)
    check_parity(_SliceThenLinear, inputs, tmp_path, export_options={"capture": "dynamo", "example_inputs": inputs})
