"""``fxgen.load(spec, weights=...)``: tensors assigned directly, only what the file lacks built for real.

The fast path must give exactly what torch's ``load_state_dict(strict=True, assign=True)`` gives
on a meta-built model (same keys, values, ``requires_grad``, persistence), keep every check of
the file (keys, shapes, dtypes, nothing left on the meta device) and build for real only the
modules and buffers the file cannot provide.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import save_file
from torch import nn

import fxgen
import fxgen.assemble.load
import fxgen.assemble.weights
from fxgen._errors import WeightsError
from fxgen.assemble.module import build_module
from fxgen.check.validate import as_spec
from fxgen.construct.modules import SMALL_MODULE
from fxgen.policy.policy import policy_for

ALLOW = ["test_weights_fast"]


class Positional(nn.Module):
    """A large layer with a non-persistent buffer: the file cannot provide ``table``."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.proj = nn.Linear(n, n)
        self.register_buffer("table", torch.arange(n, dtype=torch.float32), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) + self.table


class Scaled(nn.Module):
    """A large layer keeping a tensor as a plain attribute (also not in the file)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.proj = nn.Linear(n, n)
        self.scale = torch.full((n,), 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * self.scale


class Extra(nn.Module):
    """A layer with its own state-dict behaviour: loading goes through torch's loader."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.proj = nn.Linear(n, n)
        self.loaded_by_torch = False

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        self.loaded_by_torch = True
        super()._load_from_state_dict(*args, **kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


BIG = 160  # a 160x160 Linear has more than SMALL_MODULE elements: built on the meta device
assert BIG * BIG > SMALL_MODULE


def _spec(modules: dict[str, Any], *, parameters: dict[str, Any] | None = None,
          buffers: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    nodes: list[dict[str, Any]] = [{"op": "placeholder", "name": "x"}]
    prev = "x"
    for i, path in enumerate(modules):
        nodes.append({"op": "call_module", "name": f"m{i}", "target": path, "args": [f"%{prev}"]})
        prev = f"m{i}"
    nodes.append({"op": "output", "args": [f"%{prev}"]})
    data: dict[str, Any] = {"fxgen": 1, "name": "Fast", "modules": modules, "nodes": nodes}
    if parameters:
        data["parameters"] = parameters
    if buffers:
        data["buffers"] = buffers
    return data


MIXED = _spec(
    {
        "small": {"class": "torch.nn.Linear", "args": [BIG, 8]},  # 8x160: real
        "back": {"class": "torch.nn.Linear", "args": [8, BIG]},
        "big": {"class": "torch.nn.Linear", "args": [BIG, BIG]},  # meta
        "norm": {"class": "torch.nn.BatchNorm1d", "args": [BIG]},
        "blocks.0": {"class": "torch.nn.Linear", "args": [BIG, BIG, False]},
    },
    parameters={
        "gain": {"shape": [BIG], "init": "ones"},
        "frozen": {"shape": [3], "requires_grad": False},
    },
    buffers={"offset": {"shape": [BIG]}, "scratch": {"shape": [4], "persistent": False, "init": "ones"}},
)


def _save(model: nn.Module, path: Path) -> dict[str, torch.Tensor]:
    """The model's state with fresh random values (positive: BatchNorm variances), as safetensors."""
    gen = torch.Generator().manual_seed(1)
    state = {k: (torch.rand(v.shape, generator=gen) + 0.5).to(v.dtype) for k, v in model.state_dict().items()}
    save_file(state, str(path))
    return state


def _reference(spec: Any, path: Path, allow: list[str] | None = None) -> nn.Module:
    """What loading did before: build on meta, torch's strict assigning loader, real non-persistent state."""
    from safetensors.torch import load_file

    policy = policy_for(allow)
    spec = as_spec(spec, policy)
    gm = build_module(spec, policy)
    gm.load_state_dict(load_file(str(path)), strict=True)
    return gm


def _assert_same_model(got: nn.Module, want: nn.Module) -> None:
    got_state, want_state = got.state_dict(), want.state_dict()
    assert list(got_state) == list(want_state)
    for key, value in want_state.items():
        assert got_state[key].dtype == value.dtype and torch.equal(got_state[key], value), key
    got_params, want_params = dict(got.named_parameters()), dict(want.named_parameters())
    assert list(got_params) == list(want_params)
    for key, param in want_params.items():
        assert type(got_params[key]) is nn.Parameter
        assert got_params[key].requires_grad == param.requires_grad, key
    got_buffers = dict(got.named_buffers())
    assert list(got_buffers) == [k for k, _ in want.named_buffers()]
    for key, buffer in got_buffers.items():
        assert not buffer.is_meta, key
    for module in got.modules():
        for name, value in vars(module).items():
            assert not (isinstance(value, torch.Tensor) and value.is_meta), name


def test_loads_what_torch_loader_loads(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    state = _save(fxgen.load(MIXED), path)
    gm = fxgen.load(MIXED, weights=path)
    _assert_same_model(gm, _reference(MIXED, path))
    assert not gm.frozen.requires_grad and gm.gain.requires_grad
    assert torch.equal(gm.scratch, torch.ones(4))  # non-persistent: from the spec's init
    assert "scratch" in gm._non_persistent_buffers_set and "offset" not in gm._non_persistent_buffers_set
    x = torch.randn(2, BIG)
    assert torch.equal(gm.eval()(x), _reference(MIXED, path).eval()(x))
    assert set(state) == set(gm.state_dict())


def test_a_spec_object_and_a_path_load_the_same(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    _save(fxgen.load(MIXED), path)
    spec = as_spec(MIXED, policy_for(None))
    spec_file = tmp_path / "mixed.yaml"
    spec.to_file(spec_file)
    _assert_same_model(fxgen.load(spec, weights=path), fxgen.load(spec_file, weights=path))


def test_loading_leaves_the_random_generator_alone(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    _save(fxgen.load(MIXED), path)
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    fxgen.load(MIXED, weights=path)
    assert torch.equal(torch.rand(3), expected)


def test_declared_modules_are_built_on_meta_without_initialisation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _spec(
        {
            **{f"small.{i}": {"class": "torch.nn.Linear", "args": [BIG, BIG // 20]} for i in range(3)},
            "up": {"class": "torch.nn.Linear", "args": [BIG // 20, BIG]},
            **{f"big.{i}": {"class": "torch.nn.Linear", "args": [BIG, BIG]} for i in range(2)},
        },
        parameters={"gain": {"shape": [BIG], "init": "ones"}},
        buffers={"offset": {"shape": [BIG]}, "scratch": {"shape": [4], "persistent": False}},
    )
    path = tmp_path / "w.safetensors"
    _save(fxgen.load(data), path)
    built: list[tuple[Any, Any]] = []
    for stage in (fxgen.assemble.load, fxgen.assemble.module):  # validation constructs them, the build keeps them
        original = stage.construct_call  # type: ignore[attr-defined]
        monkeypatch.setattr(stage, "construct_call", lambda cls, args, kwargs, device, original=original, **kw:
                            built.append((args, device)) or original(cls, args, kwargs, device, **kw))  # fmt: skip
    placed: dict[str, Any] = {}

    def spy(spec: Any, policy: Any, **kw: Any) -> Any:
        placement = kw["builder"].placement
        for table, tensors in (("parameters", spec.parameters), ("buffers", spec.buffers)):
            placed.update({p: placement(table, d) for p, d in tensors.items()})
        return build_module(spec, policy, **kw)

    monkeypatch.setattr(fxgen.assemble.load, "build_module", spy)
    gm = fxgen.load(data, weights=path)
    monkeypatch.undo()
    small, large = [BIG, BIG // 20], [BIG, BIG]
    # every declared module on meta: the file replaces all their tensors, no initialisation wasted
    assert built == [(small, "meta")] * 3 + [([BIG // 20, BIG], "meta"), (large, "meta"), (large, "meta")]
    assert placed == {"gain": "meta", "offset": "meta", "scratch": None}
    _assert_same_model(gm, _reference(data, path))


def test_a_file_cannot_make_a_huge_layer_be_built_for_real(tmp_path: Path) -> None:
    """Sizes come from meta builds, not from the file: a wrong file for a 10^10-element layer
    is refused without allocating it (built for real, it would need 40 GB)."""
    data = _spec({f"huge.{i}": {"class": "torch.nn.Linear", "args": [100_000, 100_000]} for i in range(3)})
    path = tmp_path / "w.safetensors"
    save_file({f"huge.{i}.{n}": torch.zeros(1) for i in range(3) for n in ("weight", "bias")}, str(path))
    with pytest.raises(WeightsError, match=r"'huge\.0\.weight' has shape"):
        fxgen.load(data, weights=path)
    # nor one whose non-persistent buffer must be built for real: the file is checked first
    data = _spec({"pos": {"class": "test_weights_fast.Positional", "args": [100_000]}})
    save_file({"pos.proj.weight": torch.zeros(1), "pos.proj.bias": torch.zeros(1)}, str(path))
    with pytest.raises(WeightsError, match=r"'pos\.proj\.weight' has shape"):
        fxgen.load(data, weights=path, allow=ALLOW)


@pytest.mark.parametrize("cls", ["Positional", "Scaled"])
def test_a_large_module_with_state_outside_the_file_is_built_for_real(tmp_path: Path, cls: str) -> None:
    data = _spec({"pos": {"class": f"test_weights_fast.{cls}", "args": [BIG]}})
    path = tmp_path / "w.safetensors"
    _save(fxgen.load(data, allow=ALLOW), path)
    gm = fxgen.load(data, weights=path, allow=ALLOW)
    _assert_same_model(gm, _reference(data, path, ALLOW))
    if cls == "Positional":
        assert torch.equal(gm.pos.table, torch.arange(BIG, dtype=torch.float32))
        assert "table" in gm.pos._non_persistent_buffers_set
    else:
        assert torch.equal(gm.pos.scale, torch.full((BIG,), 2.0))


def test_custom_state_dict_behaviour_goes_through_torch_loader(tmp_path: Path) -> None:
    data = _spec({"a": {"class": "test_weights_fast.Extra", "args": [BIG]}})
    path = tmp_path / "w.safetensors"
    _save(fxgen.load(data, allow=ALLOW), path)
    gm = fxgen.load(data, weights=path, allow=ALLOW)
    assert gm.a.loaded_by_torch
    _assert_same_model(gm, _reference(data, path, ALLOW))


def test_wide_containers_load(tmp_path: Path) -> None:
    """Many siblings under one container (torch's loader is quadratic in the width)."""
    modules = {f"blocks.{i}": {"class": "torch.nn.Linear", "args": [4, 4]} for i in range(300)}
    data = _spec(modules)
    path = tmp_path / "w.safetensors"
    _save(fxgen.load(data), path)
    _assert_same_model(fxgen.load(data, weights=path), _reference(data, path))


def _bad_files(tmp: Path, good: dict[str, torch.Tensor]) -> dict[str, tuple[dict[str, torch.Tensor], str]]:
    missing = dict(good)
    del missing["big.weight"]
    extra = {**good, "big.extra": torch.zeros(2)}
    shape = {**good, "big.bias": torch.zeros(BIG + 1)}
    dtype = {**good, "small.weight": good["small.weight"].double()}
    buffer_dtype = {**good, "norm.num_batches_tracked": torch.tensor(0.0)}
    return {
        "missing": (missing, "missing tensor 'big.weight'"),
        "unexpected": (extra, "unexpected tensor 'big.extra'"),
        "shape": (shape, "'big.bias' has shape [161], the spec declares [160]"),
        "dtype": (dtype, "'small.weight' has dtype torch.float64, the spec declares torch.float32"),
        "buffer dtype": (buffer_dtype, "'norm.num_batches_tracked' has dtype torch.float32"),
        "non-persistent": ({**good, "scratch": torch.ones(4)}, "unexpected tensor 'scratch'"),
    }


@pytest.mark.parametrize("case", ["missing", "unexpected", "shape", "dtype", "buffer dtype", "non-persistent"])
def test_files_that_do_not_fit_are_refused_with_their_location(tmp_path: Path, case: str) -> None:
    good = _save(fxgen.load(MIXED), tmp_path / "good.safetensors")
    tensors, phrase = _bad_files(tmp_path, good)[case]
    path = tmp_path / "bad.safetensors"
    save_file(tensors, str(path))
    with pytest.raises(WeightsError) as info:
        fxgen.load(MIXED, weights=path)
    assert phrase in str(info.value)
    assert str(info.value).startswith(str(path))


def test_a_meta_tensor_left_behind_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The final check stays: if a module still held a meta tensor, loading fails, located."""
    data = _spec({"pos": {"class": "test_weights_fast.Positional", "args": [BIG]}})
    path = tmp_path / "w.safetensors"
    _save(fxgen.load(data, allow=ALLOW), path)
    monkeypatch.setattr(fxgen.assemble.load, "has_meta_tensors", lambda module, saved=True, recurse=True: saved)
    with pytest.raises(WeightsError) as info:
        fxgen.load(data, weights=path, allow=ALLOW)
    assert "uninitialised" in str(info.value) and str(info.value).startswith(str(path))
