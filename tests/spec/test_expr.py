"""fxgen.spec.expr: the expression grammar of ``{arg: ...}`` and ``values:``.

The rules models are scaled by (torchvision's ``_make_divisible``, Ultralytics' width, depth and
channel caps) are written as values and compared with the Python originals on grids of inputs,
exactly: the evaluator does Python's own arithmetic in Python's order, never ``eval``. A property
test draws random trees: the rendered text parses back to the same tree, black leaves the
generated source as it is, and evaluation agrees with Python evaluating that source (``eval`` of
the rendered text of a generated tree is the oracle here, in the test only).
"""

from __future__ import annotations

import builtins
import math
import re
from typing import Any

import black
import pytest
from helpers import property_budget
from hypothesis import given, settings
from hypothesis import strategies as st

from fxgen.spec.expr import (
    FUNCTIONS,
    MAX_DEPTH,
    MAX_LENGTH,
    Expr,
    ExprError,
    evaluate,
    functions,
    names,
    parse,
    render,
    source,
)
from fxgen.spec.resolve import with_values


# -- the Python originals ----------------------------------------------------------------------
def torchvision_make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """torchvision.models._utils._make_divisible, verbatim."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    # Make sure that round down does not go down by more than 10%.
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def ultralytics_make_divisible(x: float, divisor: int) -> int:
    """ultralytics.utils.ops.make_divisible (an int divisor)."""
    return math.ceil(x / divisor) * divisor


def ultralytics_channels(c2: int, max_channels: int, width: float) -> int:
    """ultralytics.nn.tasks.parse_model: ``c2 = make_divisible(min(c2, max_channels) * width, 8)``."""
    return ultralytics_make_divisible(min(c2, max_channels) * width, 8)


def ultralytics_depth(n: int, depth: float) -> int:
    """ultralytics.nn.tasks.parse_model: ``n = max(round(n * depth), 1) if n > 1 else n``."""
    return max(round(n * depth), 1) if n > 1 else n


MAKE_DIVISIBLE = {  # torchvision's _make_divisible(c * width, 8) as values
    "v": "c * width",
    "down": "max(8, int(v + 8 / 2) // 8 * 8)",
    "out": "down + 8 if down < 0.9 * v else down",
}
WIDTHS = [0.1, 0.125, 0.2, 0.25, 0.3, 0.35, 0.5, 0.6, 0.75, 0.8, 1.0, 1.1, 1.25, 1.3, 1.4, 1.5, 2.0, 3.0]
CHANNELS = [1, 3, 8, 12, 16, 24, 32, 40, 48, 64, 80, 96, 112, 160, 192, 256, 320, 384, 512, 576, 960, 1024, 1280]


@pytest.mark.parametrize("width", WIDTHS)
def test_make_divisible_as_values_equals_torchvision(width: float) -> None:
    for c in CHANNELS:
        got = with_values({"c": c, "width": width}, MAKE_DIVISIBLE)["out"]
        expected = torchvision_make_divisible(c * width, 8)
        assert got == expected and type(got) is type(expected), (c, width)


def test_make_divisible_keeps_ninety_percent() -> None:
    """The rule format 1's integer expressions could not write: width 0.75 of MobileNetV2."""
    assert [with_values({"c": c, "width": 0.75}, MAKE_DIVISIBLE)["out"] for c in (32, 16, 24, 64, 96, 160, 320)] == [
        24, 16, 24, 48, 72, 120, 240]  # fmt: skip
    assert with_values({"c": 12, "width": 1.0}, MAKE_DIVISIBLE)["out"] == 16  # 8 would lose a third: + 8


@pytest.mark.parametrize("width", WIDTHS)
def test_ultralytics_width_and_depth_rules_equal_the_originals(width: float) -> None:
    channels = parse("ceil(min(c2, max_channels) * width / 8) * 8")
    depth = parse("max(round(n * depth), 1) if n > 1 else n")
    for max_channels in (256, 512, 768, 1024):
        for c2 in CHANNELS:
            env = {"c2": c2, "max_channels": max_channels, "width": width}
            assert evaluate(channels, env) == ultralytics_channels(c2, max_channels, width)
    for n in range(0, 13):
        for d in (0.33, 0.5, 0.67, 1.0, 1.33, width):
            got, expected = evaluate(depth, {"n": n, "depth": d}), ultralytics_depth(n, d)
            assert got == expected and type(got) is type(expected), (n, d)


def test_round_is_pythons_half_to_even() -> None:
    tree = parse("round(x)")
    for x in [0.5, 1.5, 2.5, 3.5, -0.5, -1.5, 2.675, 0.49999999999999994, 1e15 + 0.5]:
        assert evaluate(tree, {"x": x}) == round(x)
    assert evaluate(parse("round(x, 2)"), {"x": 2.675}) == round(2.675, 2) == 2.67


