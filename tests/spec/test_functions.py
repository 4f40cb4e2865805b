"""A spec's named functions (``functions:``): evaluated by fxgen's own evaluator exactly as the
generated ``def`` computes them (value and type, bit for bit), written as a person writes the
helper, callable from every expression of every class, and refused with located errors where a
call cannot be made."""

from __future__ import annotations

import math
from typing import Any

import pytest
from helpers import generated_class, property_budget
from hypothesis import given, settings
from test_expr import CHANNELS, ENV, NUMERIC_TREES, WIDTHS, torchvision_make_divisible

import fxgen
from fxgen.check.validate import validate_data
from fxgen.codegen.functions import function_defs
from fxgen.codegen.render import Imports
from fxgen.spec.expr import CALLS, MAX_CALLS, REQUIRED, ExprError, Function, evaluate, parse, render
from fxgen.spec.model import NO_DEFAULT, ArgSpec, FunctionSpec, Spec

MAKE_DIVISIBLE = {  # torchvision's _make_divisible(v, divisor), as the spec writes it
    "args": {"v": "float", "divisor": {"type": "int", "default": 8}},
    "values": {"down": "max(divisor, int(v + divisor / 2) // divisor * divisor)"},
    "return": "down + divisor if down < 0.9 * v else down",
    "type": "int",
}
SPEC: dict[str, Any] = {
    "fxgen": 2,
    "name": "Net",
    "args": {"width": {"type": "float", "default": 0.75}, "n": {"type": "int", "default": 2}},
    "functions": {"make_divisible": MAKE_DIVISIBLE,
                  "deeper": {"args": {"k": "int"}, "return": "make_divisible(k * 1.5) if k > 1 else k", "type": "int"}},
    "values": {"c": "make_divisible(32 * width)"},
    "classes": {
        "Block": {
            "args": {"cin": "int"},
            "values": {"hidden": "make_divisible(cin * 1.5, 4)"},
            "modules": {"fc": {"class": "torch.nn.Linear", "args": [{"arg": "cin"}, {"arg": "hidden"}]},
                        "out": {"class": "torch.nn.Linear", "args": [{"arg": "hidden"}, {"arg": "deeper(cin)"}]}},
            "nodes": [
                {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
                {"op": "call_module", "name": "h", "target": "fc", "args": ["%x"]},
                {"if": "make_divisible(cin) > 16", "then": [{"op": "call_function", "name": "y", "target": "torch.relu", "args": ["%h"]}],
                 "else": [{"op": "alias", "name": "y", "args": ["%h"]}]},
                {"op": "call_module", "name": "o", "target": "out", "args": ["%y"]},
                {"op": "output", "args": ["%o"]},
            ],
        },
    },
    "modules": {"body": {"class": "torch.nn.Sequential",
                         "args": [{"repeat": {"arg": "deeper(n)"}, "module": {"class": "Block", "args": [{"arg": "c"}]}}]}},
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "call_module", "name": "y", "target": "body", "args": ["%x"]},
        {"op": "output", "args": ["%y"]},
    ],
}  # fmt: skip


def _function(**fields: Any) -> Function:
    spec = FunctionSpec.from_data({**MAKE_DIVISIBLE, **fields})
    args = tuple((a, s.type, REQUIRED if s.default is NO_DEFAULT else s.default) for a, s in spec.args.items())
    return Function("make_divisible", args, tuple(spec.values.items()), spec.returns, spec.type)


def _call(text: str, **env: Any) -> Any:
    return evaluate(parse(text), {**env, CALLS: {"make_divisible": _function()}})


@pytest.mark.parametrize("width", WIDTHS)
def test_make_divisible_as_a_function_equals_torchvision(width: float) -> None:
    for c in CHANNELS:
        got = _call("make_divisible(c * width)", c=c, width=width)
        expected = torchvision_make_divisible(c * width, 8)
        assert type(got) is type(expected) and got == expected, (c, width)
        assert _call("make_divisible(c * width, 4)", c=c, width=width) == torchvision_make_divisible(c * width, 4)


def test_the_generated_def_is_what_a_person_writes() -> None:
    spec = Spec(name="Net", nodes=[], fxgen=2, functions={"make_divisible": FunctionSpec.from_data(MAKE_DIVISIBLE)})
    assert function_defs(spec, Imports()) == [[
        "def make_divisible(v: float, divisor: int = 8) -> int:",
        "    down = max(divisor, int(v + divisor / 2) // divisor * divisor)",
        "    return down + divisor if down < 0.9 * v else down",
    ]]  # fmt: skip


