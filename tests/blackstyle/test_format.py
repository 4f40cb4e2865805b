"""The format stage's fast path (fxgen.blackstyle.linegen) and batched black calls, with black as the oracle.

``split.split`` re-implements black's splitting for the statement shapes fxgen writes; every
statement it claims must come out exactly as black writes it. The strategies below draw those
shapes (calls, attribute chains, subscripts and slices, keyword arguments, unary operators,
numbers, strings with quotes, escapes and wide characters, ``...``, lists, tuples, dicts,
nesting, binary operators and ``**``) with lengths around the 88-column limit, at the three
depths the generated file uses, and ``def`` signatures for ``funcdef.split_def``.
"""

from __future__ import annotations

import io
import keyword
import sys
import tokenize
from pathlib import Path
from typing import Any

import black
import pytest
from helpers import property_budget
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies import words

from fxgen.blackstyle import formatter, funcdef, split
from fxgen.blackstyle import statement as statement_parser
from fxgen.codegen import render

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

MANY = property_budget(400)
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


def black_lines(statement: str, depth: int) -> tuple[str, ...]:
    """The reference: black on the statement in a scaffold of ``depth`` indentation levels."""
    scaffold = ["", "class _:\n    ", "class _:\n    def _(self):\n        "][depth]
    formatted = black.format_str(scaffold + statement + "\n", mode=formatter.MODE).splitlines()
    return tuple(line.removeprefix("    " * depth) for line in formatted[depth:])


# -- strategies -------------------------------------------------------------------------------
def _identifier(min_size: int = 1, max_size: int = 14) -> st.SearchStrategy[str]:
    first, rest = "abcdefghijklmnopqrstuvwxyz_", "abcdefghijklmnopqrstuvwxyz0123456789_"
    return words(first, rest, max_size - 1, min_size - 1).filter(
        lambda n: not keyword.iskeyword(n) and not keyword.issoftkeyword(n)
    )


names = st.one_of(_identifier(), _identifier(15, 40))
dotted = st.lists(names, min_size=1, max_size=4).map(".".join)
numbers = st.one_of(
    st.integers(-(10**12), 10**12).map(render.number),
    st.floats(allow_nan=False, allow_infinity=False).map(render.number),
)
strings = st.text(
    st.one_of(st.characters(codec="utf-8", exclude_categories=("Cs",)), st.sampled_from("'\"\\\n\t")),
    max_size=30,
).map(render.string)
leaves = st.one_of(
    names, dotted, numbers, strings, st.sampled_from(["None", "True", "False", "torch.float32", "()", "[]", "{}", "..."])
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
    expressions.filter(lambda e: not e.startswith('"')),  # a bare expression (a node without a name)
)


small_expressions = st.recursive(leaves, _compound, max_leaves=8)

# -- binary operators, as fxgen.codegen.render writes them (``x = a + b``, ``a**b``, ``(-1) ** x``) and
# nested in calls, lists and chains
BINARY_OPS = ["+", "-", "*", "/", "//", "%", "@", "<<", ">>", "&", "|", "^", "==", "!=", "<", ">", "<=", ">="]
_parenthesized = st.sampled_from(["(-1)", "(1)", "(-2.5)", "(...)", "(-x)"])
_bases = st.one_of(names, dotted, numbers, small_expressions).filter(lambda e: not e.startswith(("-", "~")))
_exponents = st.one_of(names, dotted, numbers, names.map("-".__add__), small_expressions)


def _power(t: tuple[str, str, bool]) -> str:
    return f"{t[0]}**{t[1]}" if t[2] else f"{t[0]} ** {t[1]}"