def test_float_arithmetic_is_done_in_pythons_order() -> None:
    """(0.1 + 0.2) + 0.3 and 0.1 + (0.2 + 0.3) differ in the last bit; each is kept."""
    env = {"a": 0.1, "b": 0.2, "c": 0.3}
    assert evaluate(parse("a + b + c"), env) == (0.1 + 0.2) + 0.3
    assert evaluate(parse("a + (b + c)"), env) == 0.1 + (0.2 + 0.3)
    assert evaluate(parse("a + b + c"), env) != evaluate(parse("a + (b + c)"), env)
    assert evaluate(parse("7 / 2"), {}) == 3.5 and evaluate(parse("-7 // 2"), {}) == -4
    assert evaluate(parse("-7 % 3"), {}) == 2 and evaluate(parse("2 ** -1"), {}) == 0.5


def test_booleans_comparisons_and_conditionals() -> None:
    env = {"n": 3, "flag": True, "act": "relu"}
    assert evaluate(parse("n > 1 and not flag"), env) is False
    assert evaluate(parse("0 or n"), env) == 3  # Python's and/or give an operand
    assert evaluate(parse("n if flag else 0"), env) == 3
    assert evaluate(parse("act == other"), {**env, "other": "relu"}) is True
    assert evaluate(parse("True"), {}) is True
    with pytest.raises(ExprError, match="needs numbers"):
        evaluate(parse("flag + 1"), env)  # booleans are not numbers here
    with pytest.raises(ExprError, match="needs numbers"):
        evaluate(parse("act * 2"), env)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("__import__(os)", "`__import__(` is not allowed"),
        ("x.real", "'.' is not allowed"),
        ("x[0]", "'[' is not allowed"),
        ("lambda x", "unexpected 'lambda'"),
        ("a < b < c", "chained comparisons are not allowed"),
        ("min(a)", "min() takes 2 to 8 arguments, not 1"),
        ("ceil(a, b)", "ceil() takes 1 argument, not 2"),
        ("min", "min is a function"),
        ("a if b", "expected 'else'"),
        ("(a + b", "a parenthesis is not closed"),
        ("a = 1", "'=' is not allowed"),
        ("9223372036854775809", "too large: integers are at most 2**63"),
        ("1e999", "is not a finite number"),
        ("x" * (MAX_LENGTH + 1), f"at most {MAX_LENGTH} characters"),
        ("(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1), f"nests more than {MAX_DEPTH} deep"),
        ("-" * (MAX_DEPTH + 1) + "a", f"nests more than {MAX_DEPTH} deep"),
        ("not " * (MAX_DEPTH + 1) + "a", f"nests more than {MAX_DEPTH} deep"),
    ],
)
def test_what_does_not_parse_says_what_the_grammar_allows(text: str, message: str) -> None:
    with pytest.raises(ExprError, match=_literal(message)):
        parse(text)


def _literal(text: str) -> str:
    return re.escape(text)


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("x * x", {"x": 2**40}, "too large"),
        ("x + 1", {"x": 2**63}, "too large"),
        ("2 ** 64", {}, "too large"),
        ("x ** 65", {"x": 1}, "the exponent 65 is beyond 64"),
        ("x * 1e308 * 10", {"x": 1.0}, "not a finite number"),
        ("x ** 2.0", {"x": 1e200}, "too large"),
        ("x ** 0.5", {"x": -1.0}, "not a real number"),
        ("x // 0", {"x": 3}, "divides by zero"),
        ("x / 0.0", {"x": 3}, "divides by zero"),
        ("0 ** -1", {}, "divides by zero"),
        ("int(x)", {"x": 1e300}, "too large"),
        ("round(x, 1000)", {"x": 1.5}, "round()'s digits"),
    ],
)
def test_evaluation_stays_within_the_bounds(text: str, env: dict[str, Any], message: str) -> None:
    with pytest.raises(ExprError, match=_literal(message)):
        evaluate(parse(text), env)
    assert evaluate(parse("x - 1"), {"x": 2**63}) == 2**63 - 1  # the bound itself is allowed


def test_names_functions_and_python_source() -> None:
    tree = parse("ceil(min(c, cap) * width / 8) * 8 + floor(c)")
    assert names(tree) == ["c", "cap", "width"]
    assert functions(tree) == {"ceil", "min", "floor"}
    assert render(tree) == "ceil(min(c, cap) * width / 8) * 8 + floor(c)"
    assert source(tree) == "math.ceil(min(c, cap) * width / 8) * 8 + math.floor(c)"
    assert render(parse("(a)  ** (2)")) == "a**2"  # black's power operand hugging
    assert render(parse("- a ** 2")) == "-(a**2)"  # black's parentheses for a unary minus of a power


# -- random trees ------------------------------------------------------------------------------------
ENV = {"i": 7, "j": -3, "k": 0, "x": 2.5, "y": -0.1, "z": 1e-3, "big": 2**62, "t": True, "f": False}
NUMERIC_NAMES = ["i", "j", "k", "x", "y", "z", "big"]
ARITHMETIC = ["+", "-", "*", "/", "//", "%"]
COMPARISONS = ["<", "<=", ">", ">=", "==", "!="]

