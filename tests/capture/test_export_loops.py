"""A run of calls over a container's items, each feeding the next, is exported as the loop the
author wrote (``fxgen.capture.loops``), and proven exact in both modes; anything else stays as
the numbered calls it was."""

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
from fxgen.spec.model import ForNodes, Node


class Block(nn.Module):
    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.drop = nn.Dropout(0.25)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, is_causal: bool = False) -> torch.Tensor:
        return x + self.drop(torch.relu(self.lin(x)) * mask) * (2.0 if is_causal else 1.0)


class Stack(nn.Module):
    """The ten-line model: a ModuleList of 4 blocks run in a Python loop with a mask."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(4)])
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for blk in self.blocks:
            x = blk(x, mask, True)
        return self.head(x)


class TupleLayer(nn.Module):
    """A Hugging Face layer: returns a tuple, the caller takes ``[0]``; reads the mode."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, h: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = F.dropout(self.lin(h), 0.1, training=self.training) + bias
        return out, out.sum()


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(4, 8)
        self.layer = nn.ModuleList([TupleLayer(8) for _ in range(3)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        bias = h.mean(-1, keepdim=True)
        for layer in self.layer:
            h = layer(h, bias)[0]
        return h + self.embed(x)


class EncoderDecoder(nn.Module):
    """Two runs in one forward, each of a call and its first item: names of their own."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(4, 8)
        self.enc = nn.ModuleList([TupleLayer(8) for _ in range(2)])
        self.dec = nn.ModuleList([TupleLayer(8) for _ in range(3)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        for layer in self.enc:
            h = layer(h, x[:, :1])[0]
        for layer in self.dec:
            h = layer(h, x[:, 1:2])[0]
        return h


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.q(x), -1) * x


class PairTransformer(nn.Module):
    """vit-pytorch's transformer: a ModuleList of [attention, feed-forward] pairs, walked as
    ``for attn, ff in self.layers``."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleList([Attention(), nn.Sequential(nn.Linear(8, 8), nn.GELU())])
                                     for _ in range(3)])  # fmt: skip
        self.norm = nn.LayerNorm(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return self.norm(x)


class HiddenStates(nn.Module):
    """monai's ViT: each block's output kept in a list, returned with the result."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(3)])
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        hidden_states_out = []
        for blk in self.blocks:
            x = blk(x, mask)
            hidden_states_out.append(x)
        return self.head(x), hidden_states_out


class Widths(nn.Module):
    """Items of one class built with other arguments (a Sequential walked item by item), and
    the value the run starts from read again after it."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 16), nn.Linear(16, 16), nn.Linear(16, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for layer in self.layers:
            h = torch.tanh(layer(h))
        return h + x


class ModeSteps(nn.Module):
    """A step that reads the mode itself, over a Sequential of blocks walked item by item."""

    def __init__(self) -> None:
        super().__init__()
        self.seq = nn.Sequential(Block(), Block(), Block())

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for blk in self.seq:
            x = F.dropout(blk(x, mask), 0.5, training=self.training)
        return x


def _factory(cls: type[nn.Module]) -> Any:
    def build() -> nn.Module:
        torch.manual_seed(0)
        return cls().eval()

    return build


X = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1))
MASK = (torch.rand(2, 5, 8, generator=torch.Generator().manual_seed(2)) > 0.3).float()


def _loops(items: list[Any]) -> list[ForNodes]:
    return [item for item in items if isinstance(item, ForNodes)]


def _exact_in_both_modes(cls: type[nn.Module], inputs: tuple[Any, ...], tmp_path: Path) -> fxgen.Spec:
    proved = parity.export_checked(_factory(cls), inputs, tmp_path, stem=cls.__name__.lower())
    parity.check_train(_factory(cls), inputs, proved)
    return proved.spec


def test_a_modulelist_run_in_a_python_loop_is_exported_as_a_loop(tmp_path: Path) -> None:
    spec = _exact_in_both_modes(Stack, (X, MASK), tmp_path)
    assert spec.modules["blocks"].to_dict() == {"class": "torch.nn.ModuleList",
                                                "args": [[{"repeat": 4, "module": {"class": "Block"}}]]}  # fmt: skip
    assert not any(path.startswith("blocks.") for path in spec.modules)
    (loop,) = _loops(spec.nodes)
    assert loop.to_dict() == {
        "for": "i", "in": 4, "carry": {"x": "%blocks_out"},
        "nodes": [{"op": "call_module", "name": "blocks_out", "target": "blocks.{i}", "args": ["%x", "%mask"]}],
    }  # fmt: skip
    assert spec.nodes[-2] == Node("call_module", "head", "head", ["%x"])
    assert "for block in self.blocks:\n            blocks_out = block(x, mask)\n            x = blocks_out" in fxgen.generate(spec)
    assert fxgen.export(_factory(Stack)()) == spec  # deterministic names, inside and after the loop


def test_a_step_of_a_call_and_its_first_item_is_one_loop_in_both_modes(tmp_path: Path) -> None:
    spec = _exact_in_both_modes(Encoder, (torch.randn(2, 4),), tmp_path)
    (loop,) = _loops(spec.nodes)
    assert [n.to_dict() for n in loop.nodes] == [
        {"op": "call_module", "name": "layer_out", "target": "layer.{i}", "args": ["%embed", "%mean"]},
        {"op": "call_function", "name": "getitem", "target": "operator.getitem", "args": ["%layer_out", 0]},
    ]
    assert loop.carry == {"embed": "%getitem"}  # (embed is read again after it: the model computes it twice)
    parity.check_inputs(_factory(Encoder), (torch.randn(3, 4),), parity.export_checked(
        _factory(Encoder), (torch.randn(2, 4),), tmp_path / "again"), "second shape")  # fmt: skip


