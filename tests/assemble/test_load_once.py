"""Loading a path or dict validates it by constructing each module the way the load builds it,
and the build keeps those modules: each is constructed once. These tests pin what must not
change with that: the parameters drawn after a seed (in the generated ``__init__``'s order),
every error's text and place, the global random generator after a refused spec, and the
GraphModule's attribute tree.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.fx
from conftest import marked_examples
from helpers import assert_same_state, import_source, property_budget
from hypothesis import given, settings
from hypothesis import strategies as st

import fxgen
from fxgen.assemble import load as loading
from fxgen.assemble import module as building
from fxgen.check import declarations
from fxgen.check import validate as validation
from fxgen.construct.draws import draw_plan
from fxgen.construct.graph import build_graph
from fxgen.construct.modules import construct_call, set_attr_path
from fxgen.policy.policy import DEFAULT_POLICY
from fxgen.read import reader
from fxgen.spec.model import Spec
from fxgen.spec.tree import construction_order

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "model_specs").glob("*.yaml"))
BAD = sorted(p for p in (ROOT / "tests" / "bad_specs").iterdir() if p.suffix in (".yaml", ".json"))

TREE: dict[str, Any] = {
    "fxgen": 1,
    "name": "Tree",
    "modules": {
        "enc.0": {"class": "torch.nn.Linear", "args": [4, 8]},
        "enc.1": {"class": "torch.nn.LayerNorm", "args": [8]},
        "unused": {"class": "torch.nn.Conv1d", "args": [2, 3, 3]},
        "head": {"class": "torch.nn.Linear", "args": [8, 4]},
        "norm": {"class": "torch.nn.BatchNorm1d", "args": [4]},
    },
    "parameters": {
        "scale": {"shape": [4], "init": {"normal": {"std": 0.5}}},
        "enc.extra": {"shape": [8, 4], "init": "xavier_uniform"},
    },
    "buffers": {
        "mask": {"shape": [4], "init": {"uniform": {"a": 0, "b": 1}}, "persistent": False},
        "enc.offset": {"shape": [8], "init": "ones"},
        "enc.scratch": {"shape": [2], "persistent": False},
    },
    "nodes": [
        {"op": "placeholder", "name": "x"},
        {"op": "call_module", "name": "h", "target": "enc.0", "args": ["%x"]},
        {"op": "get_attr", "name": "offset", "target": "enc.offset"},
        {"op": "call_function", "name": "shifted", "target": "operator.add", "args": ["%h", "%offset"]},
        {"op": "call_module", "name": "n", "target": "enc.1", "args": ["%shifted"]},
        {"op": "call_module", "name": "y", "target": "head", "args": ["%n"]},
        {"op": "get_attr", "name": "w", "target": "head.weight"},
        {"op": "get_attr", "name": "feat", "target": "head.in_features"},
        {"op": "get_attr", "name": "s", "target": "scale"},
        {"op": "call_function", "name": "out", "target": "operator.mul", "args": ["%y", "%s"]},
        {"op": "output", "args": [{"tuple": ["%out", "%w", "%feat"]}]},
    ],
}


def _drawn(load: Any, seed: int = 7) -> tuple[torch.fx.GraphModule, torch.Tensor]:
    """The model ``load()`` builds after seeding, and the random numbers drawn next."""
    torch.manual_seed(seed)
    gm = load()
    return gm, torch.rand(8)


def _assert_identical(a: torch.nn.Module, b: torch.nn.Module) -> None:
    """Same attribute tree (names, order, types, persistence) and bit-identical tensors."""
    def tree(root: torch.nn.Module) -> list[tuple[str, Any]]:  # each GraphModule has a class of its own
        return [(n, type(m).__name__ if isinstance(m, torch.fx.GraphModule) else type(m)) for n, m in root.named_modules()]

    assert tree(a) == tree(b)
    assert list(a.state_dict()) == list(b.state_dict())
    for (name, x), (_, y) in zip(
        [*a.named_parameters(), *a.named_buffers()], [*b.named_parameters(), *b.named_buffers()], strict=True
    ):
        assert x.dtype == y.dtype and x.device == y.device and x.requires_grad == y.requires_grad, name
        assert x.shape == y.shape, name
        if not x.is_meta:  # bit for bit (NaNs included): compare the bytes
            assert torch.equal(x.reshape(-1).view(torch.uint8), y.reshape(-1).view(torch.uint8)), name
    for (name, m), (_, n) in zip(a.named_modules(), b.named_modules(), strict=True):
        assert m._non_persistent_buffers_set == n._non_persistent_buffers_set, name


@pytest.mark.parametrize("path", marked_examples())  # the large examples: CI's second step
def test_a_path_draws_the_parameters_its_validated_spec_draws(path: Path) -> None:
    """With a seed, load(path) gives the bit-identical model load(load_spec(path)) gives (the
    build of an already validated Spec), and leaves the generator in the same state."""
    new, after_new = _drawn(lambda: fxgen.load(path))
    old, after_old = _drawn(lambda: fxgen.load(fxgen.load_spec(path)))
    _assert_identical(new, old)
    assert new.code == old.code
    assert torch.equal(after_new, after_old)


def test_a_dict_draws_the_parameters_its_validated_spec_draws() -> None:
    new, after_new = _drawn(lambda: fxgen.load(copy.deepcopy(TREE)))
    old, after_old = _drawn(lambda: fxgen.load(validation.validate_data(TREE)))
    _assert_identical(new, old)
    assert torch.equal(after_new, after_old)


def test_a_seeded_load_holds_what_the_generated_class_holds(tmp_path: Path) -> None:
    """TREE's generated ``__init__`` creates enc.extra (a random parameter) between enc.1 and
    unused, not where it is declared: a load of the dict and of the validated Spec draw in that
    order too, so after the same seed they hold what the generated class holds."""
    generated_module = import_source(fxgen.generate(validation.validate_data(TREE)), "tree_seeded", tmp_path)
    for load in (lambda: fxgen.load(copy.deepcopy(TREE)), lambda: fxgen.load(validation.validate_data(TREE))):
        _assert_seeded_alike(generated_module.Tree, load, seed=7)


def _assert_seeded_alike(generated_class: Any, load: Any, *, seed: int, ordered: bool = True) -> None:
    """After the same seed, ``load()`` holds what ``generated_class()`` holds."""
    torch.manual_seed(seed)
    generated = generated_class()
    torch.manual_seed(seed)
    assert_same_state(load(), generated, ordered=ordered)


def test_the_graph_module_holds_exactly_the_declared_tree() -> None:
    """One code generation (the GraphModule is made with its graph) gives the same module as
    attaching everything to an empty GraphModule and setting the graph after."""
    spec = validation.validate_data(TREE)
    gm, _ = _drawn(lambda: fxgen.load(spec))
    torch.manual_seed(7)
    expected = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph(), class_name=spec.name)
    made: dict[str, Any] = {}  # made in the generated __init__'s order, attached as declared
    for table, path in building.construction_plan(spec.modules, spec.parameters, spec.buffers):
        if table == "modules":
            entry = spec.modules[path]
            made[path] = construct_call(DEFAULT_POLICY.resolve_module_class(entry.cls), entry.args, entry.kwargs, None)
        else:
            made[path] = building.make_tensor(spec.parameters[path] if table == "parameters" else spec.buffers[path])
    for path in spec.modules:
        set_attr_path(expected, path, made[path])
    for path, param in spec.parameters.items():
        set_attr_path(expected, path, torch.nn.Parameter(made[path], requires_grad=param.requires_grad))
    for path, buffer in spec.buffers.items():
        set_attr_path(expected, path, made[path], persistent=buffer.persistent)
    expected.graph = build_graph(spec)
    _assert_identical(gm, expected)
    assert gm.code == expected.code and type(gm).__name__ == "Tree"
    assert set(vars(gm)) == set(vars(expected)) and gm.training
    assert gm._non_persistent_buffers_set == {"mask"} and gm.get_submodule("enc")._non_persistent_buffers_set == {"scratch"}
    x = torch.randn(3, 4)
    for a, b in zip(gm(x), expected(x), strict=True):
        assert torch.equal(torch.as_tensor(a), torch.as_tensor(b))


def test_an_unvalidated_spec_object_still_builds_as_before() -> None:
    """A Spec made without validation whose get_attr names nothing declared: the GraphModule
    cannot copy it, and the build falls back to setting the graph on the finished tree."""
    data = copy.deepcopy(TREE)
    data["nodes"].insert(1, {"op": "get_attr", "name": "ghost", "target": "nowhere.at_all"})
    gm = fxgen.load(Spec.from_dict(data))
    assert "nowhere" not in dict(gm.named_modules()) and "ghost" in gm.code
    assert list(gm.state_dict()) == list(fxgen.load(validation.validate_data(TREE)).state_dict())


def _spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    calls: dict[str, list[Any]] = {"real": [], "meta": [], "build": []}
    real_call, meta_build, build_call = loading.construct_call, declarations._meta_build, building.construct_call

    def counted(cls: type, args: Any, kwargs: Any, device: Any) -> Any:
        calls["real" if device is None else "meta"].append(cls)
        return real_call(cls, args, kwargs, device)

    monkeypatch.setattr(loading, "construct_call", counted)
    monkeypatch.setattr(declarations, "_meta_build", lambda entry, cls: calls["meta"].append(cls) or meta_build(entry, cls))
    monkeypatch.setattr(building, "construct_call", lambda *a, **k: calls["build"].append(a) or build_call(*a, **k))
    return calls


def test_loading_a_path_constructs_each_module_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy(monkeypatch)
    fxgen.load(copy.deepcopy(TREE))
    assert len(calls["real"]) == len(TREE["modules"]) and not calls["meta"] and not calls["build"]
    # TREE's generated __init__ draws enc.extra between enc.1 and unused: validation made it there
    assert draw_plan(TREE) is not None


def test_construction_order_follows_the_generated_init() -> None:
    """A ModuleList constructs the modules it holds directly inside its creation, before the
    contents of its plain-module children; top-level attributes come one at a time."""
    order = construction_order(["l.0.x", "l.1", "head"], ["l.0.p", "w"], ["l.0.b"])
    assert order == [("modules", "l.1"), ("modules", "l.0.x"), ("parameters", "l.0.p"), ("buffers", "l.0.b"),
                     ("modules", "head"), ("parameters", "w")]  # fmt: skip
    assert construction_order(["b.x", "a", "b.y"], [], []) == [("modules", "b.x"), ("modules", "b.y"), ("modules", "a")]
    assert construction_order(["a", "b"], ["c"], ["d"]) == [("modules", "a"), ("modules", "b"), ("parameters", "c"),
                                                          ("buffers", "d")]  # fmt: skip
    assert construction_order(["a"], ["a.b"], []) is None  # inside a module: validation says so
    assert construction_order(["a"], ["a"], []) is None


def test_a_spec_whose_draws_keep_their_order_is_made_as_declared() -> None:
    """No plan when the modules and randomly initialised tensors come in the generated order
    already (zeros and literal values do not draw)."""
    data = copy.deepcopy(TREE)
    data["parameters"]["enc.extra"]["init"] = "zeros"
    assert draw_plan(data) is None
    assert all(draw_plan(reader.read_document(path).data) is None for path in EXAMPLES)


def test_validating_alone_still_builds_on_meta_once_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    data = copy.deepcopy(TREE)
    data["modules"].update({f"rep.{i}": {"class": "torch.nn.Linear", "args": [4, 8]} for i in range(4)})
    calls = _spy(monkeypatch)
    before = torch.random.get_rng_state()
    validation.validate_data(data)
    assert not calls["real"] and len(calls["meta"]) == len(TREE["modules"])  # enc.0 and rep.* are one call
    assert torch.equal(torch.random.get_rng_state(), before)


def test_loading_a_validated_spec_constructs_in_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = validation.validate_data(TREE)
    calls = _spy(monkeypatch)
    fxgen.load(spec)
    assert len(calls["build"]) == len(TREE["modules"]) and not calls["real"] and not calls["meta"]


def test_a_refused_spec_leaves_the_random_generator_alone() -> None:
    """Validation constructed the modules before finding the bad node: what they drew is undone."""
    data = copy.deepcopy(TREE)
    data["nodes"][1]["target"] = "missing"
    torch.manual_seed(3)
    expected = torch.rand(4)
    torch.manual_seed(3)
    with pytest.raises(fxgen.SpecError, match="call_module target 'missing' is not declared"):
        fxgen.load(data)
    assert torch.equal(torch.rand(4), expected)


def test_a_module_that_only_fails_for_real_is_reported_by_the_build() -> None:
    """A constructor that works on meta but not for real (here: 400 TB) is no spec problem:
    loading the path reports it exactly as loading the validated Spec does, at the declaration."""
    data = copy.deepcopy(TREE)
    data["modules"]["huge"] = {"class": "torch.nn.Linear", "args": [10**7, 10**7]}
    errors = []
    for load in (lambda: fxgen.load(copy.deepcopy(data)), lambda: fxgen.load(validation.validate_data(data))):
        torch.manual_seed(5)
        with pytest.raises(fxgen.SpecError) as info:
            load()
        errors.append((str(info.value), type(info.value.__cause__), torch.rand(3)))
    (new, new_cause, new_rand), (old, old_cause, old_rand) = errors
    assert new == old and new_cause is old_cause and torch.equal(new_rand, old_rand)
    assert "cannot build module 'huge': RuntimeError" in new


def test_a_module_refused_on_meta_too_is_a_spec_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    data = copy.deepcopy(TREE)
    data["modules"]["bad"] = {"class": "torch.nn.Linear", "args": [4, -5]}
    data["nodes"][1]["target"] = "missing"
    with pytest.raises(fxgen.SpecError) as expected:
        validation.validate_data(data)
    for weights in (None, "unused.safetensors"):
        with pytest.raises(fxgen.SpecError) as info:
            fxgen.load(copy.deepcopy(data), weights=weights)
        assert info.value.diagnostics == expected.value.diagnostics
    assert len(expected.value.diagnostics) == 2


@pytest.mark.parametrize("path", BAD, ids=[p.name for p in BAD])
def test_bad_specs_are_refused_by_load_exactly_as_by_load_spec(path: Path) -> None:
    with pytest.raises(fxgen.SpecError) as expected:
        fxgen.load_spec(path)
    for weights in (None, path.with_suffix(".safetensors")):  # validation comes before the file
        with pytest.raises(fxgen.SpecError) as info:
            fxgen.load(path, weights=weights)
        assert str(info.value) == str(expected.value)


def test_validating_draws_nothing_even_for_a_module_given_a_device() -> None:
    """``Linear(..., device="cpu")`` builds real tensors even on the meta device; validation
    puts the generator back, so a load's draws do not depend on how the spec was validated."""
    path = ROOT / "model_specs" / "dtypes_devices.yaml"
    assert "device" in str(fxgen.load_spec(path).modules)
    before = torch.random.get_rng_state()
    fxgen.load_spec(path)
    assert torch.equal(torch.random.get_rng_state(), before)


