"""``read_weights``: aligned, exact tensors, and the file's pages given back as they are copied."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import fxgen.read.weights as weights
from fxgen.read.weights import read_weights


def _state() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    state = {
        "big": torch.randn(3, 700, 301, generator=gen),  # more than one chunk below
        "half": torch.randn(1001, 33, generator=gen).to(torch.bfloat16),
        "flags": torch.tensor([True, False, True]),
        "count": torch.tensor(7, dtype=torch.int64),
        "empty": torch.zeros(0, 4),
    }
    state.update({f"small{i}": torch.randn(17 * i + 1, 5, generator=gen) for i in range(20)})
    return state


@pytest.mark.parametrize("chunk", [2**20, 4096, 100])
def test_tensors_come_back_aligned_and_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    path = tmp_path / "w.safetensors"
    state = _state()
    save_file(state, str(path))
    # the file has misaligned tensors
    assert any(t.data_ptr() % 64 for t in load_file(str(path)).values())
    released: list[tuple[int, int]] = []
    real = weights._madvise()

    def spy(start: int, length: int, advice: int) -> int:
        released.append((start, length))
        return real(start, length, advice) if real is not None else 0

    monkeypatch.setattr(weights, "_CHUNK", chunk)
    monkeypatch.setattr(weights, "_madvise", lambda: spy)
    got = read_weights(path)
    assert got.keys() == state.keys()
    for key, want in state.items():
        assert got[key].dtype == want.dtype and torch.equal(got[key], want), key
        assert got[key].is_contiguous(), key
        assert got[key].numel() == 0 or got[key].data_ptr() % 64 == 0, key
    # whole pages only, each given back once: most of the file, never more than it
    spans = sorted(released)
    assert all(a + n <= b for (a, n), (b, _) in itertools.pairwise(spans))
    assert 0.5 * path.stat().st_size < sum(n for _, n in spans) <= path.stat().st_size


def test_without_madvise_the_tensors_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.safetensors"
    state = _state()
    save_file(state, str(path))
    monkeypatch.setattr(weights, "_madvise", lambda: None)
    got = read_weights(path)
    for key, want in state.items():
        assert torch.equal(got[key], want), key
        assert want.numel() == 0 or got[key].data_ptr() % 64 == 0, key
