"""Export is exact on models nobody here wrote: each class of model that used to fail, checked
with every promise of bench/parity.py (checkpoint parity, every tensor reproduced, the model
left as it was)."""

from __future__ import annotations

import sys
from pathlib import Path

import exactness_fixtures as fx
import pytest
import torch
from helpers import import_source

import fxgen

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from parity import check_parity

ALLOW = ["exactness_fixtures", "shadowpkg"]


def _seeded(cls: type[torch.nn.Module]):  # type: ignore[no-untyped-def]
    def factory() -> torch.nn.Module:
        torch.manual_seed(0)
        return cls()

    return factory


X = (torch.randn(3, 4, generator=torch.Generator().manual_seed(1)),)


@pytest.mark.parametrize(
    ("cls", "inputs"),
    [
        (fx.Unsaved, X),
        (fx.Constants, X),
        (fx.RotaryLike, (torch.randn(3, 8),)),
        (fx.FunctionalNorm, X),
        (fx.OddNames, X),
        (fx.Shadowed, X),
        (fx.Cached, X),
        (fx.Bookkept, (torch.tensor([[1, 2, 3]]),)),
        (fx.WeightNormed, (torch.randn(2, 4, 5),)),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_checkpoint_parity(cls: type[torch.nn.Module], inputs: tuple, tmp_path: Path) -> None:
    check_parity(_seeded(cls), inputs, tmp_path, allow=ALLOW, stem=cls.__name__.lower())


def test_tensors_outside_the_checkpoint_are_declared_non_persistent_with_their_values() -> None:
    torch.manual_seed(0)
    spec = fxgen.export(fx.Unsaved())
    assert spec.buffers["idx"].to_dict() == {"value": [3, 2, 1, 0], "dtype": "int64", "persistent": False}
    assert spec.buffers["table"].to_dict() == {"value": [1.0, 2.0, 3.0, 4.0], "persistent": False}


def test_large_and_non_finite_tensors_are_packed_exactly() -> None:
    torch.manual_seed(0)
    spec = fxgen.export(fx.Constants())
    packed = [b for b in spec.buffers.values() if b.data is not None]
    assert {b.dtype for b in packed} == {"bfloat16", "float32"}  # 1,200 elements; nan and inf
    assert all(not b.persistent for b in spec.buffers.values())


def test_unused_state_is_declared() -> None:
    torch.manual_seed(0)
    model = fx.FunctionalNorm()
    spec = fxgen.export(model)
    declared = {**spec.parameters, **spec.buffers}
    assert set(model.state_dict()) <= set(declared)
    assert spec.buffers["bn.num_batches_tracked"].to_dict() == {"shape": [], "dtype": "int64"}


def test_export_leaves_a_cache_as_it_found_it() -> None:
    model = fx.Cached()
    fxgen.export(model)
    assert model.cache == {}


def test_a_proxy_left_by_another_trace_is_named() -> None:
    model = fx.Cached()
    torch.fx.symbolic_trace(model)  # the user's own trace leaves a Proxy in the cache
    with pytest.raises(fxgen.ExportError, match=r"values of an earlier torch\.fx trace \(cache\['bias'\]\)"):
        fxgen.export(model)


@pytest.mark.parametrize("mix", [False, True])
def test_a_node_from_another_trace_is_a_clear_error(mix: bool) -> None:
    model = fx.HiddenCache(mix=mix)
    torch.fx.symbolic_trace(model)  # leaves a Proxy where export does not look: the graph lint finds it
    with pytest.raises(fxgen.ExportError, match=r"uses a value from outside the traced graph.*cache"):
        fxgen.export(model)


def test_attributes_a_framework_attaches_are_not_compared_but_real_differences_are() -> None:
    model = fx.Bookkept()
    fxgen.export(model)  # _is_hf_initialized is ignored
    model.norm.register_forward_hook(_double)  # attached after construction, and it changes the output
    with pytest.raises(fxgen.ExportError, match=r"module 'norm' .*forward hooks are \['_double'\] but \[\]"):
        fxgen.export(model, leaf_modules=[torch.nn.LayerNorm])


def _double(module: torch.nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
    return out * 2


def test_a_tracer_that_patches_torch_and_fails_leaves_torch_as_it_was() -> None:
    """Hugging Face's HFTracer wraps torch.ones & co. while it traces, and leaves them wrapped when
    tracing fails: every later export in the process would see the wrappers."""

    class Patching(torch.fx.Tracer):
        def trace(self, root: torch.nn.Module, concrete_args: dict | None = None) -> torch.fx.Graph:
            torch.ones = lambda *args, **kwargs: None  # type: ignore[assignment]
            raise RuntimeError("tracing failed")

    original = torch.ones
    with pytest.raises(fxgen.ExportError, match="tracing failed"):
        fxgen.export(fx.Unsaved(), tracer_class=Patching)
    assert torch.ones is original


def test_spectral_norm_is_refused_with_the_way_out() -> None:
    model = torch.nn.Sequential(torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(4, 4)))
    with pytest.raises(fxgen.ExportError, match=r"inside a parametrization of module '0\..*remove_parametrizations"):
        fxgen.export(model)


class _SizedProxy(torch.fx.Proxy):
    """Answers ``if proxy:`` from its value on the tracer's example, as HFTracer's proxies do."""

    def __bool__(self) -> bool:
        return bool(self.tracer.value(self.node))  # type: ignore[attr-defined]


class _SizedTracer(torch.fx.Tracer):
    example = torch.zeros(1, 2, 4, 8)  # the tracer's own example (HFTracer's dummy inputs)

    def proxy(self, node: torch.fx.Node) -> torch.fx.Proxy:
        return _SizedProxy(node, self)

    def value(self, node: torch.fx.Node) -> object:
        env: dict[torch.fx.Node, object] = {}
        for n in self.graph.nodes:
            args = torch.fx.node.map_arg(n.args, env.__getitem__)
            if n.op == "placeholder":
                env[n] = self.example
            elif n.op == "call_method":
                env[n] = getattr(args[0], str(n.target))(*args[1:])
            elif n.op == "call_function":
                env[n] = n.target(*args)  # type: ignore[operator]
            if n is node:
                return env[n]
        raise AssertionError(node)


class _PadToWindow(torch.nn.Module):  # Swin's padding to its window: a branch on a size
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        width = x.size(3)
        if width % 4 != 0:
            x = torch.nn.functional.pad(x, (0, 4 - width % 4))
        return x * 2


def test_a_branch_the_tracer_answered_from_its_example_becomes_a_check(tmp_path: Path) -> None:
    # The trace holds the branch for width 8 (no padding); at width 10 the original pads to 12,
    # and the traced graph returned width 10, silently. Now the graph asserts the branch it took.
    spec = fxgen.export(_PadToWindow(), tracer_class=_SizedTracer)
    x = torch.randn(1, 2, 4, 8)
    copies = [fxgen.load(spec), getattr(import_source(fxgen.generate(spec), "padtowindow", tmp_path), spec.name)()]
    for copy in copies:
        assert torch.equal(copy(x), _PadToWindow()(x)) and torch.equal(copy(x[..., :4]), _PadToWindow()(x[..., :4]))
        with pytest.raises(AssertionError, match=r"_PadToWindow was traced with a branch at .*test_exactness\.py:\d+ "
                                                 r"\(`if width % 4 != 0:`\) decided False .*capture='dynamo'"):  # fmt: skip
            copy(torch.randn(1, 2, 4, 10))
