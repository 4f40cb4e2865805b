"""``write_weights``: a safetensors file every reader accepts, with safetensors' own keys, dtypes,
shapes, values and metadata, laid out so that tensors sit at 64-byte offsets of the file (read
without a copy) wherever their sizes allow, each at a multiple of its own element size; streamed
from the tensors, byte for byte the file the former in-memory writer made (safetensors' ``save``,
laid out again), with the digest of its tensor table and data in its metadata."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers import property_budget
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from safetensors.numpy import load as numpy_load
from safetensors.torch import load, load_file, save

import fxgen.write.weights as writer
from fxgen._errors import GenerateError, WeightsError
from fxgen.read.weights import read_weights
from fxgen.write.weights import _itemsize, _order, write_weights

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.uint8,
          torch.bool, torch.float64, torch.int8]  # fmt: skip


def _layout(data: bytes) -> tuple[int, dict[str, object], dict[str, tuple[int, int]]]:
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    metadata = header.pop("__metadata__", None)
    return 8 + n, metadata, {k: tuple(v["data_offsets"]) for k, v in header.items()}


def weights_bytes(state: dict[str, torch.Tensor]) -> bytes:
    """The file ``write_weights`` writes for ``state``."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w.safetensors"
        write_weights(path, state)
        return path.read_bytes()


def _former_writer(state: dict[str, torch.Tensor], metadata: dict[str, str]) -> bytes:
    """The writer before streaming: safetensors' ``save`` of copies of the tensors, all in memory,
    then laid out again in ``_order`` with the header padded to 64 bytes."""
    data = save({k: v.detach().clone().contiguous() for k, v in sorted(state.items())}, metadata=metadata)
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    body = data[8 + size :]
    layout: dict[str, Any] = {"__metadata__": dict(sorted(header.pop("__metadata__").items()))}
    parts, offset = [], 0
    for name in _order(header):
        start, end = header[name]["data_offsets"]
        layout[name] = {**header[name], "data_offsets": [offset, offset + end - start]}
        parts.append(body[start:end])
        offset += end - start
    text = json.dumps(layout, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-(8 + len(text)) % 64)
    return b"".join([len(text).to_bytes(8, "little"), text, *parts])


def _check(state: dict[str, torch.Tensor], data: bytes) -> None:
    got = load(data)  # safetensors' Rust reader validates the header: contiguous, no gaps, in bounds
    assert got.keys() == state.keys()
    for key, want in state.items():
        assert got[key].dtype == want.dtype and got[key].shape == want.shape, key
        assert torch.equal(got[key], want), key
    start, metadata, spans = _layout(data)
    assert isinstance(metadata, dict) and start % 64 == 0
    assert metadata == {"digest": metadata["digest"], "format": "pt", "producer": "fxgen"}
    assert data == _former_writer(state, metadata)
    table = json.loads(data[8:start])
    del table["__metadata__"]
    digest = hashlib.sha256(json.dumps(table, separators=(",", ":"), ensure_ascii=False).encode() + data[start:])
    assert metadata["digest"] == "sha256:" + digest.hexdigest()
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
        assert f.metadata() == {"digest": f.metadata()["digest"], "format": "pt", "producer": "fxgen"}
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


@settings(max_examples=property_budget(60), deadline=None)
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


def test_tensors_as_a_model_holds_them() -> None:
    """Parameters that require grad, tied and non-contiguous tensors, views into a larger one."""
    gen = torch.Generator().manual_seed(1)
    weight = torch.nn.Parameter(torch.randn(6, 5, generator=gen))
    base = torch.randn(8, 9, generator=gen)
    state = {"weight": weight, "tied": weight, "transposed": base.t(), "columns": base[:, 2:5],
             "row": base[3], "conj": torch.randn(3, dtype=torch.complex64, generator=gen).conj()}  # fmt: skip
    data = weights_bytes(state)
    _check({k: v.detach().resolve_conj().clone(memory_format=torch.contiguous_format) for k, v in state.items()}, data)


def test_the_digest_follows_every_byte() -> None:
    state = _bn_like_state()
    first = _layout(weights_bytes(state))[1]
    state["bn2.weight"] = state["bn2.weight"].clone()
    state["bn2.weight"][3] = torch.nextafter(state["bn2.weight"][3], torch.tensor(10.0))
    assert _layout(weights_bytes(state))[1] != first
    state = _bn_like_state()
    state["renamed"] = state.pop("bn2.weight")  # the same bytes under another name
    assert _layout(weights_bytes(state))[1] != first


@pytest.mark.parametrize("fail", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_write_leaves_the_old_file_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: BaseException
) -> None:
    path = tmp_path / "w.safetensors"
    write_weights(path, {"old": torch.ones(3)})
    before = path.read_bytes()
    real = writer._bytes
    calls = iter(range(3))

    def failing(tensor: torch.Tensor) -> memoryview:
        if next(calls) == 2:
            raise fail
        return real(tensor)

    monkeypatch.setattr(writer, "_bytes", failing)
    with pytest.raises(GenerateError if isinstance(fail, OSError) else KeyboardInterrupt) as info:
        write_weights(path, _bn_like_state())
    if isinstance(fail, OSError):
        assert str(path) in str(info.value) and "No space left" in str(info.value)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["w.safetensors"]


def test_a_dtype_safetensors_cannot_store_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(WeightsError, match=r"'z' is a torch\.complex128 tensor"):
        write_weights(tmp_path / "w.safetensors", {"a": torch.ones(2), "z": torch.ones(2, dtype=torch.complex128)})
    assert not list(tmp_path.iterdir())