operands = st.one_of(
    small_expressions,
    st.tuples(st.sampled_from(["-", "~", "+"]), st.one_of(names, dotted, _parenthesized)).map("".join),
    st.tuples(_parenthesized, st.sampled_from([".real", "[0]", ".f(x)"])).map("".join),
    st.tuples(st.one_of(_bases, _parenthesized), _exponents, st.booleans()).map(_power),
)
binary_expressions = st.tuples(operands, st.lists(st.tuples(st.sampled_from(BINARY_OPS), operands), min_size=1, max_size=4)).map(
    lambda t: " ".join([t[0], *(f"{op} {operand}" for op, operand in t[1])])
)
operator_expressions = st.one_of(
    binary_expressions,
    st.tuples(operands, st.sampled_from(BINARY_OPS), operands).map(" ".join),
    st.tuples(dotted, st.lists(st.one_of(binary_expressions, operands), min_size=1, max_size=4)).map(
        lambda t: f"{t[0]}({', '.join(t[1])})"
    ),
    st.tuples(dotted, names, binary_expressions).map(lambda t: f"{t[0]}({t[1]}={t[2]})"),
    st.lists(st.one_of(binary_expressions, operands), min_size=1, max_size=4).map(lambda a: "[" + ", ".join(a) + "]"),
    st.tuples(binary_expressions, st.sampled_from(BINARY_OPS), dotted, st.lists(operands, max_size=4)).map(
        lambda t: f"{t[0]} {t[1]} {t[2]}({', '.join(t[3])})"
    ),
)
operator_statements = st.one_of(
    st.tuples(targets, operator_expressions).map(" = ".join),
    operator_expressions.map("return ".__add__),
    operator_expressions.filter(lambda e: not e.startswith('"')),  # black: parentheses if is_arith_like
)

# -- format 2's __init__ lines: a repeat's ``*[Block(a) for _ in range(n)]`` among a call's
# arguments, a module list built by a comprehension, argument expressions with parenthesised
# operands (``(image_size // patch) * (image_size // patch) + 1``)
_loop_targets = st.one_of(names, st.just("_"), st.lists(names, min_size=2, max_size=5, unique=True).map(", ".join))
_comprehensions = st.tuples(  # a ``for`` over module declarations: ``for t, c, n, s in rows for i in range(n)``
    st.one_of(calls, small_expressions, binary_expressions),
    st.lists(st.tuples(_loop_targets, st.one_of(calls, names, binary_expressions)), min_size=1, max_size=2),
).map(lambda t: f"[{t[0]} " + " ".join(f"for {target} in {values}" for target, values in t[1]) + "]")  # fmt: skip
_starred = st.one_of(_comprehensions, names, dotted, calls).map("*".__add__)
_grouped = st.tuples(operands, st.sampled_from(BINARY_OPS), operands).map(lambda t: f"({' '.join(t)})")
_grouped_arithmetic = st.one_of(
    st.tuples(_grouped, st.sampled_from(BINARY_OPS), st.one_of(operands, _grouped)).map(" ".join),
    st.tuples(operands, st.sampled_from(BINARY_OPS), _grouped).map(" ".join),
    st.tuples(_grouped, st.sampled_from(BINARY_OPS), operands, st.sampled_from(BINARY_OPS), operands).map(" ".join),
)
format2_expressions = st.one_of(
    st.tuples(dotted, st.lists(st.one_of(expressions, _starred, _grouped_arithmetic), min_size=1, max_size=5)).map(
        lambda t: f"{t[0]}({', '.join(t[1])})"
    ),
    st.tuples(dotted, _comprehensions).map(lambda t: f"{t[0]}({t[1]})"),
    _comprehensions,
    _grouped_arithmetic,
)
format2_statements = st.one_of(
    st.tuples(targets, format2_expressions).map(" = ".join),
    format2_expressions.map("return ".__add__),
)

# -- conditional expressions, as the generated forward writes a value that depends on the mode or
# an argument (``dropout_p=self.dropout if self.training else 0.0``): alone, as a call's only
# argument or one of several, a keyword's value, inside a list, a tuple or a comprehension, nested
_conditions = st.one_of(operands, binary_expressions)
conditional_expressions = st.deferred(
    lambda: st.tuples(_conditions, _conditions, st.one_of(_conditions, conditional_expressions)).map(
        lambda t: f"{t[0]} if {t[1]} else {t[2]}"
    )
)
_holding_conditionals = st.one_of(
    conditional_expressions,
    st.tuples(dotted, conditional_expressions).map(lambda t: f"{t[0]}({t[1]})"),
    st.tuples(dotted, st.lists(st.one_of(conditional_expressions, operands), min_size=2, max_size=5)).map(
        lambda t: f"{t[0]}({', '.join(t[1])})"
    ),
    st.tuples(dotted, operands, names, conditional_expressions).map(lambda t: f"{t[0]}({t[1]}, {t[2]}={t[3]})"),
    st.lists(st.one_of(conditional_expressions, operands), min_size=1, max_size=3).map(lambda a: "[" + ", ".join(a) + "]"),
    st.tuples(conditional_expressions, operands).map(lambda t: f"({t[0]}, {t[1]})"),
    st.tuples(conditional_expressions, names).map(lambda t: f"[{t[0]} for _ in {t[1]}]"),
)
conditional_statements = st.one_of(
    st.tuples(targets, _holding_conditionals).map(" = ".join),
    _holding_conditionals.map("return ".__add__),
)

