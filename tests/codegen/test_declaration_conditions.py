"""A module declared on a condition (``if:`` on a declaration, format 2): a member of a family has
it or lacks it, as GPT-2's untied head. The load leaves it out of instances where the condition
is false, the generated ``__init__`` writes ``if not tie:`` around it, and both compute the same."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from helpers import generated_class

import fxgen
from fxgen._errors import SpecError
from fxgen.check.validate import validate_data

SPEC: dict[str, Any] = {
    "fxgen": 2,
    "name": "Head",
    "args": {"vocab": {"type": "int", "default": 11}, "dim": {"type": "int", "default": 8},
             "tie": {"type": "bool", "default": True}},
    "modules": {
        "wte": {"class": "torch.nn.Embedding", "args": [{"arg": "vocab"}, {"arg": "dim"}]},
        "lm_head": {"class": "torch.nn.Linear", "args": [{"arg": "dim"}, {"arg": "vocab"}], "kwargs": {"bias": False},
                    "if": "not tie"},
    },
    "nodes": [
        {"op": "placeholder", "name": "idx", "type": "torch.Tensor"},
        {"op": "call_module", "name": "x", "target": "wte", "args": ["%idx"]},
        {"if": "tie",
         "then": [{"op": "get_attr", "name": "w", "target": "wte.weight"},
                  {"op": "call_function", "name": "logits", "target": "torch.nn.functional.linear", "args": ["%x", "%w"]}],
         "else": [{"op": "call_module", "name": "logits", "target": "lm_head", "args": ["%x"]}]},
        {"op": "output", "args": ["%logits"]},
    ],
}  # fmt: skip


@pytest.mark.parametrize("tie", [True, False])
def test_load_and_the_generated_class_have_the_module_only_where_declared(tie: bool) -> None:
    spec = validate_data(copy.deepcopy(SPEC))
    torch.manual_seed(0)
    gm = fxgen.load(spec, args={"tie": tie})
    assert ("lm_head.weight" in gm.state_dict()) is not tie
    _, cls = generated_class(spec)
    torch.manual_seed(0)
    model = cls(tie=tie)
    assert list(model.state_dict()) == list(gm.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), gm.state_dict().values(), strict=True))
    idx = torch.tensor([[1, 2, 3]])
    assert torch.equal(model(idx), gm(idx))


def test_the_generated_init_says_the_condition() -> None:
    source = fxgen.generate(validate_data(copy.deepcopy(SPEC)))
    assert "        if not tie:\n            self.lm_head = nn.Linear(dim, vocab, bias=False)\n" in source


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["modules"]["lm_head"].__setitem__("if", "vocab"), "gives True or False, not 11"),
        (lambda d: d["modules"]["lm_head"].__setitem__("if", "not tied"), "'tied' is not an argument"),
        (lambda d: d.__setitem__("modules", {**d["modules"], "heads.0": {**d["modules"]["lm_head"]}}),
         "only a module on an attribute of its own"),
        (lambda d: d["args"]["tie"].__setitem__("default", False) or d["modules"]["lm_head"].__setitem__("if", "tie"),
         "lm_head"),  # the untied graph calls a module this instance does not declare
    ],
)  # fmt: skip
def test_bad_conditions_are_located_errors(change: Any, message: str) -> None:
    data = copy.deepcopy(SPEC)
    change(data)
    with pytest.raises(SpecError) as info:
        validate_data(data)
    assert any(message in d.message for d in info.value.diagnostics), [d.message for d in info.value.diagnostics]


def test_a_condition_needs_format_2() -> None:
    data = {"fxgen": 1, "name": "M", "modules": {"fc": {"class": "torch.nn.Identity", "if": True}},
            "nodes": [{"op": "placeholder", "name": "x"}, {"op": "output", "args": ["%x"]}]}  # fmt: skip
    with pytest.raises(SpecError, match="`if` needs `fxgen: 2`"):
        validate_data(data)


@pytest.mark.parametrize("tie", [True, False])
def test_to_spec_gives_back_the_module_the_instance_leaves_out(tie: bool) -> None:
    """An instance without ``lm_head`` still describes the family: its spec declares the module
    on its condition, as written."""
    spec = validate_data(copy.deepcopy(SPEC))
    back = fxgen.to_spec(fxgen.load(spec, args={"tie": tie}))
    assert back.modules == spec.modules and back.modules["lm_head"].when == "not tie"
