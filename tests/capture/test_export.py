"""Export: module -> spec (+ weights), and the three round trips of issue 4."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from export_fixtures import (
    Branchy,
    DataDependent,
    Everything,
    OptionalInputs,
    Swish,
    TiedLM,
    UsesTriple,
    WithLeaf,
    make_with_leaf,
    triple,
)
from helpers import HANG_WATCHDOG, assert_same, import_source
from hypothesis import given
from safetensors.torch import load_file
from strategies import inputs_for, spec_dicts

import fxgen
from fxgen.check.validate import as_spec, validate_document
from fxgen.policy.policy import policy_for
from fxgen.read.reader import parse_text
from fxgen.spec.model import IfNodes, walk_nodes

ROOT = Path(__file__).resolve().parents[2]
ALLOW = ["export_fixtures"]


@pytest.fixture(autouse=True)
def _register_swish() -> None:
    fxgen.register_constructor(Swish, lambda m: ((), {"beta": m.beta}))


# -- round trip 1: spec -> load -> export -> the same spec ------------------------------------
def test_examples_round_trip_through_export(example: Path) -> None:
    spec = fxgen.load_spec(example)
    assert fxgen.export(fxgen.load(spec)) == spec


@given(spec_dicts())
def test_random_graphs_round_trip_through_export(data: dict) -> None:
    spec = as_spec(data, policy_for(None))
    assert fxgen.export(fxgen.load(spec)) == spec


# -- round trip 2: module -> spec -> source -> module, outputs allclose -----------------------
def _round_trip(module: torch.nn.Module, inputs: tuple, tmp_path: Path, **options: object) -> fxgen.Spec:
    module.eval()
    spec = fxgen.export(module, **options)
    weights = tmp_path / "w.safetensors"
    fxgen.save_weights(module, weights, **options)
    # round trip 3 on the way: YAML text -> load_spec gives an equal spec
    text = spec.to_yaml()
    reloaded = validate_document(parse_text(text, "exported.yaml"), policy_for(ALLOW))
    assert reloaded == spec
    source = fxgen.generate(reloaded, allow=ALLOW)
    cls = getattr(import_source(source, f"gen_{spec.name.lower()}_{id(spec)}", tmp_path), spec.name)
    rebuilt = cls().eval()
    rebuilt.load_state_dict(load_file(str(weights)), strict=True)
    with torch.no_grad():
        assert_same(module(*inputs), rebuilt(*inputs))
    return spec


def test_every_value_encoding_round_trips(tmp_path: Path) -> None:
    torch.manual_seed(0)
    spec = _round_trip(Everything(), (torch.randn(2, 3, 6, 6),), tmp_path)
    text = spec.to_yaml()
    for fragment in ("slice:", "ellipsis: null", "dtype: float64", "memory_format: channels_last",
                     "device: cpu", "float: -inf", "export_fixtures.clamp_unit", "[len, '%x']",
                     "math.sqrt", "requires_grad: false", "persistent: false", "_tensor_constant0"):  # fmt: skip
        assert fragment in text, fragment
    # both constants are written into the spec (the checkpoint does not carry them): the small
    # one as a literal, the large one packed; the weights file holds only the state_dict
    constants = {k: b for k, b in spec.buffers.items() if k.startswith("_tensor_constant")}
    small = [k for k, b in constants.items() if b.value == [1.0, 2.0, 3.0, 4.0]]
    large = [k for k, b in constants.items() if b.shape == [108] and b.data is not None]
    assert len(small) == 1 and not constants[small[0]].persistent
    assert len(large) == 1 and not constants[large[0]].persistent
    weights = load_file(str(tmp_path / "w.safetensors"))
    assert weights.keys() == Everything().state_dict().keys()


def test_placeholder_defaults_and_types_survive() -> None:
    spec = fxgen.export(Everything())
    gain = next(n for n in spec.nodes if n.name == "gain")
    assert (gain.type, gain.default) == ("float", 2.0)
    assert spec.nodes[-1].type == "tuple[torch.Tensor, torch.Tensor]"


class _MaybePair(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        return x * 2, y


def test_an_annotation_with_a_nested_union_is_written_as_the_reader_spells_it(tmp_path: Path) -> None:
    """``tuple[X, X | None]`` reads back as ``tuple[X, typing.Optional[X]]``: export writes that,
    so the YAML reads back equal to the spec exported."""
    spec = fxgen.export(_MaybePair(), concrete_args={"y": None})
    assert spec.nodes[-1].type == "tuple[torch.Tensor, typing.Optional[torch.Tensor]]"
    spec.to_file(tmp_path / "m.yaml")
    assert fxgen.load_spec(tmp_path / "m.yaml") == spec


def test_leaf_modules_and_registered_constructors(tmp_path: Path) -> None:
    spec = _round_trip(make_with_leaf(), (torch.randn(3, 4),), tmp_path, leaf_modules=[Swish])
    assert spec.modules["act"].cls == "export_fixtures.Swish"
    assert spec.modules["act"].kwargs == {"beta": 1.5}
    # (the forward's `for block in self.blocks` is a loop over the ModuleList, declared whole)
    assert spec.modules["blocks"].args[0][1] == {"module": {"class": "torch.nn.Linear", "args": [4, 4],
                                                            "kwargs": {"bias": False}}}  # fmt: skip


def test_unregistered_leaf_class_is_a_clear_error() -> None:
    from fxgen.describe.recover import RECOVERIES

    RECOVERIES.pop(Swish, None)
    with pytest.raises(fxgen.ExportError, match=r"Swish.*register_constructor"):
        fxgen.export(WithLeaf(), leaf_modules=[Swish])


def test_record_constructors_covers_classes_that_keep_no_arguments(tmp_path: Path) -> None:
    from fxgen.describe.recover import RECOVERIES

    RECOVERIES.pop(Swish, None)
    with fxgen.record_constructors(Swish):
        module = make_with_leaf()
    spec = _round_trip(module, (torch.randn(3, 4),), tmp_path, leaf_modules=[Swish])
    assert spec.modules["act"].kwargs == {"beta": 1.5}
    assert Swish.__init__.__qualname__ == "Swish.__init__"  # the class is restored after the block


def test_concrete_args_make_static_control_flow_traceable(tmp_path: Path) -> None:
    spec = _round_trip(Branchy(), (torch.randn(2, 2),), tmp_path, concrete_args={"flag": True})
    assert any(n.target == "operator.add" for n in spec.nodes)


def test_concrete_args_ahead_of_other_inputs(tmp_path: Path) -> None:
    """torch.fx interleaves the checks of fixed arguments with the placeholders; the spec lists
    the placeholders first, and the checks torch.fx writes need no --allow."""
    x, bias = torch.randn(2, 3), torch.randn(3)
    concrete = {"flag": True, "mask": None}
    spec = _round_trip(OptionalInputs(), (x, True, None, bias), tmp_path, concrete_args=concrete)
    ops = [n.op for n in walk_nodes(spec.nodes)]
    assert ops[:4] == ["placeholder"] * 4 and "placeholder" not in ops[4:]
    assert {"torch._assert", "torch.fx._symbolic_trace._assert_is_none"} <= {n.target for n in walk_nodes(spec.nodes)}
    assert as_spec(spec.to_dict(), policy_for(None)) == spec  # the default policy accepts it
    loaded = fxgen.load(spec)
    assert_same(loaded(x, True, None, bias), OptionalInputs()(x, True, None, bias))
    # bias, left free by the concrete args, is an optional input the spec tests (issue 33 item 4)
    assert [item.cond for item in spec.nodes if isinstance(item, IfNodes)] == ["bias is None"]
    assert_same(loaded(x, True), OptionalInputs()(x, True))
    with pytest.raises(AssertionError, match=r"OptionalInputs.forward was exported from a call leaving 'mask' out \(None\) .*: export it from a call giving mask"):
        loaded(x, True, torch.ones(3), bias)


def test_tied_weights_round_trip_as_equal_copies_with_a_warning(tmp_path: Path) -> None:
    torch.manual_seed(0)
    with pytest.warns(UserWarning, match=r"head\.weight is the same tensor as emb\.weight \(tied weights\)"):
        spec = _round_trip(TiedLM(), (torch.randint(0, 20, (2, 5)),), tmp_path)
    assert set(spec.modules) == {"emb", "head"}
    assert sorted(load_file(str(tmp_path / "w.safetensors"))) == ["emb.weight", "head.weight"]


def test_untied_models_export_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning fails the export
        spec = fxgen.export(Everything())
    assert set(spec.modules) == {"conv", "norm", "proj"}, spec.modules  # exported whole, nothing tied


def test_custom_tracer_class_is_honoured() -> None:
    class NoLinearLeaves(torch.fx.Tracer):
        def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
            return not isinstance(m, torch.nn.Linear) and super().is_leaf_module(m, qualname)

    spec = fxgen.export(torch.nn.Sequential(torch.nn.Linear(2, 2)), tracer_class=NoLinearLeaves)
    assert not spec.modules and any(n.target == "torch._C._nn.linear" or n.target ==
                                     "torch.nn.functional.linear" for n in spec.nodes)  # fmt: skip


def test_autowrap_functions_are_honoured() -> None:
    plain = fxgen.export(UsesTriple())
    assert [n.target for n in plain.nodes if n.op == "call_function"] == ["operator.mul", "operator.add"]
    wrapped = fxgen.export(UsesTriple(), autowrap_functions=[triple])
    assert [n.target for n in wrapped.nodes if n.op == "call_function"] == ["export_fixtures.triple", "operator.add"]


def test_graph_module_is_exported_as_is() -> None:
    gm = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU()))
    spec = fxgen.export(gm, name="Tiny")
    assert spec.name == "Tiny" and list(spec.modules) == ["0", "1"]
    assert spec.modules["0"] == fxgen.ModuleSpec("torch.nn.Linear", [2, 3])


def test_dynamic_control_flow_is_one_clear_error() -> None:
    with pytest.raises(fxgen.ExportError) as info:
        fxgen.export(DataDependent())
    message = str(info.value)
    assert "export_fixtures.py" in message and "if x.sum() > 0:" in message
    assert "concrete_args" in message and "leaf" in message and "torch.fx.wrap" in message
    assert info.value.location is not None and info.value.location.line > 0


def test_state_keys_equal_spec_paths(tmp_path: Path) -> None:
    module = WithLeaf()
    spec = fxgen.export(module, leaf_modules=[Swish])
    fxgen.save_weights(module, tmp_path / "w.safetensors", leaf_modules=[Swish])
    keys = set(load_file(str(tmp_path / "w.safetensors")))
    gm = fxgen.load(spec, allow=ALLOW)
    assert keys == set(gm.state_dict())


@given(spec_dicts(max_nodes=8))
def test_random_graphs_survive_retracing(data: dict) -> None:
    """A spec's GraphModule traced again by torch.fx exports to a spec that runs the same."""
    spec = as_spec(data, policy_for(None))
    gm = fxgen.load(spec)
    retraced = torch.fx.symbolic_trace(gm)
    again = fxgen.export(retraced)
    rebuilt = fxgen.load(again)
    rebuilt.load_state_dict(retraced.state_dict(), strict=True)
    inputs = inputs_for(data)
    assert_same(gm(*inputs), rebuilt(*inputs))


