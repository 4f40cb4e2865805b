"""The compiled schema validator (jsonschema_rs) in front of jsonschema (fxgen.check.schema).

The fast path may only decide "valid"; it must never accept a document jsonschema rejects, and
every diagnostic still comes from jsonschema. These tests check that the two engines give the
same verdict on the example specs, the bad-spec catalogue and random mutations of random specs,
that their regexes mean the same thing, and that the fast path is actually taken. They also
check the per-Policy memo of resolve_function / resolve_module_class (same speed issue).
"""

from __future__ import annotations

import copy
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs  # a required dependency: these tests do not skip without it
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import spec_dicts

import fxgen
from fxgen._errors import SpecError
from fxgen.check import schema as schemas
from fxgen.check.schema import (
    _fast_accepts,
    _fast_validator,
    _rust_pattern,
    _validator,
    check_schema,
    load_schema,
)
from fxgen.check.validate import validate_data
from fxgen.policy.policy import Policy, TargetError
from fxgen.read.reader import Document, read_document

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    [*(ROOT / "model_specs").glob("*.yaml"), *(ROOT / "tests" / "bad_specs").glob("*.yaml"),
     *(ROOT / "tests" / "bad_specs").glob("*.json")]
)  # fmt: skip
BUDGET = settings.default.max_examples


def fast() -> Any:
    validator = _fast_validator()
    assert validator is not None, "the compiled validator could not be built for schemas/fxgen.schema.json"
    return validator


def verdicts(data: Any) -> tuple[bool, bool]:
    """(the compiled validator's verdict, jsonschema's verdict)."""
    return fast().is_valid(data), _validator().is_valid(data)


def slow_check(doc: Document) -> list[Any]:
    return schemas._diagnostics(doc, _validator().iter_errors(doc.data))


def test_the_fast_validator_is_built_with_the_schemas_draft() -> None:
    assert load_schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert isinstance(fast(), jsonschema_rs.Draft202012Validator)
    # the draft is read from `$schema` without importing jsonschema: it must be jsonschema's reading
    import jsonschema

    assert jsonschema.validators.validator_for(load_schema()) is jsonschema.Draft202012Validator


# -- (a) the examples and the bad-spec catalogue ---------------------------------------------------
def _documents() -> Iterator[tuple[str, Document]]:
    for path in FILES:
        try:
            doc = read_document(path)
        except SpecError:  # refused by the reader (BOM, duplicate keys, alias bomb...): no document
            continue
        yield path.relative_to(ROOT).as_posix(), doc


DOCUMENTS = list(_documents())


def test_the_catalogue_has_documents_on_both_sides() -> None:
    valid = [name for name, doc in DOCUMENTS if _validator().is_valid(doc.data)]
    assert len(DOCUMENTS) > 60 and any(n.startswith("model_specs/") for n in valid)
    assert len(valid) < len(DOCUMENTS)  # schema-invalid catalogue entries are compared too


@pytest.mark.parametrize(("name", "doc"), DOCUMENTS, ids=[name for name, _ in DOCUMENTS])
def test_both_engines_agree_on_every_spec_file(name: str, doc: Document) -> None:
    rs, py = verdicts(doc.data)
    assert rs == py, f"{name}: jsonschema_rs says {rs}, jsonschema says {py}"
    assert _fast_accepts(doc.data) == py


@pytest.mark.parametrize(("name", "doc"), DOCUMENTS, ids=[name for name, _ in DOCUMENTS])
def test_diagnostics_are_exactly_jsonschemas(name: str, doc: Document) -> None:
    assert check_schema(doc) == slow_check(doc)


# -- (b) random specs and random mutations of them ----------------------------------------------------
_TRICKY = list("aZz_09%.:,[] |-\n\r\t\u2028\u00e9\u0131\u212a\u0660\uff10\U0001d7d8")
_KEYS = ["op", "name", "target", "args", "kwargs", "type", "default", "tuple", "slice", "ellipsis",
         "dtype", "device", "memory_format", "layout", "float", "complex", "dict", "size", "shape",
         "init", "value", "persistent", "requires_grad", "class", "fxgen", "nodes", "modules",
         "parameters", "buffers", "doc", "normal", "std"]  # fmt: skip
_SPECIAL = ["", "\n", "%", "%%", "%x", "%x\n", "%%x\n", "x\n", "x\n\n", "\nx", "torch.relu\n", "fc\n",
            "0", "01", "a.0.b", "a..b", "__x", "_", "cuda:0", "cuda:01", "cpu\n", "torch.Tensor\n",
            "float32", "placeholder", "output", "call_function", "inf", "nan", "tuple", "x\u00e9",
            "\u0660", "x\r", "x\u2028"]  # fmt: skip

