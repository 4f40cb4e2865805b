"""A TorchDynamo capture keeps the model's classes too: its one graph is split by the module
calls each node ran inside (``fxgen.capture.partition``).

Each case runs every promise of ``bench/parity.py`` (checkpoint parity into ``fxgen.load`` and
the generated class, outputs ``torch.equal`` to a never-exported instance, the model left as it
was, a second export equal to the first) and then says what the blocks look like.
"""

from __future__ import annotations

import sys
import typing
import warnings
from pathlib import Path
from typing import Any

import dynamo_fixtures as dfx
import export_fixtures as efx
import pytest
import reference_models as ref
import torch
from helpers import property_budget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import fxgen
from fxgen.capture.export import dynamo_graph
from fxgen.capture.hierarchy import NotTheSame, verify
from fxgen.capture.options import CaptureOptions
from fxgen.capture.partition import partition_blocks
from fxgen.cli.main import main
from fxgen.spec.model import ForNodes, Node, walk_nodes

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from parity import check_parity

IMAGE = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))


def _dynamo(inputs: Any) -> dict[str, Any]:
    return {"capture": "dynamo", "example_inputs": inputs}


def _seeded(cls: type[nn.Module]) -> Any:
    def build() -> nn.Module:
        torch.manual_seed(0)
        return cls()

    return build


def _exported(model: nn.Module, inputs: Any) -> tuple[fxgen.Spec, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = fxgen.export(model.eval(), **_dynamo(inputs))
    return spec, [str(w.message) for w in caught]


@pytest.mark.slow  # a whole ResNet captured by TorchDynamo (the Staged capture's test keeps classes in python -m pytest)
def test_a_captured_resnet_keeps_the_classes_tracing_keeps(tmp_path: Path) -> None:
    """torchvision's layout: the same classes, arguments and Sequentials as the traced export;
    the block graphs differ only where Dynamo records what the code does (``out += identity``
    is ``operator.iadd``)."""

    def build() -> nn.Module:
        torch.manual_seed(0)
        with fxgen.record_constructors(ref.BasicBlock):
            return ref.ResNet((2, 2, 2, 2), num_classes=10, width=8)

    captured = check_parity(build, (torch.randn(1, 3, 32, 32),), tmp_path, export_options=_dynamo(IMAGE))
    traced = fxgen.export(build().eval())
    assert captured.fxgen == 2 and list(captured.classes) == list(traced.classes) == ["BasicBlock"]
    assert captured.modules == traced.modules
    for name, block in traced.classes.items():
        assert captured.classes[name].args == block.args and captured.classes[name].modules == block.modules
        ops = [(n.op, n.target) for n in walk_nodes(captured.classes[name].nodes)]
        assert ops == [(n.op, "operator.iadd" if n.target == "operator.add" else n.target) for n in walk_nodes(block.nodes)]
    assert [n.name for n in walk_nodes(captured.classes["BasicBlock"].nodes) if n.op == "placeholder"] == ["x"]
    assert "checks declare" in (captured.doc or "")


class Gate(nn.Module):
    """A block with two inputs, a result its caller indexes, and its own parameter."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.gain = nn.Parameter(torch.linspace(0.5, 1.5, width))

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.sigmoid(self.fc(x)) * self.gain
        return h + skip, h


class Body(nn.Module):
    """Nested blocks; shapes read from the input (what torch.fx cannot iterate over)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.gates = nn.ModuleList([Gate(width), Gate(width)])
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        batch, width = x.shape
        for gate in self.gates:
            x, h = gate(x, x * 0.5)
            x = x + h.mean(0) + bias
        return self.norm(x).reshape(batch, width)


class Model(nn.Module):
    def __init__(self, width: int = 6) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.full((width,), 0.25))  # the top's own, handed to a block
        self.body = Body(width)
        self.act = nn.GELU()
        self.twice = Gate(width)  # one instance called twice
        self.head = nn.Sequential(nn.Linear(width, 3), nn.Tanh())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.body(x, self.bias))
        for _ in range(2):
            a, b = self.twice(x, -x)
            x = a * b
        return self.head(x)