# -- def signatures, as fxgen.codegen.render.signature writes them
ANNOTATIONS = [
    "torch.Tensor", "int", "float", "bool", "str", "None", "typing.Optional[torch.Tensor]", "list[int]",
    "tuple[torch.Tensor, torch.Tensor]", "tuple[int, ...]", "typing.Callable[[int, int], torch.Tensor]",
    "typing.Callable[..., int]", "dict[str, torch.Tensor]", "typing.Union[int, float, None]", "torch.dtype",
    "typing.Optional[tuple[torch.Tensor, ...]]", "list[typing.Optional[torch.Tensor]]",
    # as the generated code writes them now (fxgen.codegen.render.modern_type)
    "torch.Tensor | None", "int | float | None", "tuple[torch.Tensor, ...] | None", "list[torch.Tensor | None]",
]  # fmt: skip
annotations = st.one_of(
    st.sampled_from(ANNOTATIONS),
    st.lists(st.sampled_from(ANNOTATIONS), min_size=1, max_size=9).map(lambda a: "tuple[" + ", ".join(a) + "]"),
    st.lists(st.sampled_from(ANNOTATIONS), min_size=1, max_size=4).map(lambda a: "typing.Union[" + ", ".join(a) + "]"),
    st.lists(st.sampled_from(ANNOTATIONS), min_size=2, max_size=4).map(" | ".join),
)
defaults = st.one_of(
    numbers, strings, small_expressions, st.sampled_from(["None", "True", 'float("inf")', "(8,)", "torch.float32"])
)


def _parameter(t: tuple[str, str | None, str | None]) -> str:
    name, annotation, default = t
    text = name if annotation is None else f"{name}: {annotation}"
    if default is not None:
        text += (" = " if annotation is not None else "=") + default
    return text


parameters = st.tuples(names, st.one_of(st.none(), annotations), st.one_of(st.none(), defaults)).map(_parameter)
signatures = st.tuples(
    st.one_of(st.just("forward"), names), st.lists(parameters, max_size=10), st.one_of(st.none(), annotations)
).map(lambda t: f"def {t[0]}(self{''.join(', ' + p for p in t[1])}){'' if t[2] is None else ' -> ' + t[2]}:")


def black_def_lines(signature: str, depth: int) -> tuple[str, ...]:
    """The reference for a signature: black on it with a ``pass`` body, in a scaffold."""
    scaffold = ["", "class _:\n    ", "class _:\n    def _(self):\n        "][depth]
    source = scaffold + signature + "\n" + "    " * (depth + 1) + "pass\n"
    formatted = black.format_str(source, mode=formatter.MODE).splitlines()
    return tuple(line.removeprefix("    " * depth) for line in formatted[depth:-1])


# -- the fast path against black ----------------------------------------------------------------
@settings(max_examples=MANY)
@given(statements, st.sampled_from([0, 1, 2]))
def test_split_equals_black(statement: str, depth: int) -> None:
    expected = black_lines(statement, depth)
    got = split.split(statement, depth)
    if got is not None:
        assert got == expected, statement
    if len(expected) > 1 or not formatter.fits(statement, depth):
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
    assert_claimed_as_black(padded(form, expression, width, depth), depth)


@settings(max_examples=MANY)
@given(operator_statements, st.sampled_from([0, 1, 2]))
def test_operators_split_equals_black(statement: str, depth: int) -> None:
    """Binary operators: delimiter priorities, optional parentheses, ``**`` hugging."""
    assert_claimed_as_black(statement, depth)


