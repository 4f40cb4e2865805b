"""A class whose conditions ask whether an optional input was given (``if: mask is None``):
``fxgen.load``'s GraphModule runs, for each call, the graph of the inputs that call leaves out, in
the current mode (one ``ModeGraphModule``, one state dict); the generated forward writes the
``if``; copies, pickles, ``to_spec`` and passes keep or refuse it as they do the mode."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from helpers import assert_same, import_source, loaded_and_generated, property_budget
from hypothesis import HealthCheck, given, settings
from strategies import inputs_for, presence_specs

import fxgen
from fxgen._errors import ExportError, SpecError
from fxgen.assemble.modes import ModeGraphModule
from fxgen.check.validate import as_spec
from fxgen.policy.policy import DEFAULT_POLICY
from fxgen.spec.resolve import GIVEN, expand_nodes

SPEC: dict[str, Any] = {
    "fxgen": 2,
    "name": "Net",
    "modules": {"fc": {"class": "torch.nn.Linear", "args": [4, 4]}},
    "nodes": [
        {"op": "placeholder", "name": "x"},
        {"op": "placeholder", "name": "scale", "default": None},
        {"op": "call_module", "name": "y", "target": "fc", "args": ["%x"]},
        {"if": "scale is None",
         "then": [{"if": "training", "then": [{"op": "call_function", "name": "out", "target": "torch.nn.functional.dropout",
                                               "args": ["%y"], "kwargs": {"p": 0.5}}],
                   "else": [{"op": "alias", "name": "out", "args": ["%y"]}]}],
         "else": [{"op": "call_function", "name": "out", "target": "operator.mul", "args": ["%y", "%scale"]}]},
        {"op": "output", "args": ["%out"]},
    ],
}  # fmt: skip

X, S = torch.randn(3, 4), torch.full((4,), 2.0)


def _reference(m: torch.nn.Module, x: torch.Tensor, scale: torch.Tensor | None = None) -> torch.Tensor:
    y = m.fc(x)
    if scale is None:
        return F.dropout(y, 0.5) if m.training else y
    return y * scale


def _seeded(f: Any, *args: Any, **kwargs: Any) -> Any:
    torch.manual_seed(1)
    return f(*args, **kwargs)


def _check(gm: torch.nn.Module) -> None:
    for mode in (True, False, True):
        gm.train(mode)
        for args, kwargs in (((X,), {}), ((X, S), {}), ((X,), {"scale": S}), ((X, None), {}), ((X,), {"scale": None})):
            assert torch.equal(_seeded(gm, *args, **kwargs), _seeded(_reference, gm, *args, **kwargs))


def test_each_call_runs_the_graph_of_the_inputs_it_leaves_out_in_the_current_mode() -> None:
    gm = fxgen.load(SPEC)
    assert isinstance(gm, ModeGraphModule) and isinstance(gm, torch.fx.GraphModule)
    _check(gm)
    gm.eval()
    assert "scale" in gm.code and "dropout" not in gm.code  # gm.graph: the current mode, every input given
    assert list(gm.state_dict()) == ["fc.weight", "fc.bias"]


def test_copies_and_pickles_keep_every_case() -> None:
    for copied in (copy.deepcopy, _pickled):
        _check(copied(fxgen.load(SPEC).eval()))


def _pickled(gm: torch.nn.Module) -> torch.nn.Module:
    buffer = io.BytesIO()
    torch.save(gm, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def test_the_generated_forward_writes_the_test(tmp_path: Path) -> None:
    source = fxgen.generate(SPEC)
    assert "if scale is None:\n            if self.training:" in source
    generated = import_source(source, "gen_presence", tmp_path).Net()
    generated.load_state_dict(fxgen.load(SPEC).state_dict(), strict=True)
    _check(generated)


def test_to_spec_gives_the_items_back_and_refuses_an_edit() -> None:
    spec = as_spec(SPEC, DEFAULT_POLICY)
    gm = fxgen.load(spec)
    assert fxgen.to_spec(gm) == spec
    (fc,) = [n for n in gm.graph.nodes if n.op == "call_module"]
    fc.target = "fc"
    fc.args = (fc.args[0],)
    fc.name = "renamed"
    gm.recompile()
    with pytest.raises(ExportError, match="depends on which optional inputs a call gives"):
        fxgen.to_spec(gm)


def test_passes_refuse_a_spec_whose_graph_depends_on_the_inputs_given() -> None:
    data = {**SPEC, "nodes": [*SPEC["nodes"][:3], {**SPEC["nodes"][3], "then": [{"op": "alias", "name": "out",
                                                                              "args": ["%y"]}]}, SPEC["nodes"][4]]}  # fmt: skip
    with pytest.raises(SpecError, match=r"or on the optional inputs a call gives"):
        fxgen.transform(data, ["eliminate_dead_code"])


@settings(max_examples=property_budget(20), suppress_health_check=[HealthCheck.too_slow])
@given(presence_specs())
def test_drawn_presence_specs_compute_each_cases_own_graph(data: dict[str, Any]) -> None:
    """A drawn spec whose graph depends on an optional input (and perhaps the mode): the GraphModule
    and the generated class compute, called with and without it, in each mode, what that case's
    plain graph computes, seeded alike."""
    gm, generated = loaded_and_generated(data, "gen_presence")
    assert isinstance(gm, ModeGraphModule)
    inputs = inputs_for(data)
    name = next(n["name"] for n in data["nodes"] if n.get("default", 0) is None)
    for mode in (False, True, False):
        for given_ in (False, True):
            extra = {name: torch.ones(2, 4)} if given_ else {}
            env = {"training": mode, name: GIVEN if given_ else None}
            plain = {**data, "nodes": [node for node, _ in expand_nodes(data["nodes"], env)]}
            reference = fxgen.load(plain)
            reference.load_state_dict(gm.state_dict(), strict=True)
            reference.train(mode)
            want = _seeded(reference, *inputs, **extra)
            for built in (gm, generated):
                built.train(mode)
                assert_same(want, _seeded(built, *inputs, **extra))
