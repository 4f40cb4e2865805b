"""The value tags (fxgen.spec.tags): one module per tag, a registry the stages look tags up in.

The toy tag of tests/spec/fraction_tag.py, registered here at test time, goes through decode,
encode, the reference and check walks and rendering without a line of fxgen changing; the
built-in tags are each one module, registered in the schema's order.
"""

from __future__ import annotations

import fractions
import importlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fraction_tag import TAG as FRACTION

from fxgen.codegen.render import Imports, literal
from fxgen.spec import tags
from fxgen.spec.resolve import substitute
from fxgen.spec.values import decode, encode, iter_refs, plain_refs

ROOT = Path(__file__).resolve().parents[2]

BUILTIN_MODULES = [
    "fxgen.spec.tags.tuples", "fxgen.spec.tags.slices", "fxgen.spec.tags.ellipsis", "fxgen.spec.tags.dtypes",
    "fxgen.spec.tags.devices", "fxgen.spec.tags.memory_formats", "fxgen.spec.tags.layouts",
    "fxgen.spec.tags.floats", "fxgen.spec.tags.complexes", "fxgen.spec.tags.dicts", "fxgen.spec.tags.sizes",
]  # fmt: skip


@pytest.fixture
def fraction() -> Iterator[tags.Tag]:
    tags.register(FRACTION)
    try:
        yield FRACTION
    finally:
        tags.unregister(FRACTION.name)


def _no_ref(name: str) -> object:
    raise AssertionError(name)


def test_a_toy_tag_round_trips_through_decode_encode_and_render(fraction: tags.Tag) -> None:
    value = fractions.Fraction(1, 3)
    encoded = encode(value)
    assert encoded == {"fraction": [1, 3]}
    assert decode(encoded, _no_ref) == value
    nested = encode((value, {"half": fractions.Fraction(1, 2)}, [slice(None, fractions.Fraction(2, 3))]))
    assert nested == {"tuple": [{"fraction": [1, 3]}, {"dict": {"half": {"fraction": [1, 2]}}},
                                [{"slice": [None, {"fraction": [2, 3]}, None]}]]}  # fmt: skip
    assert decode(nested, _no_ref) == (value, {"half": fractions.Fraction(1, 2)}, [slice(None, fractions.Fraction(2, 3))])
    imports = Imports()
    text = literal(nested, imports)
    assert text == ('(fractions.Fraction(1, 3), {"half": fractions.Fraction(1, 2)}, '
                    "[slice(None, fractions.Fraction(2, 3), None)])")  # fmt: skip
    assert imports.stdlib == {"fractions"} and not imports.torch
    assert eval(text, {"fractions": fractions}) == decode(nested, _no_ref)  # the source is the value


def test_the_walks_treat_a_toy_leaf_tag_as_a_leaf(fraction: tags.Tag) -> None:
    """It holds no encoded value: no references in it, not plain (validation checks it fully),
    and substitution leaves it as written."""
    value = {"tuple": [{"fraction": [1, 3]}, "%x"]}
    assert [ref for _, ref in iter_refs(value)] == ["x"]
    assert plain_refs(value, []) is False
    assert substitute(value, {}) == value


def test_an_unregistered_tag_is_unknown_again() -> None:
    with pytest.raises(ValueError, match="unknown value tag 'fraction'"):
        decode({"fraction": [1, 3]}, _no_ref)
    with pytest.raises(ValueError, match="unknown value tag 'fraction'"):
        literal({"fraction": [1, 3]}, Imports())


def test_a_tag_is_registered_once(fraction: tags.Tag) -> None:
    with pytest.raises(ValueError, match="registered already"):
        tags.register(fraction)
    with pytest.raises(ValueError, match="registered already"):
        tags.register(type("Arg", (tags.Tag,), {"name": "arg"})())


@pytest.mark.parametrize("module", BUILTIN_MODULES)
def test_each_builtin_tag_is_one_registered_module(module: str) -> None:
    tag = importlib.import_module(module).TAG
    assert tags.lookup(tag.name) is tag


def test_the_registry_is_the_schemas_enum_in_its_order() -> None:
    schema = json.loads((ROOT / "schemas" / "fxgen.schema.json").read_text(encoding="utf-8"))
    enum = schema["$defs"]["tagged_value"]["propertyNames"]["enum"]
    assert tuple(enum) == tags.TAGS
    assert [tag.name for tag in tags.registered()] == list(tags.TAGS[: len(BUILTIN_MODULES)])
