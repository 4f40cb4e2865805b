"""The shortcuts that make export fast still give torch's answers and still catch mismatches.

Each shortcut is checked against the slow, obvious computation it replaces: the prefix-memoised
submodule lookup against ``get_submodule``, the one-walk tensor listing against
``named_parameters``/``named_buffers``, the lazy GraphModule of ``trace`` against
``symbolic_trace``, the flat cache keys against the recursive ones; and the comparison's fast
paths must still report a module changed after construction.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from helpers import counting_rebuilds
from torch import nn

import fxgen
from fxgen._errors import ExportError
from fxgen.capture.trace import trace
from fxgen.describe.rebuild import RebuildCache, _freeze, submodules
from fxgen.describe.recover import recover_and_check, register_constructor
from fxgen.describe.to_spec import Submodules, _named_tensors
from fxgen.spec.model import ModuleSpec


class Stack(nn.Module):
    """A block of ``depth`` Linear layers that keeps its arguments (a registered recovery)."""

    def __init__(self, depth: int, width: int) -> None:
        super().__init__()
        self.depth, self.width = depth, width
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


@pytest.fixture(autouse=True)
def _register_stack() -> None:
    register_constructor(Stack, lambda m: ((m.depth, m.width), {}))


def _nested() -> nn.Module:
    shared = nn.Linear(2, 2)
    root = nn.Module()
    root.body = nn.Sequential(nn.Sequential(nn.Conv2d(1, 1, 1), nn.ReLU()), shared)
    root.heads = nn.ModuleDict({"a": nn.Linear(2, 3), "b": shared})
    root.plain = 3
    return root


# -- submodule lookup ------------------------------------------------------------------------
def test_submodules_finds_what_get_submodule_finds() -> None:
    root = _nested()
    found = Submodules(root)
    paths = [p for p, _ in root.named_modules(remove_duplicate=False)]
    assert "heads.b" in paths and "body.1" in paths  # the shared module, under both paths
    for path in reversed(paths):  # children before their parents: nothing memoised yet
        assert found.get(path) is root.get_submodule(path)
    for path in ("body.7", "heads.c.weight", "plain", "plain.x", "body.0.0.weight"):
        with pytest.raises(AttributeError):
            root.get_submodule(path)
        with pytest.raises(AttributeError):
            found.get(path)


def test_submodule_walk_lists_each_module_once() -> None:
    root = _nested()
    assert sorted(map(id, submodules(root))) == sorted(map(id, root.modules()))
    leaf = nn.ReLU()
    assert list(submodules(leaf)) == [leaf]


# -- parameters and buffers outside declared modules -----------------------------------------
def _slow_named_tensors(gm: nn.Module, modules: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What ``_tensors`` needs: every named tensor at every path (as the state dict has them), less
    those under a declared module."""

    def owned(path: str) -> bool:
        parts = path.split(".")
        return any(".".join(parts[:i]) in modules for i in range(1, len(parts)))

    parameters = [p for p, _ in gm.named_parameters(remove_duplicate=False) if not owned(p)]
    buffers = [p for p, _ in gm.named_buffers(remove_duplicate=False) if not owned(p)]
    return parameters, buffers


def test_named_tensors_match_torch_with_shared_and_missing_tensors() -> None:
    root = _nested()
    root.scale = nn.Parameter(torch.ones(2))
    root.heads["a"].weight = root.scale  # tied: listed at each of its paths
    root.body[0][0].register_buffer("table", torch.zeros(3), persistent=False)
    root.body[0][0].register_buffer("absent", None)
    root.register_buffer("table", root.body[0][0].table)  # a buffer shared with a declared module
    root.bias = None
    for declared in ({}, {"body.0.0": 1}, {"heads.a": 1, "body.1": 1}, {"body": 1, "heads.b": 1}):
        parameters, buffers = _named_tensors(root, declared)  # type: ignore[arg-type]
        assert ([p for p, _ in parameters], [p for p, _, _ in buffers]) == _slow_named_tensors(root, declared)
        for path, buf, owner in buffers:
            assert owner.get_buffer(path.rpartition(".")[2]) is buf


