"""``weights_bytes``: a safetensors file every reader accepts, with safetensors' own keys, dtypes,
shapes, values and metadata, laid out so that tensors sit at 64-byte offsets of the file (read
without a copy) wherever their sizes allow, each at a multiple of its own element size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from safetensors.numpy import load as numpy_load
from safetensors.torch import load, load_file, save

from fxgen.read.weights import read_weights
from fxgen.write.weights import _itemsize, weights_bytes, write_weights

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.uint8,
          torch.bool, torch.float64, torch.int8]  # fmt: skip


def _layout(data: bytes) -> tuple[int, dict[str, object], dict[str, tuple[int, int]]]:
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    metadata = header.pop("__metadata__", None)
    return 8 + n, metadata, {k: tuple(v["data_offsets"]) for k, v in header.items()}


def _check(state: dict[str, torch.Tensor], data: bytes) -> None:
    got = load(data)  # safetensors' Rust reader validates the header: contiguous, no gaps, in bounds
    assert got.keys() == state.keys()
    for key, want in state.items():
        assert got[key].dtype == want.dtype and got[key].shape == want.shape, key
        assert torch.equal(got[key], want), key
    start, metadata, spans = _layout(data)
    assert metadata == {"format": "pt", "producer": "fxgen"} and start % 64 == 0
    assert sorted(spans.values())[-1][1] == len(data) - start if spans else len(data) == start
    _, _, ref_spans = _layout(save({k: v.contiguous() for k, v in state.items()}))
    for key, (lo, hi) in spans.items():
        assert hi - lo == ref_spans[key][1] - ref_spans[key][0]
        single = save({key: state[key]})  # safetensors' own bytes for the tensor
        assert data[start + lo : start + hi] == single[len(single) - (hi - lo) :]
        assert lo % max(1, state[key].element_size()) == 0, key  # as safetensors keeps it
        if (hi - lo) % 64 == 0:
            assert lo % 64 == 0, key  # every tensor whose size allows it is read without a copy


def _bn_like_state() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    state: dict[str, torch.Tensor] = {}
    for i, width in enumerate([10, 13, 16, 29, 48]):
        state[f"conv{i}.weight"] = torch.randn(width, width, 3, 3, generator=gen)
        state[f"bn{i}.weight"] = torch.randn(width, generator=gen)
        state[f"bn{i}.running_mean"] = torch.randn(width, generator=gen)
        state[f"bn{i}.num_batches_tracked"] = torch.tensor(i, dtype=torch.int64)
    state["head.weight"] = torch.randn(7, 48, generator=gen).to(torch.bfloat16)
    state["mask"] = torch.tensor([True, False, True])
    return state


def test_the_file_keeps_every_tensor_and_aligns_what_it_can() -> None:
    state = _bn_like_state()
    data = weights_bytes(state)
    _check(state, data)
    start, _, spans = _layout(data)
    ours = sum(hi - lo for lo, hi in spans.values() if (start + lo) % 64)
    _, _, plain = _layout(save(state))  # safetensors' order, even with the data at a boundary
    theirs = sum(hi - lo for lo, hi in plain.values() if lo % 64)
    assert ours < theirs / 2  # bytes that are copied when read


def test_every_reader_takes_it(tmp_path: Path) -> None:
    state = {k: v for k, v in _bn_like_state().items() if v.dtype != torch.bfloat16}
    path = tmp_path / "w.safetensors"
    write_weights(path, state)
    for got in (load_file(str(path)), read_weights(path)):
        assert all(torch.equal(got[k], v) for k, v in state.items()) and got.keys() == state.keys()
    arrays = numpy_load(path.read_bytes())
    assert all(np.array_equal(arrays[k], v.numpy()) for k, v in state.items())
    with safe_open(str(path), framework="pt") as f:
        assert f.metadata() == {"format": "pt", "producer": "fxgen"}
        assert set(f.keys()) == set(state)
        assert torch.equal(f.get_slice("conv1.weight")[2:4], state["conv1.weight"][2:4])


def test_the_bytes_do_not_depend_on_the_state_order() -> None:
    """Nor on the order safetensors writes the metadata in (a hash map's, different each call)."""
    state = _bn_like_state()
    first = weights_bytes(state)
    assert all(weights_bytes(dict(reversed(state.items()))) == first for _ in range(10))


def test_element_sizes() -> None:
    assert [_itemsize(d) for d in ("F64", "F32", "BF16", "I64", "U8", "BOOL", "F8_E4M3", "F4")] == [
        8, 4, 2, 8, 1, 1, 1, 1,
    ]  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(DTYPES), st.lists(st.integers(0, 9), max_size=3)),
        max_size=12,
    )
)
def test_any_state_round_trips(specs: list[tuple[torch.dtype, list[int]]]) -> None:
    gen = torch.Generator().manual_seed(len(specs))
    state = {}
    for i, (dtype, shape) in enumerate(specs):
        values = torch.randint(0, 2 if dtype == torch.bool else 100, shape, generator=gen)
        state[f"t{i}"] = values.to(dtype)
    _check(state, weights_bytes(state))
