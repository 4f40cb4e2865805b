"""Hierarchical export (the default): the model's own classes become blocks of a format-2 spec.

Every case checks the promise that matters most, on the model itself: the original checkpoint
loads strictly into ``fxgen.load(spec)`` and into the generated class, and both compute exactly
what the original does. Around it: which classes are kept, shared and given arguments, and
which are inlined (with a note) because tracing them on their own would compute something else.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import export_fixtures as efx
import pytest
import reference_models as ref
import torch
import torch.nn.functional as F
from helpers import property_budget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import fxgen
from fxgen.capture.trace import trace
from fxgen.spec.model import IfNodes

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from parity import check_train, export_checked


def _generated(spec: fxgen.Spec) -> nn.Module:
    namespace: dict[str, Any] = {}
    exec(compile(fxgen.generate(spec), f"<generated {spec.name}>", "exec"), namespace)  # fxgen's own output
    return namespace[spec.name]()


def check_exact(model: nn.Module, *inputs: torch.Tensor) -> fxgen.Spec:
    """Export ``model`` and prove the spec and its generated class are the model, bit for bit."""
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no class silently inlined unless the test says so
        spec = fxgen.export(model)
    expected = model(*inputs)
    for built in (fxgen.load(spec), _generated(spec)):
        assert list(built.state_dict()) == list(model.state_dict())
        built.load_state_dict(model.state_dict(), strict=True)
        built.eval()
        got = built(*inputs)
        for a, b in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(expected), strict=True):
            assert torch.equal(a, b)
    assert fxgen.to_spec(fxgen.load(spec)) == spec  # the spec reads back from what it builds
    return spec


class Block(nn.Module):
    """A residual unit."""

    def __init__(self, c: int, stride: int = 1) -> None:
        super().__init__()
        self.stride = stride
        self.conv = nn.Conv2d(c, c, 3, padding=1, stride=stride)
        self.bn = nn.BatchNorm2d(c)
        self.down = nn.Sequential(nn.Conv2d(c, c, 1, stride=stride), nn.BatchNorm2d(c)) if stride > 1 else None

    def forward(self, x: torch.Tensor, scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.bn(self.conv(x)).relu()
        if scale is not None:
            y = y * scale
        identity = x if self.down is None else self.down(x)
        return y + identity, y


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3)
        self.layer = nn.Sequential(Block(8), Block(8))
        self.b2 = Block(8, 2)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = self.layer[0](x)[0]
        x = self.layer[1](x)[0]
        a, b = self.b2(x, 2.0)  # a constant argument: bound while tracing the block
        return self.head(a.mean((2, 3)) + b.mean((2, 3)))


def test_a_tracer_that_runs_modules_itself_still_records_their_calls() -> None:
    """Export's trace records every module call, whatever the tracer's ``call_module`` does:
    the graph is split by those records, for any tracer (no block is traced again)."""
    model = Net().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = fxgen.export(model, tracer_class=efx.RunsModulesItself)
        default = fxgen.export(model)
    stacks = [n.meta.get("nn_module_stack") for n in trace(model, tracer_class=efx.RunsModulesItself).graph.nodes]
    assert stacks == [n.meta.get("nn_module_stack") for n in trace(model).graph.nodes]
    assert any(stacks)
    assert spec == default  # the same classes, arguments and graphs either way


class _DropsModuleCalls(torch.fx.Tracer):
    """A tracer whose nodes keep no record of the module calls they ran inside."""

    def create_node(self, *args: Any, **kwargs: Any) -> torch.fx.Node:
        node = super().create_node(*args, **kwargs)
        node.meta.pop("nn_module_stack", None)
        return node


def test_a_trace_with_no_module_calls_recorded_is_flat_with_a_note() -> None:
    model = Net().eval()
    with pytest.warns(UserWarning, match="not kept as blocks: no node of the captured graph records"):
        spec = fxgen.export(model, tracer_class=_DropsModuleCalls)
    assert spec == fxgen.export(model, flat=True)


def test_blocks_constants_and_tuples() -> None:
    spec = check_exact(Net(), torch.randn(2, 3, 12, 12))
    assert spec.fxgen == 2
    assert list(spec.classes) == ["Block", "Block2"]  # two graphs: with and without the scale and downsample
    assert spec.classes["Block"].doc == "A residual unit."
    assert [n.name for n in spec.classes["Block2"].nodes if n.op == "placeholder"] == ["x"]  # scale bound
    assert spec.modules["b2"].cls == "Block2"


def test_flat_export_is_format_1() -> None:
    spec = fxgen.export(Net().eval(), flat=True)
    assert spec.fxgen == 1 and not spec.classes
    assert "layer.0.conv" in spec.modules


def test_instances_share_a_class_whose_arguments_are_what_differs() -> None:
    """torchvision's ResNet layout: one BasicBlock class for the blocks that keep their width and
    those that change it (with a downsample: a bool argument, ``if: downsample``); the widths are
    arguments, named as ``__init__`` names them when the constructor calls were recorded, and a
    Sequential of blocks stays one call."""
    with fxgen.record_constructors(ref.BasicBlock):
        model = ref.ResNet((2, 2, 2, 2), num_classes=10, width=8)
    spec = check_exact(model, torch.randn(1, 3, 32, 32))
    assert list(spec.classes) == ["BasicBlock"]
    assert list(spec.classes["BasicBlock"].args) == ["inplanes", "planes", "stride", "downsample"]
    assert spec.modules["layer2"].cls == "torch.nn.Sequential"
    assert spec.modules["layer2"].args == [{"module": {"class": "BasicBlock", "args": [8, 16, 2, True]}},
                                           {"module": {"class": "BasicBlock", "args": [16, 16, 1, False]}}]  # fmt: skip
    assert [n.target for n in spec.nodes if n.op == "call_module"][4:8] == ["layer1", "layer2", "layer3", "layer4"]


def test_unrecorded_arguments_are_named_after_what_they_feed() -> None:
    spec = check_exact(ref.UNet(3, 2, 8), torch.randn(1, 3, 32, 32))
    # Down's output width is twice its input in every instance, Up's half: each an expression of it.
    assert {name: list(c.args) for name, c in spec.classes.items()} == {
        "DoubleConv": ["in_channels", "out_channels"], "Down": ["in_channels"], "Up": ["in_channels"]}  # fmt: skip
    assert spec.classes["Down"].modules["maxpool_conv"].args[1] == {
        "module": {"class": "DoubleConv", "args": [{"arg": "in_channels"}, {"arg": "2 * in_channels"}]}}
    assert {"arg": "in_channels // 2"} in spec.classes["Up"].modules["conv"].args


class Pair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [self.a(x), self.b(x)]


class Iterates(nn.Module):
    """Iterates over what a block returns: a leaf's result cannot be iterated while tracing."""

    def __init__(self) -> None:
        super().__init__()
        self.pair = Pair()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        total = x
        for y in self.pair(x):
            total = total + y
        return total