@settings(max_examples=MANY)
@given(
    st.one_of(binary_expressions, operands),
    st.sampled_from(["{pad} = {expr}", "self.{pad} = {expr}", "return {pad} * {expr}", "{pad} = f({expr}) + {pad}"]),
    st.integers(70, 110),
    st.sampled_from([0, 1, 2]),
)
def test_operators_near_the_limit(expression: str, form: str, width: int, depth: int) -> None:
    assert_claimed_as_black(padded(form, expression, width, depth), depth)


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("width", range(98, 112, 2))
@pytest.mark.parametrize("form", ["{pad}[b, c] = {expr}", "x = f({pad})[0].g(h) * {expr}", "return {pad}(b)[c] - {expr}"])
@pytest.mark.parametrize("expression", ["-(a(a, 0).f,)", "(a(a, 0).f,)"])
def test_one_tuple_holding_a_call(expression: str, form: str, width: int, depth: int) -> None:
    """A split's body line re-marks bracket depths on the shared leaves, so black's later
    ``is_one_sequence_between`` sees the call's comma (an arglist's: counted twice) at the
    one-tuple's depth and stops omitting trailers there."""
    assert_claimed_as_black(padded(form, expression, width, depth), depth)


def padded(form: str, expression: str, width: int, depth: int) -> str:
    """``form`` with ``expression``, its name padded so the statement is ``width`` columns wide."""
    pad = width - 4 * depth - len(form.format(pad="", expr=expression))
    return form.format(pad="v" * max(pad, 1), expr=expression)


def assert_claimed_as_black(statement: str, depth: int) -> None:
    """The fast path claims ``statement`` and splits it exactly as black does."""
    got = split.split(statement, depth)
    assert got is not None, statement
    assert got == black_lines(statement, depth), statement


@settings(max_examples=MANY)
@given(format2_statements, st.sampled_from([0, 1, 2]))
@example(statement="self.layer2 = nn.Sequential(DownBlock(width, width * 2), *[BasicBlock(width * 2) for _ in range(blocks2 - 1)])", depth=2)
@example(statement="self.pos_embedding = nn.Parameter(torch.empty(1, image_size // patch_size * (image_size // patch_size) + 1, dim))", depth=2)
@example(statement="return a00000000000000([(-1)[0] / _jmcn**k1os541cut8kkr for _ in mnone()])", depth=2)  # ** hugs before a for
def test_comprehensions_starred_and_grouped_operands_equal_black(statement: str, depth: int) -> None:
    assert_claimed_as_black(statement, depth)


@settings(max_examples=MANY)
@given(
    format2_expressions,
    st.sampled_from(["self.{pad} = {expr}", "self.{pad} = nn.Sequential({expr})", "return f({expr}, {pad})"]),
    st.integers(70, 110),
    st.sampled_from([0, 1, 2]),
)
def test_comprehensions_near_the_limit(expression: str, form: str, width: int, depth: int) -> None:
    assert_claimed_as_black(padded(form, expression, width, depth), depth)


@settings(max_examples=MANY)
@given(conditional_statements, st.sampled_from([0, 1, 2]))
@example(statement="att = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0.0, is_causal=True)", depth=2)
@example(statement="vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv = (self.training if x_long_name_qqqqqqqqqqqqqqqqqqqq else yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy, b)", depth=0)  # a tuple's first item: wrapped
def test_conditional_expressions_equal_black(statement: str, depth: int) -> None:
    assert_claimed_as_black(statement, depth)


@settings(max_examples=MANY)
@given(signatures, st.sampled_from([0, 1, 2]))
@example(  # the comma added after a lone self is in a typedargslist in black's second pass
    signature="def forward(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, typing.Optional[torch.Tensor]]:",
    depth=0,
)
def test_def_split_equals_black(signature: str, depth: int) -> None:
    """Long signatures: black's left-hand split, one parameter per line with a trailing comma,
    a lone ``self,``, long return annotations (and black's second pass over them)."""
    got = funcdef.split_def(signature, depth)
    if got is None:
        # black makes the invisible parentheses around a parameter's annotation visible to
        # split ``A | B`` (visit_tname); the port leaves those signatures to black
        assert has_union_parameter(signature), signature
        return
    assert got == black_def_lines(signature, depth), signature


def has_union_parameter(signature: str) -> bool:
    """Whether a parameter of ``signature`` has a ``|`` outside the brackets of its annotation."""
    depth, annotated = 0, False
    for token in tokenize.generate_tokens(io.StringIO(signature + " pass\n").readline):
        char = token.string if token.type == tokenize.OP else ""
        depth += char in ("(", "[", "{")
        depth -= char in (")", "]", "}")
        if depth == 1 and char == ",":
            annotated = False
        elif depth == 1 and char == ":":
            annotated = True
        elif depth == 1 and char == "|" and annotated:
            return True
    return False


