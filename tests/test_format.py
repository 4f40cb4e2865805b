"""The format stage's fast path (fxgen._split) and batched black calls, with black as the oracle.

``_split.split`` re-implements black's splitting for the statement shapes fxgen writes; every
statement it claims must come out exactly as black writes it. The strategies below draw those
shapes (calls, attribute chains, subscripts and slices, keyword arguments, unary minus, numbers,
strings with quotes, escapes and wide characters, lists, tuples, dicts, nesting) with lengths
around the 88-column limit, at the three depths the generated file uses.
"""

from __future__ import annotations

import keyword
import sys
from pathlib import Path
from typing import Any

import black
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fxgen import _format, _render, _split, _statement

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

MANY = max(400, settings.default.max_examples)
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


def black_lines(statement: str, depth: int) -> tuple[str, ...]:
    """The reference: black on the statement in a scaffold of ``depth`` indentation levels."""
    scaffold = ["", "class _:\n    ", "class _:\n    def _(self):\n        "][depth]
    formatted = black.format_str(scaffold + statement + "\n", mode=_format.MODE).splitlines()
    return tuple(line.removeprefix("    " * depth) for line in formatted[depth:])


# -- strategies -------------------------------------------------------------------------------
def _identifier(min_size: int = 1, max_size: int = 14) -> st.SearchStrategy[str]:
    return st.from_regex(rf"[a-z_][a-z0-9_]{{{min_size - 1},{max_size - 1}}}", fullmatch=True).filter(
        lambda n: not keyword.iskeyword(n) and not keyword.issoftkeyword(n)
    )


