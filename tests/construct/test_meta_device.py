"""Building on the meta device (``fxgen.construct.modules.meta_device``): random fills of meta
tensors are skipped, every check a real construction makes still runs, real tensors are untouched."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from fxgen.construct.modules import meta_device


class _Ops(TorchDispatchMode):
    """The aten operators that reach the dispatcher."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.seen.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.nn.Linear(8, 4),
        lambda: torch.nn.Conv2d(3, 6, 3),
        lambda: torch.nn.Embedding(10, 4),
        lambda: torch.nn.MultiheadAttention(8, 2),
    ],
)
def test_meta_construction_fills_nothing(make: Any) -> None:
    with _Ops() as ops, meta_device():
        module = make()
    assert all(t.is_meta for t in module.state_dict().values())
    assert not {"uniform_", "normal_"} & set(ops.seen), ops.seen


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [((3,), {}), ((3, 3), {"mode": "fan_sideways"}), ((3, 3), {"nonlinearity": "swish?"})],
)
def test_a_skipped_kaiming_fill_refuses_what_a_real_one_refuses(
    shape: tuple[int, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(ValueError) as real:
        torch.nn.init.kaiming_uniform_(torch.empty(shape), **kwargs)
    with pytest.raises(ValueError) as meta, meta_device():
        torch.nn.init.kaiming_uniform_(torch.empty(shape), **kwargs)
    assert str(meta.value) == str(real.value)


def test_real_tensors_are_filled_as_without_the_device() -> None:
    torch.manual_seed(0)
    expected = torch.nn.init.kaiming_uniform_(torch.empty(4, 4), a=0.5)
    torch.manual_seed(0)
    with meta_device():
        got = torch.nn.init.kaiming_uniform_(torch.empty(4, 4, device="cpu"), a=0.5)
    assert not got.is_meta
    assert torch.equal(got, expected)