def test_nested_blocks_tuples_a_tensor_passed_in_and_an_instance_called_twice(tmp_path: Path) -> None:
    inputs = (torch.randn(4, 6),)
    spec = check_parity(_seeded(Model), inputs, tmp_path, export_options=_dynamo(inputs))
    assert list(spec.classes) == ["Gate", "Body"]
    assert spec.classes["Gate"].doc == "A block with two inputs, a result its caller indexes, and its own parameter."
    gate = spec.classes["Gate"]
    assert [n.op for n in gate.nodes].count("placeholder") == 2 and list(gate.parameters) == ["gain"]
    assert gate.nodes[-1].args == [{"tuple": ["%mul", "%add"]}]  # both results, in the order computed
    body = spec.classes["Body"]
    # placeholders are named after the parameters they came in by (measured: fxgen.capture.arguments)
    assert [n.name for n in body.nodes if isinstance(n, Node) and n.op == "placeholder"] == ["x", "bias"]  # the top's bias comes in
    (loop,) = [n for n in body.nodes if isinstance(n, ForNodes)]  # `for gate in self.gates`, captured by Dynamo
    assert (loop.count, [n.target for n in loop.nodes if n.op == "call_module"]) == (2, ["gates.{i}"])
    assert [n.name for n in gate.nodes if n.op == "placeholder"] == ["x", "skip"]
    assert [n.target for n in spec.nodes if n.op == "call_module"] == ["body", "act", "twice", "twice", "head"]
    assert "bias" in spec.parameters and "bias" not in body.parameters


def test_a_hierarchy_that_is_not_the_captured_graph_is_refused() -> None:
    """The check that makes the split trustworthy can fail: change one node of one block's graph
    and it names that block's class."""
    model = Model().eval()
    gm, _ = dynamo_graph(model, (torch.randn(4, 6),), None, ())
    hierarchy = partition_blocks(model, gm, [Gate, Body], CaptureOptions())
    assert set(hierarchy.blocks) == {id(model.body), id(model.twice), *map(id, model.body.gates)}
    assert hierarchy.flat is not None  # the captured graph, each get_attr where it is read
    sigmoid = next(n for n in hierarchy.blocks[id(model.twice)].graph.nodes if n.target is torch.sigmoid)
    sigmoid.target = torch.tanh
    with pytest.raises(NotTheSame) as raised:
        verify(hierarchy, hierarchy.flat, {id(m): m for m in model.modules()})
    assert raised.value.culprit is Gate


