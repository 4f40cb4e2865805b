"""A GraphModule with one graph per mode (``fxgen.assemble.modes``), built here from two graphs
made by hand: ``train()``/``eval()`` swap ``gm.graph`` and its code, each mode compiled once; one
state dict; copies and pickles keep both modes."""

from __future__ import annotations

import copy
import io
import operator

import torch
import torch.fx
import torch.nn.functional as F

from fxgen.assemble.modes import ModeGraphModule, mode_graph_module


def _graphs() -> dict[bool, torch.fx.Graph]:
    """eval: fc(x) + x; train: fc(dropout(x, 0.5, training=True)) * 2 (a BatchNorm in both)."""
    graphs = {}
    for mode in (False, True):
        g = torch.fx.Graph()
        x = g.placeholder("x")
        if mode:
            x = g.call_function(F.dropout, (x,), {"p": 0.5, "training": True})
        y = g.call_module("fc", (x,))
        b = g.call_module("bn", (y,))
        out = g.call_function(operator.mul, (b, 2.0)) if mode else g.call_function(operator.add, (b, x))
        g.output(out)
        graphs[mode] = g
    return graphs


def _module() -> ModeGraphModule:
    torch.manual_seed(0)
    gm = mode_graph_module(_graphs(), "Net")
    gm.fc = torch.nn.Linear(4, 4)
    gm.bn = torch.nn.BatchNorm1d(4)
    return gm


def _reference(m: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    if m.training:
        return m.bn(m.fc(F.dropout(x, 0.5, training=True))) * 2.0
    return m.bn(m.fc(x)) + x


def _ref_forward(ref: torch.nn.Module):  # type: ignore[no-untyped-def]
    return lambda t: _reference(ref, t)


def _seeded(f, x: torch.Tensor) -> torch.Tensor:  # type: ignore[no-untyped-def]
    torch.manual_seed(1)
    return f(x)


def test_train_and_eval_swap_the_graph_and_compute_each_modes_graph() -> None:
    gm = _module()
    x = torch.randn(3, 4)
    assert isinstance(gm, torch.fx.GraphModule) and type(gm).__name__ == "Net"
    assert gm.training and "dropout" in gm.code
    for mode in (True, False, True, False, True):
        gm.train(mode)
        assert gm.graph is gm.mode_graphs()[mode] and gm.graph.owning_module is gm
        assert ("dropout" in gm.code) is mode and ("dropout" in str(gm.graph)) is mode
        ref = copy.deepcopy(gm)  # the same state, run by the reference
        assert torch.equal(_seeded(gm, x), _seeded(_ref_forward(ref), x))
        assert torch.equal(gm.bn.running_mean, ref.bn.running_mean)
    gm.eval()
    assert not gm.bn.training and "dropout" not in gm.code


def test_each_mode_is_compiled_once() -> None:
    gm = _module()
    gm.eval()
    gm.train()
    forwards = {mode: gm._modes[mode].forward for mode in (False, True)}
    for mode in (False, True, False, True):
        gm.train(mode)
        assert type(gm).forward is forwards[mode]


def test_the_state_dict_is_one_modules_and_loads_strictly() -> None:
    gm = _module()
    keys = list(gm.state_dict())
    assert keys == ["fc.weight", "fc.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                    "bn.num_batches_tracked"]  # fmt: skip
    other = _module().eval()
    other.load_state_dict(gm.state_dict(), strict=True)
    assert list(other.state_dict()) == keys


def test_a_parents_train_and_eval_reach_it() -> None:
    parent = torch.nn.Sequential(_module())
    parent.eval()
    assert "dropout" not in parent[0].code
    parent.train()
    assert "dropout" in parent[0].code


def test_copies_and_pickles_keep_both_modes() -> None:
    x = torch.randn(3, 4)
    for copied in (copy.deepcopy, _pickled):
        gm = _module().eval()
        other = copied(gm)
        assert isinstance(other, ModeGraphModule) and type(other).__name__ == "Net"
        assert type(other) is not type(gm)  # its own forward
        assert not other.training and "dropout" not in other.code
        assert torch.equal(other(x), gm(x))
        other.train()
        gm.train()
        assert "dropout" in other.code
        assert torch.equal(_seeded(other, x), _seeded(gm, x))
        assert torch.equal(other.bn.running_var, gm.bn.running_var)


def test_an_edited_graph_recompiled_is_the_current_modes() -> None:
    gm = _module().eval()
    (add,) = [n for n in gm.graph.nodes if n.target is operator.add]
    add.target = operator.sub
    gm.recompile()
    gm.train()
    gm.eval()
    assert "bn - x" in gm.code


def _pickled(gm: torch.nn.Module) -> torch.nn.Module:
    buffer = io.BytesIO()
    torch.save(gm, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)
