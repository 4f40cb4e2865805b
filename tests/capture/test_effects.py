"""What a call of the model does that its captured graph does not record (fxgen/capture/effects.py):
hooks on the model itself, global hooks, hooks the forward registers, grad-mode regions, and
module-global state. Each is refused by name or noted, never dropped silently, with both captures."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import fxgen
from fxgen._errors import ExportError
from fxgen.cli.main import main

CAPTURES = ["trace", "dynamo"]
X = torch.randn(2, 3, generator=torch.Generator().manual_seed(0))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.frozen = nn.Linear(3, 3)
        self.head = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.frozen(x))


def _export(model: nn.Module, capture: str, **options: Any) -> fxgen.Spec:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fxgen.export(model, capture=capture, example_inputs=(X,), **options)


# -- hooks -----------------------------------------------------------------------------------
def _double(module: nn.Module, args: tuple[Any, ...], out: torch.Tensor) -> torch.Tensor:
    return out * 2


def _shift(module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
    return (args[0] + 1,)


def _scale_kwargs(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], out: torch.Tensor) -> torch.Tensor:
    return out * 3


def _shift_kwargs(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    return (args[0] + 1,), kwargs


def _no_change(*args: Any) -> None:
    return None


ROOT_HOOKS: dict[str, tuple[Callable[[nn.Module], Any], str]] = {
    "pre": (lambda m: m.register_forward_pre_hook(_shift), r"forward pre-hook '_shift'"),
    "forward": (lambda m: m.register_forward_hook(_double), r"forward hook '_double'"),
    "pre-kwargs": (lambda m: m.register_forward_pre_hook(_shift_kwargs, with_kwargs=True),
                   r"forward pre-hook \(with_kwargs\) '_shift_kwargs'"),
    "forward-kwargs": (lambda m: m.register_forward_hook(_scale_kwargs, with_kwargs=True),
                       r"forward hook \(with_kwargs\) '_scale_kwargs'"),
    "backward": (lambda m: m.register_full_backward_hook(_no_change), r"backward hook '_no_change'"),
    "global-forward": (lambda m: nn.modules.module.register_module_forward_hook(_double),
                       r"global module hook '_double' \(torch\.nn\.modules\.module\.register_module_forward_hook\)"),
    "global-pre": (lambda m: nn.modules.module.register_module_forward_pre_hook(_shift),
                   r"global module hook '_shift' \(torch\.nn\.modules\.module\.register_module_forward_pre_hook\)"),
}  # fmt: skip


@pytest.fixture
def handles() -> Iterator[list[Any]]:
    """Hooks a test registers, removed after it (a global hook would reach every later test)."""
    registered: list[Any] = []
    yield registered
    for handle in registered:
        handle.remove()


@pytest.mark.parametrize("capture", CAPTURES)
@pytest.mark.parametrize("kind", list(ROOT_HOOKS))
def test_a_hook_on_the_model_or_a_global_one_is_refused_by_name(kind: str, capture: str, handles: list[Any]) -> None:
    register, named = ROOT_HOOKS[kind]
    model = Net()
    handles.append(register(model))
    with pytest.raises(ExportError, match=named) as caught:
        _export(model, capture)
    assert caught.value.location is not None and caught.value.location.path == __file__  # the hook's own line
    assert "remove it before export and register it again" in str(caught.value) or "remove the hook" in str(caught.value)


def test_a_hook_on_a_traced_submodule_is_kept_and_the_model_exports_again_without_its_own(handles: list[Any]) -> None:
    """Hooks on the modules the capture traces through run inside their calls, so the graph has
    them; a model whose own hook was removed exports as before."""

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Net()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x)

    model = Outer()
    handles.append(model.inner.register_forward_hook(_double))
    for capture in CAPTURES:
        loaded = fxgen.load(_export(model, capture))
        loaded.load_state_dict(model.state_dict())
        assert torch.equal(loaded(X), model(X))
    plain = Net()
    handle = plain.register_forward_hook(_double)
    handle.remove()
    assert _export(plain, "trace") == _export(Net(), "trace")


class SelfHooking(nn.Module):
    """Its forward registers a hook on the module given, once (a lazily set up hook)."""

    def __init__(self, on: str) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.frozen = nn.Linear(3, 3)
        self.on = on
        self.hooked = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.hooked:
            target = self if self.on == "" else self.get_submodule(self.on)
            target.register_forward_hook(_double)
            self.hooked = True
        return self.frozen(x)


@pytest.mark.parametrize("on, named", [("", r"on the model \(SelfHooking\)"), ("frozen", r"on module 'frozen'")])
def test_a_hook_the_forward_registers_is_refused_by_name(on: str, named: str) -> None:
    model = SelfHooking(on)
    with pytest.raises(ExportError, match=rf"the forward registers the forward hook '_double' {named}"):
        _export(model, "trace")
    assert not model.hooked and not model.frozen._forward_hooks and not model._forward_hooks  # left as it was


def test_a_hook_the_forward_registers_stops_the_dynamo_capture_too() -> None:
    with pytest.raises(ExportError, match=r"graph break.*`target\.register_forward_hook\(_double\)`"):
        _export(SelfHooking("frozen"), "dynamo")


# -- grad-mode regions -----------------------------------------------------------------------
class Frozen(nn.Module):
    """Runs its first layer with gradients disabled, in the way ``kind`` names."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.frozen = nn.Linear(3, 3)
        self.head = nn.Linear(3, 2)
        self.kind = kind

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "no_grad":
            with torch.no_grad():
                x = self.frozen(x)
        elif self.kind == "inference_mode":
            with torch.inference_mode():
                x = self.frozen(x).clone()
            x = x.clone()
        elif self.kind == "set_grad_enabled":
            with torch.set_grad_enabled(False):
                x = self.frozen(x)
        else:
            x = self.embed(x)
        return self.head(x)

    @torch.no_grad()
    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.frozen(x)


