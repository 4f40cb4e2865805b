"""The one-walk check of node values (``plain_refs``, ``Checker.clean_values``) against the
full checks it lets validation skip: the same diagnostics, in the same order, for any values."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fxgen._errors import SpecError
from fxgen.check.checker import _tagged
from fxgen.check.declarations import Checker
from fxgen.check.nodes import _size_paths
from fxgen.check.validate import validate_data
from fxgen.policy.policy import DEFAULT_POLICY
from fxgen.read.reader import parse_text
from fxgen.spec.values import DTYPES, decode, iter_refs, plain_refs

_STRINGS = st.sampled_from(["%x", "%y", "%later", "%undefined", "%%x", "%", "%%", "plain", "", "%x\n", "size"])
_SCALARS = st.none() | st.booleans() | st.integers(-3, 10**30) | st.floats(allow_nan=False, allow_infinity=False) | _STRINGS


def _tags(inner: st.SearchStrategy[Any], *, wild: bool) -> st.SearchStrategy[Any]:
    """Tagged values: well-formed ones (a device or size may still be wrong), and with ``wild``
    also malformed ones that the schema refuses."""
    names = st.sampled_from(["cpu", "cuda:0", "meta", "bogus", "cpu:x", "float32", "int64", "inf", "-inf", "nan",
                             "strided", "channels_last"])  # fmt: skip
    tags = [
        st.builds(lambda v: {"tuple": v}, st.lists(inner, max_size=3)),
        st.builds(lambda v: {"slice": v}, st.lists(inner, min_size=3, max_size=3)),
        st.builds(lambda v: {"dict": v}, st.dictionaries(st.sampled_from(["a", "size", "b c"]), inner, max_size=2)),
        st.builds(lambda t, v: {t: v}, st.sampled_from(["dtype", "device", "memory_format", "layout", "float"]), names),
        st.just({"ellipsis": None}),
        st.builds(lambda v: {"size": v}, st.lists(st.integers(0, 4) | st.floats(0, 4), max_size=3)),
        st.builds(lambda v: {"complex": v}, st.lists(st.integers(-2, 2) | st.floats(-2, 2), min_size=2, max_size=2)),
    ]
    if wild:
        tags += [
            st.builds(lambda v: {"slice": v}, st.lists(inner, max_size=4)),
            st.builds(lambda t, v: {t: v}, st.sampled_from(["dtype", "ellipsis", "float", "complex", "size"]), inner),
            st.dictionaries(st.sampled_from(["tuple", "bogus", "size"]), inner, max_size=2),
        ]
    return st.one_of(*tags)


values = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | _tags(inner, wild=False), max_leaves=8)
wild_values = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | _tags(inner, wild=True),
                           max_leaves=12)  # fmt: skip


@given(wild_values)
def test_plain_refs_finds_what_the_full_checks_find(value: Any) -> None:
    found: list[str] = []
    if not plain_refs(value, found):
        return
    assert found == [name for _, name in iter_refs(value)]
    assert list(_size_paths(value)) == []
    assert all(tag not in ("device", "size") for _, tag, _ in _tagged(value))
    decode(value, lambda name: None)  # does not raise


def test_plain_refs_accepts_the_common_values() -> None:
    found: list[str] = []
    common = ["%x", 1, 2.5, None, True, "%%lit", [1, "%y"], {"tuple": [0, {"slice": [None, "%z", 2]}]},
              {"ellipsis": None}, {"dtype": "float16"}, {"dict": {"a": "%w"}}]  # fmt: skip
    assert all(plain_refs(v, found) for v in common)
    assert found == ["x", "y", "z", "w"]
    assert set(DTYPES) >= {"float16"}


@pytest.mark.parametrize(
    "value", [{"device": "cpu"}, {"size": [1]}, {"complex": [1, 2]}, {"dict": {"size": 1}}, {"a": 1, "b": 2}]
)
def test_plain_refs_leaves_the_rest_to_the_full_checks(value: Any) -> None:
    assert not plain_refs([1, value], [])


def _spec(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"fxgen": 1, "name": "Fast", "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "placeholder", "name": "y", "default": None},
        *nodes,
        {"op": "call_function", "name": "later", "target": "torch.relu", "args": ["%x"]},
        {"op": "output", "args": ["%later"]},
    ]}  # fmt: skip


_NODES = st.one_of(
    st.builds(lambda a, k: {"op": "call_function", "target": "torch.add", "args": a, "kwargs": k},
              st.lists(values, max_size=3), st.dictionaries(st.sampled_from(["alpha", "out", "class", "1x"]), values,
                                                             max_size=2)),
    st.builds(lambda a: {"op": "call_method", "target": "view", "args": a}, st.lists(values, max_size=3)),
    st.builds(lambda d: {"op": "placeholder", "name": "z", "default": d}, values),
    st.builds(lambda a: {"op": "output", "args": a}, st.lists(values, max_size=2)),
)


def _outcome(data: dict[str, Any]) -> Any:
    try:
        return validate_data(data)
    except SpecError as exc:
        return [str(d) for d in exc.diagnostics]


@given(st.lists(_NODES, min_size=1, max_size=2))
def test_same_diagnostics_with_and_without_the_one_walk_check(nodes: list[dict[str, Any]]) -> None:
    data = _spec([{**node, "name": f"n{i}"} if node["op"] != "placeholder" else node for i, node in enumerate(nodes)])
    fast = _outcome(data)
    original = Checker.clean_values
    Checker.clean_values = lambda self, node, op, defined: False  # type: ignore[method-assign]
    try:
        full = _outcome(data)
    finally:
        Checker.clean_values = original  # type: ignore[method-assign]
    assert fast == full


def _messages(spec: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as info:
        validate_data(spec)
    return [d.message for d in info.value.diagnostics]


def test_repeated_constructor_calls_are_bound_once_and_each_reported() -> None:
    """Signature binding is remembered per distinct call within a validation: every declaration
    repeating a call that does not fit still gets its own diagnostic, worded with its own spelling
    of the class, as when each is validated alone."""
    modules = {
        "a": {"class": "torch.nn.Linear", "args": [4], "kwargs": {"bogus": 1}},
        "b": {"class": "torch.nn.Linear", "args": [4, 4]},
        "c": {"class": "torch.nn.modules.linear.Linear", "args": [4], "kwargs": {"bogus": 1}},
        "d": {"class": "torch.nn.Linear", "args": [4], "kwargs": {"bogus": 1}},
        "e": {"class": "torch.nn.Linear", "args": [4.0], "kwargs": {"bogus": 1}},
    }
    nodes = [{"op": "placeholder", "name": "x"}, {"op": "output", "args": ["%x"]}]
    together = _messages({"fxgen": 1, "name": "M", "modules": modules, "nodes": nodes})
    alone = [
        message
        for path, entry in modules.items()
        if path != "b"
        for message in _messages({"fxgen": 1, "name": "M", "modules": {path: entry}, "nodes": nodes})
    ]
    assert together == alone and len(together) == 4
    assert "torch.nn.modules.linear.Linear" in together[1]
    calls: list[tuple[Any, ...]] = []

    class Counting(Checker):
        def bind_problem(self, cls: type, entry: dict[str, Any], args: list[Any], kwargs: dict[str, Any]) -> str | None:
            calls.append((cls, repr(entry)))
            return super().bind_problem(cls, entry, args, kwargs)

    doc = parse_text(json.dumps({"fxgen": 1, "name": "M", "modules": modules, "nodes": nodes}), json_syntax=True)
    checker = Counting(doc, DEFAULT_POLICY)
    checker.run()
    assert len(calls) == 5 and len(checker.bindings) == 3  # a/c/d share one call; b and e are others
