"""bench/parity.py's promises beyond the example (train mode, other inputs, optional arguments
left out) and the zoo's second input shapes: each check finds what it is for, and says when it
does not apply."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import parity
from parity import Exported, ParityError, check_inputs, check_train
from zoo import BATCH, SEQUENCE, ZooModel, resized


class Net(nn.Module):
    """Dropout and BatchNorm submodules: the generated code switches both with .train()."""

    def __init__(self, momentum: float = 0.1) -> None:
        super().__init__()
        self.fc, self.bn, self.drop = nn.Linear(4, 4), nn.BatchNorm1d(4, momentum=momentum), nn.Dropout(0.5)

    def forward(self, x: torch.Tensor, scale: torch.Tensor | None = None) -> torch.Tensor:
        y = self.drop(self.bn(self.fc(x)))
        return y if scale is None else y * scale


class SlowStats(Net):
    def __init__(self) -> None:
        super().__init__(momentum=0.5)


class FixedBatch(Net):
    def forward(self, x: torch.Tensor, scale: torch.Tensor | None = None) -> torch.Tensor:
        return super().forward(x.view(3, 4), scale)


def _net() -> nn.Module:
    torch.manual_seed(0)
    return Net().eval()


X = (torch.randn(3, 4, generator=torch.Generator().manual_seed(1)),)
SCALED = (*X, torch.full((4,), 2.0))


def _exported(tmp_path: Path, generated: type[nn.Module] | None = None, inputs: tuple = X) -> Exported:
    proved = parity.export_checked(_net, inputs, tmp_path, export_options={"example_inputs": inputs})
    return proved if generated is None else Exported(proved.spec, proved.checkpoint, generated)


def test_train_mode_and_other_inputs_are_exact_on_both_copies(tmp_path: Path) -> None:
    proved = _exported(tmp_path)
    assert set(proved.copies()) == {"the generated class", "fxgen.load"}
    check_train(_net, X, proved)
    check_inputs(_net, resized(X, ("batch",)), proved, "second shape")


def test_an_optional_argument_the_example_gives_can_be_left_out(tmp_path: Path) -> None:
    proved = _exported(tmp_path, inputs=SCALED)
    fewer = parity.required_inputs(_net(), SCALED)
    assert fewer == X
    check_inputs(_net, fewer, proved, "optional arguments left out")


def test_train_mode_compares_the_running_statistics_after_one_forward(tmp_path: Path) -> None:
    with pytest.raises(ParityError, match=r"train mode: the generated class: after one forward, bn.running_mean") as caught:
        check_train(_net, X, _exported(tmp_path, SlowStats))  # the same outputs, other statistics
    assert caught.value.error is not None and caught.value.error > 0


def test_a_copy_that_raises_is_an_error_and_an_original_that_raises_does_not_apply(tmp_path: Path) -> None:
    proved = _exported(tmp_path, FixedBatch)
    with pytest.raises(ParityError, match=r"second shape: the generated class: RuntimeError") as caught:
        check_inputs(_net, resized(X, ("batch",)), proved, "second shape")
    assert caught.value.error is None
    with pytest.raises(parity.OriginalRefuses, match="RuntimeError"):
        check_inputs(_net, (torch.randn(3, 5),), proved, "second shape")


def test_required_inputs_leave_out_what_has_a_default_but_the_first_input() -> None:
    class AllOptional(nn.Module):  # as Hugging Face writes forward
        def forward(self, input_ids=None, attention_mask=None):  # type: ignore[no-untyped-def]
            return input_ids

    assert parity.required_inputs(Net(), SCALED) == X
    assert parity.required_inputs(Net(), X) is None
    assert parity.required_inputs(AllOptional(), SCALED) == X


def test_second_shapes_change_the_declared_axes_with_the_examples_values() -> None:
    image, ids, mask = torch.rand(1, 3, 4, 4), torch.randint(0, 9, (2, 8)), torch.ones(2, 8, dtype=torch.long)
    (bigger,) = resized((image,), ("batch", "spatial"))
    assert bigger.shape == (2, 3, 8, 8) and torch.equal(bigger[1, :, ::2, ::2], image[0])
    shorter = resized((ids, mask, 5), ("batch", "length"))
    assert [tuple(t.shape) for t in shorter[:2]] == [(3, 4), (3, 4)] and shorter[2] == 5
    assert torch.equal(shorter[0][2], ids[0, :4])
    entry = ZooModel("x.Seq", nn.Identity, lambda: (ids, mask), requires=(), varies=SEQUENCE)
    assert [axes for axes, _ in entry.other_inputs()] == ["batch, length", "batch"]
    flat = ZooModel("x.Flat", nn.Identity, lambda: (torch.randn(2, 8),), requires=())  # no spatial axis to change
    assert [axes for axes, _ in flat.other_inputs()] == ["batch"]
    assert ZooModel("x.One", nn.Identity, lambda: (image,), requires=(), varies=BATCH).other_inputs()[0][0] == "batch"


class ExtraOutput(Net):
    def forward(self, x: torch.Tensor, scale: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        y = super().forward(x, scale)
        return (y, y.sum()) if self.training else (y,)


def test_a_copy_that_returns_other_outputs_differs_by_infinity(tmp_path: Path) -> None:
    with pytest.raises(ParityError, match="train mode: the generated class: outputs differ: 2 tensors where the "
                       "original gives 1") as caught:  # fmt: skip
        check_train(_net, X, _exported(tmp_path, ExtraOutput))
    assert caught.value.error == float("inf")