class _Shifted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
        self.register_buffer("offset", torch.ones(3), persistent=False)
        self.scale = nn.Parameter(torch.ones(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x) * self.scale + self.offset


def test_export_declares_the_tensors_outside_declared_modules() -> None:
    spec = fxgen.export(_Shifted())
    assert set(spec.modules) == {"body.0", "body.1"}
    assert set(spec.parameters) == {"scale"}
    assert set(spec.buffers) == {"offset"} and spec.buffers["offset"].persistent is False


# -- the lazy GraphModule of trace ------------------------------------------------------------
def test_trace_generates_its_code_when_it_is_first_used() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU()).eval()
    x = torch.randn(2, 3)
    gm = trace(model)
    assert isinstance(gm, torch.fx.GraphModule)
    spec = fxgen.export(gm)  # reads the graph only
    assert spec == fxgen.export(model) == fxgen.export(torch.fx.symbolic_trace(model))
    assert torch.equal(gm(x), model(x))
    assert gm.code == torch.fx.symbolic_trace(model).code
    assert "def forward" in str(trace(model))  # printing generates it too


# -- cache keys -------------------------------------------------------------------------------
def test_flat_cache_keys_keep_item_types_apart() -> None:
    values = [(1, 1), (1, True), (1, 1.0), [1, 1], (True, 1), (1, 1, 1), (1, (1,)), (torch.float32,),
              (torch.float64,), ("1", 1), (None, 1), torch.Size([1, 1]), (-0.0,), (0.0,), ()]  # fmt: skip
    keys = [_freeze(v) for v in values]
    assert len(set(keys)) == len(keys)
    assert _freeze((1, "a", None)) == _freeze((1, "a", None))
    assert _freeze(("relu", {"inplace": True})) == _freeze(("relu", {"inplace": True}))
    assert _freeze(("relu", {"inplace": True})) != _freeze(("relu", {"inplace": 1}))


# -- comparison fast paths still catch a module changed after construction ----------------------
@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: delattr(m.layers[1], "in_features"), r"extra attribute 'layers\.1\.in_features'"),
        (lambda m: setattr(m.layers[1], "out_features", 7), r"'layers\.1\.out_features' is 7 in the model but 4"),
        (lambda m: m.layers[1].register_forward_hook(lambda *a: None), r"forward hooks of 'layers\.1'"),
        (lambda m: m.layers[1].weight.requires_grad_(False), r"'layers\.1\.weight' has requires_grad=False"),
        (lambda m: m.layers[1].register_buffer("extra", None), r"buffer 'layers\.1\.extra' is missing"),
    ],
    ids=["deleted", "changed", "hook", "frozen", "buffer"],
)
def test_a_changed_block_is_caught_inside_a_shared_rebuild(change: Any, message: str) -> None:
    blocks = [Stack(3, 4) for _ in range(3)]
    change(blocks[1])
    cache = RebuildCache()
    recover_and_check("blocks.0", blocks[0], cache=cache)
    with pytest.raises(ExportError, match=message):
        recover_and_check("blocks.1", blocks[1], cache=cache)
    recover_and_check("blocks.2", blocks[2], cache=cache)
    assert cache.misses == 1


def test_internal_attributes_present_on_one_side_only_are_not_differences() -> None:
    """A module with an internal slot its rebuild lacks (set by ``compile()``) takes the slow
    path of the key comparison, which leaves internal names out as before."""
    module = nn.Linear(4, 4)
    assert "_compiled_call_impl" not in nn.Linear(4, 4).__dict__
    module.__dict__["_compiled_call_impl"] = None
    recover_and_check("old", module)
    module.note = "x"  # attached after construction: not the constructor's, so not compared
    recover_and_check("old", module)
    conv = nn.Conv2d(2, 2, 1)
    conv.__dict__["_compiled_call_impl"] = None
    conv._reversed_padding_repeated_twice = [1, 1, 1, 1]  # set by the class's __init__, and different
    with pytest.raises(ExportError, match="attribute '_reversed_padding_repeated_twice' is"):
        recover_and_check("old", conv)


# -- meta or CPU ------------------------------------------------------------------------------
def test_blocks_of_small_layers_are_rebuilt_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from fxgen.construct.modules import SMALL_MODULE

    built = counting_rebuilds(monkeypatch)
    small_layers = Stack(3, 100)  # 3 x 10,100 elements: more than SMALL_MODULE, less per layer
    assert SMALL_MODULE < 3 * 100 * 101 < 3 * SMALL_MODULE
    recover_and_check("stack", small_layers)
    recover_and_check("big_layers", Stack(2, 200))  # 40,200 elements per layer
    assert built == [("Stack", False), ("Stack", True)]


def test_export_leaves_the_random_generator_alone() -> None:
    model = nn.Sequential(Stack(3, 100), Stack(2, 200), nn.Linear(8, 8))
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    spec = fxgen.export(model, leaf_modules=[Stack])
    assert torch.equal(torch.rand(3), expected)
    assert spec.modules["0"] == ModuleSpec("test_export_shortcuts.Stack", [3, 100], {})