@settings(max_examples=MANY)
@given(st.lists(parameters, max_size=4), st.one_of(st.none(), annotations), st.integers(75, 105))
@example(  # a one-tuple holding a call: black's body line re-marks the leaves' depths (regression)
    params=["_00000000000000000000000000000000: typing.Optional[tuple[torch.Tensor, ...]] = -(a(a, 0).f,)"],
    returns=None,
    width=75,
)
def test_def_near_the_limit(params: list[str], returns: str | None, width: int) -> None:
    """Methods (depth 1, as ``forward``) whose signature is padded to around 88 columns, through
    the path fxgen.codegen.generate takes (``format_def``)."""
    arrow = "" if returns is None else " -> " + returns
    bare = f"def forward(self, @: torch.Tensor{''.join(', ' + p for p in params)}){arrow}:"
    signature = bare.replace("@", "v" * max(width - 4 - len(bare) + 1, 1), 1)
    got = funcdef.split_def(signature, 1)
    if got is None:  # union parameter annotations are left to black (test_def_split_equals_black)
        assert has_union_parameter(signature), signature
        return
    assert got == black_def_lines(signature, 1), signature
    assert formatter.format_def(signature, 1) == black_def_lines(signature, 1)


SIMPLE_DEFAULTS = ["None", "1", "-1", "0.5", '"mean"', '"a, b: (c)"', "(2, 3)", "[1, 2]", "torch.float32", 'float("inf")']
simple_parameters = st.tuples(
    names, st.one_of(st.none(), st.sampled_from(ANNOTATIONS)), st.one_of(st.none(), st.sampled_from(SIMPLE_DEFAULTS))
).map(_parameter)


@settings(max_examples=MANY)
@given(st.lists(simple_parameters, max_size=10), st.one_of(st.none(), annotations), st.sampled_from([0, 1, 2]))
def test_def_fast_path(params: list[str], returns: str | None, depth: int) -> None:
    """A long signature whose parameters each fit on a line of their own and whose tail
    ``) -> annotation:`` fits is decided from string lengths alone: it must be claimed (so the
    test cannot pass by falling through), equal black, and equal the port where it claims it."""
    arrow = "" if returns is None else " -> " + returns
    signature = f"def forward({', '.join(['self', *params])}){arrow}:"
    if formatter.fits(signature, depth):
        return
    got = funcdef.fast_split_def(signature, depth)
    simple = formatter.fits(f"){arrow}:", depth) and all(formatter.fits(p + ",", depth + 1) for p in ["self", *params])
    assert (got is not None) == simple, signature
    if got is not None:
        assert got == black_def_lines(signature, depth), signature
        port = funcdef.port_split_def(signature, depth)
        assert port is None or port == got, signature


@pytest.mark.parametrize(
    "signature",
    [
        "def forward(self, x: torch.Tensor, *args: int, mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm: int = 1):",
        "def forward(self, x: torch.Tensor, y: tuple[int,] = 1, mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm: int = 1):",
        "def forward(self, x: torch.Tensor, y: tuple = (8,), mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm: int = 1):",
        "def forward(self, x: torch.Tensor, y: str = 'single', mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm: int = 1):",
        'def forward(self, x: torch.Tensor, y: str = "a\\nb", mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm: int = 1):',
        "def forward(self, x: torch.Tensor,y: int = 1, mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm: int = 1):",
    ],
)
def test_def_fast_path_leaves_other_shapes_to_the_port(signature: str) -> None:
    assert not formatter.fits(signature, 1)
    assert funcdef.fast_split_def(signature, 1) is None