def test_two_runs_in_one_forward_are_two_loops(tmp_path: Path) -> None:
    spec = _exact_in_both_modes(EncoderDecoder, (torch.randn(2, 4),), tmp_path)
    enc, dec = _loops(spec.nodes)
    names = [n.name for loop in (enc, dec) for n in loop.nodes]
    assert names == ["getitem", "enc_out", "enc_getitem", "dec_getitem", "dec_out", "getitem2"]
    assert (enc.var, enc.count, dec.count) == ("i", 2, 3)


def test_a_modulelist_of_pairs_walked_as_pairs(tmp_path: Path) -> None:
    spec = _exact_in_both_modes(PairTransformer, (X,), tmp_path)
    pair = {"class": "torch.nn.ModuleList", "args": [[{"module": {"class": "Attention"}}, {"module": {
        "class": "torch.nn.Sequential", "args": [{"module": {"class": "torch.nn.Linear", "args": [8, 8]}},
                                                 {"module": {"class": "torch.nn.GELU"}}]}}]]}  # fmt: skip
    assert spec.modules["layers"].to_dict() == {"class": "torch.nn.ModuleList", "args": [[{"repeat": 3, "module": pair}]]}
    assert ("        for layer in self.layers:\n            attention = layer[0](x)\n            add = attention + x\n"
            "            sequential = layer[1](add)\n") in fxgen.generate(spec)  # fmt: skip


def test_every_step_s_value_in_a_list_after_the_run_is_the_loop_s_collect(tmp_path: Path) -> None:
    spec = _exact_in_both_modes(HiddenStates, (X, MASK), tmp_path)
    (loop,) = _loops(spec.nodes)
    assert (loop.carry, loop.collect) == ({"x": "%blocks_out"}, "blocks_outs")
    assert spec.nodes[-1].args == [{"tuple": ["%head", "%blocks_outs"]}]
    assert "            blocks_outs.append(blocks_out)\n" in fxgen.generate(spec)


def test_items_with_other_arguments_and_a_start_value_read_after_the_run(tmp_path: Path) -> None:
    spec = _exact_in_both_modes(Widths, (X,), tmp_path)
    assert spec.modules["layers"].to_dict() == {"class": "torch.nn.Sequential", "args": [
        {"module": {"class": "torch.nn.Linear", "args": [8, 16]}},
        {"module": {"class": "torch.nn.Linear", "args": [16, 16]}},
        {"module": {"class": "torch.nn.Linear", "args": [16, 8]}}]}  # fmt: skip
    alias, loop = spec.nodes[1:3]
    assert alias == Node("alias", "h", args=["%x"])
    assert isinstance(loop, ForNodes) and loop.carry == {"h": "%tanh"}
    assert spec.nodes[3].args == ["%h", "%x"]


def test_steps_that_read_the_mode_over_a_sequential(tmp_path: Path) -> None:
    spec = _exact_in_both_modes(ModeSteps, (X, MASK), tmp_path)
    assert spec.modules["seq"].to_dict() == {"class": "torch.nn.Sequential", "args": [{"repeat": 3, "module": {"class": "Block"}}]}
    (loop,) = _loops(spec.nodes)
    assert loop.nodes[1].to_dict() == {"op": "call_function", "name": "dropout", "target": "torch.nn.functional.dropout",
                                       "args": ["%seq_out"],
                                       "kwargs": {"p": 0.5, "training": {"arg": "training"}, "inplace": False}}  # fmt: skip
    assert "for seq in self.seq:" in fxgen.generate(spec)


class Unrolled(nn.Module):
    """Calls over a ModuleList's items that are no loop of the items: each stays as it was."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how
        self.blocks = nn.ModuleList([Block() for _ in range(4)])

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> Any:
        b = self.blocks
        if self.how == "order":  # not in index order
            return b[1](b[0](b[3](b[2](x, mask), mask), mask), mask)
        if self.how == "part":  # not the whole container
            return b[2](b[1](b[0](x, mask), mask), mask)
        if self.how == "other":  # another argument at one step
            return b[3](b[2](b[1](b[0](x, mask), mask), x), mask)
        if self.how == "read":  # a step's value read after the run
            h1 = b[0](x, mask)
            return b[3](b[2](b[1](h1, mask), mask), mask) + h1
        if self.how == "some":  # some steps' values in a list after it
            hs = [b[0](x, mask)]
            hs.append(b[1](hs[-1], mask))
            hs.append(b[2](hs[-1], mask))
            return b[3](hs[-1], mask), hs
        h = x  # "apart": a node between two steps that is not part of a step
        for k, blk in enumerate(b):
            h = blk(h, mask) * (k + 1)
        return h


@pytest.mark.parametrize("how", ["order", "part", "other", "read", "some", "apart"])
def test_calls_that_are_not_exactly_a_loop_stay_as_they_are(how: str) -> None:
    torch.manual_seed(0)
    spec = fxgen.export(Unrolled(how))
    assert not _loops(spec.nodes)
    assert "blocks.0" in spec.modules and "blocks" not in spec.modules
    fxgen.load(spec).load_state_dict(Unrolled(how).state_dict(), strict=True)
