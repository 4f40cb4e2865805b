"""The GraphModule a load makes compiles each distinct forward once per process
(``fxgen.assemble.module.set_graph``). These tests pin that it is still exactly what torch.fx
makes of the same graph: the same code, attributes and results; a forward bound to its own
graph's globals even when another graph has the same source; and every GraphModule behaviour
after it (recompiling after an edit, printing, pickling, copying, tracebacks, torch.compile).
"""

from __future__ import annotations

import copy
import operator
import pickle
import traceback
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.fx
from conftest import marked_examples
from helpers import assert_same, example_inputs

import fxgen
from fxgen.assemble import module as building

ROOT = Path(__file__).resolve().parents[2]


def _graph_modules(gm: torch.nn.Module) -> list[tuple[str, torch.fx.GraphModule]]:
    return [(path, m) for path, m in gm.named_modules() if isinstance(m, torch.fx.GraphModule)]


@pytest.mark.parametrize("path", marked_examples())  # the large examples: CI's second step
def test_each_graph_module_is_what_torch_fx_makes_of_its_graph(path: Path) -> None:
    """Every GraphModule of a load (format-2 blocks included) against torch.fx's own
    ``GraphModule(module, graph)`` of a copy of its graph: code, attribute names, the compiled
    forward's bytecode and constants, and the outputs. The second load reuses the code generated
    for the first (``_generated``): it must be just as exact."""
    torch.manual_seed(0)
    fxgen.load(path)
    gm = fxgen.load(path).eval()
    for where, sub in _graph_modules(gm):
        ref = torch.fx.GraphModule(sub, sub.graph, class_name=type(sub).__name__)
        sub.graph.owning_module = sub
        assert sub.code == ref.code, where
        assert sub._lineno_map == ref._lineno_map and sub._prologue_start == ref._prologue_start
        ours, theirs = type(sub).forward, type(ref).forward
        assert ours.__code__.co_code == theirs.__code__.co_code, where
        assert ours.__code__.co_consts == theirs.__code__.co_consts
        assert ours.__defaults__ == theirs.__defaults__ and ours.__annotations__ == theirs.__annotations__
        assert {k: id(v) for k, v in ours.__globals__.items() if not k.startswith("__")} == {
            k: id(v) for k, v in theirs.__globals__.items() if not k.startswith("__")
        }
        assert "_wrapped_call" in vars(type(sub)) and "__call__" in vars(type(sub))
    ref = torch.fx.GraphModule(gm, gm.graph, class_name=type(gm).__name__).eval()
    inputs = example_inputs(path)
    assert_same(gm(**inputs), ref(**inputs))


def test_a_second_load_reuses_the_compiled_code_but_makes_its_own_forward() -> None:
    path = ROOT / "model_specs" / "mlp.yaml"
    a, b = fxgen.load(path), fxgen.load(path)
    fa, fb = type(a).forward, type(b).forward
    assert fa.__code__ is fb.__code__  # compiled once
    assert fa is not fb and fa.__globals__ is not fb.__globals__ and type(a) is not type(b)


def _named(fn: Any, name: str) -> Any:
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    return fn


def _graph_calling(fn: Any) -> torch.fx.Graph:
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(fn, (x,)))
    return graph


def test_the_same_source_with_other_globals_calls_its_own_objects() -> None:
    """Two functions torch.fx names alike give two graphs with one source text: each forward
    must call its own graph's function (the cache holds code, never globals)."""
    double = _named(lambda x: x * 2, "scale_it")
    triple = _named(lambda x: x * 3, "scale_it")
    gms = []
    for fn in (double, triple):
        gm = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph())
        building.set_graph(gm, _graph_calling(fn))
        gms.append(gm)
    assert gms[0].code == gms[1].code
    assert type(gms[0]).forward.__code__ is type(gms[1]).forward.__code__
    assert gms[0](torch.tensor(1.0)).item() == 2.0 and gms[1](torch.tensor(1.0)).item() == 3.0


def test_edits_recompile_and_a_new_graph_replaces_the_forward() -> None:
    gm = fxgen.load(ROOT / "model_specs" / "mlp.yaml").eval()
    x = next(iter(example_inputs(ROOT / "model_specs" / "mlp.yaml").values()))
    before = gm(x)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    with gm.graph.inserting_before(output):
        negated = gm.graph.call_function(operator.neg, (output.args[0],))
    output.args = (negated,)
    gm.recompile()
    assert "neg" in gm.code
    assert torch.equal(gm(x), -before)
    gm.graph = _graph_calling(torch.relu)  # torch.fx's setter
    assert torch.equal(gm(torch.tensor([-1.0, 2.0])), torch.tensor([0.0, 2.0]))


@pytest.mark.parametrize("name", ["mlp", "unet"])  # format 1, and format 2 with nested blocks
def test_printing_pickling_and_copying_keep_working(name: str) -> None:
    path = ROOT / "model_specs" / f"{name}.yaml"
    gm = fxgen.load(path).eval()
    inputs = example_inputs(path)
    expected = gm(**inputs)
    assert gm.code in str(gm)
    assert "def forward" in gm.print_readable(print_output=False)
    for other in (pickle.loads(pickle.dumps(gm)), copy.deepcopy(gm), copy.copy(gm)):
        assert_same(other.eval()(**inputs), expected)  # pickling traces the code again: other names