@pytest.mark.parametrize("capture", CAPTURES)
@pytest.mark.parametrize("kind", ["no_grad", "inference_mode", "set_grad_enabled", "decorator"])
def test_a_grad_mode_region_is_refused_at_its_line(kind: str, capture: str) -> None:
    model = Frozen(kind)
    with pytest.raises(ExportError, match=r"runs with gradients disabled .* on (parameter 'frozen\.weight'|the input "
                                          r"'x'), which the exported model would differentiate.*requires_grad_\(False\)"
                       ) as caught:  # fmt: skip
        _export(model, capture)
    assert caught.value.location is not None and caught.value.location.path == __file__
    assert "self.frozen(x)" in str(caught.value)


class _Tracer(torch.fx.Tracer):
    """A custom tracer whose own frames lie between the model's line and the node (as HFTracer's)."""

    def create_proxy(self, *args: Any, **kwargs: Any) -> torch.fx.Proxy:
        return super().create_proxy(*args, **kwargs)


def test_a_grad_mode_region_is_named_at_the_models_line_under_a_custom_tracer() -> None:
    with pytest.raises(ExportError, match=r"\(in forward: `x = self\.frozen\(x\)`\)"):
        _export(Frozen("no_grad"), "trace", tracer_class=_Tracer)


@pytest.mark.parametrize("capture", CAPTURES)
def test_a_grad_mode_region_is_refused_when_export_itself_runs_without_gradients(capture: str) -> None:
    with torch.no_grad(), pytest.raises(ExportError, match="runs with gradients disabled"):
        _export(Frozen("no_grad"), capture)
    with torch.no_grad():
        _export(Net(), capture)  # a model without a region exports under the caller's no_grad


class Rotary(nn.Module):
    """Hugging Face's rotary embeddings: a no_grad forward that computes from a buffer and sizes
    only, so gradients are the same without it."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("inv_freq", torch.linspace(0.1, 1.0, 3), persistent=False)
        self.proj = nn.Linear(3, 3)

    @torch.no_grad()
    def angles(self, x: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(x.shape[0], dtype=x.dtype, device=x.device)
        return (positions[:, None] * self.inv_freq[None, :]).cos().to(x.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * self.angles(x)


class Masked(nn.Module):
    """A mask computed without gradients: a comparison carries none."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            keep = (x > 0).to(x.dtype)
            first = x.argmax(-1)
        return self.proj(x) * keep + first[:, None]


@pytest.mark.parametrize("capture", CAPTURES)
@pytest.mark.parametrize("make", [Rotary, Masked])
def test_a_grad_mode_region_that_needs_no_gradient_is_exported_and_computes_the_same(
    make: Callable[[], nn.Module], capture: str
) -> None:
    model = make()
    loaded = fxgen.load(_export(model, capture, flat=True))
    loaded.load_state_dict(model.state_dict())
    assert torch.equal(loaded(X), model(X))
    loaded(X).sum().backward()  # the same gradients reach the same parameters
    model(X).sum().backward()
    assert loaded.proj.weight.grad is not None and torch.equal(loaded.proj.weight.grad, model.proj.weight.grad)


