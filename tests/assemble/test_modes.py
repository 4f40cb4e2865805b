"""A GraphModule with one graph per mode (``fxgen.assemble.modes``), as ``fxgen.load`` builds it
for a spec whose nodes mention ``training``: ``train()``/``eval()`` swap ``gm.graph`` and its
code, each mode compiled once; one state dict; copies and pickles keep both modes; a spec that
does not mention the mode is a plain GraphModule."""

from __future__ import annotations

import copy
import io
import operator
from typing import Any

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from helpers import assert_same, loaded_and_generated, property_budget
from hypothesis import HealthCheck, given, settings
from strategies import inputs_for, mode_specs

import fxgen
from fxgen._errors import SpecError
from fxgen.assemble.modes import ModeGraphModule
from fxgen.check.validate import as_spec
from fxgen.policy.policy import DEFAULT_POLICY
from fxgen.spec.resolve import expand_nodes

SPEC: dict[str, Any] = {
    "fxgen": 2,
    "name": "Net",
    "modules": {"fc": {"class": "torch.nn.Linear", "args": [4, 4]}, "bn": {"class": "torch.nn.BatchNorm1d", "args": [4]}},
    "nodes": [
        {"op": "placeholder", "name": "x"},
        {"if": "training", "then": [{"op": "call_function", "name": "d", "target": "torch.nn.functional.dropout",
                                     "args": ["%x"], "kwargs": {"p": 0.5, "training": {"arg": "training"}}}],
         "else": [{"op": "alias", "name": "d", "args": ["%x"]}]},
        {"op": "call_module", "name": "fc", "target": "fc", "args": ["%d"]},
        {"op": "call_module", "name": "bn", "target": "bn", "args": ["%fc"]},
        {"if": "training", "then": [{"op": "call_function", "name": "out", "target": "operator.mul", "args": ["%bn", 2.0]}],
         "else": [{"op": "call_function", "name": "out", "target": "operator.add", "args": ["%bn", "%x"]}]},
        {"op": "output", "args": ["%out"]},
    ],
}  # fmt: skip


def _module() -> ModeGraphModule:
    torch.manual_seed(0)
    gm = fxgen.load(SPEC)
    assert isinstance(gm, ModeGraphModule)
    return gm


