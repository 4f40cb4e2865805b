"""Export writes torch's own keyword spellings (``dim``, ``keepdim``) where the user wrote NumPy's,
so the generated file type-checks; only where the call cannot change."""

from __future__ import annotations

import torch
from torch import nn

import fxgen
from fxgen.capture.keywords import torch_keywords


class NumpyStyle(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.stack([x, x * 2], axis=1)
        return y.sum(axis=1, keepdims=True) + torch.cat([x, x], axis=0).mean(axis=0)


def test_numpy_keywords_become_torchs_and_compute_the_same() -> None:
    model = NumpyStyle()
    spec = fxgen.export(model, flat=True)
    kwargs = [dict(n.kwargs) for n in spec.nodes if n.kwargs]
    assert kwargs == [{"dim": 1}, {"dim": 1, "keepdim": True}, {"dim": 0}, {"dim": 0}]
    x = torch.randn(3, 4)
    assert torch.equal(fxgen.load(spec)(x), model(x))
    assert "axis" not in fxgen.generate(spec)


def test_a_real_axis_parameter_is_left_alone() -> None:
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    quantized = graph.call_function(torch.quantize_per_channel, (x, x, x), {"axis": 0, "dtype": torch.quint8})
    python = graph.call_function(torch.split, (x, 2), {"dim": 0})  # a Python function: never touched
    method = graph.call_method("split", (x, 2), {"axis": 0})  # Tensor.split is Python: left as written
    graph.output((quantized, python, method))
    torch_keywords(graph)
    assert quantized.kwargs == {"axis": 0, "dtype": torch.quint8}
    assert method.kwargs == {"axis": 0}