class _Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clamp(-1, 1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad


class CustomFunction(nn.Module):
    """A custom autograd.Function: its forward runs with gradients disabled, and is no region."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _Clamp.apply(self.proj(x) * 3)


@pytest.mark.parametrize("capture", CAPTURES)
def test_a_custom_autograd_function_is_no_grad_mode_region(capture: str) -> None:
    model = CustomFunction()
    loaded = fxgen.load(_export(model, capture, flat=True))
    loaded.load_state_dict(model.state_dict())
    assert torch.equal(loaded(X), model(X))
    assert all(p.requires_grad for p in model.parameters())  # as the capture found them


# -- module-global state ---------------------------------------------------------------------
SCALE = 2.0  # a constant by its name: no note
fast = True  # a flag: configuration, no note
offsets = [1.0, 2.0, 3.0]  # the module-global state the note names


class ReadsGlobal(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * SCALE + offsets[1] if fast else x


@pytest.mark.parametrize("capture", CAPTURES)
def test_module_global_state_the_forward_reads_is_named_in_a_note(capture: str) -> None:
    with pytest.warns(UserWarning, match=rf"ReadsGlobal\.forward reads the module-global 'offsets' of "
                                         rf"{__file__}, a list: the capture froze its current value") as caught:  # fmt: skip
        fxgen.export(ReadsGlobal(), capture=capture, example_inputs=(X,))
    assert not any("SCALE" in str(w.message) or "fast" in str(w.message) for w in caught)


# -- the command line ------------------------------------------------------------------------
def test_cli_export_refuses_a_grad_mode_region_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "export_fixtures:FrozenStem", "--out", str(tmp_path / "x.yaml")]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "export_fixtures.py:" in lines[0] and "`x = self.stem(x)`" in lines[0]
    assert "requires_grad_(False)" in lines[0] and "Traceback" not in lines[0]
    assert not (tmp_path / "x.yaml").exists()


def test_cli_export_notes_module_global_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "export_fixtures:ReadsCount", "--out", str(tmp_path / "x.yaml")]) == 0
    assert "note: ReadsCount.forward reads the module-global 'calls'" in capsys.readouterr().err


def test_auto_does_not_fall_back_to_dynamo_for_what_no_capture_records() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "captured with TorchDynamo instead" note
        with pytest.raises(ExportError, match=r"runs with gradients disabled .*export again$"):
            fxgen.export(Frozen("no_grad"))  # no hint to pass example inputs
        with pytest.raises(ExportError, match=r"runs with gradients disabled"):
            fxgen.export(Frozen("no_grad"), example_inputs=(X,))


class _Flagged(nn.Module):
    """Sets a flag in __call__ that its forward reads (issue 33, item 5)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scaled = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.scaled = True
        try:
            return super().__call__(*args, **kwargs)
        finally:
            self.scaled = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * 2 if self.scaled else self.fc(x)


class _HoldsFlagged(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = _Flagged()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x) + 1


def test_a_model_that_overrides_call_is_refused_not_traced_through_forward() -> None:
    """Tracing runs the model's forward alone: the generated model would compute the other branch."""
    with pytest.raises(ExportError, match=r"the model \(_Flagged\) overrides __call__ \(at .*test_effects\.py:\d+\): "
                                          r"symbolic tracing runs only its forward"):  # fmt: skip
        fxgen.export(_Flagged().eval(), capture="trace")


def test_a_submodule_that_overrides_call_runs_it_while_tracing() -> None:
    """A submodule's __call__ runs while the model is traced: what it computes is in the graph."""
    model = _HoldsFlagged().eval()
    gm = fxgen.load(fxgen.export(model, capture="trace", flat=True))
    gm.load_state_dict(model.state_dict())
    x = torch.randn(2, 4)
    assert torch.equal(gm(x), model(x))


def test_auto_captures_a_model_that_overrides_call_with_dynamo_which_runs_it() -> None:
    model = _Flagged().eval()
    x = torch.randn(2, 4)
    with pytest.warns(UserWarning, match="overrides __call__"):
        spec = fxgen.export(model, example_inputs=(x,), flat=True)
    gm = fxgen.load(spec)
    gm.load_state_dict(model.state_dict())
    assert torch.equal(gm(x), model(x))
