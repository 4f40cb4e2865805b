"""Random valid specs (``tests/strategies.py``) through the passes that keep the arithmetic, and
through shape propagation: the transformed model computes exactly what the original computes,
and the propagated shapes are what a real run produces."""

from __future__ import annotations

import copy
from typing import Any

import torch
from helpers import property_budget
from hypothesis import HealthCheck, given, settings
from strategies import inputs_for, spec_dicts

import fxgen
from fxgen.analysis.shapes import _value_text, analyse
from fxgen.check.validate import validate_data
from fxgen.policy.policy import DEFAULT_POLICY

EXACT = ["eliminate_dead_code", "fold_constants", {"decompose": {"rules": ["relu", "relu6", "hardsigmoid"]}}]


def _run(gm: torch.nn.Module, inputs: list[Any]) -> Any:
    gm.eval()
    with torch.no_grad():
        return gm(*inputs)


@settings(max_examples=property_budget(30), suppress_health_check=[HealthCheck.too_slow])
@given(spec_dicts(max_nodes=10))
def test_exact_passes_keep_every_output(data: dict[str, Any]) -> None:
    torch.manual_seed(0)
    original = fxgen.load(data)
    state = original.state_dict()
    result = fxgen.transform(data, copy.deepcopy(EXACT), weights=dict(state))
    assert isinstance(result, tuple)
    spec, tensors = result
    transformed = fxgen.load(spec)
    transformed.load_state_dict(tensors, strict=True)
    inputs = inputs_for(data)
    want, got = _run(original, inputs), _run(transformed, inputs)
    flat_want, flat_got = torch.utils._pytree.tree_leaves(want), torch.utils._pytree.tree_leaves(got)
    assert len(flat_want) == len(flat_got)
    for a, b in zip(flat_want, flat_got, strict=True):
        assert torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b


@settings(max_examples=property_budget(30), suppress_health_check=[HealthCheck.too_slow])
@given(spec_dicts(max_nodes=10))
def test_propagated_shapes_are_a_real_runs(data: dict[str, Any]) -> None:
    names = [n["name"] for n in data["nodes"] if n["op"] == "placeholder" and "default" not in n]
    with_inputs = {**data, "inputs": {name: {"shape": [2, 4]} for name in names}}  # what the graphs are made for
    spec = validate_data(with_inputs)
    analysis = analyse(spec, DEFAULT_POLICY)
    gm = fxgen.load(data).eval()
    values: dict[str, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            values[n.name] = out = super().run_node(n)
            return out

    with torch.no_grad():
        Recorder(gm).run(*inputs_for(data))
    for info in analysis.nodes:
        assert info.value == _value_text(values[info.name], {}), info.name