@settings(max_examples=property_budget(200))
@given(NUMERIC_TREES)
def test_random_functions_compute_what_their_generated_def_computes(tree: Any) -> None:
    # a function of the test trees' names, returning the tree; called with ENV's values
    args = {name: ArgSpec(type(value).__name__) for name, value in ENV.items()}  # bool, int or float
    spec = Spec(name="Net", nodes=[], fxgen=2, functions={"fn": FunctionSpec(args, render(tree), "float")})
    imports = Imports()
    (lines,) = function_defs(spec, imports)
    namespace: dict[str, Any] = {"math": math}
    exec("\n".join(lines), namespace)  # the test's oracle: the generated def itself
    call = f"fn({', '.join(ENV)})"
    function = Function("fn", tuple((n, a.type, REQUIRED) for n, a in args.items()), (), render(tree), "float")
    try:
        expected = eval(call, namespace, dict(ENV))
    except (ZeroDivisionError, OverflowError, ValueError):
        with pytest.raises(ExprError):
            evaluate(parse(call), {**ENV, CALLS: {"fn": function}})
        return
    try:
        got = evaluate(parse(call), {**ENV, CALLS: {"fn": function}})
    except ExprError as exc:  # Python computes past fxgen's bounds (big integers, infinities, complex numbers)
        assert any(word in str(exc) for word in ("too large", "finite", "exponent", "real number", "digits")), exc
        return
    assert type(got) is type(expected) and repr(got) == repr(expected), (call, got, expected)


def test_a_failure_inside_a_function_names_it_its_arguments_and_its_part() -> None:
    with pytest.raises(ExprError, match=r"make_divisible\(v=24\.0, divisor=0\): value 'down': .* divides by zero"):
        _call("make_divisible(c * 0.75, 0)", c=32)
    with pytest.raises(ExprError, match=r"make_divisible\(\)'s argument 'divisor' is int, not float 8\.0"):
        _call("make_divisible(c, 8.0)", c=32)
    with pytest.raises(ExprError, match=r"make_divisible\(\) takes 1 to 2 arguments, not 3"):
        _call("make_divisible(c, 8, 1)", c=32)
    bad = {"make_divisible": _function(**{"return": "down / 2"})}
    with pytest.raises(ExprError, match=r"returns float 16\.0, but it is declared to return int"):
        evaluate(parse("make_divisible(32)"), {CALLS: bad})
    with pytest.raises(ExprError, match="declare nope under `functions:`"):
        _call("nope(1)")


def test_calls_stay_within_the_bounds() -> None:
    # each function calls the next one four times: 4**7 calls are more than an evaluation may make
    chain = {f"f{i}": Function(f"f{i}", (("x", "int", REQUIRED),), (), " + ".join([f"f{i + 1}(x)"] * 4), "int")
             for i in range(7)}  # fmt: skip
    chain["f7"] = Function("f7", (("x", "int", REQUIRED),), (), "x", "int")
    with pytest.raises(ExprError, match=f"more than {MAX_CALLS} times"):
        evaluate(parse("f0(1)"), {CALLS: chain})
    big = {"f": Function("f", (("x", "int", REQUIRED),), (), "x ** 64", "int")}
    with pytest.raises(ExprError, match="too large"):
        evaluate(parse("f(4)"), {CALLS: big})  # the integer bound holds inside a function


def test_every_class_calls_them_and_the_generated_module_builds_what_load_builds() -> None:
    spec = validate_data(SPEC)
    gm = fxgen.load(spec)
    assert gm.body[0].fc.out_features == 36  # make_divisible(24 * 1.5, 4)
    assert gm.body[0].out.out_features == 40  # deeper(24) = make_divisible(36.0): int(40.0) // 8 * 8
    source, cls = generated_class(spec)
    assert "\n\ndef make_divisible(v: float, divisor: int = 8) -> int:\n" in source
    assert "\n\ndef deeper(k: int) -> int:\n    return make_divisible(k * 1.5) if k > 1 else k\n" in source
    assert source.index("def deeper") < source.index("class Block")
    for width in (0.5, 0.75, 1.4):
        for n in (1, 2):
            loaded = fxgen.load(spec, args={"width": width, "n": n})
            built = cls(width=width, n=n)
            assert [(k, tuple(v.shape)) for k, v in built.state_dict().items()] == \
                   [(k, tuple(v.shape)) for k, v in loaded.state_dict().items()]  # fmt: skip