def _reference(m: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    if m.training:
        return m.bn(m.fc(F.dropout(x, 0.5, training=True))) * 2.0
    return m.bn(m.fc(x)) + x


def _ref_forward(ref: torch.nn.Module):  # type: ignore[no-untyped-def]
    return lambda t: _reference(ref, t)


def _seeded(f, x: torch.Tensor) -> torch.Tensor:  # type: ignore[no-untyped-def]
    torch.manual_seed(1)
    return f(x)


def test_train_and_eval_swap_the_graph_and_compute_each_modes_graph() -> None:
    gm = _module()
    x = torch.randn(3, 4)
    assert isinstance(gm, torch.fx.GraphModule) and type(gm).__name__ == "Net"
    assert gm.training and "dropout" in gm.code
    gm.eval()
    assert not gm.training
    for mode in (True, False, True, False, True):
        gm.train(mode)
        assert gm.graph is gm.mode_graphs()[mode] and gm.graph.owning_module is gm
        assert ("dropout" in gm.code) is mode and ("dropout" in str(gm.graph)) is mode
        ref = copy.deepcopy(gm)  # the same state, run by the reference
        assert torch.equal(_seeded(gm, x), _seeded(_ref_forward(ref), x))
        assert torch.equal(gm.bn.running_mean, ref.bn.running_mean)
    gm.eval()
    assert not gm.bn.training and "dropout" not in gm.code


def test_each_mode_is_compiled_once() -> None:
    gm = _module()
    gm.eval()
    gm.train()
    forwards = {mode: gm._modes[mode].forward for mode in (False, True)}
    for mode in (False, True, False, True):
        gm.train(mode)
        assert type(gm).forward is forwards[mode]


def test_the_state_dict_is_one_modules_and_loads_strictly() -> None:
    gm = _module()
    keys = list(gm.state_dict())
    assert keys == ["fc.weight", "fc.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                    "bn.num_batches_tracked"]  # fmt: skip
    other = _module().eval()
    other.load_state_dict(gm.state_dict(), strict=True)
    assert list(other.state_dict()) == keys


def test_a_parents_train_and_eval_reach_it() -> None:
    parent = torch.nn.Sequential(_module())
    parent.eval()
    assert "dropout" not in parent[0].code
    parent.train()
    assert "dropout" in parent[0].code


def test_copies_and_pickles_keep_both_modes() -> None:
    x = torch.randn(3, 4)
    for copied in (copy.deepcopy, _pickled):
        gm = _module().eval()
        other = copied(gm)
        assert isinstance(other, ModeGraphModule) and type(other).__name__ == "Net"
        assert type(other) is not type(gm)  # its own forward
        assert not other.training and "dropout" not in other.code
        assert torch.equal(other(x), gm(x))
        other.train()
        gm.train()
        assert "dropout" in other.code
        assert torch.equal(_seeded(other, x), _seeded(gm, x))
        assert torch.equal(other.bn.running_var, gm.bn.running_var)


def test_an_edited_graph_recompiled_is_the_current_modes() -> None:
    gm = _module().eval()
    (add,) = [n for n in gm.graph.nodes if n.target is operator.add]
    add.target = operator.sub
    gm.recompile()
    gm.train()
    gm.eval()
    assert "bn - x" in gm.code


def _pickled(gm: torch.nn.Module) -> torch.nn.Module:
    buffer = io.BytesIO()
    torch.save(gm, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def test_a_spec_not_mentioning_the_mode_is_a_plain_graph_module() -> None:
    plain = {**SPEC, "nodes": [{"op": "placeholder", "name": "x"}, {"op": "call_module", "name": "fc", "target": "fc",
                                "args": ["%x"]}, {"op": "output", "args": ["%fc"]}]}  # fmt: skip
    gm = fxgen.load(plain)
    assert not isinstance(gm, ModeGraphModule) and isinstance(gm, torch.fx.GraphModule)


def test_to_spec_gives_the_items_back_and_an_edit_as_the_two_graphs_aligned() -> None:
    spec = as_spec(SPEC, DEFAULT_POLICY)
    gm = fxgen.load(spec).eval()
    assert fxgen.to_spec(gm) == spec
    (add,) = [n for n in gm.graph.nodes if n.target is operator.add]
    add.target = operator.sub
    gm.recompile()
    edited = fxgen.to_spec(gm).to_dict()["nodes"]
    assert edited[-2] == {"if": "training", "then": [SPEC["nodes"][4]["then"][0]],
                          "else": [{**SPEC["nodes"][4]["else"][0], "target": "operator.sub"}]}  # fmt: skip


def test_passes_refuse_a_spec_whose_graph_depends_on_the_mode() -> None:
    """A pass edits one graph: run on the current mode's alone, the other would be left as it was."""
    with pytest.raises(SpecError, match=r"passes run on one graph, and this spec's graph depends on the mode"):
        fxgen.transform(SPEC, ["eliminate_dead_code"])


@settings(max_examples=property_budget(20), suppress_health_check=[HealthCheck.too_slow])
@given(mode_specs())
def test_drawn_mode_specs_compute_each_modes_own_graph(data: dict[str, Any]) -> None:
    """A drawn spec whose graph depends on the mode: ``fxgen.load``'s GraphModule and the
    generated class, switched back and forth, compute in each mode what that mode's plain graph
    (the items resolved for it) computes, seeded alike."""
    gm, generated = loaded_and_generated(data, "gen_modes")
    assert isinstance(gm, ModeGraphModule)
    inputs = inputs_for(data)
    for mode in (False, True, False, True):
        plain = {**data, "nodes": [node for node, _ in expand_nodes(data["nodes"], {"training": mode})]}
        reference = fxgen.load(plain)
        reference.load_state_dict(gm.state_dict(), strict=True)
        reference.train(mode)
        torch.manual_seed(0)
        want = reference(*inputs)
        for built in (gm, generated):
            built.train(mode)
            torch.manual_seed(0)
            assert_same(want, built(*inputs))
