"""A declared module's ``init:``: its parameters and buffers initialised from the spec (GPT-2's
``normal(0, 0.02)`` and its scaled projection init), drawn in the same order by ``fxgen.load``
(with and without validation constructing the modules, with a weights file) and by the generated
class, so that a seed gives equal state dicts; refused where it cannot mean what it says."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import torch

import fxgen
from fxgen._errors import SpecError
from fxgen.check.validate import validate_data
from tests.helpers import assert_same_state, import_source

GPT2_MLP: dict[str, Any] = {
    "fxgen": 2,
    "name": "Gpt2Mlp",
    "args": {"n_embd": {"type": "int", "default": 16}, "n_layer": {"type": "int", "default": 12}},
    "modules": {
        "c_fc": {"class": "torch.nn.Linear", "args": [{"arg": "n_embd"}, {"arg": "4 * n_embd"}],
                 "init": {"weight": {"normal": {"mean": 0.0, "std": 0.02}}, "bias": "zeros"}},
        "act": {"class": "torch.nn.GELU"},
        "c_proj": {"class": "torch.nn.Linear", "args": [{"arg": "4 * n_embd"}, {"arg": "n_embd"}],
                   "init": {"weight": {"normal": {"mean": 0.0, "std": {"arg": "0.02 / sqrt(2 * n_layer)"}}},
                            "bias": "zeros"}},
        "ln": {"class": "torch.nn.BatchNorm1d", "args": [{"arg": "n_embd"}],
               "init": {"running_var": {"constant": {"val": 2.0}}, "weight": {"uniform": {"a": -1, "b": 1}}}},
    },
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "call_module", "name": "h", "target": "c_fc", "args": ["%x"]},
        {"op": "call_module", "name": "a", "target": "act", "args": ["%h"]},
        {"op": "call_module", "name": "y", "target": "c_proj", "args": ["%a"]},
        {"op": "call_module", "name": "out", "target": "ln", "args": ["%y"]},
        {"op": "output", "args": ["%out"]},
    ],
}  # fmt: skip


def _nanogpt_mlp(n_embd: int, n_layer: int) -> dict[str, torch.Tensor]:
    """What nanoGPT's _init_weights does to these layers, in the same order, written plainly."""
    c_fc, c_proj, ln = torch.nn.Linear(n_embd, 4 * n_embd), None, None
    torch.nn.init.normal_(c_fc.weight, mean=0.0, std=0.02)
    torch.nn.init.zeros_(c_fc.bias)
    torch.nn.GELU()
    c_proj = torch.nn.Linear(4 * n_embd, n_embd)
    torch.nn.init.normal_(c_proj.weight, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))
    torch.nn.init.zeros_(c_proj.bias)
    ln = torch.nn.BatchNorm1d(n_embd)
    torch.nn.init.constant_(ln.running_var, 2.0)
    torch.nn.init.uniform_(ln.weight, -1, 1)
    return {**{f"c_fc.{k}": v for k, v in c_fc.state_dict().items()}, **{f"c_proj.{k}": v for k, v in c_proj.state_dict().items()},
            **{f"ln.{k}": v for k, v in ln.state_dict().items()}}  # fmt: skip


def test_load_and_generated_class_draw_the_values_a_plain_pytorch_init_draws(tmp_path: Path) -> None:
    spec = validate_data(GPT2_MLP)
    source = fxgen.generate(spec)
    assert 'nn.init.normal_(self.c_fc.get_parameter("weight"), mean=0.0, std=0.02)' in source
    assert "std=0.02 / math.sqrt(2 * n_layer)" in source
    assert 'nn.init.constant_(self.ln.get_buffer("running_var"), val=2.0)' in source
    cls = import_source(source, "gpt2_mlp_init", tmp_path).Gpt2Mlp
    for args in ({}, {"n_embd": 8, "n_layer": 2}):
        torch.manual_seed(0)
        loaded = fxgen.load(spec, args=args)
        torch.manual_seed(0)
        generated = cls(**args)
        assert_same_state(loaded, generated)
        torch.manual_seed(0)
        reference = _nanogpt_mlp(args.get("n_embd", 16), args.get("n_layer", 12))
        for key, tensor in loaded.state_dict().items():
            assert torch.equal(tensor, reference[key]), key
    assert fxgen.to_spec(fxgen.load(spec)) == spec


