"""Export writes the model's own classes: one spec class per Python class, all its instances
generalised at once (``fxgen.capture.blocks``, ``fxgen.capture.class_bodies``), and the
containers holding them written as a person writes them (``fxgen.capture.containers``).

Each case is proven on the model itself (``check_exact``: strict load, equal outputs in the
spec's GraphModule and in the generated class) and then asserts the shape of what was written.
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from helpers import property_budget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_blocks import _generated, check_exact
from torch import nn

import fxgen
from fxgen.capture.blocks import equal_classes


def _classes_of(spec: fxgen.Spec, prefix: str) -> list[str]:
    return [name for name in spec.classes if name.startswith(prefix)]


class Drop(nn.Module):
    """A node constant that differs in every instance (torchvision's StochasticDepth)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.dropout(x, self.p, self.training)


class Unit(nn.Module):
    def __init__(self, c: int, p: float) -> None:
        super().__init__()
        self.fc = nn.Linear(c, 4 * c)
        self.proj = nn.Linear(4 * c, c)
        self.drop = Drop(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.drop(self.proj(self.fc(x).relu()))


def test_a_node_constant_that_differs_in_every_instance_is_one_argument_of_one_class() -> None:
    # Before: instances merged two at a time, five values gave three Drop classes (and so three Units).
    model = nn.Sequential(*[Drop(p) for p in (0.0, 0.1, 0.2, 0.3, 0.4)])
    spec = check_exact(model, torch.randn(2, 4))
    assert _classes_of(spec, "Drop") == ["Drop"]
    assert list(spec.classes["Drop"].args) == ["p"]
    assert equal_classes(spec) == []


def test_children_settled_first_make_their_parents_one_class() -> None:
    model = nn.Sequential(*[Unit(8, p) for p in (0.0, 0.05, 0.1, 0.15)])
    spec = check_exact(model, torch.randn(3, 8))
    assert sorted(spec.classes) == ["Drop", "Unit"]


def test_a_value_that_is_a_multiple_of_another_argument_is_an_expression() -> None:
    model = _Chain([Unit(4, 0.0), _Pad(4, 6), Unit(6, 0.0), _Pad(6, 8), Unit(8, 0.0)])
    spec = check_exact(model, torch.randn(2, 4))
    unit = spec.classes["Unit"]
    assert list(unit.args) == ["in_features"]  # 4 * c is written from c, not taken as a second argument
    assert unit.modules["fc"].args == [{"arg": "in_features"}, {"arg": "4 * in_features"}]
    source = fxgen.generate(spec)
    assert "nn.Linear(in_features, 4 * in_features)" in source


class _Pad(nn.Module):
    def __init__(self, a: int, b: int) -> None:
        super().__init__()
        self.b = b - a

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.pad(x, (0, self.b))


class _Chain(nn.Module):
    def __init__(self, items: list[nn.Module]) -> None:
        super().__init__()
        self.items = nn.ModuleList(items)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for item in self.items:
            x = item(x)
        return x


class _Wrap(nn.Module):
    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class Wide(nn.Module):
    """DenseNet's layer, in the small: the input width is the only thing that differs."""

    def __init__(self, cin: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(cin)
        self.fc = nn.Linear(cin, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, self.fc(self.norm(x).relu())], 1)


def test_twenty_four_instances_with_one_varying_width_are_one_class_and_one_loop() -> None:
    model = _Wrap(nn.Sequential(*[Wide(4 + 2 * i) for i in range(24)]))
    spec = check_exact(model, torch.randn(3, 4))
    assert list(spec.classes) == ["Wide"]
    (item,) = spec.modules["body"].args
    assert item == {"for": "i", "in": 24, "module": {"class": "Wide", "args": [{"arg": "4 + 2 * i"}]}}
    assert "for i in range(24)" in fxgen.generate(spec)


class Stage(nn.Module):
    def __init__(self, c: int, n: int, rate: float, first: int, total: int) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*[Unit(c, rate * (first + i) / (total - 1.0)) for i in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


class Scheduled(nn.Module):
    """ConvNeXt's stochastic-depth schedule: a rate linear in the block's index over all stages."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Sequential(*[Unit(8, 0.1 * i / 7.0) for i in range(3)]),
            nn.Sequential(*[Unit(8, 0.1 * (3 + i) / 7.0) for i in range(5)]),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x)


def test_an_index_linear_schedule_is_a_for_with_an_expression_of_the_index() -> None:
    model = Scheduled()
    spec = check_exact(model, torch.randn(2, 8))
    stages = spec.modules["features"].args
    loops = [stage["module"]["args"][0] for stage in stages]
    assert [loop["in"] for loop in loops] == [3, 5]
    assert loops[0]["module"]["args"][-1] == {"arg": "0.1 * i / 7.0"}
    assert loops[1]["module"]["args"][-1] == {"arg": "0.1 * (3 + i) / 7.0"}
    assert "for i in range(5)" in fxgen.generate(spec)


def test_values_that_follow_no_rule_are_a_table() -> None:
    model = _Wrap(nn.Sequential(*[Unit(8, p) for p in (0.3, 0.0, 0.7, 0.2)]))
    spec = check_exact(model, torch.randn(2, 8))
    (item,) = spec.modules["body"].args
    assert item == {"for": "p", "in": [0.3, 0.0, 0.7, 0.2], "module": {"class": "Unit", "args": [{"arg": "p"}]}}


def test_a_first_item_that_differs_is_an_expression_of_the_index() -> None:
    model = _Wrap(nn.Sequential(_Strided(8, 2), _Strided(8, 1), _Strided(8, 1)))
    spec = check_exact(model, torch.randn(1, 8, 8, 8))
    (item,) = spec.modules["body"].args
    assert item["for"] == "i" and item["in"] == 3
    assert {"arg": "2 if i == 0 else 1"} in item["module"]["args"]


class _Strided(nn.Module):
    def __init__(self, c: int, stride: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, stride=stride, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class Permute(nn.Module):
    def __init__(self, dims: list[int]) -> None:
        super().__init__()
        self.dims = dims

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.permute(x, self.dims)


def test_a_list_an_init_parameter_stores_is_one_argument() -> None:
    model = nn.Sequential(Permute([0, 2, 3, 1]), Permute([0, 3, 1, 2]))
    spec = check_exact(model, torch.randn(1, 2, 3, 4))
    assert {name: arg.type for name, arg in spec.classes["Permute"].args.items()} == {"dims": "list"}
    assert "Permute([0, 2, 3, 1])" in fxgen.generate(spec)


# -- random families --------------------------------------------------------------------------
class Leaf(nn.Module):
    def __init__(self, c: int, k: float) -> None:
        super().__init__()
        self.lin = nn.Linear(c, c)
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.k


class Pair(nn.Module):
    def __init__(self, c: int, k: float, h: int) -> None:
        super().__init__()
        self.a = Leaf(c, k)
        self.up = nn.Linear(c, h * c)
        self.down = nn.Linear(h * c, c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.up(self.a(x)).relu())


@st.composite
def families(draw: st.DrawFn) -> list[tuple[str, float, int]]:
    kinds = st.sampled_from(["leaf", "pair"])
    ks = st.sampled_from([0.5, 1.0, 1.5, 2.0, 0.25])
    return draw(st.lists(st.tuples(kinds, ks, st.integers(2, 4)), min_size=1, max_size=6))


class Family(nn.Module):
    def __init__(self, c: int, layers: list[tuple[str, float, int]]) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[Leaf(c, k) if kind == "leaf" else Pair(c, k, h) for kind, k, h in layers])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def test_two_instances_prove_no_function_between_their_values() -> None:
    # Channels 4 and 8 with strides 1 and 2 fit stride = channels // 4: two points fit too much.
    model = _Chain([_Strided(4, 1), nn.Conv2d(4, 8, 1), _Strided(8, 2)])
    spec = check_exact(model, torch.randn(1, 4, 8, 8))
    assert len(spec.classes["Strided"].args) == 2


@settings(max_examples=property_budget(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layers=families(), c=st.sampled_from([2, 3, 4]))
def test_random_families_export_one_class_per_python_class(layers: list[tuple[str, float, int]], c: int) -> None:
    torch.manual_seed(0)
    model = Family(c, layers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = check_exact(model, torch.randn(2, c))
    used = {Leaf} | ({Pair} if any(kind == "pair" for kind, _, _ in layers) else set())
    assert sorted(spec.classes) == sorted(cls.__name__ for cls in used)  # one spec class per Python class
    assert equal_classes(spec) == []
    generated = _generated(spec)
    generated.load_state_dict(model.state_dict(), strict=True)
    x = torch.randn(2, c)
    assert torch.equal(generated.eval()(x), model.eval()(x))


def test_equal_classes_are_found() -> None:
    body = {"nodes": [{"op": "placeholder", "name": "x"}, {"op": "output", "args": ["%x"]}]}
    spec = fxgen.Spec.from_dict({"fxgen": 2, "name": "M", "classes": {"A": body, "B": {**body, "doc": "B."}},
                                 "nodes": body["nodes"]})  # fmt: skip
    assert equal_classes(spec) == [("A", "B")]


@pytest.mark.parametrize("column", [[0.0, 0.1 / 3.0, 0.2 / 3.0, 0.1], [0.1 * (2 + i) / 11.0 for i in range(4)]])
def test_float_schedules_are_found_bit_for_bit(column: list[float]) -> None:
    from fxgen.capture.containers import _schedule
    from fxgen.spec.expr import evaluate, parse

    text = _schedule(column, "i")
    assert text is not None
    assert [evaluate(parse(text), {"i": i}) for i in range(len(column))] == column
    assert all(math.isfinite(v) for v in column)



class Residual(nn.Module):
    """MobileNetV2's InvertedResidual in the small: the forward branches on a bool it stores."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.use_res_connect = cin == cout
        self.conv = nn.Sequential(nn.Linear(cin, 2 * cin), nn.ReLU(), nn.Linear(2 * cin, cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


def test_a_branch_on_a_stored_bool_is_an_if_on_an_argument_of_that_name() -> None:
    model = nn.Sequential(Residual(4, 6), Residual(6, 6), Residual(6, 8), Residual(8, 8))
    spec = check_exact(model, torch.randn(2, 4))
    assert list(spec.classes) == ["Residual"]
    assert "use_res_connect" in spec.classes["Residual"].args
    assert "if self.use_res_connect:" in fxgen.generate(spec)


class Checked(nn.Module):
    """torchvision's EncoderBlock checks its input with a message formatted from its shape."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.fc = nn.Linear(c, c)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        torch._assert(input.dim() == 2, f"Expected (batch_size, hidden_dim) got {input.shape}")
        return self.fc(input)


def test_a_block_formatting_its_input_shape_into_a_message_is_kept() -> None:
    # The shape's node is made when the message is rebuilt, after tracing: it belongs to the block reading it.
    model = nn.Sequential(Checked(4), Checked(4), Checked(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = check_exact(model, torch.randn(2, 4))
    assert list(spec.classes) == ["Checked"]


class Gated(nn.Module):
    """EfficientNet's MBConv: it builds its drop-path in every instance, and calls it only with
    the residual."""

    def __init__(self, cin: int, cout: int, p: float) -> None:
        super().__init__()
        self.use_res_connect = cin == cout
        self.fc = nn.Linear(cin, cout)
        self.drop = Drop(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if self.use_res_connect:
            y = self.drop(y) + x
        return y


def test_a_submodule_only_some_instances_call_keeps_its_values_in_the_others() -> None:
    rates = [0.1 * i / 5.0 for i in range(6)]
    widths = [(4, 8), (8, 8), (8, 8), (8, 6), (6, 6), (6, 6)]
    model = _Wrap(nn.Sequential(*[Gated(a, b, p) for (a, b), p in zip(widths, rates, strict=True)]))
    spec = check_exact(model, torch.randn(2, 4))
    assert sorted(spec.classes) == ["Drop", "Gated"]
    # The rate of an instance without the residual is its own Drop's (0.0 and 0.06), not left out.
    (table,) = spec.modules["body"].args
    assert table["for"] == ["in_features", "out_features", "p", "use_res_connect"]
    assert [row[2] for row in table["in"]] == rates


def test_a_loop_around_items_holding_loops_binds_another_name() -> None:
    stage = [nn.Sequential(*[_Strided(4, 2 if i == 0 else 1) for i in range(3)], nn.Dropout(0.1 * k)) for k in range(3)]
    model = _Wrap(nn.Sequential(*stage))
    spec = check_exact(model, torch.randn(1, 4, 32, 32))
    (outer,) = spec.modules["body"].args
    inner = outer["module"]["args"][0]
    assert (outer["for"], inner["for"]) == ("j", "i")  # the outer loop's name is not the inner one's
    fxgen.load(spec)  # (validated: no loop name shadows an enclosing one)
