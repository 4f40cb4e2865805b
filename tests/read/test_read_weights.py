"""``read_weights``: aligned, exact tensors; those at a 64-byte offset of the file stay views into
it, the others are read into one aligned allocation, each tensor a storage of its own.
``weights_digest``: the digest fxgen's writer records, from the header alone."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

import fxgen.read.weights as weights
from fxgen._errors import WeightsError
from fxgen.read.weights import read_weights, weights_digest
from fxgen.write.weights import write_weights


def _state() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    state = {
        "big": torch.randn(3, 700, 304, generator=gen),  # a multiple of 64 bytes: at a boundary in fxgen's files
        "half": torch.randn(1001, 33, generator=gen).to(torch.bfloat16),
        "flags": torch.tensor([True, False, True]),
        "count": torch.tensor(7, dtype=torch.int64),
        "empty": torch.zeros(0, 4),
        "wave": torch.randn(5, 3, dtype=torch.complex64, generator=gen),
    }
    state.update({f"small{i}": torch.randn(17 * i + 1, 5, generator=gen) for i in range(20)})
    return state


def _assert_exact(got: dict[str, torch.Tensor], state: dict[str, torch.Tensor]) -> None:
    assert got.keys() == state.keys()
    for key, want in state.items():
        assert got[key].dtype == want.dtype and got[key].shape == want.shape and torch.equal(got[key], want), key
        assert got[key].is_contiguous(), key
        assert got[key].numel() == 0 or got[key].data_ptr() % 64 == 0, key


def _save_file(tmp_path: Path) -> tuple[Path, dict[str, torch.Tensor]]:
    """A file as ``safetensors.torch.save_file`` (and Hugging Face's ``save_pretrained``) writes
    it: tensors at 8-byte offsets."""
    path = tmp_path / "w.safetensors"
    state = _state()
    save_file(state, str(path))
    assert sum(bool(t.data_ptr() % 64) for t in load_file(str(path)).values()) > len(state) // 2
    return path, state


def test_a_save_file_file_comes_back_aligned_and_exact(tmp_path: Path) -> None:
    path, state = _save_file(tmp_path)
    got = read_weights(path)
    _assert_exact(got, state)
    # each tensor has a storage of its own, as safetensors' own loader gives: save_file, which
    # refuses tensors sharing memory, takes them
    assert len({t.untyped_storage().data_ptr() for t in got.values() if t.numel()}) == len(state) - 1
    save_file(got, str(tmp_path / "again.safetensors"))
    _assert_exact(read_weights(tmp_path / "again.safetensors"), state)


def test_the_read_tensors_outlive_everything_else(tmp_path: Path) -> None:
    path, state = _save_file(tmp_path)
    kept = read_weights(path)["big"]
    for _ in range(3):
        read_weights(path)  # allocations come and go around it
    assert torch.equal(kept, state["big"])


def test_fxgens_own_files_are_read_only_where_misaligned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file fxgen wrote has its tensors at 64-byte offsets wherever their sizes allow: those are
    views into the mapped file, nothing is read for them."""
    path = tmp_path / "w.safetensors"
    state = _state()
    write_weights(path, state)
    real = weights._read_aligned
    read: list[str] = []

    def spy(f: io.FileIO, where: Any, start: int, tensors: dict[str, Any]) -> dict[str, torch.Tensor]:
        read.extend(tensors)
        return real(f, where, start, tensors)

    monkeypatch.setattr(weights, "_read_aligned", spy)
    _assert_exact(read_weights(path), state)
    start = 8 + int.from_bytes(path.read_bytes()[:8], "little")
    header = json.loads(path.read_bytes()[8:start])
    off = {k for k, entry in header.items() if k != "__metadata__" and (start + entry["data_offsets"][0]) % 64}
    assert set(read) == off - {"empty"}
    assert "big" not in read and sum(state[k].nbytes for k in read) < 0.1 * sum(t.nbytes for t in state.values())


@pytest.mark.parametrize("limit", [1, 7, 4096])
def test_short_reads_and_small_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """The reads go on where a read stopped (a system may return fewer bytes than asked), in
    batches of at most ``_IOV_MAX`` buffers; without preadv, one buffer at a time."""
    path, state = _save_file(tmp_path)

    def short(f: io.FileIO, buffers: list[memoryview], offset: int) -> int:
        f.seek(offset)
        return f.readinto(buffers[0][:limit]) or 0

    monkeypatch.setattr(weights, "_PREADV", short)
    monkeypatch.setattr(weights, "_IOV_MAX", 3)
    _assert_exact(read_weights(path), state)
    monkeypatch.setattr(weights, "_PREADV", weights._seek_readinto)
    _assert_exact(read_weights(path), state)


def test_a_file_that_ends_early_while_read_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = _save_file(tmp_path)
    monkeypatch.setattr(weights, "_PREADV", lambda f, buffers, offset: 0)
    with pytest.raises(WeightsError, match="ended early") as info:
        read_weights(path)
    assert str(path) in str(info.value)


def test_the_digest_comes_from_the_header(tmp_path: Path) -> None:
    path, _ = _save_file(tmp_path)
    assert weights_digest(path) is None  # another tool's file: no digest
    digest = write_weights(path, _state())
    assert digest.startswith("sha256:") and weights_digest(path) == digest
    (tmp_path / "bad").write_bytes(b"\xff" * 8 + b"{}")
    nested = b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    (tmp_path / "nested").write_bytes(len(nested).to_bytes(8, "little") + nested)
    (tmp_path / "list").write_bytes((2).to_bytes(8, "little") + b"[]")
    for bad in (tmp_path / "bad", tmp_path / "missing", tmp_path / "nested", tmp_path / "list"):
        with pytest.raises(WeightsError, match="cannot read weights") as info:
            weights_digest(bad)
        assert str(bad) in str(info.value)


def test_seek_readinto_reads_the_first_buffer() -> None:
    buffers = [memoryview(bytearray(3)), memoryview(bytearray(3))]
    assert weights._seek_readinto(io.BytesIO(b"abcdefgh"), buffers, 2) == 3
    assert bytes(buffers[0]) == b"cde" and bytes(buffers[1]) == b"\0\0\0"