FLAT: dict[str, Any] = {
    "fxgen": 1,
    "name": "Flat",
    "modules": {
        "fc": {"class": "torch.nn.Linear", "args": [4, 8], "init": {"weight": {"trunc_normal": {"std": 0.02}}}},
        "blocks.conv": {"class": "torch.nn.Conv2d", "args": [3, 4, 3], "init": {"bias": {"constant": {"val": 0.5}}}},
    },
    "parameters": {"scale": {"shape": [4], "init": "normal"}},
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "call_module", "name": "out", "target": "fc", "args": ["%x"]},
        {"op": "output", "args": ["%out"]},
    ],
}  # fmt: skip


def test_format_1_load_validating_for_the_load_and_from_a_spec_match_the_generated_class(tmp_path: Path) -> None:
    path = tmp_path / "flat.json"
    path.write_text(__import__("json").dumps(FLAT))
    cls = import_source(fxgen.generate(path), "flat_init", tmp_path).Flat
    torch.manual_seed(3)
    expected = cls()
    for source in (path, FLAT, fxgen.load_spec(path)):
        torch.manual_seed(3)
        assert_same_state(fxgen.load(source), expected)
    assert torch.equal(expected.blocks.conv.bias, torch.full((4,), 0.5))


def test_a_weights_file_replaces_the_initialised_values_and_rebuilds_unsaved_buffers_initialised(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    spec = validate_data(GPT2_MLP)
    model = fxgen.load(spec)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp_path / "w.safetensors"))
    loaded = fxgen.load(spec, weights=tmp_path / "w.safetensors")
    assert_same_state(loaded, model)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"c_fc": {"init": {"wieght": "zeros"}}}, "init names 'wieght', which is no parameter or buffer of the module; did you mean 'weight'?"),
        ({"c_fc": {"init": {"bias": "xavier_uniform"}}}, "init of parameter 'bias' (float32[64]): init 'xavier_uniform' needs a tensor with at least 2 dimensions"),
        ({"c_fc": {"init": {"weight": {"uniform": {"a": {"arg": "n_layer"}, "b": 0}}}}}, "init 'uniform' needs a <= b, not a=12, b=0"),
        ({"c_fc": {"init": {"weight": {"normal": {"std": {"arg": "n_layers"}}}}}}, "n_layers"),
        ({"c_fc": {"init": {"weight": {"normal": {"std": {"arg": "sqrt(0 - n_layer)"}}}}}}, "negative"),
    ],
)
def test_bad_inits_are_located_errors(change: dict[str, Any], message: str) -> None:
    data = copy.deepcopy(GPT2_MLP)
    for path, fields in change.items():
        data["modules"][path].update(fields)
    with pytest.raises(SpecError) as info:
        validate_data(data)
    assert len(info.value.diagnostics) == 1, info.value
    assert message in info.value.diagnostics[0].message
    assert "modules" in str(info.value.diagnostics[0].location) or info.value.diagnostics[0].location.line > 0


def test_init_on_an_item_of_a_list_container_is_refused() -> None:
    data = copy.deepcopy(FLAT)
    data["modules"] = {"layers.0": {"class": "torch.nn.Linear", "args": [4, 4], "init": {"weight": "ones"}},
                       "layers.1": {"class": "torch.nn.Linear", "args": [4, 4]}}  # fmt: skip
    data["nodes"][1]["target"] = "layers.0"
    with pytest.raises(SpecError, match="item of a list or dict container"):
        validate_data(data)


def test_init_is_not_allowed_in_a_module_value() -> None:
    data = copy.deepcopy(GPT2_MLP)
    data["modules"]["seq"] = {"class": "torch.nn.Sequential",
                              "args": [{"module": {"class": "torch.nn.Linear", "args": [2, 2], "init": {"weight": "ones"}}}]}  # fmt: skip
    with pytest.raises(SpecError, match="init"):
        validate_data(data)
