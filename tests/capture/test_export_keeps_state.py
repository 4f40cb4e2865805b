"""Export runs the model (in train mode too: a capture per mode, auto's proof, the blocks' proof);
none of it may change the model: batch norm's statistics, the weights written from it."""

from __future__ import annotations

import copy

import torch
from torch import nn

import fxgen


class Stage(nn.Module):
    def __init__(self, cin: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = Stage(3)
        self.b = Stage(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        if h.shape[0] > 0:  # symbolic tracing cannot branch on it: auto captures with TorchDynamo
            h = self.b(h)
        return h


def test_export_leaves_the_model_and_its_statistics_as_they_were() -> None:
    torch.manual_seed(0)
    model = Net().eval()
    before = copy.deepcopy(model.state_dict())
    x = torch.randn(2, 3, 8, 8)
    for capture in ("auto", "dynamo"):
        rng = torch.get_rng_state()
        fxgen.export(model, capture=capture, example_inputs=(x,))
        assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), capture
        assert torch.equal(torch.get_rng_state(), rng), capture
        assert not model.training


class Codebook(nn.Module):  # an EMA codebook, as monai's VQVAE updates its embedding in train mode
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x @ self.embedding.weight.t()
        if self.training:
            with torch.no_grad():
                self.embedding.weight.data.mul_(0.5)
        return out


def test_export_leaves_a_parameter_the_train_mode_forward_updates_as_it_was() -> None:
    torch.manual_seed(0)
    model = Codebook().eval()
    before = model.embedding.weight.detach().clone()
    fxgen.export(model, capture="dynamo", example_inputs=(torch.randn(2, 3),))
    assert torch.equal(model.embedding.weight, before)
