"""The value encoding (fxgen.spec.values): every tag both ways, `%` escapes, node references,
values the format cannot hold, and agreement with the JSON Schema."""

from __future__ import annotations

import enum
import math
from collections import namedtuple
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from fxgen.check.validate import validate_data
from fxgen.read.schema import load_schema
from fxgen.spec.model import NO_DEFAULT
from fxgen.spec.values import (
    DECLARATION_TAGS,
    DTYPES,
    LAYOUTS,
    MEMORY_FORMATS,
    TAGS,
    UnencodableValue,
    decode,
    decode_kwargs,
    dtype_name,
    encode,
    iter_refs,
    parse_ref,
)


def no_ref(name: str) -> Any:
    raise AssertionError(f"unexpected reference %{name}")


def same(a: Any, b: Any) -> bool:
    """Equality that also holds for NaN and checks container types (tuple is not list)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, slice):
        return isinstance(b, slice) and same((a.start, a.stop, a.step), (b.start, b.stop, b.step))
    return type(a) is type(b) and a == b


# (Python value, its encoding): every tag, every table entry, escapes, nesting.
CASES: list[tuple[Any, Any]] = [
    (None, None),
    (True, True),
    (0, 0),
    (-7, -7),
    (2.5, 2.5),
    (-0.0, -0.0),
    ("abc", "abc"),
    ("", ""),
    ("%abc", "%%abc"),
    ("%", "%%"),
    ("%%", "%%%"),
    ("a%b", "a%b"),
    ([1, "x"], [1, "x"]),
    ([], []),
    ((1, 2), {"tuple": [1, 2]}),
    ((), {"tuple": []}),
    ((1,), {"tuple": [1]}),
    (slice(1, None, 2), {"slice": [1, None, 2]}),
    (slice(None), {"slice": [None, None, None]}),
    (Ellipsis, {"ellipsis": None}),
    (torch.device("cpu"), {"device": "cpu"}),
    (torch.device("cuda", 1), {"device": "cuda:1"}),
    (torch.device("meta"), {"device": "meta"}),
    (math.inf, {"float": "inf"}),
    (-math.inf, {"float": "-inf"}),
    (math.nan, {"float": "nan"}),
    (complex(1, -2), {"complex": [1.0, -2.0]}),
    ({"a": 1, "%b": "%c"}, {"dict": {"a": 1, "%b": "%%c"}}),
    ({}, {"dict": {}}),
    (torch.Size([2, 3]), {"size": [2, 3]}),
    (torch.Size([]), {"size": []}),
    ([(slice(None, -1), Ellipsis), {"k": [math.inf]}], [
        {"tuple": [{"slice": [None, -1, None]}, {"ellipsis": None}]}, {"dict": {"k": [{"float": "inf"}]}}]),
]  # fmt: skip
CASES += [(dtype, {"dtype": name}) for name, dtype in DTYPES.items()]
CASES += [(fmt, {"memory_format": name}) for name, fmt in MEMORY_FORMATS.items()]
CASES += [(layout, {"layout": name}) for name, layout in LAYOUTS.items()]


@pytest.mark.parametrize(("value", "encoded"), CASES, ids=[repr(v)[:40] for v, _ in CASES])
def test_encode_and_decode_round_trip(value: Any, encoded: Any) -> None:
    assert same(encode(value), encoded)
    assert same(decode(encoded, no_ref), value)


def test_every_tag_is_covered() -> None:
    covered = {next(iter(e)) for _, e in CASES if isinstance(e, dict)}
    assert covered == set(TAGS) - DECLARATION_TAGS  # those are resolved before decoding (fxgen.spec.resolve)


@pytest.mark.parametrize("tagged", [{"arg": "n"}, {"module": {"class": "torch.nn.ReLU"}}])
def test_declaration_tags_are_not_values(tagged: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="format-2 declaration"):
        decode(tagged, no_ref)


@pytest.mark.parametrize("tagged", [{"repeat": 2, "module": {}}, {"for": "c", "in": [1], "module": {}}])
def test_repeats_and_fors_are_items_of_a_list(tagged: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=rf"^\{{{next(iter(tagged))}: \.\.\., module: \.\.\.\}} stands for modules as items of a list"):
        decode(tagged, no_ref)


def test_tables_and_tags_agree_with_the_schema() -> None:
    defs = load_schema()["$defs"]
    assert list(TAGS) == defs["tagged_value"]["propertyNames"]["enum"]
    assert list(DTYPES) == defs["dtype"]["enum"]
    props = defs["tagged_value"]["properties"]
    assert list(MEMORY_FORMATS) == props["memory_format"]["enum"]
    assert list(LAYOUTS) == props["layout"]["enum"]
    assert set(props) == set(TAGS)


def test_node_references() -> None:
    nodes = {"x": "X", "y": "Y"}
    assert decode(["%x", {"tuple": ["%y", "%%x"]}], nodes.__getitem__) == ["X", ("Y", "%x")]
    assert decode_kwargs({"a": "%x", "b": "%%y"}, nodes.__getitem__) == {"a": "X", "b": "%y"}

    class N:
        def __init__(self, name: str) -> None:
            self.name = name

    x = N("x")
    assert encode([x, "%x", (x, 1)], lambda v: v.name if isinstance(v, N) else None) == [
        "%x", "%%x", {"tuple": ["%x", 1]}
    ]  # fmt: skip


def test_parse_ref_and_iter_refs() -> None:
    assert parse_ref("%x") == "x"
    assert parse_ref("%%x") is None
    assert parse_ref("x%") is None
    value = ["%a", {"tuple": ["%%b", {"dict": {"k": "%c"}}]}, {"slice": ["%d", None, None]}]
    assert list(iter_refs(value)) == [((0,), "a"), ((1, "tuple", 1, "dict", "k"), "c"), ((2, "slice", 0), "d")]


def test_decoded_values_have_exact_types() -> None:
    assert type(decode({"size": [2]}, no_ref)) is torch.Size
    assert type(decode({"tuple": []}, no_ref)) is tuple
    assert decode({"dtype": "bfloat16"}, no_ref) is torch.bfloat16
    assert decode({"memory_format": "channels_last"}, no_ref) is torch.channels_last


def test_unknown_tag_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown value tag 'set'"):
        decode({"set": [1]}, no_ref)


# -- what the format cannot hold --------------------------------------------------------------------
Point = namedtuple("Point", "x y")


@pytest.mark.parametrize(
    "value",
    [
        object(),
        {1, 2},
        b"bytes",
        bytearray(b"x"),
        Point(1, 2),
        {1: "int key"},
        torch.zeros(2),
        torch.nn.ReLU(),
        lambda: None,
        torch.float8_e4m3fn,
        torch.jagged,
        complex(math.inf, 0),
        [1, object()],
        {"k": (1, {2})},
    ],
    ids=lambda v: type(v).__name__,
)
def test_unencodable_values_are_refused(value: Any) -> None:
    with pytest.raises(UnencodableValue, match=r"cannot write|not supported"):
        encode(value)


def test_unencodable_message_names_the_type_and_is_short() -> None:
    with pytest.raises(UnencodableValue) as info:
        encode([*range(1000), object()])
    assert "object" in str(info.value) and len(str(info.value)) < 250


def test_dtype_name() -> None:
    assert dtype_name(torch.float32) == "float32"
    with pytest.raises(UnencodableValue, match="float32"):  # the message lists what is supported
        dtype_name(torch.float8_e5m2)


def test_subclasses_of_builtins_encode_as_the_builtins() -> None:
    """numpy.float64 and IntEnum members would otherwise reach the YAML dumper, which refuses them."""

    class Level(enum.IntEnum):
        HIGH = 2

    class Mode(str, enum.Enum):  # noqa: UP042 -- str() of this mixin is "Mode.FAST", not the value
        FAST = "%fast"

    class MyFloat(float):
        pass

    for value, expected in [(Level.HIGH, 2), (Mode.FAST, "%%fast"), (MyFloat(0.5), 0.5), (MyFloat("inf"), {"float": "inf"})]:
        got = encode(value)
        assert got == expected and type(got) is type(expected)
    (key,) = encode({Mode.FAST: 1})["dict"]
    assert type(key) is str and key == "%fast"  # dict keys are not escaped: they are never references


# -- encoded values are valid spec values -----------------------------------------------------------
def spec_with_default(encoded: Any) -> dict[str, Any]:
    return {"fxgen": 1, "name": "Values", "nodes": [
        {"op": "placeholder", "name": "x", "default": encoded}, {"op": "output", "args": ["%x"]}]}  # fmt: skip


def test_every_case_is_accepted_by_validation() -> None:
    for value, encoded in CASES:
        if isinstance(value, torch.Size):
            continue  # torch.Size is for module arguments; nodes take tuples (see test_validate)
        spec = validate_data(spec_with_default(encoded))
        assert spec.nodes[0].default == encoded


scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
leaves = scalars | st.sampled_from([Ellipsis, *DTYPES.values(), *MEMORY_FORMATS.values(), *LAYOUTS.values(),
                                    torch.device("cpu"), torch.device("cuda:0")]) \
    | st.builds(complex, st.floats(allow_nan=False, allow_infinity=False), st.floats(allow_nan=False, allow_infinity=False)) \
    | st.builds(slice, st.none() | st.integers(), st.none() | st.integers(), st.none() | st.integers())  # fmt: skip
values = st.recursive(
    leaves,
    lambda children: st.lists(children, max_size=3)
    | st.lists(children, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=12,
)


@given(values)
def test_random_values_round_trip_through_a_spec_file(value: Any) -> None:
    """encode -> YAML text -> read and validate -> decode gives the value back."""
    encoded = encode(value)
    assert same(decode(encoded, no_ref), value)
    spec = validate_data(spec_with_default(encoded))
    from fxgen.check.validate import validate_document
    from fxgen.read.reader import parse_text

    again = validate_document(parse_text(spec.to_yaml()))
    default = again.nodes[0].default
    assert default is not NO_DEFAULT
    assert same(decode(default, no_ref), value)