_TOP = ["a", "b", "c"]
_SEGMENTS = ["0", "1", "2", "d"]
_DECLARATIONS = {
    "modules": [{"class": "torch.nn.Linear", "args": [2, 2]}, {"class": "torch.nn.Linear", "args": [2, 2]},
                {"class": "torch.nn.ReLU"}],
    "parameters": [{"shape": [2], "init": {"normal": {"std": 1.0}}}, {"shape": [2, 2], "init": "xavier_uniform"},
                   {"shape": [2]}],
    "buffers": [{"shape": [2], "init": {"uniform": {"a": 0, "b": 1}}}, {"shape": [2], "init": "ones"}],
}


@st.composite
def _trees(draw: st.DrawFn) -> dict[str, Any]:
    """Specs whose declarations share containers in every way the generated ``__init__`` can
    order them: ModuleLists (keys 0..n-1), ModuleDicts (other digits), plain modules, and random
    or deterministic tensors among modules."""
    tables: dict[str, dict[str, Any]] = {"modules": {}, "parameters": {}, "buffers": {}}
    taken: list[str] = []
    for _ in range(draw(st.integers(2, 10))):
        path = ".".join([draw(st.sampled_from(_TOP)), *draw(st.lists(st.sampled_from(_SEGMENTS), max_size=2))])
        if any(path == q or path.startswith(q + ".") or q.startswith(path + ".") for q in taken):
            continue
        taken.append(path)
        table = draw(st.sampled_from(sorted(tables)))
        tables[table][path] = copy.deepcopy(draw(st.sampled_from(_DECLARATIONS[table])))
    spec: dict[str, Any] = {"fxgen": 1, "name": "Tree", "nodes": [{"op": "placeholder", "name": "x"},
                                                               {"op": "output", "args": ["%x"]}]}  # fmt: skip
    spec.update({table: entries for table, entries in tables.items() if entries})
    return spec


@settings(deadline=None, max_examples=property_budget(200))  # ~10 ms each; 1 in 10 reorders
@given(_trees())
def test_seeded_loads_of_any_tree_hold_what_the_generated_class_holds(spec: dict[str, Any]) -> None:
    """``construction_order`` (the load's order) against the renderer's ``__init__``, on random
    trees: a load of the dict (validation's plan) and of the validated Spec (the build's plan)."""
    validated = validation.validate_data(spec)
    namespace: dict[str, Any] = {}
    exec(compile(fxgen.generate(validated), "<generated Tree>", "exec"), namespace)  # fxgen's own output
    for load in (lambda: fxgen.load(copy.deepcopy(spec)), lambda: fxgen.load(validated)):
        # the generated class sets attributes in tree order, a load in declaration order
        _assert_seeded_alike(namespace["Tree"], load, seed=3, ordered=False)
