"""The whole spec's budget (``fxgen.spec.budget``): what the check counts is what the build makes,
every instance of every block told, though the check looks at each distinct instance once."""

from __future__ import annotations

import textwrap

import pytest
import torch

import fxgen
import fxgen.check.checker
from fxgen.spec.budget import Budget

NESTED = textwrap.dedent("""\
    fxgen: 2
    name: Nested
    args: {n: {type: int, default: 3}}
    classes:
      Leaf:
        args: {k: {type: int, default: 1}}
        modules: {act: {class: torch.nn.ReLU}}
        nodes:
          - {op: placeholder, name: x}
          - for: i
            in: k
            carry: {x: "%y"}
            nodes: [{op: call_module, name: y, target: act, args: ["%x"]}]
          - {op: output, args: ["%x"]}
      Mid:
        args: {n: int}
        modules: {items: {class: torch.nn.Sequential, args: [{for: i, in: {arg: n}, module: {class: Leaf, args: [{arg: i + 1}]}}]}}
        nodes:
          - {op: placeholder, name: x}
          - {op: call_module, name: y, target: items, args: ["%x"]}
          - {op: output, args: ["%y"]}
    modules:
      items: {class: torch.nn.Sequential, args: [{repeat: {arg: n}, module: {class: Mid, args: [{arg: n}]}}]}
    nodes:
      - {op: placeholder, name: x}
      - {op: call_module, name: y, target: items, args: ["%x"]}
      - {op: output, args: ["%y"]}
    """)


def _counts(data: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """What the check of ``data`` charged the model's budget."""
    made: list[Budget] = []

    class Recorded(Budget):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(fxgen.check.checker, "Budget", Recorded)
    fxgen.load(_data(data))
    return made[0].counts


def _data(text: str) -> dict:
    import yaml

    return yaml.safe_load(text)


@pytest.mark.parametrize("n", [1, 3, 5])
def test_the_budget_counts_the_modules_and_nodes_the_build_makes(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """n instances of Mid, each of n Leaf instances (the same n in every Mid, so the check sees
    each Mid once), each Leaf unrolling a loop of its own length: the counts are those of the
    built model, its root aside."""
    text = NESTED.replace("default: 3}}", f"default: {n}}}}}", 1)
    counts = _counts(text, monkeypatch)
    gm = fxgen.load(_data(text))
    modules = [m for _, m in gm.named_modules(remove_duplicate=False)]
    assert counts["modules"] == len(modules) - 1
    graphs = [m.graph for m in modules if isinstance(m, torch.fx.GraphModule)]
    assert counts["nodes"] == sum(len(graph.nodes) for graph in graphs)
    assert counts["steps"] > 0


def test_each_copy_of_an_instance_is_charged_what_the_first_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """One more Mid instance (all alike) costs what one costs: the steps grow linearly in n for
    the repeated part, though the check evaluated that instance once."""
    steps = []
    for n in (2, 3, 4):
        text = NESTED.replace("default: 3}}", f"default: {n}}}}}", 1).replace("args: [{arg: n}]}}]}", "args: [2]}}]}")
        steps.append(_counts(text, monkeypatch)["steps"])
    assert steps[2] - steps[1] == steps[1] - steps[0] > 0


CALLS = textwrap.dedent("""\
    fxgen: 2
    name: Calls
    args: {n: {type: int, default: 3}}
    classes:
      Chain:
        args: {n: int}
        modules: {act: {class: torch.nn.ReLU}}
        nodes:
          - {op: placeholder, name: x}
          - for: i
            in: n
            carry: {x: "%y"}
            nodes: [{op: call_module, name: y, target: act, args: ["%x"]}]
          - {op: output, args: ["%x"]}
    modules:
      chain: {class: Chain, args: [{arg: n}]}
      chains: {class: torch.nn.Sequential, args: [{repeat: 2, module: {class: Chain, args: [2]}}]}
    nodes:
      - {op: placeholder, name: x}
      - for: i
        in: n
        carry: {x: "%y"}
        nodes: [{op: call_module, name: y, target: chain, args: ["%x"]}]
      - {op: call_module, name: z, target: chains, args: ["%x"]}
      - {op: call_module, name: w, target: chains.1, args: ["%z"]}
      - {op: output, args: ["%w"]}
    """)


def test_the_budget_counts_the_nodes_one_forward_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A block called in a loop runs its graph once per call (validation runs the forward on the
    declared inputs): the count is the nodes the loaded model's graphs run in one call, a
    Sequential's items and an item called by its path included."""
    counts = _counts(CALLS, monkeypatch)
    gm = fxgen.load(_data(CALLS))
    ran = [0]
    for module in gm.modules():
        if isinstance(module, torch.fx.GraphModule):
            module.register_forward_pre_hook(lambda m, args: ran.__setitem__(0, ran[0] + len(m.graph.nodes)))
    gm(torch.ones(2))
    assert counts["runs"] == ran[0] == 7 + 3 * 5 + 2 * 4 + 4  # the top graph, 3 calls of chain, chains, chains.1