def test_a_block_whose_result_the_parent_iterates_is_kept() -> None:
    """Traced as a leaf, ``Pair`` would give its parent a Proxy to iterate; read off the model's
    own trace, it returns the two values its parent reads, as a tuple it indexes."""
    spec = check_exact(Iterates(), torch.randn(2, 4))
    assert list(spec.classes) == ["Pair"] and spec.modules["pair"].cls == "Pair"


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, k: int) -> torch.Tensor:
        return self.lin(x) * k


class CalledTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.s = Scaled()
        self.t = Scaled()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.s(x, 2) + self.s(x, 3) + self.t(x, 4)


def test_one_instance_called_with_two_constants_is_not_a_block() -> None:
    model = CalledTwice().eval()
    with pytest.warns(UserWarning, match="two of its calls compute different graphs"):
        spec = fxgen.export(model)
    assert spec.fxgen == 1
    x = torch.randn(3, 4)
    built = fxgen.load(spec)
    built.load_state_dict(model.state_dict(), strict=True)
    assert torch.equal(built(x), model(x))


class WithCount(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
        return x.flatten(1), 3


class UsesCount(nn.Module):
    """A block returns a Python number with its tensor and the parent asks what it is: traced
    through, an int (traced as a leaf it would be a Proxy, and the parent would take the other
    branch)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = WithCount()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, n = self.count(x)
        return y * n if isinstance(n, int) else y


def test_a_block_returning_a_number_its_parent_reads_is_kept() -> None:
    # read off the flat trace itself, the block is the flatten; the parent multiplies by 3
    spec = check_exact(UsesCount(), torch.randn(2, 3, 4))
    assert spec.modules["count"].cls == "WithCount"


def test_export_is_deterministic() -> None:
    torch.manual_seed(0)
    first = fxgen.export(Net().eval()).to_yaml()
    torch.manual_seed(0)
    assert fxgen.export(Net().eval()).to_yaml() == first


class Résidu(nn.Module):
    """Names a spec cannot hold (a non-ASCII class and argument) become names it can."""

    def __init__(self, largeur: int, échelle: float = 0.5) -> None:
        super().__init__()
        self.échelle = échelle
        self.lin = nn.Linear(largeur, largeur)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.lin(x) * self.échelle


class Names(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = Résidu(4)
        self.b = Résidu(6)
        self.proj = nn.Linear(4, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.proj(self.a(x)))


def test_names_from_the_model_are_made_spec_names() -> None:
    with fxgen.record_constructors(Résidu):
        model = Names()
    spec = check_exact(model, torch.randn(3, 4))
    assert list(spec.classes) == ["Rsidu"]
    assert list(spec.classes["Rsidu"].args) == ["largeur"]


# -- random models built from blocks: export is exact on every one ------------------------------
class Residual(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.fc(x))


class Project(nn.Module):
    def __init__(self, cin: int, cout: int, gelu: bool) -> None:
        super().__init__()
        self.fc = nn.Linear(cin, cout)
        self.act = nn.GELU() if gelu else nn.Tanh()
        self.scale = nn.Parameter(torch.ones(cout))

    def forward(self, x: torch.Tensor, shift: float = 0.0) -> torch.Tensor:
        return self.act(self.fc(x)) * self.scale + shift


class Stack(nn.Module):
    def __init__(self, layers: list[tuple[str, int, int, Any]]) -> None:
        super().__init__()
        self.items = nn.ModuleList()
        self.calls: list[Any] = []
        for kind, cin, cout, extra in layers:
            if kind == "res":
                self.items.append(Residual(cin))
            elif kind == "proj":
                self.items.append(Project(cin, cout, gelu=extra[0]))
            else:
                self.items.append(nn.Sequential(*(Residual(cin) for _ in range(extra))))
            self.calls.append(extra[1] if kind == "proj" else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for item, shift in zip(self.items, self.calls, strict=True):
            x = item(x) if shift is None else item(x, shift)
        return x


@st.composite
def stacks(draw: st.DrawFn) -> list[tuple[str, int, int, Any]]:
    width = draw(st.sampled_from([2, 3, 4]))
    layers = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["res", "proj", "seq"]))
        if kind == "proj":
            cout = draw(st.sampled_from([2, 3, 4]))
            layers.append((kind, width, cout, (draw(st.booleans()), draw(st.sampled_from([0.0, 1.5])))))
            width = cout
        else:
            layers.append((kind, width, width, draw(st.integers(1, 3)) if kind == "seq" else None))
    return layers


@settings(max_examples=property_budget(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stacks())
def test_random_block_models_export_exactly(layers: list[tuple[str, int, int, Any]]) -> None:
    torch.manual_seed(0)
    model = Stack(layers)
    spec = check_exact(model, torch.randn(2, layers[0][1]))
    assert spec.fxgen == 2
    kinds = {kind for kind, *_ in layers}
    assert ("Residual" in spec.classes) == bool(kinds & {"res", "seq"})
    # instances share a class unless their graphs or their submodules' classes differ
    shapes = [(c.nodes, [(p, m.cls) for p, m in c.modules.items()]) for c in spec.classes.values()]
    assert len(shapes) == len({repr(s) for s in shapes})


class Output(dict):  # type: ignore[type-arg]
    """Indexable by position too, as Hugging Face's ModelOutput is."""

    def __getitem__(self, key: Any) -> Any:
        return list(self.values())[key] if isinstance(key, int) else super().__getitem__(key)


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.output = nn.Linear(4, 4)  # a node named "output": renamed, as in a flat export
        self.match = nn.ReLU()  # a soft keyword

    def forward(self, x: torch.Tensor) -> Output:
        return Output(logits=self.match(self.output(x)))


class UsesOutput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = Head()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(x)[0] * 2


class NamesInside(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = Head()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x)["logits"]


def test_node_names_inside_blocks_are_spec_names() -> None:
    spec = check_exact(NamesInside(), torch.randn(2, 4))
    called = [n.name for n in spec.classes["Head"].nodes if n.op == "call_module"]
    assert len(called) == 2 and not {"output", "match"} & set(called)


def test_a_result_indexed_in_a_way_the_class_cannot_give_is_kept() -> None:
    """Traced as a class of its own, the block would return a plain dict: ``[0]`` would fail.
    Read off the model's trace, it returns the value its parent reads."""
    spec = check_exact(UsesOutput().eval(), torch.randn(2, 4))
    assert spec.modules["head"].cls == "Head"


class Wraps(nn.Module):
    """A block that takes a module, as MONAI's AHNet blocks do."""

    def __init__(self, body: nn.Module, scale: float) -> None:
        super().__init__()
        self.body = body
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x) * self.scale