class Leaky(nn.Module):
    """Calls a module it does not own (the model's, kept off its own registry)."""

    def __init__(self, act: nn.Module) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        object.__setattr__(self, "borrowed", act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.borrowed(self.fc(x))


class Borrows(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.act = nn.ReLU()
        self.inner = Leaky(self.act)
        self.mlp = Gate(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.act(self.inner(x)), x)[1]


def test_a_block_calling_a_module_it_does_not_own_is_inlined_with_a_note(tmp_path: Path) -> None:
    inputs = (torch.randn(2, 4),)
    spec = check_parity(_seeded(Borrows), inputs, tmp_path, export_options=_dynamo(inputs))
    assert list(spec.classes) == ["Gate"]
    _, notes = _exported(Borrows(), inputs)
    assert any("Leaky is inlined into its parent" in n and "not one of its own modules" in n for n in notes)


def test_partition_names_the_class_it_cannot_keep() -> None:
    model = Borrows().eval()
    gm, _ = dynamo_graph(model, (torch.randn(2, 4),), None, ())
    with pytest.raises(NotTheSame) as raised:
        partition_blocks(model, gm, [Leaky], CaptureOptions())
    assert raised.value.culprit is Leaky


class Unit(nn.Module):
    def __init__(self, cin: int, cout: int, double: bool) -> None:
        super().__init__()
        self.fc = nn.Linear(cin, cout)
        self.double = double

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return torch.cat([y, y], dim=-1) if self.double else y.relu()


class Chain(nn.Module):
    def __init__(self, layers: list[tuple[int, int, bool]], wrap: bool) -> None:
        super().__init__()
        units = [Unit(cin, cout, double) for cin, cout, double in layers]
        self.body = nn.Sequential(*units, nn.Identity()) if wrap else nn.ModuleList(units)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if isinstance(self.body, nn.Sequential):
            return self.body(x)
        for unit in self.body:
            x = unit(x)
        return x


@st.composite
def chains(draw: st.DrawFn) -> tuple[list[tuple[int, int, bool]], bool]:
    width = draw(st.sampled_from([2, 3]))
    layers = []
    for _ in range(draw(st.integers(1, 4))):
        cout, double = draw(st.sampled_from([2, 3])), draw(st.booleans())
        layers.append((width, cout, double))
        width = cout * 2 if double else cout
    return layers, draw(st.booleans())


@settings(max_examples=property_budget(10), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(chains())
def test_random_chains_export_exactly(tmp_path: Path, case: tuple[list[tuple[int, int, bool]], bool]) -> None:
    layers, wrap = case

    def build() -> nn.Module:
        torch.manual_seed(0)
        return Chain(layers, wrap)

    inputs = (torch.randn(2, layers[0][0]),)
    spec = check_parity(build, inputs, tmp_path, export_options=_dynamo(inputs))
    assert spec.fxgen == 2 and set(spec.classes) <= {"Unit", "Unit2"}
    # the graphs differ only by the branch taken: one class per branch, widths as arguments
    assert len(spec.classes) == len({double for *_, double in layers})
    assert fxgen.to_spec(fxgen.load(spec)) == spec


def test_flat_still_gives_one_graph() -> None:
    spec = fxgen.export(Model().eval(), flat=True, **_dynamo((torch.randn(4, 6),)))
    assert spec.fxgen == 1 and not spec.classes and "body.gates.0.fc" in spec.modules


class ReadsABlocksBuffer(nn.Module):
    """Hugging Face's layout: the model slices a buffer of its embeddings block and hands it in."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = efx.Embed()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.embed(x, self.embed.ids[: x.shape[1]].expand(x.shape[0], -1))


def test_a_parent_reading_a_blocks_buffer_leaves_the_model_as_it_was(tmp_path: Path) -> None:
    inputs = (torch.tensor([[1, 2, 3], [4, 5, 6]]),)
    spec = check_parity(_seeded(ReadsABlocksBuffer), inputs, tmp_path, export_options=_dynamo(inputs))
    assert [n.target for n in spec.nodes if n.op == "get_attr"] == ["embed.ids"]
    model = ReadsABlocksBuffer()
    fxgen.export(model, **_dynamo(inputs))
    assert list(model.state_dict()) == ["embed.emb.weight"]  # the buffer is still not persistent


class Copies(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = Gate(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gate(x, x.clone())[0]


def test_inputs_that_cannot_be_told_apart_keep_plain_names(tmp_path: Path) -> None:
    """Two equal values: which parameter each came in by is not known, so neither is named."""
    inputs = (torch.randn(2, 4),)
    spec = check_parity(_seeded(Copies), inputs, tmp_path, export_options=_dynamo(inputs))
    assert [n.name for n in spec.classes["Gate"].nodes if n.op == "placeholder"] == ["arg0", "arg1"]


def test_cli_keeps_the_classes_of_a_dynamo_capture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, weights = tmp_path / "staged.yaml", tmp_path / "staged.safetensors"
    assert main(["export", "dynamo_fixtures:Staged", "--example-input", "x=float32[1,3,8,8]", "--out", str(out),
                 "--weights", str(weights)]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "captured with TorchDynamo" in err and "1 block class\n" in err, err
    spec = fxgen.load_spec(out)
    assert list(spec.classes) == ["Stage"]  # widths named after what they feed: nothing recorded them
    assert list(spec.classes["Stage"].args) == ["in_channels", "out_channels"]
    assert spec.modules["stages"].cls == "torch.nn.Sequential"
    x = torch.randn(1, 3, 8, 8)
    with torch.no_grad():
        assert torch.equal(fxgen.load(out, weights=weights).eval()(x), dfx.Staged().eval()(x))
    assert main(["export", "dynamo_fixtures:Staged", "--example-input", "x=float32[1,3,8,8]", "--flat",
                 "--out", str(out)]) == 0  # fmt: skip
    assert not fxgen.load_spec(out).classes


# -- a symbolic trace is split the same way ------------------------------------------------------
class Root(nn.Module):
    """DLA's root: a list of extra inputs, concatenated."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc = nn.Linear(width, 2)

    def forward(self, x2: torch.Tensor, x1: torch.Tensor, extra: list[torch.Tensor]) -> torch.Tensor:
        return self.fc(torch.cat([x2, x1, *extra], dim=-1))


class Pairwise(nn.Module):
    """Returns a tuple of which its callers read only the first item."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.fc(x)
        return y.relu(), y


class Tree(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stages = nn.Sequential(nn.Sequential(Pairwise2(), Pairwise2()), Pairwise2())
        self.pair = Pairwise()
        self.root = Root(6)
        self.root2 = Root(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(x)
        a, _ = self.pair(x)
        b, _ = self.pair(a)
        return self.root(a, b, [x]) + self.root2(b, a, [x, a * 2])


class Pairwise2(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).tanh()


def test_a_trace_is_split_once_with_names_returns_and_annotations_of_the_source(tmp_path: Path) -> None:
    spec = check_parity(_seeded(Tree), (torch.randn(3, 2),), tmp_path)
    assert set(spec.classes) == {"Pairwise", "Pairwise2", "Root", "Root2"}
    pairwise = spec.classes["Pairwise"].nodes
    assert (pairwise[0].name, pairwise[0].type) == ("x", "torch.Tensor")
    assert pairwise[-1].args == [{"tuple": ["%relu", "%fc"]}]  # what forward returns, not what is read
    assert pairwise[-1].type == "tuple[torch.Tensor, torch.Tensor]"
    inputs = {name: [n.name for n in c.nodes if n.op == "placeholder"] for name, c in spec.classes.items()}
    assert inputs["Root"] == ["x2", "x1", "extra_0"] and inputs["Root2"] == ["x2", "x1", "extra_0", "extra_1"]
    # a Sequential inside a kept Sequential is called whole too
    assert spec.modules["stages"].cls == "torch.nn.Sequential"
    assert next(n.target for n in spec.nodes if n.op == "call_module") == "stages"


@pytest.mark.parametrize("tracer_class", [None, efx.RunsModulesItself])
def test_a_trace_is_not_traced_again(monkeypatch: pytest.MonkeyPatch, tracer_class: type | None) -> None:
    """Any tracer's trace is split by the calls it recorded: the model is traced once (it reads
    no mode, so one trace stands for both: fxgen.capture.modes.ModeWatch), no block again."""
    traced: list[type] = []
    real = torch.fx.Tracer.trace

    def counted(self: torch.fx.Tracer, root: Any, *args: Any, **kwargs: Any) -> Any:
        traced.append(type(root))
        return real(self, root, *args, **kwargs)

    monkeypatch.setattr(torch.fx.Tracer, "trace", counted)
    spec = fxgen.export(Tree().eval(), tracer_class=tracer_class)
    assert spec.fxgen == 2 and traced == [Tree]
    assert spec == fxgen.export(Tree().eval())  # the same classes as torch.fx's own tracer gives


def test_a_traced_graph_module_copies_and_pickles_without_the_recorded_calls() -> None:
    import copy
    import pickle

    from fxgen.capture.trace import CALLS_KEY, trace

    gm = trace(Tree().eval())
    recorded = gm.meta[CALLS_KEY]
    assert recorded.result("pair") is not None and set(recorded.parameters("root", Tree().root)) == {"x2", "x1", "extra_0"}
    assert copy.deepcopy(gm).meta[CALLS_KEY] is recorded
    again = pickle.loads(pickle.dumps(gm))
    assert CALLS_KEY not in again.meta or again.meta[CALLS_KEY].calls == {}
    x = torch.randn(3, 2)
    assert torch.equal(again(x), gm(x))


class Loose(nn.Module):
    """Annotations that do not describe what the block is given or returns."""

    def forward(self, x: torch.Tensor | None, y: tuple[torch.Tensor] | None) -> torch.Tensor:
        assert x is not None and y is not None
        return x + y, x  # type: ignore[operator, return-value]


class UsesLoose(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.loose = Loose()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.loose(x, x * 2)
        return a * b


def test_block_annotations_describe_what_the_block_is_given_and_returns(tmp_path: Path) -> None:
    spec = check_parity(_seeded(UsesLoose), (torch.randn(3, 2),), tmp_path)
    nodes = spec.classes["Loose"].nodes
    assert [(n.name, n.type) for n in nodes if n.op == "placeholder"] == [("x", "torch.Tensor"), ("y", None)]
    assert nodes[-1].args == [{"tuple": ["%add", "%x"]}] and nodes[-1].type is None


class _Cached(nn.Module):
    """Returns (hidden, None, None), as GPT2Block does without a cache, annotated loosely or exactly."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor | tuple[torch.Tensor], ...]:
        return x * 2, None, None


class _CachedExact(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None, None]:
        return x * 3, None, None


class _UsesCached(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.loose, self.exact = _Cached(), _CachedExact()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.exact(self.loose(x)[0])[0]


def test_a_return_annotation_is_kept_only_where_its_items_admit_the_constants_returned(tmp_path: Path) -> None:
    spec = check_parity(_seeded(_UsesCached), (torch.randn(3, 2),), tmp_path)
    assert spec.classes["Cached"].nodes[-1].type is None  # None is not a Tensor | tuple[Tensor]
    assert spec.classes["CachedExact"].nodes[-1].type == "tuple[torch.Tensor, typing.Optional[torch.Tensor], None]"


@pytest.mark.parametrize(
    ("annotation", "returned", "fits"),
    [
        (tuple[torch.Tensor, ...], ("node", None), False),
        (tuple[torch.Tensor | None, ...], ("node", None), True),
        (tuple[torch.Tensor, int], ("node", 3), True),
        (tuple[torch.Tensor, int], ("node", 3.0), False),
        (tuple[torch.Tensor, Any], ("node", "x"), True),
        (tuple[torch.Tensor], ("node", "node"), False),
        (tuple, ("node", None), True),
        (list[torch.Tensor], ["node", None], False),
        (torch.Tensor, None, False),
        (typing.Optional[torch.Tensor], None, True),  # noqa: UP045
        (torch.Tensor, ("node",), False),
    ],
)
def test_fits(annotation: Any, returned: Any, fits: bool) -> None:
    from fxgen.capture.partition import _fits

    node = torch.fx.Graph().placeholder("x")
    value = type(returned)(node if v == "node" else v for v in returned) if isinstance(returned, (tuple, list)) else returned
    assert _fits(annotation, value) is fits


class _Scaled(nn.Module):
    """A layer scaled by a buffer the checkpoint does not carry."""

    def __init__(self, k: float) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("k", torch.full((4,), k), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.k


class _Stack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c, self.d = _Scaled(1.0), _Scaled(1.0), _Scaled(2.0), _Scaled(1.0)
        self.d.unused = nn.Linear(2, 2)  # never called: its state dict has more keys than the others'

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.d(self.c(self.b(self.a(x))))


@pytest.mark.parametrize("dynamo", [False, True])
def test_instances_with_equal_graphs_share_one_graph_module(tmp_path: Path, dynamo: bool) -> None:
    """One graph and GraphModule for the instances of a class whose graphs are equal; each still
    declares its own tensors (``c``'s buffer has other values: another class) and one whose state
    dict has other keys (``d``) has a graph module of its own. The proof walks every instance."""
    model = _seeded(_Stack)().eval()
    inputs = (torch.randn(3, 4),)
    flat = dynamo_graph(model, inputs, None, ())[0] if dynamo else fxgen.capture.trace.trace(model)
    hierarchy = partition_blocks(model, flat, [_Scaled], CaptureOptions())
    shared = hierarchy.blocks[id(model.a)]
    assert hierarchy.shared == {id(model.b): id(model.a), id(model.c): id(model.a)}
    assert hierarchy.blocks[id(model.b)] is shared and hierarchy.blocks[id(model.c)] is shared
    assert hierarchy.blocks[id(model.d)] is not shared
    spec = check_parity(_seeded(_Stack), inputs, tmp_path, export_options=_dynamo(inputs) if dynamo else {})
    assert [spec.modules[name].cls for name in "abcd"] == ["Scaled", "Scaled", "Scaled2", "Scaled3"]
    assert spec.classes["Scaled2"].buffers["k"].value == [2.0, 2.0, 2.0, 2.0]
    assert list(spec.classes["Scaled3"].parameters) == ["unused.weight", "unused.bias"]  # (state it never reads)


class _Unread(nn.Module):  # a block holding state its forward does not read
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)  # never called
        self.register_buffer("table", torch.arange(3.0))  # never read
        self.register_buffer("scratch", torch.zeros(2), persistent=False)
        self.gone = nn.Linear(4, 4)
        self.gone.bias = None  # (a None parameter is no state-dict entry)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class _Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = _Unread()
        self.unused = nn.BatchNorm1d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x).relu()


def test_a_blocks_unread_state_from_the_models_keys_is_its_own_state_dicts() -> None:
    """A block GraphModule declares the state its forward does not read from the model's one
    state dict (``declare_unread_state(keys=)``): the same entries as from the instance's own
    state dict, and its state dict has every key the instance's has."""
    from fxgen.capture.trace import declare_unread_state, trace

    model = nn.Sequential(_Outer(), _Outer())
    gm = trace(model)
    hierarchy = partition_blocks(model, gm, [_Outer, _Unread], CaptureOptions())
    for key, block_gm in hierarchy.blocks.items():
        instance = next(m for m in model.modules() if id(m) == key)
        assert set(instance.state_dict()) <= set(block_gm.state_dict()), type(instance).__name__
        for keys in (None, list(instance.state_dict(keep_vars=True))):
            again = torch.fx.GraphModule(instance, torch.fx.Graph())
            declare_unread_state(again, instance, keys)
            assert list(again.state_dict(keep_vars=True)) == list(instance.state_dict(keep_vars=True))
