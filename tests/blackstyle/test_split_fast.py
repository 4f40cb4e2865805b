"""fxgen.blackstyle.fast: black's split of ``target = callee(arguments)`` from string lengths alone.

Black is the oracle, and the general port (``split.port_split``) must agree wherever it claims
the statement too. The strategy draws only the shape the module claims, with short leaves, so
every drawn statement that does not fit must be claimed: a test that let everything fall
through to the port would fail here rather than pass vacuously.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_format import MANY, _identifier, black_lines

from fxgen.blackstyle import fast as split_fast
from fxgen.blackstyle import formatter, split
from fxgen.codegen import render

names = _identifier(max_size=12)
dotted = st.lists(names, min_size=1, max_size=3).map(".".join)
numbers = st.one_of(
    st.integers(-(10**6), 10**6).map(render.number),
    st.floats(-1e6, 1e6, allow_nan=False).map(render.number),
    st.sampled_from(["1e-05", "0.010000000000000009", "-1e-08"]),
)
# strings black leaves as they are: double quotes, no escapes; wide characters count twice
plain_strings = st.text(st.sampled_from("ab c-_>()[]{},:=.'漢"), max_size=10).map(
    lambda t: f'"{t}"'
)
leaves = st.one_of(
    names,
    dotted,
    numbers,
    plain_strings,
    st.sampled_from(["None", "True", "torch.float32", "()", "[]"]),
)


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    args = st.lists(inner, max_size=5)
    kwargs = st.lists(st.tuples(names, inner).map("=".join), max_size=4)
    return st.one_of(
        st.tuples(dotted, args, kwargs).map(lambda t: f"{t[0]}({', '.join(t[1] + t[2])})"),
        args.map(lambda a: "[" + ", ".join(a) + "]"),
        st.lists(inner, min_size=2, max_size=4).map(lambda a: "(" + ", ".join(a) + ")"),
        st.lists(st.tuples(st.one_of(plain_strings, names), inner), max_size=3).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"
        ),
    )


values = st.recursive(leaves, _compound, max_leaves=20)
arguments = st.tuples(
    st.lists(values, min_size=1, max_size=5),
    st.lists(st.tuples(names, values).map("=".join), max_size=4),
)
subscripted = st.tuples(names, st.integers(0, 12), names).map(lambda t: f"{t[0]}[{t[1]}].{t[2]}")


def _call(t: tuple[str, tuple[list[str], list[str]]]) -> str:
    return f"{t[0]}({', '.join(t[1][0] + t[1][1])})"


bare_calls = st.tuples(dotted, arguments).map(_call)
calls = st.tuples(st.one_of(dotted, subscripted), arguments).map(_call)
targets = st.one_of(
    names,
    dotted.map("self.".__add__),
    st.tuples(names, st.integers(0, 20), names).map(lambda t: f"self.{t[0]}[{t[1]}].{t[2]}"),
    st.tuples(names, st.integers(0, 9), st.sampled_from(["", "[0]"]), names).map(
        lambda t: f'getattr(self.{t[0]}, "{t[1]}"){t[2]}.{t[3]}'
    ),
    st.tuples(names, names).map(lambda t: f'self.{t[0]}["{t[1]}"]'),
)
literals = st.one_of(
    st.lists(values, min_size=1, max_size=6).map(lambda a: "[" + ", ".join(a) + "]"),
    st.lists(values, min_size=2, max_size=6).map(lambda a: "(" + ", ".join(a) + ")"),
    st.lists(st.tuples(plain_strings, values), min_size=1, max_size=5).map(
        lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"
    ),
)
statements = st.one_of(
    st.tuples(targets, st.one_of(calls, literals)).map(" = ".join),
    st.one_of(calls, literals).map("return ".__add__),
    bare_calls,
)
depths = st.sampled_from([0, 1, 2])


def assert_as_black(statement: str, depth: int) -> None:
    got = split_fast.split(statement, depth)
    if formatter.fits(statement, depth):
        return
    assert got is not None, statement
    assert got == black_lines(statement, depth), statement
    port = split.port_split(statement, depth)
    assert port is None or port == got, statement


@settings(max_examples=MANY)
@given(statements, depths)
def test_fast_split_equals_black(statement: str, depth: int) -> None:
    assert_as_black(statement, depth)


@settings(max_examples=MANY)
@given(
    calls,
    st.integers(60, 100),
    depths,
    st.sampled_from(["{pad} = {call}", "self.{pad}[0].x = {call}"]),
)
def test_long_targets_wrap_the_call(call: str, width: int, depth: int, form: str) -> None:
    """When ``target = callee(`` does not fit, black wraps the call in parentheses (a second
    opinion for a plain target, the preferred split for one with brackets)."""
    statement = form.format(
        pad="v" * max(1, width - len(form.format(pad="", call=call.split("(")[0]))), call=call
    )
    head, wrapped = statement.split("(")[0] + "(", statement.split(" = ")[0] + " = ("
    if not formatter.fits(wrapped, depth) or (
        "[" in call.split("(")[0] and not formatter.fits(head, depth)
    ):
        return  # not even ``target = (`` fits, or a subscripted callee that does not: left to the port
    assert_as_black(statement, depth)


OPERATORS = ["+", "-", "*", "/", "//", "%", "@", "&", "|", "^", "<<", ">>", "==", "!=", "<", ">", "<=", ">="]


@settings(max_examples=MANY // 2)
@given(
    st.one_of(
        st.lists(names, min_size=2, max_size=4).map(".".join),
        st.tuples(dotted, st.sampled_from(OPERATORS), dotted).map(" ".join),
    ),
    st.integers(70, 100),
    depths,
    st.sampled_from(["{pad} = {value}", "return {value}"]),
)
def test_long_values_without_brackets_are_wrapped(value: str, width: int, depth: int, form: str) -> None:
    """``target = a.b.c`` or ``target = a + b`` too long: black puts the value in parentheses
    on a line of its own."""
    statement = form.format(pad="v" * max(1, width - len(value) - 3), value=value)
    opening = statement.removesuffix(value) + "("  # ``target = (`` or ``return (``
    if formatter.fits(opening, depth) and formatter.fits(value, depth + 1):
        assert_as_black(statement, depth)


@settings(max_examples=MANY // 2)
@given(
    st.lists(names, min_size=1, max_size=6).map(".".join),
    st.sampled_from(OPERATORS),
    st.lists(names, min_size=1, max_size=6).map(".".join),
    st.sampled_from(["{pad} = {value}", "return {value}"]),
    st.integers(0, 30),
    depths,
)
def test_long_operations_split_before_the_operator(
    left: str, operator: str, right: str, form: str, pad: int, depth: int
) -> None:
    """``target = a + b`` whose operation does not fit inside the parentheses either: black puts
    ``a`` and ``+ b`` on lines of their own (when each fits; a longer operand is the port's)."""
    statement = form.format(pad="v" * (1 + pad), value=f"{left} {operator} {right}")
    if formatter.fits(left, depth + 1) and formatter.fits(f"{operator} {right}", depth + 1):
        assert_as_black(statement, depth)
    else:
        assert split_fast.split(statement, depth) is None or formatter.fits(statement, depth)


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize(
    "statement",
    [
        # a MONAI decoder: a list of calls with keyword arguments, tuples and dicts
        "self.decoder.blocks = nn.ModuleList([monai.networks.nets.basic_unet.UpCat(spatial_dims=2, in_chns=512,"
        ' cat_chns=256, out_chns=32, act=("relu", {"inplace": True}), norm=("batch", {"eps": 0.001, "momentum":'
        " 0.1}), dropout=0.0, bias=False), nn.Identity()])",
        'getattr(self, "2")[0].fn = nn.ModuleList([nn.Conv1d(16, 128, 1), nn.GELU(), nn.Dropout(p=0.0), nn.Conv1d(128, 16, 1)])',
        'self.add_module("0", einops.layers.torch.Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=8, p2=8))',
        "features_denseblock2_denselayer1_layers_relu2 = features_denseblock2_denselayer1_layers.relu2(x_1)",
        "features_denseblock4_denselayer1_layers_norm2 = features_denseblock4_denselayer1_layers.norm2(features_denseblock4_conv1)",
        "features_denseblock2_denselayer2_layers_long_name = features_denseblock2.denselayer2.layers",
        "up_samples_2_1_upsample = up_samples_2[1].upsample_non_trainable(up_samples_2_0_conv, scale_factor=2.0)",
        "conv2d_65 = torch.conv2d(_blocks_13__expand_conv_static_padding, _blocks_13__expand_conv_weight, None, (1, 1), (0, 0), (1, 1), 1)",
        'self._blocks[2]["3"]._depthwise_conv = nn.Conv2d(144, 144, 5, stride=2, groups=144, bias=False, padding_mode="zeros")',
        "self.norm = nn.LayerNorm(128, eps=1e-05, elementwise_affine=True, bias=True, device=None, dtype=torch.float32)",
        "cat_2 = torch.cat((decoder3_transp_conv_conv, encoder2_blocks_1_1_lrelu_1, encoder2_blocks_1_1_lrelu_2), dim=-1)",
    ],
)
def test_shapes_the_zoo_writes(statement: str, depth: int) -> None:
    assert_as_black(statement, depth)


LONG = "c" * 75  # makes ``x = f(<argument>, LONG)`` too long at depth 2, each argument short enough


def test_the_template_below_is_claimed() -> None:
    assert split_fast.split(f"x = f(a, {LONG})", 2) == ("x = f(", "    a,", f"    {LONG},", ")")


@pytest.mark.parametrize(
    "argument",
    [
        "b,",  # then ``, LONG``: a comma with no space
        "(a,)",  # a one-tuple's comma
        "a + b",
        "a[0]",
        "f(a).g",
        "f(a)(b)",
        "*a",
        "'a'",
        '"a\\"b"',
        'b"a"',
        '"a""b"',
        "not(a)",
        "match",
        "lambda: 0",
        "a if b else c",
        "a==b",
        "a-b",
        "a ",
        "[a, ]",
        "{a: b}[0]",
        "(a: b)",
        "a**b",
    ],
)
def test_other_arguments_are_left_to_the_port(argument: str) -> None:
    assert split_fast.split(f"x = f({argument}, {LONG})", 2) is None


@pytest.mark.parametrize(
    "statement",
    [
        f"x = f({LONG})[0]",
        f"x = f(a).b({LONG})",
        f"x = a + f({LONG})",
        f"x = -f({LONG})",
        f"x, y = f({LONG})",
        f"x: int = f({LONG})",
        f"x = y = f({LONG})",
        f"return({LONG}, {LONG})",
        f"x = ({LONG})",  # parentheses black would drop
        f"[{LONG}, {LONG}]",  # a bare literal
        f"x = ({LONG},)",
        f"x = f({LONG}, {LONG}) ",
        f"x = a[0].b.c.{LONG}",
    ],
)
def test_other_statements_are_left_to_the_port(statement: str) -> None:
    assert split_fast.split(statement, 2) is None


def _blank_by_regex(text: str) -> str:
    """blank_strings' reference: every ``_STRING`` match blanked, as it was written first."""
    return split_fast._STRING.sub(split_fast._blanked, text)


@settings(max_examples=MANY)
@given(st.text(st.sampled_from('ab "\\\n(,漢'), max_size=16))
def test_blank_strings_equals_the_regex(text: str) -> None:
    # the split-at-quotes path (no backslash, no line break) and the regex path must agree
    assert split_fast.blank_strings(text) == _blank_by_regex(text)


@pytest.mark.parametrize(
    "statement",
    [
        # found by test_format.test_split_equals_black: a long call with empty brackets used to
        # come back as ``target = f(`` / an empty indented line / ``)``
        'getattr(self, "0")[0].a00000000000000 = a.a0000.a00000000000000000000000000000000000000()',
        'getattr(self, "0")[0].a00000000000000 = a.a0000.a000000000000000000000000000000000000000()',
    ],
)
def test_long_empty_calls_after_brackets_are_left_to_the_port(statement: str) -> None:
    assert split_fast.split(statement, 0) is None
    assert split.split(statement, 0) == black_lines(statement, 0)


@settings(max_examples=MANY // 2)
@given(
    st.lists(names, min_size=1, max_size=6).map(lambda parts: ".".join(["self", *parts])),
    st.lists(names, min_size=1, max_size=3).map(".".join),
    st.integers(0, 60),
    depths,
    st.sampled_from(["{target} = {callee}()", "return {callee}()"]),
)
def test_long_empty_calls_are_wrapped(target: str, callee: str, pad: int, depth: int, form: str) -> None:
    """``self.a.b.conv = _Helper()`` too long: ``target = (`` / the call / ``)``, even when a line
    of it is still too long (black's choice too: its second opinion is no better)."""
    statement = form.format(target=target + "x" * pad, callee=callee + "y" * pad)
    if formatter.fits(statement, depth):
        return
    value = statement.removesuffix(callee + "y" * pad + "()")
    assert split_fast.split(statement, depth) == (value + "(", "    " + callee + "y" * pad + "()", ")")
    assert_as_black(statement, depth)
