"""Conditionals, repeats and aliases of nodes: what ``fxgen.spec.resolve`` makes of them for one
instance, and the rules ``fxgen.check.constructs`` checks on the items as written (the
catalogue in tests/bad_specs holds one spec per rule that a file shows best)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import fxgen
from fxgen.check.validate import validate_data
from fxgen.spec.expr import ExprError
from fxgen.spec.model import ForNodes, IfNodes, Node, item_from_data
from fxgen.spec.resolve import NodesError, expand_nodes, resolve_nodes, uses_training

X = {"op": "placeholder", "name": "x", "type": "torch.Tensor"}
FC = {"fc": {"class": "torch.nn.Linear", "args": [4, 4]}}


def _spec(nodes: list[dict[str, Any]], **args: Any) -> dict[str, Any]:
    return {"fxgen": 2, "name": "Net", "args": {k: {"type": type(v).__name__, "default": v} for k, v in args.items()},
            "modules": FC, "nodes": [X, *nodes]}  # fmt: skip


def _call(name: str, *args: Any, target: str = "fc") -> dict[str, Any]:
    return {"op": "call_module", "name": name, "target": target, "args": list(args)}


def _messages(data: dict[str, Any]) -> list[str]:
    with pytest.raises(fxgen.SpecError) as info:
        validate_data(data)
    return [d.message for d in info.value.diagnostics]


def test_an_alias_expands_to_nothing_and_its_uses_to_its_value() -> None:
    items = [X, {"op": "alias", "name": "a", "args": ["%x"]}, _call("y", "%a"), {"op": "output", "args": ["%y"]}]
    nodes = resolve_nodes([item_from_data(i) for i in items], {})
    assert [(n.op, n.name, n.args) for n in nodes] == [
        ("placeholder", "x", []), ("call_module", "y", ["%x"]), ("output", None, ["%y"])]  # fmt: skip


def test_an_item_of_a_collected_list_is_the_node_collected() -> None:
    """``qs[1]`` indexes a Python list in the generated class (no graph operation when torch.fx
    traces it), so the instance's graph holds none either; any other getitem stays a node."""
    loop = {"for": "i", "in": 3, "nodes": [_call("h", "%x")], "collect": "hs"}
    items = [X, loop, {"op": "call_function", "name": "a", "target": "operator.getitem", "args": ["%hs", 1]},
             {"op": "call_function", "name": "b", "target": "operator.getitem", "args": ["%hs", -1]},
             {"op": "call_function", "name": "c", "target": "operator.getitem", "args": ["%hs", 3]},  # past the end
             {"op": "call_function", "name": "d", "target": "operator.getitem", "args": ["%a", 0]},
             {"op": "output", "args": [{"tuple": ["%a", "%b", "%c", "%d"]}]}]  # fmt: skip
    flat = [node for node, _ in expand_nodes(items, {})]
    assert [n.get("name") for n in flat] == ["x", "h_0", "h_1", "h_2", "c", "d", None]
    assert flat[-3]["args"] == [["%h_0", "%h_1", "%h_2"], 3] and flat[-2]["args"] == ["%h_1", 0]
    assert flat[-1]["args"] == [{"tuple": ["%h_1", "%h_2", "%c", "%d"]}]


def test_nested_loops_name_nodes_as_torch_fx_does_and_carry_swaps_at_once() -> None:
    loop = {"for": "i", "in": 2, "nodes": [
        {"for": "j", "in": "i + 1", "nodes": [_call("h", "%a", target="m.{i}.{j}")], "collect": "hs"},
    ], "carry": {"a": "%b", "b": "%a"}}  # fmt: skip
    items = [X, {"op": "alias", "name": "a", "args": ["%x"]}, _call("b", "%x"), loop,
             {"op": "output", "args": [{"tuple": ["%a", "%b"]}]}]  # fmt: skip
    flat = [node for node, _ in expand_nodes(items, {})]
    assert [(n["name"], n["target"], n["args"]) for n in flat[1:-1]] == [
        ("b", "fc", ["%x"]), ("h_0_0", "m.0.0", ["%x"]), ("h_1_0", "m.1.0", ["%b"]), ("h_1_1", "m.1.1", ["%b"])]
    assert flat[-1]["args"] == [{"tuple": ["%x", "%b"]}]  # swapped twice


def test_each_node_is_located_at_the_item_it_comes_from() -> None:
    items = [X, {"if": "n > 1", "then": [_call("y", "%x")], "else": [_call("y", "%x", target="fc")]},
             {"op": "output", "args": ["%y"]}]  # fmt: skip
    assert [where for _, where in expand_nodes(items, {"n": 0})] == [("nodes", 0), ("nodes", 1, "else", 0), ("nodes", 2)]


def test_training_is_resolved_only_with_a_mode() -> None:
    items = [item_from_data(i) for i in [
        X, {"if": "training", "then": [_call("y", "%x")], "else": [{"op": "alias", "name": "y", "args": ["%x"]}]},
        {"op": "output", "args": ["%y"]}]]  # fmt: skip
    assert uses_training(items) and not uses_training([Node("placeholder", "x")])
    assert [n.name for n in resolve_nodes(items, {"training": True})] == ["x", "y", None]
    assert [n.name for n in resolve_nodes(items, {"training": False})] == ["x", None]
    with pytest.raises(NodesError, match="`training` is the module's mode") as info:
        resolve_nodes(items, {})
    assert isinstance(info.value, ExprError) and info.value.path == ("nodes", 1, "if")