_numbers = st.one_of(
    st.integers(0, 2**63), st.integers(0, 20),
    st.floats(0, 1e300, allow_nan=False, allow_infinity=False), st.sampled_from([0.5, 0.9, 1e-05, 1e16, 2.675]),
)  # fmt: skip
_numeric_leaves = st.one_of(_numbers.map(lambda v: ("num", v)), st.sampled_from(NUMERIC_NAMES).map(lambda n: ("name", n)))
_exponents = st.one_of(st.integers(0, 70).map(lambda v: ("num", v)), st.integers(1, 3).map(lambda v: ("neg", ("num", v))),
                       st.sampled_from([("name", "i"), ("name", "j"), ("name", "k"), ("name", "x")]))  # fmt: skip


def _trees(depth: int) -> tuple[st.SearchStrategy[Expr], st.SearchStrategy[Expr]]:
    """(numeric trees, boolean trees) at most ``depth`` deep."""
    if depth == 0:
        return _numeric_leaves, st.one_of(st.booleans().map(lambda v: ("bool", v)),
                                          st.sampled_from([("name", "t"), ("name", "f")]))  # fmt: skip
    num, boolean = _trees(depth - 1)
    calls = st.one_of(
        st.tuples(st.sampled_from(["min", "max"]), st.lists(num, min_size=2, max_size=3)).map(lambda c: ("call", c[0], *c[1])),
        st.tuples(st.sampled_from(["round", "int", "ceil", "floor", "abs", "sqrt"]), num).map(lambda c: ("call", *c)),
        st.tuples(num, st.integers(-3, 3)).map(lambda c: ("call", "round", c[0], ("num", c[1]) if c[1] >= 0 else ("neg", ("num", -c[1])))),
    )  # fmt: skip
    numeric = st.one_of(
        num, calls, num.map(lambda t: ("neg", t)),
        st.tuples(st.sampled_from(ARITHMETIC), num, num),
        st.tuples(st.just("**"), num, _exponents),
        st.tuples(st.just("if"), num, boolean, num),
    )  # fmt: skip
    booleans = st.one_of(
        boolean, boolean.map(lambda t: ("not", t)),
        st.tuples(st.sampled_from(["and", "or"]), boolean, boolean),
        st.tuples(st.sampled_from(COMPARISONS), num, num),
    )  # fmt: skip
    return numeric, booleans


NUMERIC_TREES, BOOLEAN_TREES = _trees(3)


def _python(text: str) -> Any:
    namespace = {"__builtins__": {}, "math": math, **{f: getattr(builtins, f) for f in ("min", "max", "round", "int", "abs")}}
    return eval(text, namespace, dict(ENV))  # the test's oracle, on the text of a generated tree


@settings(max_examples=property_budget(300))
@given(st.one_of(NUMERIC_TREES, BOOLEAN_TREES))
def test_random_trees_render_parse_and_evaluate_as_python_does(tree: Expr) -> None:
    text = render(tree)
    assert parse(text) == tree
    python = source(tree)
    try:
        expected: Any = _python(python)
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        with pytest.raises(ExprError):
            evaluate(tree, ENV)
        assert exc is not None
        return
    try:
        got = evaluate(tree, ENV)
    except ExprError as exc:
        # Python computes past fxgen's bounds (big integers, infinities, complex numbers)
        assert any(word in str(exc) for word in ("too large", "finite", "exponent", "real number", "digits")), exc
        return
    assert type(got) is type(expected) and repr(got) == repr(expected), (python, got, expected)


@settings(max_examples=property_budget(150))
@given(st.one_of(NUMERIC_TREES, BOOLEAN_TREES))
def test_generated_source_is_what_black_writes(tree: Expr) -> None:
    line = f"value = {source(tree)}\n"
    assert black.format_str(line, mode=black.Mode(line_length=10**6)) == line


def test_every_function_is_in_the_message() -> None:
    # any identifier parses as a call (a spec's own function); calling one the spec does not declare is refused
    with pytest.raises(ExprError) as info:
        evaluate(parse("nope(1)"), {})
    assert all(name in str(info.value) for name in FUNCTIONS)


def test_sqrt_is_pythons_math_sqrt_as_gpt2_scales_its_projections() -> None:
    # nanoGPT: torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
    for n_layer in (1, 2, 6, 12, 24, 36, 48):
        assert evaluate(parse("0.02 / sqrt(2 * n_layer)"), {"n_layer": n_layer}) == 0.02 / math.sqrt(2 * n_layer)
    assert source(parse("0.02 / sqrt(2 * n_layer)")) == "0.02 / math.sqrt(2 * n_layer)"
    assert "sqrt" in functions(parse("sqrt(x)"))
    with pytest.raises(ExprError, match="negative"):
        evaluate(parse("sqrt(0 - x)"), {"x": 2})