texts = st.one_of(st.text(st.sampled_from(_TRICKY), max_size=8), st.text(max_size=6), st.sampled_from(_SPECIAL))
numbers = st.one_of(
    st.integers(-3, 3),
    st.integers(),
    st.integers(-(2**80), 2**80),
    st.sampled_from([10**400, -(10**400), 2**63, 2**64, -(2**63) - 1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, 1e300, -1.0, 5e-324]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.one_of(st.sampled_from(_KEYS), texts), inner, max_size=3)),
    max_leaves=8,
)


def _slots(data: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in ``data``, outermost first."""
    found: list[tuple[Any, Any]] = []
    stack = [data]
    while stack:
        value = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            found.append((value, key))
            stack.append(item)
    return found


@st.composite
def mutated_specs(draw: st.DrawFn) -> dict[str, Any]:
    spec = copy.deepcopy(draw(spec_dicts(max_nodes=5)))  # the strategies share nested constants
    for _ in range(draw(st.integers(1, 3))):
        container, key = draw(st.sampled_from(_slots(spec)))
        old = container[key]
        kind = draw(st.sampled_from(["replace", "string", "number", "extra", "delete", "wrap"]))
        if kind == "replace":
            container[key] = draw(json_values)
        elif kind == "string":
            suffix = draw(texts)
            container[key] = old + suffix if isinstance(old, str) and draw(st.booleans()) else draw(texts)
        elif kind == "number":
            if isinstance(old, int) and not isinstance(old, bool) and abs(old) < 2**60:
                container[key] = draw(st.sampled_from([float(old), old + 0.5, -old - 1, old * 10**30]))
            else:
                container[key] = draw(numbers)
        elif kind == "extra" and isinstance(old, dict):
            old[draw(st.one_of(st.sampled_from(_KEYS), texts))] = draw(json_values)
        elif kind == "extra" and isinstance(old, list):
            old.append(draw(json_values))
        elif kind == "wrap":
            container[key] = draw(st.sampled_from([[old], {"tuple": [old]}, {"dict": {"k": old}}, {"x": old}]))
        elif isinstance(container, dict):
            del container[key]
        else:
            container.pop(key)
    return spec


def test_random_valid_specs_take_the_fast_path() -> None:
    @given(spec_dicts())
    @settings(max_examples=BUDGET, suppress_health_check=[HealthCheck.too_slow])
    def check(spec: dict[str, Any]) -> None:
        assert verdicts(spec) == (True, True)
        assert _fast_accepts(spec)

    check()


@given(mutated_specs())
@settings(max_examples=5 * BUDGET, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_both_engines_agree_on_mutated_specs(spec: dict[str, Any]) -> None:
    rs, py = verdicts(spec)
    assert rs == py, f"jsonschema_rs says {rs}, jsonschema says {py}"
    assert _fast_accepts(spec) == py


@given(json_values)
@settings(max_examples=2 * BUDGET)
def test_both_engines_agree_on_arbitrary_json_in_a_value_position(value: Any) -> None:
    spec = {"fxgen": 1, "name": "M", "nodes": [
        {"op": "placeholder", "name": "x", "default": value},
        {"op": "call_function", "name": "y", "target": "torch.add", "args": ["%x", value], "kwargs": {"alpha": value}},
        {"op": "output", "args": [value]},
    ]}  # fmt: skip
    assert verdicts(spec)[0] == verdicts(spec)[1]


# Data the reader never builds: the fast path must defer (never accept what jsonschema rejects).
_NOT_PLAIN = [
    ("a tuple for an array", lambda v: {"size": (1, 2)}),
    ("a tuple of nodes", None),
    ("a float subclass", lambda v: {"complex": [type("F", (float,), {})(1.0), 2.0]}),
    ("a str subclass", lambda v: type("S", (str,), {})("%x")),
    ("a dict subclass", lambda v: type("D", (dict,), {})(dtype="float32")),
    ("a non-string key", lambda v: {"dict": {1: 2}}),
    ("NaN", lambda v: math.nan),
    ("infinity", lambda v: {"complex": [math.inf, 1.0]}),
    ("a lone surrogate", lambda v: "\ud800"),
    ("a set", lambda v: {1}),
    ("bytes", lambda v: b"x"),
]


@pytest.mark.parametrize(("what", "make"), _NOT_PLAIN, ids=[w for w, _ in _NOT_PLAIN])
def test_non_json_data_is_left_to_jsonschema(what: str, make: Any) -> None:
    spec: dict[str, Any] = {"fxgen": 1, "name": "M", "nodes": [
        {"op": "placeholder", "name": "x"},
        {"op": "call_function", "name": "y", "target": "torch.relu", "args": ["%x"]},
        {"op": "output", "args": ["%y"]},
    ]}  # fmt: skip
    if make is None:
        spec["nodes"] = tuple(spec["nodes"])
    else:
        spec["nodes"][1]["args"].append(make(None))
    assert not _fast_accepts(spec)


@pytest.mark.parametrize("depth", [150, 100_000])
def test_deep_nesting_is_left_to_jsonschema(depth: int) -> None:
    """jsonschema_rs recurses on the native stack: 100,000 levels would kill the process."""
    deep: list[Any] = []
    inner = deep
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    spec = {"fxgen": 1, "name": "M", "nodes": [{"op": "placeholder", "name": "x", "default": deep},
                                                {"op": "output", "args": ["%x"]}]}  # fmt: skip
    assert not _fast_accepts(spec)
    if depth < 1000:
        assert _validator().is_valid(spec)


def test_a_tuple_is_why_plain_data_is_required() -> None:
    """jsonschema_rs takes a tuple for an array; jsonschema does not."""
    spec = {"fxgen": 1, "name": "M", "nodes": ({"op": "placeholder", "name": "x"}, {"op": "output", "args": ["%x"]})}
    assert verdicts(spec) == (True, False)
    assert not _fast_accepts(spec)


# -- the regexes ------------------------------------------------------------------------------------
def _patterns(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "pattern":
                yield value
            elif key == "patternProperties":
                yield from value
                yield from (p for v in value.values() for p in _patterns(v))
            elif key not in ("enum", "const"):
                yield from _patterns(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _patterns(item)


PATTERNS = sorted(set(_patterns(load_schema())))
_PATTERN_VALIDATORS = {
    p: jsonschema_rs.Draft202012Validator({"pattern": _rust_pattern(p)}, pattern_options=jsonschema_rs.FancyRegexOptions())
    for p in PATTERNS
}


def test_the_schema_has_the_patterns_these_tests_know() -> None:
    assert len(PATTERNS) >= 6
    assert all(_rust_pattern(p) != p for p in PATTERNS)  # every one ends with a `$` anchor


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize(
    "text",
    ["x", "x\n", "x\n\n", "\nx", "x\r", "x\u2028", "", "\n", "%x", "%x\n", "%%", "%", "a.0.b", "a.b\n",
     "cuda:0", "cuda:0\n", "torch.Tensor", "typing.Optional[torch.Tensor]\n", "\u00e9", "x\u00e9", "\u0660"],
)  # fmt: skip
def test_python_and_rust_regexes_match_the_same_strings(pattern: str, text: str) -> None:
    assert _PATTERN_VALIDATORS[pattern].is_valid(text) == bool(re.search(pattern, text))


@given(st.sampled_from(PATTERNS), st.one_of(texts, st.text(st.sampled_from(_TRICKY + list("AbYq%[]._:|, ")), max_size=30)))
@settings(max_examples=10 * BUDGET)
def test_python_and_rust_regexes_agree_on_random_strings(pattern: str, text: str) -> None:
    assert _PATTERN_VALIDATORS[pattern].is_valid(text) == bool(re.search(pattern, text))


def test_the_trailing_newline_stays_jsonschemas_verdict() -> None:
    """Python's `$` matches before a final newline: the Rust copy of the schema says the same, and
    the semantic checks refuse such names with their own message, as before."""
    assert _rust_pattern("^[a-z]+$") == "^[a-z]+(?=\\n?$)"
    spec = {"fxgen": 1, "name": "M", "nodes": [{"op": "placeholder", "name": "x\n"}, {"op": "output", "args": ["%x"]}]}
    assert verdicts(spec) == (True, True)
    with pytest.raises(SpecError, match=r"node name 'x\\n' is not an identifier"):
        validate_data(spec)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [("^a$", "^a(?=\\n?$)"), ("[$]", "[$]"), ("\\$", "\\$"), ("[^$\\]]$", "[^$\\]](?=\\n?$)"),
     ("^(?:a|$)", "^(?:a|(?=\\n?$))"), ("(?!x)a", "(?!x)a"), ("a\\.b\\n", "a\\.b\\n")],
)  # fmt: skip
def test_rust_pattern_translates_only_dollar_anchors(pattern: str, expected: str) -> None:
    assert _rust_pattern(pattern) == expected


@pytest.mark.parametrize("pattern", ["\\d", "\\w+", "\\s", "\\bx", "a.b", "(?m)^a$", "(?i)a", "(?<=a)b",
                                     "(?P<n>a)", "a{,3}", "[]a]", "[a", "\\Z", "\\p{L}", "x\\"])  # fmt: skip
def test_rust_pattern_refuses_what_the_engines_read_differently(pattern: str) -> None:
    with pytest.raises(ValueError):
        _rust_pattern(pattern)


def test_an_untranslatable_pattern_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = copy.deepcopy(load_schema())
    schema["$defs"]["identifier"]["pattern"] = "^\\w+$"
    monkeypatch.setattr(schemas, "load_schema", lambda: schema)
    _fast_validator.cache_clear()
    try:
        assert _fast_validator() is None
    finally:
        monkeypatch.undo()
        _fast_validator.cache_clear()
    assert _fast_validator() is not None


# -- (c) the fast path is taken, and the slow one only for invalid documents -------------------------
@pytest.fixture
def iter_errors_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Documents given to jsonschema's validator (its recursive calls for sub-schemas not counted)."""
    calls: list[Any] = []
    top = _validator()
    cls = type(top)
    original = cls.iter_errors

    def counting(self: Any, instance: Any, *args: Any, **kwargs: Any) -> Any:
        if self is top:
            calls.append(instance)
        return original(self, instance, *args, **kwargs)

    monkeypatch.setattr(cls, "iter_errors", counting)
    return calls


def test_a_valid_spec_never_reaches_jsonschema(iter_errors_calls: list[Any]) -> None:
    for path in sorted((ROOT / "model_specs").glob("*.yaml")):
        fxgen.load_spec(path)
    assert iter_errors_calls == []


def test_an_invalid_spec_is_explained_by_jsonschema(iter_errors_calls: list[Any]) -> None:
    with pytest.raises(SpecError) as caught:
        fxgen.load_spec(ROOT / "tests" / "bad_specs" / "bad_op.yaml")
    assert len(iter_errors_calls) == 1
    assert "is not one of" in str(caught.value)


def test_without_jsonschema_rs_everything_still_works(monkeypatch: pytest.MonkeyPatch, iter_errors_calls: list[Any]) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema_rs", None)  # `import jsonschema_rs` raises ImportError
    _fast_validator.cache_clear()
    try:
        assert _fast_validator() is None
        spec = fxgen.load_spec(ROOT / "model_specs" / "mlp.yaml")
        assert spec.name and len(iter_errors_calls) == 1
    finally:
        monkeypatch.undo()
        _fast_validator.cache_clear()
    assert _fast_validator() is not None


def test_an_exception_in_the_fast_validator_falls_back(monkeypatch: pytest.MonkeyPatch, iter_errors_calls: list[Any]) -> None:
    class Broken:
        def is_valid(self, data: Any) -> bool:
            raise ValueError("cannot convert")

    monkeypatch.setattr(schemas, "_fast_validator", lambda: Broken())
    fxgen.load_spec(ROOT / "model_specs" / "mlp.yaml")
    assert len(iter_errors_calls) == 1


# -- Policy memo ------------------------------------------------------------------------------------
def test_resolve_function_is_memoised_per_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = Policy._resolve_function

    def counting(self: Policy, target: str) -> Any:
        calls.append(target)
        return original(self, target)

    monkeypatch.setattr(Policy, "_resolve_function", counting)
    policy = Policy()
    first = [policy.resolve_function(t) for t in ("torch.relu", "operator.add", "torch.relu", "operator.add")]
    assert first[0] is first[2] and first[1] is first[3]
    assert calls == ["torch.relu", "operator.add"]
    Policy().resolve_function("torch.relu")  # another instance has its own memo
    assert calls == ["torch.relu", "operator.add", "torch.relu"]


def test_resolve_module_class_is_memoised_per_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = Policy._resolve_module_class

    def counting(self: Policy, target: str) -> Any:
        calls.append(target)
        return original(self, target)

    monkeypatch.setattr(Policy, "_resolve_module_class", counting)
    policy = Policy()
    assert policy.resolve_module_class("torch.nn.Linear") is policy.resolve_module_class("torch.nn.Linear")
    assert calls == ["torch.nn.Linear"]


@pytest.mark.parametrize("widen_first", [False, True])
def test_the_memo_does_not_leak_between_policies(widen_first: bool) -> None:
    narrow = Policy()
    wide = narrow.widened(["json"])
    if widen_first:
        assert callable(wide.resolve_function("json.dumps"))
    with pytest.raises(TargetError, match="not allowed"):
        narrow.resolve_function("json.dumps")
    with pytest.raises(TargetError, match="not allowed"):
        narrow.resolve_function("json.dumps")  # refusals are not memoised either way
    assert callable(wide.resolve_function("json.dumps"))
    with pytest.raises(TargetError, match="not allowed"):
        Policy().resolve_function("json.dumps")
    with pytest.raises(TargetError):
        Policy().resolve_module_class("json.JSONDecoder")


def test_the_memo_is_invisible() -> None:
    used, fresh = Policy(("json",)), Policy(("json",))
    used.resolve_function("json.dumps")
    used.resolve_module_class("torch.nn.Linear")
    assert used == fresh and hash(used) == hash(fresh) and repr(used) == repr(fresh) == "Policy(allow=('json',))"
    with pytest.raises(TargetError):
        used.resolve_function(["not", "hashable"])  # type: ignore[arg-type]