def test_a_plain_list_is_its_own_resolution() -> None:
    nodes = [Node("placeholder", "x"), Node("output", args=["%x"])]
    assert resolve_nodes(nodes, {}) is nodes


def test_the_items_round_trip_through_the_spec_model() -> None:
    data = {"for": "i", "in": "n", "nodes": [{"if": True, "then": [_call("h", "%x")]}], "carry": {"x": "%h"},
            "collect": "hs"}  # fmt: skip
    item = item_from_data(data)
    assert isinstance(item, ForNodes) and isinstance(item.nodes[0], IfNodes)
    assert item.to_dict() == data


@pytest.mark.parametrize(("nodes", "message"), [
    ([{"if": True, "then": [{"op": "placeholder", "name": "z"}]}, {"op": "output", "args": ["%x"]}],
     "a placeholder node is an input of forward: declare it at the top of `nodes`"),
    ([{"for": "i", "in": 2, "nodes": [_call("x", "%x")]}, {"op": "output", "args": ["%x"]}],
     "node name 'x' inside a `for` is already a value outside it"),
    ([{"for": "n", "in": 2, "nodes": [_call("h", "%x")]}, {"op": "output", "args": ["%x"]}],
     "loop index 'n' is already an argument, value or node name here"),
    ([{"for": "len", "in": 2, "nodes": [_call("h", "%x")]}, {"op": "output", "args": ["%x"]}],
     "loop index 'len' would shadow a name the generated code uses"),
    ([{"for": "i", "in": 2, "nodes": [{"if": True, "then": [_call("h", "%x")]}], "collect": "hs"},
      {"op": "output", "args": ["%hs"]}], "collect 'hs' gathers each step's last value"),
    ([{"if": "n > 0", "then": [{"op": "output", "args": ["%x"]}]}, {"op": "output", "args": ["%x"]}],
     "a output node is what forward returns: end the top-level `nodes` with it"),
    ([{"if": "m > 0", "then": [_call("y", "%x")], "else": [_call("y", "%x")]}, {"op": "output", "args": ["%y"]}],
     "the condition `m > 0`: 'm' is not an argument or value of class 'Net'; declare it under `args`"),
])  # fmt: skip
def test_the_rules_of_the_items_as_written(nodes: list[dict[str, Any]], message: str) -> None:
    assert any(message in got for got in _messages(_spec(nodes, n=2))), _messages(_spec(nodes, n=2))


def test_a_value_used_only_in_a_condition_is_used() -> None:
    data = _spec([{"if": "deep", "then": [_call("y", "%x")], "else": [{"op": "alias", "name": "y", "args": ["%x"]}]},
                  {"op": "output", "args": ["%y"]}], n=2)  # fmt: skip
    data["values"] = {"deep": "n > 1"}
    spec = validate_data(data)
    assert [n.name for n in fxgen.load(spec).graph.nodes] == ["x", "y", "output"]
    assert [n.name for n in fxgen.load(spec, args={"n": 1}).graph.nodes] == ["x", "output"]


def test_a_block_nothing_uses_is_checked_as_written() -> None:
    data = _spec([{"op": "output", "args": ["%x"]}])
    data["classes"] = {"Unused": {"args": {"k": "int"}, "modules": FC, "nodes": [
        X, {"if": "k > 0", "then": [_call("y", "%x")]}, {"op": "output", "args": ["%y"]}]}}  # fmt: skip
    assert any("'y' is defined in only one branch" in m for m in _messages(data))
    fixed = copy.deepcopy(data)
    fixed["classes"]["Unused"]["nodes"][1]["else"] = [{"op": "alias", "name": "y", "args": ["%x"]}]
    validate_data(fixed)


def test_a_graph_that_depends_on_the_mode_is_checked_in_both() -> None:
    data = _spec([{"if": "training", "then": [_call("y", "%x", target="nope")], "else": [_call("y", "%x")]},
                  {"op": "output", "args": ["%y"]}])  # fmt: skip
    assert any("call_module target 'nope' is not declared" in m for m in _messages(data))


def test_a_load_whose_arguments_unroll_past_a_list_says_where() -> None:
    """Validation checks the instances the defaults make; other arguments at load time may take
    a branch that calls an item the list does not have (found by the fuzzer: it ran, and failed
    with torch's AttributeError when called)."""
    linear = {"class": "torch.nn.Linear", "args": [4, 4]}
    data = _spec([{"if": "n % 2 == 0",
                   "then": [{"for": "i", "in": 1, "nodes": [_call("h", "%x", target="m.{i}")], "collect": "hs"},
                            {"op": "call_function", "name": "y", "target": "torch.stack", "args": ["%hs"]}],
                   "else": [{"op": "alias", "name": "y", "args": ["%x"]}]},
                  {"op": "output", "args": ["%y"]}], n=1)  # fmt: skip
    data["modules"]["m"] = {"class": "torch.nn.ModuleList", "args": [[{"repeat": {"arg": "n"}, "module": linear}]]}
    spec = validate_data(data)
    assert fxgen.load(spec, args={"n": 2}) is not None
    with pytest.raises(fxgen.SpecError, match=r"call_module target 'm\.0' is not in this instance \(with n=0\)") as info:
        fxgen.load(spec, args={"n": 0})
    assert info.value.location.line > 0  # at the target in the spec's text