# -- the CLI ---------------------------------------------------------------------------------
def _fxgen(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT / "tests"), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "fxgen", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=HANG_WATCHDOG)  # fmt: skip


def test_cli_export_then_generate(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.fxgen]\nallow = ["export_fixtures"]\n')
    done = _fxgen("export", "export_fixtures:make_with_leaf", "--leaf-module", "export_fixtures.Swish",
                  "--out", "specs/with_leaf.yaml", "--weights", "with_leaf.safetensors", cwd=tmp_path)  # fmt: skip
    # Swish has no recovery in a fresh process: the error says how to register one
    assert done.returncode == 1 and "register_constructor" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "specs").exists()
    done = _fxgen("export", "export_fixtures:Everything", "--out", "specs/everything.yaml",
                  "--weights", "everything.safetensors", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "export_fixtures" in done.stderr  # the note on widening the policy
    assert "tied" not in done.stderr
    done = _fxgen("export", "export_fixtures:TiedLM", "--out", "tied.yaml", cwd=tmp_path)
    assert done.returncode == 0 and "fxgen: note: head.weight is the same tensor as emb.weight" in done.stderr
    done = _fxgen("generate", "specs", "--out-dir", "gen", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    gm = fxgen.load(tmp_path / "specs/everything.yaml", weights=tmp_path / "everything.safetensors", allow=ALLOW)
    x = torch.randn(2, 3, 6, 6)
    module = Everything().eval()
    module.load_state_dict({k: v for k, v in load_file(str(tmp_path / "everything.safetensors")).items()
                            if not k.startswith("_tensor_constant")}, strict=True)  # fmt: skip
    assert_same(module(x), gm.eval()(x))


def test_cli_export_tracing_error_is_one_line(tmp_path: Path) -> None:
    done = _fxgen("export", "export_fixtures:DataDependent", "--out", "x.yaml", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "export_fixtures.py:" in lines[0] and "concrete-args" in lines[0]
    assert not (tmp_path / "x.yaml").exists()


@pytest.mark.parametrize("argv, message", [
    (["nosuchpkg.mod:Net"], "cannot import"),
    (["export_fixtures:Nope"], "no attribute"),
    (["export_fixtures"], "PKG.MODULE:ATTR"),
    (["export_fixtures:Everything", "--args", "[1"], "--args is not valid JSON"),
    (["export_fixtures:Everything", "--args", "[1]"], "calling"),
    (["export_fixtures:clamp_unit"], "calling"),
])  # fmt: skip
def test_cli_export_errors(tmp_path: Path, argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """In this process (the two tests above run the command in a fresh one): each error is one
    message, exit code 1, and nothing is written."""
    from fxgen.cli.main import main

    monkeypatch.chdir(tmp_path)
    code = main(["export", *argv, "--out", "x.yaml"])
    err = capsys.readouterr().err
    assert code == 1 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "x.yaml").exists()


def test_cli_export_keeps_blocks_and_flat_does_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """``fxgen export`` writes a format-2 spec with the model's classes; ``--flat`` one graph;
    both load the weights they wrote into a model that computes what the original does. The
    exports run in this process (the test above runs the command in a fresh one), generate in a
    fresh one."""
    import reference_models

    from fxgen.cli.main import main

    monkeypatch.chdir(tmp_path)
    args = ["export", "reference_models:ResNet", "--kwargs", '{"width": 8, "num_classes": 5}']
    code = main([*args, "--out", "blocks.yaml", "--weights", "w.safetensors"])
    err = capsys.readouterr().err
    assert code == 0, err
    # blocks are the spec's own; BasicBlock with and without downsample is one class, as in the original
    assert "1 block class\n" in err and "--allow" not in err
    code = main([*args, "--flat", "--out", "flat.yaml"])
    assert code == 0, capsys.readouterr().err
    blocks, flat = fxgen.load_spec(tmp_path / "blocks.yaml"), fxgen.load_spec(tmp_path / "flat.yaml")
    assert (blocks.fxgen, list(blocks.classes), flat.fxgen) == (2, ["BasicBlock"], 1)
    original = reference_models.ResNet(width=8, num_classes=5).eval()
    original.load_state_dict(load_file(str(tmp_path / "w.safetensors")), strict=True)
    x = torch.randn(1, 3, 32, 32)
    for spec in (blocks, flat):
        assert torch.equal(fxgen.load(spec, weights=tmp_path / "w.safetensors").eval()(x), original(x))
    done = _fxgen("generate", "blocks.yaml", "--out-dir", "gen", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "class BasicBlock(nn.Module):" in (tmp_path / "gen" / "blocks.py").read_text()