def test_errors_show_the_lines_of_a_reused_forward(capsys: pytest.CaptureFixture[str]) -> None:
    """The source stays registered (linecache) under the name the code was compiled with:
    tracebacks and torch.fx's own error message show the generated lines."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.matmul, (x, x)))
    for _ in range(2):
        gm = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph())
        building.set_graph(gm, copy.deepcopy(graph))
        with pytest.raises(RuntimeError) as info:
            gm.forward(torch.ones(2, 3))
        assert "matmul = torch.matmul(x, x)" in "".join(traceback.format_tb(info.tb))
        with pytest.raises(RuntimeError):
            gm(torch.ones(2, 3))
        assert "matmul = torch.matmul(x, x)" in capsys.readouterr().err


def test_torch_compile_runs_a_loaded_module() -> None:
    path = ROOT / "model_specs" / "mlp.yaml"
    gm = fxgen.load(path).eval()
    inputs = example_inputs(path)
    compiled = torch.compile(gm, backend="eager", fullgraph=True)
    assert_same(compiled(**inputs), gm(**inputs))


def test_graphs_torch_fx_compiles_otherwise_take_its_own_recompile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pytree code generation (and profiler metadata) are left to torch.fx's recompile."""
    monkeypatch.setattr(building, "_compiled", lambda *a: pytest.fail("compiled by fxgen"))

    def pairs(d: dict[str, torch.Tensor]) -> torch.Tensor:
        return d["a"] + d["b"]

    ph = torch.fx._symbolic_trace.PH
    graph = torch.fx.symbolic_trace(pairs, concrete_args={"d": {"a": ph, "b": ph}}).graph
    assert isinstance(graph._codegen, torch.fx.graph._PyTreeCodeGen)
    gm = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph())
    building.set_graph(gm, graph)
    assert gm.graph is graph and gm({"a": torch.tensor(1), "b": torch.tensor(2)}).item() == 3


def test_the_cache_keeps_within_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    cache: building._Cache[Any] = building._Cache(400)
    monkeypatch.setattr(building, "_code_cache", cache)
    for k in range(6):
        gm = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph())
        graph = torch.fx.Graph()
        x = graph.placeholder("x")
        graph.output(graph.call_function(operator.add, (x, k)))
        building.set_graph(gm, graph)
        assert gm(torch.tensor(1)).item() == 1 + k
    assert cache._size <= 400
    assert 0 < len(cache._entries) < 6


@pytest.fixture
def generations(monkeypatch: pytest.MonkeyPatch) -> list[torch.fx.Graph]:
    """The non-empty graphs torch.fx generates code for from now on, nothing generated before
    reused (a fresh ``_generated``)."""
    monkeypatch.setattr(building, "_generated", building._Cache(building._CODE_BUDGET))
    generated: list[torch.fx.Graph] = []
    real = torch.fx.Graph.python_code

    def counted(graph: torch.fx.Graph, *args: Any, **kwargs: Any) -> Any:
        if len(graph.nodes):  # not the GraphModule constructor's empty graph
            generated.append(graph)
        return real(graph, *args, **kwargs)

    monkeypatch.setattr(torch.fx.Graph, "python_code", counted)
    return generated


def test_a_spec_loaded_again_reuses_the_code_generated_for_it(generations: list[torch.fx.Graph]) -> None:
    spec = fxgen.load_spec(ROOT / "model_specs" / "resnet.yaml")
    first = fxgen.load(spec)
    made = len(generations)
    assert made == len({type(m).__name__ for _, m in _graph_modules(first)})
    again = fxgen.load(spec)
    reread = fxgen.load(ROOT / "model_specs" / "resnet.yaml")  # another Spec with the same nodes
    assert len(generations) == made
    for gm in (again, reread):
        assert [(p, m.code) for p, m in _graph_modules(gm)] == [(p, m.code) for p, m in _graph_modules(first)]
        assert type(gm).forward is not type(first).forward and gm.graph is not first.graph


def test_an_edited_spec_gets_code_for_its_new_nodes(generations: list[torch.fx.Graph]) -> None:
    path = ROOT / "model_specs" / "mlp.yaml"
    spec = fxgen.load_spec(path)
    inputs = example_inputs(path)
    before = fxgen.load(spec).eval()
    output = spec.nodes[-1]
    spec.nodes.insert(-1, type(output)(op="call_function", name="negated", target="operator.neg",
                                       args=[output.args[0]]))  # fmt: skip
    output.args = ["%negated"]
    after = fxgen.load(spec).eval()
    after.load_state_dict(before.state_dict())
    assert "negated = -residual" in after.code and len(generations) == 2
    assert_same(after(**inputs), -before(**inputs))


def test_another_policy_generates_its_own_code(generations: list[torch.fx.Graph]) -> None:
    """Code reused across loads was generated with the same policy: another resolves names anew."""
    spec = fxgen.load_spec(ROOT / "model_specs" / "mlp.yaml")
    fxgen.load(spec)
    fxgen.load(spec, allow=["operator.neg"])
    fxgen.load(spec, allow=["operator.neg"])  # a policy of its own each time
    assert len(generations) == 3


def test_the_instances_of_a_block_share_the_code_generated_for_the_first(
    generations: list[torch.fx.Graph],
) -> None:
    """Within one load, every instance of a block class has the same graph: torch.fx generates
    its code once per class, and each instance still gets its own graph and forward."""
    path = ROOT / "model_specs" / "resnet.yaml"
    gm = fxgen.load(path)
    blocks = [m for _, m in _graph_modules(gm)]
    assert len({type(m).__name__ for m in blocks}) == len(generations) < len(blocks)
    by_class: dict[str, list[torch.fx.GraphModule]] = {}
    for m in blocks:
        by_class.setdefault(type(m).__name__, []).append(m)
    for same in by_class.values():
        assert len({m.code for m in same}) == 1
        assert len({id(m.graph) for m in same}) == len({id(type(m).forward) for m in same}) == len(same)
        assert all(m.graph.owning_module is m for m in same)
