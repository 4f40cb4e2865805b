"""``fxgen.to_spec`` of what ``fxgen.load`` built from a spec with conditionals and repeats: the
classes come back as written (an instance's graph is one resolution of its class, and instances
of one class run different graphs), and a graph changed after loading is refused, since the
change cannot be written back into the conditionals and repeats."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import fxgen
from fxgen._errors import ExportError
from fxgen.check.validate import validate_data

CONV = {"class": "torch.nn.Conv2d", "args": [{"arg": "cin"}, {"arg": "cout"}, 1]}

SPEC: dict[str, Any] = {
    "fxgen": 2,
    "name": "Net",
    "args": {"n": {"type": "int", "default": 2}},
    "classes": {
        "Block": {
            "args": {"cin": "int", "cout": "int"},
            "values": {"use_res": "cin == cout"},
            "modules": {"conv": CONV},
            "nodes": [
                {"op": "placeholder", "name": "x"},
                {"op": "call_module", "name": "y", "target": "conv", "args": ["%x"]},
                {"if": "use_res",
                 "then": [{"op": "call_function", "name": "out", "target": "operator.add", "args": ["%x", "%y"]}],
                 "else": [{"op": "alias", "name": "out", "args": ["%y"]}]},
                {"op": "output", "args": ["%out"]},
            ],
        },
    },
    "modules": {
        "a": {"class": "Block", "args": [3, 4]},  # no residual
        "b": {"class": "Block", "args": [4, 4]},  # a residual: another graph of the same class
        "m": {"class": "torch.nn.ModuleList", "args": [[{"repeat": {"arg": "n"}, "module": {"class": "torch.nn.ReLU"}}]]},
    },
    "nodes": [
        {"op": "placeholder", "name": "x"},
        {"op": "call_module", "name": "h", "target": "a", "args": ["%x"]},
        {"op": "call_module", "name": "g", "target": "b", "args": ["%h"]},
        {"op": "alias", "name": "prev", "args": ["%g"]},
        {"for": "i", "in": "n", "nodes": [{"op": "call_module", "name": "r", "target": "m.{i}", "args": ["%prev"]}],
         "carry": {"prev": "%r"}},
        {"op": "output", "args": ["%prev"]},
    ],
}  # fmt: skip


@pytest.mark.parametrize("n", [0, 2])
def test_classes_come_back_as_written(n: int) -> None:
    spec = validate_data(SPEC)
    back = fxgen.to_spec(fxgen.load(spec, args={"n": n}))
    assert back == validate_data({**SPEC, "args": {"n": {"type": "int", "default": n}}})  # the loaded arguments as defaults
    if n != 2:
        return
    assert back == spec
    assert back.to_yaml() == spec.to_yaml()


def test_a_graph_changed_after_loading_is_refused() -> None:
    gm = fxgen.load(validate_data(SPEC))
    block = gm.get_submodule("b")
    add = next(node for node in block.graph.nodes if node.target is not None and "add" in str(node.target))
    add.target = torch.sub
    block.recompile()
    with pytest.raises(ExportError, match=r"no longer run the same graph.*export the model"):
        fxgen.to_spec(gm)
