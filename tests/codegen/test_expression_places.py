"""Every function of the expression grammar (``fxgen.spec.expr.FUNCTIONS``) in every place an
expression may stand, generated and run: the generated class imports what its code names
(``math`` for ``math.sqrt``) and computes what ``fxgen.load`` computes, at two argument values."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import assert_same, import_source

import fxgen
from fxgen.spec import expr

# An integer expression over ``n`` for each function: 1 to 9 at n = 4 and n = 9.
CALLS = {
    "min": "min(n, 3)", "max": "max(n, 2)", "round": "round(n / 2)", "int": "int(n / 2)",
    "ceil": "ceil(n / 3)", "floor": "floor(n / 3)", "abs": "abs(n - 6)", "sqrt": "int(sqrt(n))",
}  # fmt: skip

X = {"op": "placeholder", "name": "x", "type": "torch.Tensor"}
LINEAR = {"class": "torch.nn.Linear", "args": [4, 4]}


def _spec(**parts: Any) -> dict[str, Any]:
    return {"fxgen": 2, "name": "Net", "args": {"n": {"type": "int", "default": 4}}, **parts}


def _call(target: str, out: str = "y") -> list[dict[str, Any]]:
    return [X, {"op": "call_module", "name": out, "target": target, "args": ["%x"]}, {"op": "output", "args": [f"%{out}"]}]


def _fc_if(cond: str) -> list[Any]:
    return [X, {"if": cond, "then": [{"op": "call_module", "name": "y", "target": "fc", "args": ["%x"]}],
                "else": [{"op": "alias", "name": "y", "args": ["%x"]}]}, {"op": "output", "args": ["%y"]}]  # fmt: skip


# place -> the spec using the integer expression ``e`` there
PLACES: dict[str, Callable[[str], dict[str, Any]]] = {
    "a named value": lambda e: _spec(values={"k": e}, modules={"fc": {"class": "torch.nn.Linear", "args": [4, {"arg": "k"}]}},
                                     nodes=_call("fc")),
    "a module argument": lambda e: _spec(modules={"fc": {"class": "torch.nn.Linear", "args": [4, {"arg": e}]}},
                                         nodes=_call("fc")),
    "a module keyword": lambda e: _spec(modules={"fc": {"class": "torch.nn.Linear", "args": [4], "kwargs": {"out_features": {"arg": e}}}},
                                        nodes=_call("fc")),
    "an init argument": lambda e: _spec(modules={"fc": {**LINEAR, "init": {"weight": {"constant": {"val": {"arg": e}}}}}},
                                        nodes=_call("fc")),
    "a parameter shape": lambda e: _spec(parameters={"w": {"shape": [{"arg": e}], "init": "ones"}},
                                         nodes=[X, {"op": "get_attr", "name": "w", "target": "w"},
                                                {"op": "output", "args": [{"tuple": ["%x", "%w"]}]}]),
    "a buffer shape": lambda e: _spec(buffers={"b": {"shape": [{"arg": e}, 2], "init": "ones"}},
                                      nodes=[X, {"op": "get_attr", "name": "b", "target": "b"},
                                             {"op": "output", "args": [{"tuple": ["%x", "%b"]}]}]),
    "a repeat count": lambda e: _spec(modules={"seq": {"class": "torch.nn.Sequential", "args": [{"repeat": {"arg": e}, "module": LINEAR}]}},
                                      nodes=_call("seq")),
    "a module loop's count": lambda e: _spec(modules={"seq": {"class": "torch.nn.Sequential", "args": [{"for": "i", "in": {"arg": e}, "module": LINEAR}]}},
                                             nodes=_call("seq")),
    "a module loop's row": lambda e: _spec(modules={"seq": {"class": "torch.nn.Sequential", "args": [
                                               {"for": "c", "in": [{"arg": e}], "module": {"class": "torch.nn.Linear", "args": [4, {"arg": "c"}]}}]}},
                                           nodes=_call("seq")),
    "a module condition": lambda e: _spec(modules={"fc": {**LINEAR, "if": f"{e} > 1"}}, nodes=_fc_if(f"{e} > 1")),
    "a node argument": lambda e: _spec(nodes=[X, {"op": "call_function", "name": "y", "target": "torch.mul", "args": ["%x", {"arg": e}]},
                                              {"op": "output", "args": ["%y"]}]),
    "a node-list condition": lambda e: _spec(modules={"fc": LINEAR}, nodes=_fc_if(f"{e} > 2")),
    "a node loop's count": lambda e: _spec(nodes=[X, {"op": "alias", "name": "acc", "args": ["%x"]},
                                                  {"for": "i", "in": e, "nodes": [
                                                      {"op": "call_function", "name": "s", "target": "torch.add", "args": ["%acc", {"arg": "i + 1"}]}],
                                                   "carry": {"acc": "%s"}},
                                                  {"op": "output", "args": ["%acc"]}]),
    "a named function's return": lambda e: _spec(functions={"f": {"args": {"n": "int"}, "return": e, "type": "int"}},
                                                 modules={"fc": {"class": "torch.nn.Linear", "args": [4, {"arg": "f(n)"}]}},
                                                 nodes=_call("fc")),
    "a named function's value": lambda e: _spec(functions={"f": {"args": {"n": "int"}, "values": {"k": e}, "return": "k", "type": "int"}},
                                                modules={"fc": {"class": "torch.nn.Linear", "args": [4, {"arg": "f(n)"}]}},
                                                nodes=_call("fc")),
    "a block's value and node argument": lambda e: _spec(
        classes={"Block": {"args": {"n": "int"}, "values": {"k": e},
                           "nodes": [X, {"op": "call_function", "name": "y", "target": "torch.mul", "args": ["%x", {"arg": f"k * {e}"}]},
                                     {"op": "output", "args": ["%y"]}]}},
        modules={"b": {"class": "Block", "args": [{"arg": "n"}]}}, nodes=_call("b")),
    "a check": lambda e: _spec(inputs={"x": {"shape": ["n", 4]}}, checks=[f"{e} > 1"],
                               nodes=[X, {"op": "call_function", "name": "y", "target": "torch.neg", "args": ["%x"]},
                                      {"op": "output", "args": ["%y"]}]),
}  # fmt: skip


def test_every_function_of_the_grammar_is_tried() -> None:
    assert set(CALLS) == set(expr.FUNCTIONS)


def _outcome(module: torch.nn.Module, x: torch.Tensor) -> Any:
    """What a call gives: its output, or the ValueError a check raised (its message)."""
    try:
        return module(x)
    except ValueError as exc:
        return f"ValueError: {exc}"


@pytest.mark.parametrize("function", sorted(CALLS))
@pytest.mark.parametrize("place", sorted(PLACES))
def test_the_generated_class_runs_every_function_everywhere(place: str, function: str, tmp_path: Path) -> None:
    data = PLACES[place](CALLS[function])
    source = fxgen.generate(data)
    module = import_source(source, f"fxgen_places_{abs(hash((place, function)))}", tmp_path)
    for n in (4, 9):
        args = {} if place == "a check" else {"n": n}  # a check's n is the input's first dimension
        loaded = fxgen.load(data, args=args)
        torch.manual_seed(0)
        made = module.Net(**args)
        made.load_state_dict(loaded.state_dict(), strict=True)
        x = torch.arange(n * 4, dtype=torch.float32).reshape(n, 4)
        assert_same(_outcome(made, x), _outcome(loaded, x))
