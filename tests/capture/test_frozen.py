"""What tracing would freeze into constants (``fxgen.capture.frozen``), issue 33 items 3, 4 and 7."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers import import_source
from torch import nn

import fxgen


class _Noise(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.rand(3, 4) * 2  # drawn once while tracing: frozen


class _TracedNoise(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (
            x + torch.rand_like(x) + torch.empty(x.shape).uniform_()
        )  # drawn from traced values: nodes


def test_a_random_draw_tracing_would_freeze_is_refused_naming_the_line() -> None:
    with pytest.raises(
        fxgen.ExportError, match=r"torch\.rand .*torch\.rand\(3, 4\).*_tensor_constant0"
    ) as info:
        fxgen.export(_Noise(), capture="trace")
    assert info.value.location is not None and info.value.location.line == _Noise.forward.__code__.co_firstlineno + 1


def test_with_example_inputs_auto_captures_the_draw_with_dynamo() -> None:
    with pytest.warns(UserWarning, match="draws random numbers with torch.rand"):
        loaded = fxgen.load(fxgen.export(_Noise(), example_inputs=torch.zeros(3, 4)))
    with torch.random.fork_rng():
        torch.manual_seed(1)
        expected = _Noise()(torch.zeros(3, 4))
        torch.manual_seed(1)
        assert torch.equal(loaded(torch.zeros(3, 4)), expected)


def test_a_random_draw_from_traced_values_draws_at_run_time() -> None:
    loaded = fxgen.load(fxgen.export(_TracedNoise(), capture="trace"))
    x = torch.zeros(3, 4)
    assert not torch.equal(loaded(x), loaded(x))
    with torch.random.fork_rng():
        torch.manual_seed(0)
        expected = _TracedNoise()(x)
        torch.manual_seed(0)
        assert torch.equal(loaded(x), expected)


class _LayerDrop(nn.Module):  # as OPT and XGLM skip a layer in train mode
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            if self.training and torch.rand([]) < 0.5:
                continue
            x = layer(x)
        return x


def test_a_branch_on_a_random_draw_is_refused_naming_the_line() -> None:
    with pytest.raises(fxgen.ExportError, match=r"turns a random draw of torch\.rand into a Python value .*"
                                                r"torch\.rand\(\[\]\) < 0\.5.*decided it once") as info:  # fmt: skip
        fxgen.export(_LayerDrop().train(), capture="trace")
    assert info.value.location is not None and info.value.location.line == _LayerDrop.forward.__code__.co_firstlineno + 2


def test_a_mode_that_branches_on_a_random_draw_is_refused_not_frozen() -> None:
    # Exported in eval mode (as the CLI does), train mode cannot be traced: the spec refuses it.
    model = _LayerDrop().eval()
    with pytest.warns(UserWarning, match="train mode cannot be captured"):
        loaded = fxgen.load(fxgen.export(model)).eval()
    loaded.load_state_dict(model.state_dict())
    x = torch.randn(2, 4)
    assert torch.equal(loaded(x), model(x))
    with pytest.raises(AssertionError, match="exported in eval mode only: train mode cannot be captured"):
        loaded.train()(x)


class _Masked(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return x if mask is None else x + mask


def test_an_optional_argument_left_out_is_traced_as_its_default() -> None:
    x = torch.randn(2, 3)
    loaded = fxgen.load(fxgen.export(_Masked()))
    assert torch.equal(loaded(x), x) and torch.equal(loaded(x, None), x)
    assert torch.equal(loaded(x, mask=None), x)  # by keyword too: the parameter keeps its name
    given = fxgen.load(
        fxgen.export(_Masked(), example_inputs={"x": x, "mask": x})
    )  # an example gives it a value
    assert torch.equal(given(x, x), x + x)
    fixed = fxgen.load(fxgen.export(_Masked(), concrete_args={}))  # the caller fixed what is fixed: mask is an input
    assert torch.equal(fixed(x, x), x + x)


class _Checked(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch._assert(
            x.shape[0] == 2,
            f"Input height ({x.shape[0]}) doesn't match model (2), {x.shape[1]:>3}.",
        )
        return x + 1


def test_a_string_formatted_from_traced_values_is_built_at_run_time(tmp_path: Path) -> None:
    spec = fxgen.export(_Checked())
    spec.to_file(tmp_path / "m.yaml")
    assert "Proxy" not in (tmp_path / "m.yaml").read_text()
    for model in (
        fxgen.load(fxgen.load_spec(tmp_path / "m.yaml")),
        import_source(fxgen.generate(spec), "checked", tmp_path)._Checked(),
    ):
        with pytest.raises(
            AssertionError, match=r"^Input height \(3\) doesn't match model \(2\),   4\.$"
        ):
            model(torch.zeros(3, 4))


class _Refuses(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError(f"cannot take {x.shape[0]} rows")


def test_an_error_message_formatted_from_a_traced_value_reads_plainly() -> None:
    with pytest.raises(fxgen.ExportError, match=r"ValueError: cannot take <traced value> rows"):
        fxgen.export(_Refuses())