@settings(max_examples=MANY // 2)
@given(statements, st.sampled_from([0, 1, 2]))
def test_same_skeleton_same_split(statement: str, depth: int) -> None:
    """A plan computed for one statement is reused for statements whose names and numbers differ
    but have the same lengths: the reuse must give black's output too."""
    if split.port_split(statement, depth) is None:
        return
    tokens = statement_parser._Parser(statement).tokens
    renamed = "".join(space + _same_length(kind, value) for kind, value, space in tokens)
    plans = len(split._plans)
    assert split.port_split(renamed, depth) == black_lines(renamed, depth), renamed
    assert len(split._plans) == plans or plans > 16384  # no new plan: the first one was reused


def _same_length(kind: str, value: str) -> str:
    if kind == "NAME" and not keyword.iskeyword(value):
        return "q" * len(value)
    if kind == "NUMBER":
        return value.translate(str.maketrans("0123456789", "7777777777"))
    return value


@pytest.mark.parametrize(
    "statement",
    [
        "x = [a, b,]",  # a magic trailing comma
        "f(a)  # comment",
        "x = -a ** b",  # black adds parentheses: -(a**b)
        "x = y[a + 1 :]",  # an operator in a subscript: black's complex-subscript spacing
        "x = (a + b)",  # parentheses black drops
        "x = [a for b in c if d]",  # a comprehension with a condition
        "x = [a for (b, c) in d]",  # a parenthesized loop target
        "x = {a: b for a in c}",
        '"a" + b',  # a bare string first: a docstring where it stands
        "x = a+b",  # spacing black would change
        "def f(x):\n    pass",
        'x = "a" "b"',
        "x = lambda y: y",
        'x = "abc".format(y)',
        "x = (a)",
        '"docstring"',
        "x = a if b and c else d",  # a logical operator
        "x = y[a if b else c]",  # a conditional expression in a subscript
        "x = [a for b in c if d else e]",
    ],
)
def test_unsupported_shapes_fall_back(statement: str) -> None:
    assert split.split(statement, 2) is None


EXAMPLES = sorted((ROOT / "model_specs").glob("*.yaml"))


def test_lines_fxgen_writes_take_the_fast_path() -> None:
    """The long statements of the benchmark workloads and examples are all claimed."""

    import fxgen

    seen: list[tuple[str, int]] = []
    original = formatter.block

    def spy(statements: list[str], depth: int) -> list[str]:
        seen.extend((s, depth) for s in statements if not formatter.fits(s, depth))
        return original(statements, depth)

    formatter.block = spy  # type: ignore[assignment]
    try:
        for shape in ("fan", "residual", "chain"):
            fxgen.generate(fxgen.load_spec(_write(shape)))
        for path in EXAMPLES:
            fxgen.generate(path)
    finally:
        formatter.block = original  # type: ignore[assignment]
    assert seen
    claimed = [(s, d) for s, d in seen if split.split(s, d) is not None]
    assert len(claimed) == len(seen), [s for s, d in seen if split.split(s, d) is None]
    for statement, depth in claimed:
        assert split.split(statement, depth) == black_lines(statement, depth)


@pytest.mark.parametrize(
    "signature",
    [
        "def f(*args):",
        "def f(a, /, b):",
        "def f(a,):",
        "def f(a: 'int'):",
        # a union that does not fit on its parameter's own line (black parenthesises it)
        "def f(a: torch.Tensor | torch.Tensor | torch.Tensor | torch.Tensor | torch.Tensor | torch.Tensor | None):",
        "def f[T](a: T):",
        "async def f(a):",
        "def f(a) -> (int):",
        "def f(a):  # comment",
    ],
)
def test_unsupported_signatures_fall_back(signature: str) -> None:
    assert funcdef.split_def(signature, 1) is None


def test_generating_the_examples_calls_black_zero_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every long statement and signature of model_specs/ (and the benchmark workloads) is
    split by fxgen itself: black is never called while generating them."""
    import fxgen

    calls: list[str] = []
    original = black.format_str

    def counting(source: str, *, mode: black.Mode) -> str:
        calls.append(source)
        return original(source, mode=mode)

    formatter.clear_caches()
    monkeypatch.setattr(black, "format_str", counting)
    for path in EXAMPLES:
        fxgen.generate(path)
    for shape in ("fan", "residual", "chain"):
        fxgen.generate(fxgen.load_spec(_write(shape)))
    assert calls == []


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


@settings(max_examples=property_budget(30), suppress_health_check=list(HealthCheck))
@given(st.lists(small_statements, min_size=1, max_size=10), st.sampled_from([0, 1, 2]))
def test_batched_black_equals_one_call_per_statement(drawn: list[str], depth: int) -> None:
    batch = [*drawn, "x = a + b  # " + "c" * 90, "y = f(a)  # comment"]
    expected = [black_lines(s, depth) for s in batch]
    assert formatter._black_batch(batch, depth) == expected  # one black call, cut correctly
    assert formatter.black_statements(batch, depth) == expected
    # statements that depend on their place (several lines, a string, an import that black
    # follows with a blank line) are still formatted as on their own
    awkward = [*drawn, "f(\n    x,\n)", "y = [\n    1,\n]", '"a string  "', "import os", *drawn]
    assert formatter.black_statements(awkward, depth) == [black_lines(s, depth) for s in awkward]


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
        assert formatter.block(statements, depth) == expected
