"""An optional argument the example gives a value (issue 33 item 4): export captures the model
again without it and the spec says ``if: NAME is None`` where the two graphs differ
(``fxgen.capture.optional``), so the generated class and ``fxgen.load`` compute what the original
computes called either way, through every promise of ``bench/parity.py``; where the model cannot
be captured without it, a call leaving it out raises an error naming it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))

import parity

import fxgen
from fxgen.spec.model import IfNodes


class Scaled(nn.Module):  # issue 33's reproduction
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, scale: torch.Tensor | None = None) -> torch.Tensor:
        y = self.fc(x)
        return y if scale is None else y * scale


class Masked(nn.Module):  # as Hugging Face encoders: a mask of ones in place of one left out, read by every layer
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if mask is None:
            mask = torch.ones(x.shape[:2])
        for layer in self.layers:
            x = F.dropout(layer(x), 0.25, training=self.training) * mask.unsqueeze(-1)
        return x


class Both(Masked):  # two optional arguments: a graph for each of the four calls
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                scale: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        y = super().forward(x, mask)
        return y if scale is None else y * scale


class ModeInside(nn.Module):  # the branch for a mask reads the mode: the conditionals nest
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.fc(x)
        if mask is not None:
            x = x + mask
            if self.training:
                x = x * 2
        return x.relu()


class Required(nn.Module):  # the capture without it fails: a call leaving it out is refused
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        if y is None:
            raise ValueError("y is needed")
        return self.fc(x) + y


def _factory(cls: type[nn.Module]) -> Any:
    def build() -> nn.Module:
        torch.manual_seed(0)
        return cls().eval()

    return build


X = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(1))
OPTIONS = [{"example_inputs": None}, {"capture": "dynamo"}]


@pytest.mark.parametrize("options", OPTIONS, ids=["trace", "dynamo"])
@pytest.mark.parametrize(("cls", "given"), [(Scaled, torch.full((4,), 2.0)), (Masked, torch.tensor([[1.0, 1, 0], [1, 0, 0]]))])
def test_exact_with_the_argument_and_without_it(cls: type[nn.Module], given: torch.Tensor, options: dict[str, Any],
                                                tmp_path: Path) -> None:  # fmt: skip
    inputs = (X, given)
    proved = parity.export_checked(_factory(cls), inputs, tmp_path, export_options={**options, "example_inputs": inputs})
    assert any(isinstance(item, IfNodes) and "is None" in str(item.cond) for item in proved.spec.nodes)
    parity.check_train(_factory(cls), inputs, proved)
    parity.check_inputs(_factory(cls), (X,), proved, "optional arguments left out")
    parity.check_inputs(_factory(cls), (X[:1], given[:1] if given.dim() > 1 else given), proved, "second shape")


def test_a_model_that_cannot_be_captured_without_it_refuses_the_call_naming_it(tmp_path: Path) -> None:
    inputs = (X, torch.ones(4))
    with pytest.warns(UserWarning, match=r"optional argument 'y' is given by the example, and a call leaving it out"):
        spec = fxgen.export(_factory(Required)(), example_inputs=inputs)
    proved = parity.export_checked(_factory(Required), inputs, tmp_path, export_options={"example_inputs": inputs})
    assert proved.spec == spec
    for copy in proved.copies().values():
        with pytest.raises(AssertionError, match=r"Required.forward was exported from a call giving 'y' .* pass y"):
            copy(X)


@pytest.mark.parametrize("options", OPTIONS, ids=["trace", "dynamo"])
def test_a_branch_for_the_argument_that_reads_the_mode_is_exact_in_both_modes(options: dict[str, Any],
                                                                              tmp_path: Path) -> None:  # fmt: skip
    # Each call's two modes differ inside what the two calls do differently: ``if: training`` in
    # the run ``if: mask is None`` chooses (align refused a conditional in a differing run before).
    inputs = (X, torch.full((4,), 2.0))
    proved = parity.export_checked(_factory(ModeInside), inputs, tmp_path,
                                   export_options={**options, "example_inputs": inputs})  # fmt: skip
    nested = [item for item in proved.spec.nodes if isinstance(item, IfNodes)]
    assert nested and all(isinstance(inner, IfNodes) for item in nested for inner in (*item.then, *item.orelse))
    for call in (inputs, (X,)):
        parity.check_train(_factory(ModeInside), call, proved)
        parity.check_inputs(_factory(ModeInside), call, proved, "optional arguments left out")


@pytest.mark.parametrize("options", OPTIONS, ids=["trace", "dynamo"])
def test_two_optional_arguments_each_call_is_exact(options: dict[str, Any], tmp_path: Path) -> None:
    mask, scale = torch.tensor([[1.0, 1, 0], [1, 0, 0]]), torch.full((4,), 2.0)
    inputs = (X, mask, scale)
    proved = parity.export_checked(_factory(Both), inputs, tmp_path, export_options={**options, "example_inputs": inputs})
    parity.check_train(_factory(Both), inputs, proved)
    for call in ((X,), (X, mask), (X, None, scale)):
        parity.check_inputs(_factory(Both), call, proved, "optional arguments left out")


@pytest.mark.parametrize("options", OPTIONS, ids=["trace", "dynamo"])
def test_an_optional_argument_the_example_leaves_out_is_an_input_refusing_a_value(options: dict[str, Any],
                                                                                   tmp_path: Path) -> None:  # fmt: skip
    # The spec records it either way (issue 33): a trace binds it to None, a TorchDynamo capture
    # gets it no example input; both give an input defaulting to None that refuses a value.
    proved = parity.export_checked(_factory(Scaled), (X,), tmp_path, export_options={**options, "example_inputs": (X,)})
    placeholders = [n for n in proved.spec.nodes if getattr(n, "op", None) == "placeholder"]
    assert [(n.name, n.default) for n in placeholders][-1][1] is None
    parity.check_train(_factory(Scaled), (X,), proved)
    for copy in proved.copies().values():
        with pytest.raises(AssertionError, match=r"Scaled.forward was exported from a call leaving .scale. out \(None\) .* giving scale"):
            copy(X, torch.full((4,), 2.0))
