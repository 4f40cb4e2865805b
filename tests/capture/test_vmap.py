"""torch.vmap in a TorchDynamo capture (fxgen.capture.vmap): written as the plain tensor operations
it stands for, exactly (bench/parity.py), or refused by name. Hugging Face transformers 4.5x
builds its attention masks so: nested vmaps over index ranges, indexing a padding mask."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import fxgen
from fxgen._errors import ExportError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from parity import check_parity


class VmapMask(nn.Module):
    """An attention mask as transformers 4.57's masking_utils builds it (vmap over b, q, kv)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        def allowed(b: torch.Tensor, q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
            keep = q.new_ones((), dtype=torch.bool)
            return keep & (kv <= q) & padding[b, kv].bool()

        size = torch.arange(x.shape[1])
        inner = torch.vmap(torch.vmap(allowed, in_dims=(None, None, 0)), in_dims=(None, 0, None))
        mask = torch.vmap(inner, in_dims=(0, None, None))(torch.arange(x.shape[0]), size, size)
        scores = (self.proj(x) @ x.transpose(1, 2)).masked_fill(~mask, -1e4)
        return scores.softmax(-1) @ x


class VmapLayouts(nn.Module):
    """Mapped over a middle dimension into another out_dim; a scaled row (broadcasting with an
    unbatched tensor of higher rank) and a result that does not depend on the mapped value."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.scale = nn.Parameter(torch.randn(3, 5))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scaled, same = torch.vmap(lambda row: (row * self.scale - 1.0, self.scale), in_dims=1, out_dims=(2, 0))(x)
        return scaled, same


class VmapSum(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.vmap(lambda row: row.sum())(x)


def _no_private_targets(spec: fxgen.Spec) -> None:
    assert not any(str(node.target).startswith(("torch._", "aten")) for node in spec.nodes), spec.nodes


def test_a_vmap_built_attention_mask_is_written_as_plain_operations(tmp_path: Path) -> None:
    x = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(1))
    padding = torch.ones(2, 6, dtype=torch.long)
    padding[1, -2:] = 0
    options = {"capture": "dynamo", "example_inputs": (x, padding)}
    spec = check_parity(VmapMask, (x, padding), tmp_path, export_options=options)
    _no_private_targets(spec)


def test_vmap_in_and_out_dims_and_an_unmapped_result_are_exact(tmp_path: Path) -> None:
    x = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(2))
    spec = check_parity(VmapLayouts, (x,), tmp_path, export_options={"capture": "dynamo", "example_inputs": (x,)})
    _no_private_targets(spec)
    assert any(node.target == "expand" for node in spec.nodes)  # self.scale repeated along the mapped size


def test_an_operation_vmap_cannot_be_written_for_is_refused_naming_it() -> None:
    with pytest.raises(ExportError, match=r"runs torch.vmap, and its node .* \(sum\) .*row.sum\(\).* is an operation "
                                          r"fxgen cannot write without vmap") as caught:
        fxgen.export(VmapSum(), capture="dynamo", example_inputs=(torch.randn(2, 3),))
    assert caught.value.location is not None and caught.value.location.path == __file__