class Holder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = Wraps(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w(x)


def test_a_leaf_that_takes_a_module_is_declared_with_a_module_value() -> None:
    """A leaf module whose recorded constructor call holds modules: format 2's module values
    (a Sequential from its contents), and the checkpoint still loads strictly."""
    with fxgen.record_constructors(Wraps):
        model = Holder().eval()
    spec = fxgen.export(model, leaf_modules=[Wraps], flat=True)
    assert spec.fxgen == 2
    assert spec.modules["w"].args == [
        {"module": {"class": "torch.nn.Sequential", "args": [
            {"module": {"class": "torch.nn.Linear", "args": [4, 4]}}, {"module": {"class": "torch.nn.ReLU"}}]}},
        0.5,
    ]  # fmt: skip
    built = fxgen.load(spec, allow=[Wraps.__module__])
    built.load_state_dict(model.state_dict(), strict=True)
    x = torch.randn(3, 4)
    assert torch.equal(built.eval()(x), model(x))


class ReadsABlocksBuffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = efx.Embed()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.embed(x, torch.zeros_like(x) + self.embed.ids)


def test_a_buffer_the_parent_reads_through_a_block_is_declared_by_the_block() -> None:
    """A non-persistent buffer the block itself never reads is in neither its graph nor its
    state dict; the parent's ``embed.ids`` still needs the class to have it."""
    spec = check_exact(ReadsABlocksBuffer(), torch.arange(16).reshape(2, 8) % 10)
    assert spec.classes["Embed"].buffers["ids"].persistent is False
    assert "embed.ids" in [n.target for n in spec.nodes]


class _Plus(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


class _RebindsForward(nn.Module):
    """One instance's ``forward`` is a builtin, whose signature ``inspect`` cannot read."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.a, self.b = _Plus(), _Plus()
        self.b.forward = torch.relu  # type: ignore[method-assign]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(self.lin(x)))


def test_a_block_without_a_readable_signature_is_kept() -> None:
    """Split off the graph by its recorded call, a block needs no signature to bind calls to:
    the instance whose ``forward`` is a builtin is a class of its own, inputs named ``arg0``."""
    spec = check_exact(_RebindsForward(), torch.randn(2, 3))
    assert [spec.modules[name].cls for name in ("a", "b")] == ["Plus", "Plus2"]
    assert [n.name for n in spec.classes["Plus2"].nodes if n.op == "placeholder"] == ["arg0"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fxgen.export(_RebindsForward(), tracer_class=efx.RunsModulesItself) == spec


class _Reordered(nn.Module):
    """Registers its layers and tensors in another order than its forward uses them."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.second = nn.Linear(c, c)
        self.scale = nn.Parameter(torch.rand(c))
        self.first = nn.Linear(c, c)
        self.register_buffer("shift", torch.rand(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x) * self.scale + self.shift)


class _PairOfReordered(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.late = _Reordered(c)
        self.early = _Reordered(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.late(self.early(x))


class _NestedReordered(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tail = _PairOfReordered(4)
        self.norm = nn.LayerNorm(4)
        self.head = _PairOfReordered(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tail(self.norm(self.head(x)))


def _no_op_hook(module: nn.Module, state: dict[str, Any], prefix: str, local: dict[str, Any]) -> None:
    return None


def test_declarations_come_in_the_order_the_model_registers_them() -> None:
    """Each block's modules and tensors are declared in the model's registration order, read off
    one walk of the model, so the state dict's keys come in the original's order at every depth.
    A model with a state-dict hook is walked per instance instead (a hook may rename its blocks'
    keys): the same spec."""
    torch.manual_seed(0)
    model = _NestedReordered()
    spec = check_exact(model, torch.randn(2, 4))  # (asserts the state dict's key order)
    assert list(spec.classes["PairOfReordered"].modules) == ["late", "early"]
    assert list(spec.classes["Reordered"].modules) == ["second", "first"]
    hooked = _NestedReordered()
    hooked.register_state_dict_post_hook(_no_op_hook)
    assert fxgen.export(hooked) == spec


class _Ids(nn.Module):
    def __init__(self, k: float) -> None:
        super().__init__()
        self.k = k  # (a constant of the graph: two values, two graphs)
        self.lin = nn.Linear(4, 4)
        self.register_buffer("ids", torch.arange(4.0), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.k


class _ReadsIds(nn.Module):
    def __init__(self, k: float) -> None:
        super().__init__()
        self.emb = _Ids(k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.emb(x) + self.emb.ids


class _TwoReaders(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.p, self.q = _ReadsIds(1.0), _ReadsIds(2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.q(self.p(x))


def test_a_buffer_read_through_a_block_is_declared_by_each_instance_of_a_shared_graph() -> None:
    """``p`` and ``q`` have one graph (shared); the blocks they read ``emb.ids`` through have
    two, which differ in a constant: one class taking it (``k``, as ``__init__`` names it), which
    declares the buffer, and ``ReadsIds`` passes it on."""
    spec = check_exact(_TwoReaders(), torch.randn(3, 4))
    assert list(spec.classes) == ["Ids", "ReadsIds"]
    assert list(spec.classes["Ids"].args) == ["k"] and spec.classes["Ids"].buffers["ids"].persistent is False
    assert [spec.modules[path].args for path in ("p", "q")] == [[1.0], [2.0]]


class _Basic(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride), nn.BatchNorm2d(cout)) if stride > 1 else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        return torch.relu(F.dropout(self.bn(self.conv(x)), 0.1, self.training) + identity)


def _seeded(cls: type[nn.Module]) -> Any:
    def build() -> nn.Module:
        torch.manual_seed(0)
        return cls()

    return build


class _TwoBasic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = _Basic(4, 4), _Basic(4, 8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


def test_instances_with_and_without_an_optional_submodule_are_one_class(tmp_path: Path) -> None:
    """ResNet's BasicBlock with and without downsample: one class, as in the original, a bool
    argument declaring the submodule and choosing the branch that calls it (the other names the
    value it reads instead); exact through every promise of bench/parity.py, in both modes."""
    torch.manual_seed(0)
    inputs = (torch.randn(2, 4, 8, 8),)
    exported = export_checked(_seeded(_TwoBasic), inputs, tmp_path)
    check_train(_seeded(_TwoBasic), inputs, exported)
    spec = exported.spec
    assert list(spec.classes) == ["Basic"]
    block = spec.classes["Basic"]
    assert list(block.args) == ["out_channels", "stride", "downsample"] and block.args["downsample"].type == "bool"
    assert block.modules["downsample"].when == "downsample"
    assert [spec.modules[path].args for path in ("a", "b")] == [[4, 1, False], [8, 2, True]]
    groups = [item for item in block.nodes if isinstance(item, IfNodes) and item.cond == "downsample"]
    assert [[(n.op, n.target) for n in branch] for group in groups for branch in (group.then, group.orelse)] \
        == [[("call_module", "downsample")], [("alias", None)]]  # fmt: skip
    assert check_exact(_seeded(_TwoBasic)(), *inputs) == spec  # (to_spec of what it builds gives it back too)


class _Act(nn.Module):
    def __init__(self, gelu: bool) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.gelu = gelu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.fc(x)) if self.gelu else torch.relu(self.fc(x))


class _TwoActs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = _Act(False), _Act(True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


def test_instances_computing_otherwise_stay_two_classes() -> None:
    """A difference that is neither an optional submodule nor a constant (another function) is
    not written as a conditional: a class each, as before."""
    spec = check_exact(_TwoActs(), torch.randn(2, 4))
    assert list(spec.classes) == ["Act", "Act2"] and not any(c.args for c in spec.classes.values())


class _Scaled(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.scale = dim**-0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * self.scale


def test_a_node_constant_is_named_after_the_attribute_holding_it() -> None:
    """``self.scale = dim ** -0.5``: the constant that differs is an argument ``scale``."""
    model = nn.Sequential(_Scaled(4), nn.Linear(4, 16), _Scaled(16))
    spec = check_exact(model, torch.randn(2, 4))
    assert list(spec.classes) == ["Scaled"] and list(spec.classes["Scaled"].args) == ["in_features", "scale"]


class _Up(nn.Module):  # monai's UnetrPrUpBlock: as many blocks as its num_layer
    def __init__(self, n: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def test_an_extra_item_of_a_container_is_no_optional_submodule() -> None:
    """``blocks.1`` in one instance only is not a submodule of its own a condition can declare
    (the spec refuses ``if:`` on a dotted path): a class each, as before, and the spec loads."""
    spec = check_exact(nn.Sequential(_Up(1), _Up(2)), torch.randn(2, 4))
    assert list(spec.classes) == ["Up", "Up2"]


class _Divides(nn.Module):  # Hugging Face's MobileViT attention: a submodule `value`, a constant held by no attribute
    def __init__(self, k: int) -> None:
        super().__init__()
        self.value = nn.Linear(4, 4)
        self.dims = [k]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.value(x) / self.dims[0]


def test_a_node_constant_is_never_named_after_a_module_of_the_class(tmp_path: Path) -> None:
    """The forward reads the argument as ``self.NAME``: named ``value`` it was the Linear there
    (``TypeError: unsupported operand type(s) for /: 'Tensor' and 'Linear'`` in the generated class)."""
    inputs = (torch.randn(2, 4),)
    build = _seeded(lambda: nn.Sequential(_Divides(2), _Divides(3)))  # type: ignore[arg-type,return-value]
    spec = export_checked(build, inputs, tmp_path).spec
    assert list(spec.classes) == ["Divides"] and list(spec.classes["Divides"].args) == ["value_2"]
