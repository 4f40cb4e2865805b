"""Sizes and overrides (issue 31): a spec's ``variants:``, ``--variant``/``--set`` for validate,
show and generate, ``fxgen.load(spec, variant=..., args=...)``, the generated classmethod per
variant, and ``fxgen show --variants``'s table. A seeded ``WidthNet.s()`` and
``fxgen.load(spec, variant="s")`` hold equal state dicts; bad choices are located errors."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import ROOT

import fxgen
from fxgen.check.validate import validate_data
from fxgen.cli.main import main
from tests.helpers import assert_same_state, import_source

WIDTH_NET = ROOT / "model_specs" / "width_net.yaml"


@pytest.fixture(scope="module")
def generated() -> Any:
    return import_source((ROOT / "generated" / "width_net.py").read_text(), "width_net_variants", Path(__import__("tempfile").mkdtemp()))


@pytest.mark.parametrize("variant", ["n", "s", "m", "l", "x"])
def test_each_variant_classmethod_draws_what_load_of_the_variant_draws(variant: str, generated: Any) -> None:
    torch.manual_seed(0)
    made = getattr(generated.WidthNet, variant)()
    torch.manual_seed(0)
    loaded = fxgen.load(WIDTH_NET, variant=variant)
    assert_same_state(loaded, made)
    spec = fxgen.load_spec(WIDTH_NET)
    torch.manual_seed(0)
    assert_same_state(fxgen.load(spec, variant=variant), made)  # a validated Spec too


def test_args_apply_after_the_variant(generated: Any) -> None:
    torch.manual_seed(1)
    loaded = fxgen.load(WIDTH_NET, variant="s", args={"num_classes": 3, "depth": 1.0})
    torch.manual_seed(1)
    made = generated.WidthNet(width=0.5, depth=1.0, max_channels=96, num_classes=3)
    assert_same_state(loaded, made)


def test_the_variants_are_ultralytics_style_sizes_with_growing_parameter_counts() -> None:
    counts = [sum(p.numel() for p in fxgen.load(WIDTH_NET, variant=v).parameters()) for v in "nsmlx"]
    assert counts == [4194, 8930, 26802, 54650, 83106]


def test_load_spec_with_a_choice_makes_its_values_the_defaults() -> None:
    spec = fxgen.load_spec(WIDTH_NET, variant="m", args={"num_classes": 7})
    assert {n: a.default for n, a in spec.args.items()} == {"width": 0.75, "depth": 0.67, "max_channels": 96, "num_classes": 7}
    assert spec.variants["m"] == {"width": 0.75, "depth": 0.67}


@pytest.mark.parametrize(
    ("kwargs", "line", "message"),
    [
        ({"variant": "q"}, 16, "no variant 'q' in this spec; its variants: n, s, m, l, x"),
        ({"args": {"widht": 0.5}}, 11, "'widht' is not an argument of the model's class; did you mean 'width'?"),
        ({"args": {"width": "wide"}}, 12, "argument 'width' is float, not 'wide'"),
        ({"args": {"max_channels": 0.5}}, 14, "argument 'max_channels' is int, not 0.5"),
    ],
)
def test_a_bad_choice_is_a_located_error(kwargs: dict[str, Any], line: int, message: str) -> None:
    for load in (fxgen.load_spec, fxgen.load, lambda path, **kw: fxgen.load(fxgen.load_spec(path), **kw)):
        with pytest.raises(fxgen.SpecError) as info:
            load(WIDTH_NET, **kwargs)
        (diagnostic,) = info.value.diagnostics
        assert diagnostic.location.line == line and message in diagnostic.message, diagnostic


def _small(variants: dict[str, Any]) -> dict[str, Any]:
    """A one-layer format-2 spec with argument ``n`` and ``variants``."""
    return {
        "fxgen": 2, "name": "M", "args": {"n": {"type": "int", "default": 2}}, "variants": variants,
        "modules": {"lin": {"class": "torch.nn.Linear", "args": [{"arg": "n"}, 2]}},
        "nodes": [{"op": "placeholder", "name": "x"}, {"op": "call_module", "name": "y", "target": "lin", "args": ["%x"]},
                  {"op": "output", "args": ["%y"]}],
    }  # fmt: skip


def test_a_variant_named_after_an_attribute_or_a_method_is_refused() -> None:
    data = _small({"eval": {}, "training": {}, "lin": {}, "_x": {}, "class": {}, "ok": {"n": 3}})
    with pytest.raises(fxgen.SpecError) as info:
        validate_data(data)
    messages = [d.message for d in info.value.diagnostics]
    assert len(messages) == 5, messages
    assert any("'eval' is an attribute of every nn.Module" in m for m in messages)
    assert any("'training' is an attribute of every nn.Module" in m for m in messages)
    assert any("'lin' is also an attribute or argument of the class" in m for m in messages)
    assert any("'_x' starts with _" in m for m in messages)
    assert any("'class' is a Python keyword" in m for m in messages)


def test_a_variant_that_does_not_build_is_reported_at_the_variant() -> None:
    data = _small({"ok": {"n": 3}, "bad": {"n": -1}})
    with pytest.raises(fxgen.SpecError) as info:
        validate_data(data)
    (diagnostic,) = info.value.diagnostics
    assert "variant 'bad' (n=-1) does not build: " in diagnostic.message and "module 'lin'" in diagnostic.message
    bad = copy.deepcopy(data)
    del bad["variants"]["bad"]
    spec = validate_data(bad)
    assert spec.variants == {"ok": {"n": 3}}
    assert fxgen.to_spec(fxgen.load(spec)) == spec


def test_variants_need_format_2() -> None:
    data = {"fxgen": 1, "name": "M", "variants": {"a": {}}, "nodes": [{"op": "placeholder", "name": "x"}, {"op": "output", "args": ["%x"]}]}
    with pytest.raises(fxgen.SpecError, match="`variants` needs `fxgen: 2`"):
        validate_data(data)


def test_a_spec_with_variants_round_trips_through_yaml(tmp_path: Path) -> None:
    spec = fxgen.load_spec(WIDTH_NET)
    path = tmp_path / "w.yaml"
    spec.to_file(path)
    assert fxgen.load_spec(path) == spec


# -- the command line -------------------------------------------------------------------------
def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_variants_prints_parameters_and_flops_of_every_variant(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "show", "--variants", str(WIDTH_NET))
    assert code == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines()[4:] if line.strip()}
    assert rows["s"][-2:] == ["8,930", "998592*batch"]
    assert rows["x"][-2:] == ["83,106", "9640064*batch"]
    assert "(the defaults)" in out


def test_show_with_set_describes_the_chosen_model(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "show", "--variant", "n", "--set", "num_classes=3", str(WIDTH_NET))
    assert code == 0
    spec = fxgen.load_spec(WIDTH_NET, variant="n", args={"num_classes": 3})
    total = sum(p.numel() for p in fxgen.load(spec).parameters())
    assert f"total parameters: {total:,}" in out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--set", "widht=0.5"], "width_net.yaml:11:1: error: --set widht=0.5: 'widht' is not an argument of the model's class; did you mean 'width'?"),
        (["--set", "width=abc"], "width_net.yaml:12:10: error: --set width='abc': argument 'width' is float, not 'abc'"),
        (["--variant", "xl"], "width_net.yaml:16:1: error: no variant 'xl' in this spec"),
        (["--set", "num_classes=-4"], "width_net.yaml:52:9: error: module 'head': torch.nn.Linear cannot be built"),
        (["--variant", "n", "--set", "num_classes=-4"], "dimension -4: [-4, 16] (chosen: variant 'n', num_classes=-4)"),
    ],
)
def test_validate_reports_a_bad_choice_at_the_spec(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    code, _, err = _run(capsys, "validate", *argv, str(WIDTH_NET))
    assert code == 1
    assert expected in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize(("value", "message"), [("width", "is not NAME=VALUE"), ("width=yes", "YAML 1.1"), ("width=[1, 2]", "not list"),
                                                ("width=", "has no VALUE after '='; write one: width=64"), ("width= ", "has no VALUE")])
def test_a_malformed_set_is_a_usage_error(capsys: pytest.CaptureFixture[str], value: str, message: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["validate", "--set", value, str(WIDTH_NET)])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("value", ["null", "~"])
def test_an_explicit_null_is_refused_for_a_typed_argument(capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, _, err = _run(capsys, "validate", "--set", f"width={value}", str(WIDTH_NET))
    assert code == 1
    assert "error: --set width=None: argument 'width' is float, not None; give a value of that type" in err, err


@pytest.mark.parametrize("kind", ["int", "float", "bool", "str"])
def test_none_is_no_value_of_a_simple_type_but_is_one_of_an_optional(kind: str) -> None:
    data = _small({})
    data["args"]["n"] = {"type": kind, "default": {"int": 2, "float": 2.0, "bool": True, "str": "a"}[kind]}
    data["modules"]["lin"]["args"] = [2, 2]
    for chosen in ({"args": {"n": None}}, {"variant": "none"}):
        data["variants"] = {"none": {"n": None}} if "variant" in chosen else {}
        with pytest.raises(fxgen.SpecError, match=f"argument 'n' is {kind}, not None; give a value of that type"):
            fxgen.generate(copy.deepcopy(data), **chosen)
    data["variants"] = {}
    data["args"]["n"] = {"type": f"typing.Optional[{kind}]", "default": None}  # None where the type allows it
    assert f"n: {kind} | None = None" in fxgen.generate(copy.deepcopy(data), args={"n": None})


def test_generate_with_a_choice_writes_its_defaults_and_check_needs_the_same_flags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "specs").mkdir()
    shutil.copy(WIDTH_NET, tmp_path / "specs" / "width_net.yaml")
    monkeypatch.chdir(tmp_path)
    flags = ["--variant", "s", "--set", "num_classes=80", "--jobs", "1"]
    assert _run(capsys, "generate", *flags, "specs")[0] == 0
    text = (tmp_path / "generated" / "width_net.py").read_text()
    assert "        width: float = 0.5,\n        depth: float = 0.33,\n" in text and "num_classes: int = 80," in text
    assert text.count("@classmethod") == 5
    assert text == fxgen.generate("specs/width_net.yaml", variant="s", args={"num_classes": 80})
    assert _run(capsys, "generate", "--check", *flags, "specs")[0] == 0
    code, _, err = _run(capsys, "generate", "--check", "--jobs", "1", "specs")
    assert code == 1 and "stale" in err


def test_validate_checks_the_declared_inputs_flow_through_every_variant(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = _small({"ok": {"n": 3}, "mismatched": {"n": 5}})
    data["modules"]["lin"]["args"] = [3, {"arg": "n"}]
    data["modules"]["out"] = {"class": "torch.nn.Linear", "args": [3, 1]}  # takes 3 features: n must be 3
    data["nodes"][2:2] = [{"op": "call_module", "name": "z", "target": "out", "args": ["%y"]}]
    data["nodes"][-1]["args"] = ["%z"]
    data["args"]["n"]["default"] = 3
    data["inputs"] = {"x": {"shape": ["batch", 3]}}
    path = tmp_path / "flowy.json"
    path.write_text(__import__("json").dumps(data, indent=1))
    code, _, err = _run(capsys, "validate", str(path))
    assert code == 1
    (line, _) = err.split("\n", 1)
    assert "error: variant 'mismatched': " in line and "do not flow through node 'z'" in line, err
    assert "variant 'ok'" not in err