names = st.one_of(_identifier(), _identifier(15, 40))
dotted = st.lists(names, min_size=1, max_size=4).map(".".join)
numbers = st.one_of(
    st.integers(-(10**12), 10**12).map(_render.number),
    st.floats(allow_nan=False, allow_infinity=False).map(_render.number),
)
strings = st.text(
    st.one_of(st.characters(codec="utf-8", exclude_categories=("Cs",)), st.sampled_from("'\"\\\n\t")),
    max_size=30,
).map(_render.string)
leaves = st.one_of(
    names, dotted, numbers, strings, st.sampled_from(["None", "True", "False", "torch.float32", "()", "[]", "{}"])
)


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    args = st.lists(inner, max_size=6)
    kwargs = st.lists(st.tuples(names, inner).map("=".join), max_size=4)
    bound = st.one_of(st.just(""), st.integers(-5, 99).map(str), names)
    simple_slice = st.tuples(bound, bound).map(":".join)
    return st.one_of(
        st.tuples(dotted, args, kwargs).map(lambda t: f"{t[0]}({', '.join(t[1] + t[2])})"),
        args.map(lambda a: "[" + ", ".join(a) + "]"),
        st.lists(inner, min_size=2, max_size=5).map(lambda a: "(" + ", ".join(a) + ")"),
        inner.map(lambda a: f"({a},)"),
        st.lists(st.tuples(strings, inner), max_size=4).map(lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
        st.tuples(dotted, st.lists(st.one_of(inner, simple_slice), min_size=1, max_size=3)).map(
            lambda t: f"{t[0]}[{', '.join(t[1])}]"
        ),
        st.tuples(dotted, args, names).map(lambda t: f"{t[0]}({', '.join(t[1])}).{t[2]}"),
        st.tuples(dotted, args, names, args).map(lambda t: f"{t[0]}({', '.join(t[1])}).{t[2]}({', '.join(t[3])})"),
        inner.filter(lambda e: not e.startswith("-")).map(lambda e: "-" + e),
    )


expressions = st.recursive(leaves, _compound, max_leaves=25)
calls = st.tuples(dotted, st.lists(expressions, max_size=8), st.lists(st.tuples(names, expressions), max_size=5)).map(
    lambda t: f"{t[0]}({', '.join(t[1] + [f'{k}={v}' for k, v in t[2]])})"
)
targets = st.one_of(
    names,
    dotted.map(lambda d: "self." + d),
    st.tuples(names, st.integers(0, 20), names).map(lambda t: f"self.{t[0]}[{t[1]}].{t[2]}"),
    st.tuples(st.integers(0, 20), st.sampled_from(["[0]", '["10"]', ""]), names).map(
        lambda t: f'getattr(self, "{t[0]}"){t[1]}.{t[2]}'
    ),
)
statements = st.one_of(
    st.tuples(targets, st.one_of(calls, expressions)).map(" = ".join),
    st.one_of(calls, expressions).map("return ".__add__),
    calls,
)


small_expressions = st.recursive(leaves, _compound, max_leaves=8)


# -- the fast path against black ----------------------------------------------------------------
@settings(max_examples=MANY)
@given(statements, st.sampled_from([0, 1, 2]))
def test_split_equals_black(statement: str, depth: int) -> None:
    expected = black_lines(statement, depth)
    got = _split.split(statement, depth)
    if got is not None:
        assert got == expected, statement
    if len(expected) > 1 or not _format.fits(statement, depth):
        # every shape drawn here is one fxgen writes: the fast path must claim it
        assert got is not None, statement


@settings(max_examples=MANY)
@given(
    st.one_of(calls, small_expressions),
    st.sampled_from(["{pad} = {expr}", "self.{pad} = {expr}", "return {pad}.f({expr})", "{pad}.f({expr})"]),
    st.integers(70, 110),
    st.sampled_from([0, 1, 2]),
)
def test_split_near_the_limit(expression: str, form: str, width: int, depth: int) -> None:
    """Statements padded to a width around 88 columns, where black's choices flip."""
    pad = width - 4 * depth - len(form.format(pad="", expr=expression))
    statement = form.format(pad="v" * max(pad, 1), expr=expression)
    got = _split.split(statement, depth)
    assert got is not None, statement
    assert got == black_lines(statement, depth), statement


@settings(max_examples=MANY // 2)
@given(statements, st.sampled_from([0, 1, 2]))
def test_same_skeleton_same_split(statement: str, depth: int) -> None:
    """A plan computed for one statement is reused for statements whose names and numbers differ
    but have the same lengths: the reuse must give black's output too."""
    if _split.split(statement, depth) is None:
        return
    tokens = _statement._Parser(statement).tokens
    renamed = "".join(space + _same_length(kind, value) for kind, value, space in tokens)
    plans = len(_split._plans)
    assert _split.split(renamed, depth) == black_lines(renamed, depth), renamed
    assert len(_split._plans) == plans or plans > 16384  # no new plan: the first one was reused


def _same_length(kind: str, value: str) -> str:
    if kind == "NAME" and not keyword.iskeyword(value):
        return "q" * len(value)
    if kind == "NUMBER":
        return value.translate(str.maketrans("0123456789", "7777777777"))
    return value


@pytest.mark.parametrize(
    "statement",
    [
        "x = a + b",  # an operator: optional parentheses rules not reproduced
        "x = [a, b,]",  # a magic trailing comma
        "f(a)  # comment",
        "x = ...",
        "def f(x):\n    pass",
        'x = "a" "b"',
        "x = lambda y: y",
        'x = "abc".format(y)',
        "x = (a)",
        "x",
        '"docstring"',
        "x = a if b else c",
    ],
)
def test_unsupported_shapes_fall_back(statement: str) -> None:
    assert _split.split(statement, 2) is None


def test_lines_fxgen_writes_take_the_fast_path() -> None:
    """The long statements of the benchmark workloads and examples are all claimed."""

    import fxgen

    seen: list[tuple[str, int]] = []
    original = _format.block

    def spy(statements: list[str], depth: int) -> list[str]:
        seen.extend((s, depth) for s in statements if not _format.fits(s, depth))
        return original(statements, depth)

    _format.block = spy  # type: ignore[assignment]
    try:
        for shape in ("fan", "residual", "chain"):
            fxgen.generate(fxgen.load_spec(_write(shape)))
        for path in sorted((ROOT / "model_specs").glob("*.yaml")):
            fxgen.generate(path)
    finally:
        _format.block = original  # type: ignore[assignment]
    assert seen
    claimed = [(s, d) for s, d in seen if _split.split(s, d) is not None]
    assert len(claimed) == len(seen), [s for s, d in seen if _split.split(s, d) is None]
    for statement, depth in claimed:
        assert _split.split(statement, depth) == black_lines(statement, depth)


def _write(shape: str) -> Path:
    import tempfile

    from workloads import make_spec  # type: ignore[import-not-found]

    path = Path(tempfile.mkdtemp()) / f"{shape}.yaml"
    path.write_text(make_spec(shape, 120))
    return path


# -- batched black calls --------------------------------------------------------------------
small_statements = st.one_of(
    st.tuples(targets, small_expressions).map(" = ".join), small_expressions.map("return ".__add__)
)


@settings(max_examples=max(30, settings.default.max_examples // 2), suppress_health_check=list(HealthCheck))
@given(st.lists(small_statements, min_size=1, max_size=10), st.sampled_from([0, 1, 2]))
def test_batched_black_equals_one_call_per_statement(drawn: list[str], depth: int) -> None:
    batch = [*drawn, "x = a + b  # " + "c" * 90, "y = f(a)  # comment"]
    expected = [black_lines(s, depth) for s in batch]
    assert _format._black_batch(batch, depth) == expected  # one black call, cut correctly
    assert _format.black_statements(batch, depth) == expected
    # statements that depend on their place (several lines, a string, an import that black
    # follows with a blank line) are still formatted as on their own
    awkward = [*drawn, "f(\n    x,\n)", "y = [\n    1,\n]", '"a string  "', "import os", *drawn]
    assert _format.black_statements(awkward, depth) == [black_lines(s, depth) for s in awkward]


def test_block_matches_black_for_mixed_statements() -> None:
    statements: list[Any] = [
        "y = torch.cat([branch_0, branch_1, branch_2, branch_3, branch_4, branch_5, branch_6], dim=1)",
        "z = a_very_long_name_number_one + a_very_long_name_number_two + a_very_long_name_three",
        "short = x",
        "w = f(x)  # " + "comment " * 12,
    ]
    for depth in (0, 1, 2):
        expected = [
            ("    " * depth + line) if line else line for s in statements for line in black_lines(s, depth)
        ]
        assert _format.block(statements, depth) == expected
