"""Argument expressions: ``{arg: cout * 4}`` in a format-2 declaration, and the named ``values:``.

A small grammar, parsed here and never by ``eval``: the part of Python's expression grammar a
model's width, depth and channel rules need (torchvision's ``_make_divisible``, Ultralytics'
``make_divisible(min(c, max_channels) * width, 8)``)::

    expression  := disjunction ["if" disjunction "else" expression]
    disjunction := conjunction ("or" conjunction)*
    conjunction := inversion ("and" inversion)*
    inversion   := "not" inversion | comparison
    comparison  := sum [("<" | "<=" | ">" | ">=" | "==" | "!=") sum]   (no chains: a < b < c)
                 | NAME "is" ["not"] "None"
    sum         := term (("+" | "-") term)*
    term        := factor (("*" | "/" | "//" | "%") factor)*
    factor      := "-" factor | power
    power       := primary ["**" factor]
    primary     := NUMBER | "True" | "False" | NAME | FUNCTION "(" expression ("," expression)* ")"
                 | "(" expression ")"

NAME is an argument or a named value of the enclosing class; NUMBER an integer (``8``) or a
float (``0.9``, ``1e-3``); FUNCTION one of ``min max round int ceil floor abs sqrt`` or a
function the spec declares under ``functions:`` (``Function``: arguments, named values and one
returned expression, all in this grammar). Any other identifier parses as a call too; the check
stage refuses a call to a function that is neither (``call_problems``), and ``evaluate`` one it
is not given.
``NAME is None`` / ``NAME is not None`` asks whether an optional input of ``forward`` was given
(the NAME a placeholder whose default is None): it parses anywhere, and the check stage allows it
only in a node list's ``if:`` (``fxgen.check.constructs``); ``None`` is written nowhere else.

The parsed form is a tree of tuples, each ``(kind, ...)``:

- ``("num", 4)``, ``("num", 0.5)``: a number (never negative: ``-4`` is a ``neg``);
- ``("bool", True)``: ``True`` or ``False``;
- ``("name", "cout")``: an argument or a named value;
- ``("neg", x)``, ``("not", x)``: ``-x``, ``not x``;
- ``(op, left, right)`` for ``op`` in ``+ - * / // % ** < <= > >= == != and or``;
- ``("if", body, condition, orelse)``: ``body if condition else orelse``;
- ``("is", ("name", x))``, ``("is not", ("name", x))``: ``x is None``, ``x is not None``;
- ``("call", function, arg, ...)``: ``min(a, b)`` (``function`` is the name, a string).

``evaluate`` computes a tree with Python's own arithmetic, operation by operation in Python's
order (so ``round`` rounds half to even and floats are IEEE doubles, exactly as in a
constructor), within bounds: integers at most 2**63 in magnitude, floats finite, a ``**``
exponent at most 64. ``source`` writes a tree back as Python, spaced as black spaces it and
parenthesised only where the grammar needs it; generated code contains only validated names,
numbers, these operators and the allowed functions (``ceil``/``floor``/``sqrt`` as ``math.ceil``/``math.floor``/``math.sqrt``).
"""

from __future__ import annotations

import functools
import keyword
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fxgen.spec.budget import current

__all__ = [
    "CALLS",
    "FUNCTIONS",
    "MAX_CALLS",
    "MAX_CALL_DEPTH",
    "MAX_DEPTH",
    "MAX_LENGTH",
    "MODULES",
    "REQUIRED",
    "Expr",
    "ExprError",
    "Function",
    "call_problems",
    "evaluate",
    "functions",
    "modules",
    "names",
    "negated",
    "parse",
    "renamed",
    "render",
    "shown",
    "source",
    "user_calls",
]

Expr = tuple[Any, ...]

MAX_LENGTH = 200  # an argument expression is a short formula, not a program
MAX_DEPTH = 32  # parentheses, calls, unary operators and conditionals nested in each other
MAX_INT = 2**63  # the magnitude of an integer an expression may compute
MAX_EXPONENT = 64  # the magnitude of a ``**`` exponent
MAX_CALL_DEPTH = 8  # a spec's functions calling each other: a rule and the rules it uses, not a program
MAX_CALLS = 10_000  # calls of a spec's functions one evaluation makes (each calling two others would double per level)
CALLS = "()"  # the key of an environment holding the spec's functions (no name can be it)

# name -> (fewest, most arguments); the order is the one messages list them in
FUNCTIONS: dict[str, tuple[int, int]] = {
    "min": (2, 8), "max": (2, 8), "round": (1, 2), "int": (1, 1), "ceil": (1, 1), "floor": (1, 1), "abs": (1, 1),
    "sqrt": (1, 1),
}  # fmt: skip
_PYTHON_NAMES = {"ceil": "math.ceil", "floor": "math.floor", "sqrt": "math.sqrt"}  # how generated code spells them
MODULES = frozenset(spelled.rpartition(".")[0] for spelled in _PYTHON_NAMES.values() if "." in spelled)
"""The modules generated code names for the functions it spells as theirs (``math``)."""

ALLOWED = ("argument names, numbers, + - * / // % **, comparisons, and/or/not, `a if c else b`, and "
           f"{' '.join(FUNCTIONS)}")  # fmt: skip

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>\*\*|//|<=|>=|==|!=|[-+*/%()<>,]))"
)
_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_WORDS = {"and", "or", "not", "if", "else", "True", "False", "is", "None"}
_PRESENCE = ("is", "is not")  # NAME is None, NAME is not None: was an optional input given?

# Binding strength of each kind (higher binds tighter), and the least strength each operand
# needs to go without parentheses: left-associative operators need more on the right.
_LEVEL = {"if": 0, "or": 1, "and": 2, "not": 3, **dict.fromkeys((*_COMPARISONS, *_PRESENCE), 4), "+": 5, "-": 5, "*": 6, "/": 6,
          "//": 6, "%": 6, "neg": 7, "**": 8}  # fmt: skip
_ATOM = 9


class ExprError(ValueError):
    """An expression that does not parse, names no argument, or cannot be evaluated."""


# -- parsing --------------------------------------------------------------------------------
def parse(text: str) -> Expr:
    """The tree of ``text``; ExprError says what is wrong and what the grammar allows."""
    if not isinstance(text, str) or not text.strip():
        raise ExprError("an argument expression is a non-empty string such as `cout * 4`")
    return _parse(text)


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Expr:
    """``parse``, once per distinct text (a block's expressions are evaluated per instance)."""
    if len(text) > MAX_LENGTH:
        raise ExprError(f"an argument expression has at most {MAX_LENGTH} characters (this one has {len(text)}); "
                        "name its parts under `values:`")  # fmt: skip
    tokens = _tokens(text)
    parser = _Parser(tokens, text)
    tree = parser.expression()
    if parser.pos != len(tokens):
        raise ExprError(f"unexpected {tokens[parser.pos][1]!r} in {text!r}")
    return tree


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            bad = text[pos:].strip()[:1]
            raise ExprError(f"{bad!r} is not allowed in {text!r}: expressions use {ALLOWED}")
        kind = match.lastgroup
        assert kind is not None
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], text: str) -> None:
        self.tokens = tokens
        self.text = text
        self.pos = 0
        self.depth = 0

    def peek(self, ahead: int = 0) -> str | None:
        at = self.pos + ahead
        return self.tokens[at][1] if at < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ExprError(f"{self.text!r} ends too early")
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def expect(self, value: str) -> None:
        if self.peek() != value:
            found = f"{self.peek()!r}" if self.peek() is not None else "the end"
            raise ExprError(f"expected {value!r} in {self.text!r}, found {found}")
        self.pos += 1

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError(f"{self.text!r} nests more than {MAX_DEPTH} deep; name its parts under `values:`")

    def expression(self) -> Expr:
        body = self.binary("or")
        if self.peek() != "if":
            return body
        self.pos += 1
        condition = self.binary("or")
        self.expect("else")
        self.nested()
        try:
            return ("if", body, condition, self.expression())
        finally:
            self.depth -= 1

    def binary(self, op: str) -> Expr:
        """A left-associative chain of ``op`` (``or``, ``and``) over the next level down."""
        inner = self.conjunction if op == "or" else self.inversion
        left = inner()
        while self.peek() == op:
            self.pos += 1
            left = (op, left, inner())
        return left

    def conjunction(self) -> Expr:
        return self.binary("and")

    def inversion(self) -> Expr:
        if self.peek() == "not":
            self.pos += 1
            self.nested()
            try:
                return ("not", self.inversion())
            finally:
                self.depth -= 1
        return self.comparison()

    def comparison(self) -> Expr:
        left = self.sum()
        if self.peek() == "is":
            return self.presence(left)
        if self.peek() in _COMPARISONS:
            op = self.take()[1]
            left = (op, left, self.sum())
            if self.peek() in _COMPARISONS:
                raise ExprError(f"chained comparisons are not allowed in {self.text!r}: write `a < b and b < c`")
        return left

    def presence(self, left: Expr) -> Expr:
        """``NAME is None`` or ``NAME is not None`` (the ``is`` next)."""
        self.pos += 1
        kind = "is"
        if self.peek() == "not":
            self.pos += 1
            kind = "is not"
        if left[0] != "name" or self.peek() != "None":
            raise ExprError(f"`is` is written only as `NAME is None` or `NAME is not None` (whether an optional "
                            f"input was given), not as in {self.text!r}")  # fmt: skip
        self.pos += 1
        if self.peek() in (*_COMPARISONS, "is"):
            raise ExprError(f"chained comparisons are not allowed in {self.text!r}: write `a is None and b < c`")
        return (kind, left)

    def sum(self) -> Expr:
        left = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            left = (op, left, self.term())
        return left

    def term(self) -> Expr:
        left = self.factor()
        while self.peek() in ("*", "/", "//", "%"):
            op = self.take()[1]
            left = (op, left, self.factor())
        return left

    def factor(self) -> Expr:
        if self.peek() == "-":
            self.pos += 1
            self.nested()
            try:
                return ("neg", self.factor())
            finally:
                self.depth -= 1
        base = self.primary()
        if self.peek() == "**":
            self.pos += 1
            return ("**", base, self.factor())
        return base

    def primary(self) -> Expr:
        kind, value = self.take()
        if kind == "num":
            return ("num", _number(value))
        if kind == "name":
            if value in ("True", "False"):
                return ("bool", value == "True")
            if self.peek() == "(":
                return self.call(value)
            if value in FUNCTIONS:
                raise ExprError(f"{value} is a function: call it, `{value}(x)`")
            if keyword.iskeyword(value):
                raise ExprError(f"unexpected {value!r} in {self.text!r}: expressions use {ALLOWED}")
            return ("name", value)
        if value == "(":
            self.nested()
            try:
                inner = self.expression()
            finally:
                self.depth -= 1
            if self.peek() != ")":
                raise ExprError(f"a parenthesis is not closed in {self.text!r}")
            self.pos += 1
            return inner
        raise ExprError(f"unexpected {value!r} in {self.text!r}")

    def call(self, function: str) -> Expr:
        if keyword.iskeyword(function) or function in _WORDS or function.startswith("__"):
            raise ExprError(f"`{function}(` is not allowed: expressions use {ALLOWED}")
        self.pos += 1  # the "("
        self.nested()
        try:
            args = [self.expression()]
            while self.peek() == ",":
                self.pos += 1
                args.append(self.expression())
        finally:
            self.depth -= 1
        if self.peek() != ")":
            raise ExprError(f"a parenthesis is not closed in {self.text!r}")
        self.pos += 1
        if function not in FUNCTIONS:
            return ("call", function, *args)  # a spec's function: the check stage knows its arguments
        fewest, most = FUNCTIONS[function]
        if not fewest <= len(args) <= most:
            wanted = f"{fewest}" if fewest == most else f"{fewest} to {most}"
            raise ExprError(f"{function}() takes {wanted} argument{'s' * (most > 1)}, not {len(args)}")
        return ("call", function, *args)


def _number(text: str) -> int | float:
    if any(c in text for c in ".eE"):
        value = float(text)
        if not math.isfinite(value):
            raise ExprError(f"{text} is not a finite number")
        return value
    value_int = int(text)
    if value_int > MAX_INT:
        raise ExprError(f"{text} is too large: integers are at most 2**63 in magnitude")
    return value_int


# -- what a tree uses ------------------------------------------------------------------------
def names(tree: Expr) -> list[str]:
    """The argument and value names ``tree`` uses, in order of first use."""
    out: dict[str, None] = {}
    for node in _walk(tree):
        if node[0] == "name":
            out[node[1]] = None
    return list(out)


def tested(tree: Expr) -> list[str]:
    """The names ``tree`` tests with ``is None`` or ``is not None`` (optional inputs), in order."""
    return list(dict.fromkeys(node[1][1] for node in _walk(tree) if node[0] in _PRESENCE))


def untested(tree: Expr) -> list[str]:
    """The names ``tree`` uses other than in ``NAME is None`` / ``NAME is not None``."""
    out: dict[str, None] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        if node[0] == "name":
            out[node[1]] = None
        elif node[0] not in ("num", "bool", *_PRESENCE):
            stack.extend(reversed(node[2:] if node[0] == "call" else node[1:]))
    return list(out)


def functions(tree: Expr) -> set[str]:
    """The functions ``tree`` calls."""
    return {node[1] for node in _walk(tree) if node[0] == "call"}


def modules(tree: Expr) -> set[str]:
    """The modules ``source(tree)`` names: those of the functions it spells as a module's
    (``math`` for ``math.sqrt``), which a file holding the source must import."""
    return {spelled.rpartition(".")[0] for name in functions(tree) if "." in (spelled := _PYTHON_NAMES.get(name, ""))}


def _walk(tree: Expr) -> list[Expr]:
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        if node[0] not in ("num", "bool", "name"):
            stack.extend(reversed(node[2:] if node[0] == "call" else node[1:]))
    return out


# -- the spec's functions ------------------------------------------------------------------
class _Required:
    """Marks a function's argument without a default."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

_TYPES: dict[str, tuple[type, ...]] = {"int": (int,), "float": (int, float), "bool": (bool,)}  # as Python's annotations read


@dataclass(frozen=True)
class Function:
    """A function a spec declares under ``functions:``: arguments ``(name, type, default or
    REQUIRED)``, named values computed in order from them, and the expression it returns, of
    type ``type`` (``int``, ``float`` or ``bool``). ``where`` says where a part of it is written
    (``("values", "down")``, ``("return",)``) for messages, ``functions``-relative."""

    name: str
    args: tuple[tuple[str, str, Any], ...]
    values: tuple[tuple[str, str], ...]
    returns: str
    type: str
    where: Callable[[tuple[str, ...]], str] | None = field(default=None, compare=False, repr=False)

    @property
    def arity(self) -> tuple[int, int]:
        """(fewest, most) arguments a call gives."""
        return sum(default is REQUIRED for _, _, default in self.args), len(self.args)


def user_calls(tree: Expr) -> list[str]:
    """The functions ``tree`` calls that are not built in (the spec's), in order of first call."""
    return list(dict.fromkeys(node[1] for node in _walk(tree) if node[0] == "call" and node[1] not in FUNCTIONS))


def call_problems(tree: Expr, declared: Mapping[str, tuple[int, int]]) -> list[str]:
    """Why the calls of ``tree`` to functions that are not built in are wrong: a function the
    spec does not declare (``declared``: name -> its fewest and most arguments), or a call
    with too few or too many arguments."""
    out: list[str] = []
    for node in _walk(tree):
        if node[0] != "call" or node[1] in FUNCTIONS:
            continue
        name, given = node[1], len(node) - 2
        if name not in declared:
            known = f", and the spec's functions {' '.join(declared)}" if declared else ""
            out.append(f"`{name}(` is not allowed: expressions use {ALLOWED}{known}; declare {name} under "
                       "`functions:` to call it")  # fmt: skip
            continue
        fewest, most = declared[name]
        if not fewest <= given <= most:
            wanted = f"{fewest}" if fewest == most else f"{fewest} to {most}"
            out.append(f"{name}() takes {wanted} argument{'s' * (most != 1)}, not {given}")
    return list(dict.fromkeys(out))


def shown(env: Mapping[str, Any]) -> str:
    """An environment's values as ``name=value, ...`` for a message (its functions left out)."""
    return ", ".join(f"{k}={v!r}" for k, v in env.items() if k != CALLS)


# -- evaluation ----------------------------------------------------------------------------
def evaluate(tree: Expr, values: Mapping[str, Any]) -> Any:
    """The value of ``tree`` with the class's argument (and named) ``values``: Python's own
    arithmetic, in Python's order; ExprError for what Python refuses or the bounds do. The
    spec's functions, when it calls them, are ``values[CALLS]`` (name -> ``Function``)."""
    return _Evaluation().run(tree, values)


class _Evaluation:
    """One evaluation: the calls of the spec's functions it has made, how deep they nest, and the
    whole spec's budget of steps it charges (``fxgen.spec.budget``; none outside a check)."""

    def __init__(self) -> None:
        self.calls = 0
        self.depth = 0
        self.budget = current()

    def run(self, tree: Expr, values: Mapping[str, Any]) -> Any:
        if self.budget is not None:
            self.budget.charge("steps")
        kind = tree[0]
        if kind in ("num", "bool"):
            return tree[1]
        if kind == "name":
            if tree[1] not in values:
                raise ExprError(f"{tree[1]!r} has no value here")
            return values[tree[1]]
        if kind == "if":
            return self.run(tree[1] if _truth(self.run(tree[2], values), "if") else tree[3], values)
        if kind in ("and", "or"):
            left = self.run(tree[1], values)
            if _truth(left, kind) == (kind == "or"):
                return left
            right = self.run(tree[2], values)
            _truth(right, kind)
            return right
        if kind == "not":
            return not _truth(self.run(tree[1], values), "not")
        if kind in _PRESENCE:
            name = tree[1][1]
            if name not in values:
                raise ExprError(f"`{render(tree)}` asks whether the input {name!r} was given, known only when forward "
                                "is called")  # fmt: skip
            return (values[name] is None) == (kind == "is")
        if kind == "call":
            args = [self.run(arg, values) for arg in tree[2:]]
            if tree[1] not in FUNCTIONS:
                return self.function(tree[1], args, values)
            return _checked(_call(tree[1], args), tree)
        if kind == "neg":
            return _checked(-_numeric(self.run(tree[1], values), "-"), tree)
        left, right = self.run(tree[1], values), self.run(tree[2], values)
        if kind in ("==", "!="):
            _scalar(left, kind)
            _scalar(right, kind)
            return (left == right) if kind == "==" else (left != right)
        _numeric(left, kind)
        _numeric(right, kind)
        return _checked(_binary(kind, left, right, tree), tree)

    def function(self, name: str, args: list[Any], values: Mapping[str, Any]) -> Any:
        """A call of the spec's function ``name``, computed as the generated ``def`` computes it."""
        functions = values.get(CALLS) or {}
        function = functions.get(name)
        if function is None:
            raise ExprError(f"`{name}(` is not allowed: expressions use {ALLOWED}; declare {name} under `functions:`")
        fewest, most = function.arity
        if not fewest <= len(args) <= most:
            wanted = f"{fewest}" if fewest == most else f"{fewest} to {most}"
            raise ExprError(f"{name}() takes {wanted} argument{'s' * (most != 1)}, not {len(args)}")
        env: dict[str, Any] = {CALLS: functions}
        called = name
        for i, (arg, kind, default) in enumerate(function.args):
            value = args[i] if i < len(args) else default
            if isinstance(value, bool) != (kind == "bool") or not isinstance(value, _TYPES[kind]):
                raise ExprError(f"{name}()'s argument {arg!r} is {kind}, not {type(value).__name__} {value!r}")
            env[arg] = value
        called = f"{name}({shown(env)})"  # with its argument values
        self.calls += 1
        if self.calls > MAX_CALLS:
            raise ExprError(f"calls the spec's functions more than {MAX_CALLS} times; compute the repeated calls "
                            "once, as named values")  # fmt: skip
        if self.depth >= MAX_CALL_DEPTH:
            raise ExprError(f"the spec's functions call each other more than {MAX_CALL_DEPTH} deep")
        self.depth += 1
        part: tuple[str, ...] = ("return",)
        try:
            for value_name, text in function.values:
                part = ("values", value_name)
                env[value_name] = self.run(parse(text), env)
            part = ("return",)
            result = self.run(parse(function.returns), env)
        except ExprError as exc:
            at = f" at {function.where(part)}" if function.where is not None else ""
            what = f"value {part[1]!r}" if part[0] == "values" else "its return"
            raise ExprError(f"{called}: {what}{at}: {exc}") from None
        finally:
            self.depth -= 1
        if isinstance(result, bool) != (function.type == "bool") or not isinstance(result, _TYPES[function.type]):
            at = f" at {function.where(('return',))}" if function.where is not None else ""
            raise ExprError(f"{called} returns {type(result).__name__} {result!r}, but it is declared "
                            f"to return {function.type}{at}; make it {function.type} (`int(...)`, `round(...)`), "
                            "or declare the type it gives")  # fmt: skip
        return result


def _binary(kind: str, left: Any, right: Any, tree: Expr) -> Any:
    try:
        if kind == "+":
            return left + right
        if kind == "-":
            return left - right
        if kind == "*":
            return left * right
        if kind == "/":
            return left / right
        if kind == "//":
            return left // right
        if kind == "%":
            return left % right
        if kind == "**":
            if abs(right) > MAX_EXPONENT:
                raise ExprError(f"{render(tree)}: the exponent {right!r} is beyond {MAX_EXPONENT} in magnitude")
            result = left**right
            if isinstance(result, complex):
                raise ExprError(f"{render(tree)} is not a real number ({left!r} ** {right!r})")
            return result
        if kind == "<":
            return left < right
        if kind == "<=":
            return left <= right
        if kind == ">":
            return left > right
        return left >= right
    except ZeroDivisionError:
        raise ExprError(f"{render(tree)} divides by zero") from None
    except OverflowError:
        raise ExprError(f"{render(tree)} is too large ({left!r} {kind} {right!r})") from None


def _call(function: str, args: list[Any]) -> Any:
    for arg in args:
        _numeric(arg, f"{function}()")
    if function in ("min", "max"):
        return min(args) if function == "min" else max(args)
    if function == "round":
        if len(args) == 2 and (not isinstance(args[1], int) or abs(args[1]) > 2 * MAX_EXPONENT):
            raise ExprError(f"round()'s digits are an integer of at most {2 * MAX_EXPONENT}, not {args[1]!r}")
        return round(args[0]) if len(args) == 1 else round(args[0], args[1])
    if function == "int":
        return int(args[0])
    if function == "abs":
        return abs(args[0])
    if function == "sqrt":
        if args[0] < 0:
            raise ExprError(f"sqrt() of a negative number ({args[0]!r})")
        return math.sqrt(args[0])
    return math.ceil(args[0]) if function == "ceil" else math.floor(args[0])


def _checked(value: Any, tree: Expr) -> Any:
    """``value`` within the bounds: an integer at most 2**63 in magnitude, a float finite."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise ExprError(f"{render(tree)} is too large: {_short(value)} (integers are at most 2**63 in magnitude)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ExprError(f"{render(tree)} is not a finite number ({value!r})")
    return value


def _short(value: int) -> str:
    text = str(value)
    return text if len(text) <= 30 else f"{text[:12]}...({len(text)} digits)"


def _numeric(value: Any, op: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExprError(f"{op} needs numbers, not {type(value).__name__} {value!r}")
    return value


def _scalar(value: Any, op: str) -> None:
    if value is not None and not isinstance(value, bool | int | float | str):
        raise ExprError(f"{op} compares numbers, booleans, strings or None, not {value!r}")


def _truth(value: Any, op: str) -> bool:
    _scalar(value, f"`{op}`")
    return bool(value)


def renamed(tree: Expr, spelled: Mapping[str, str]) -> Expr:
    """``tree`` with each name written as ``spelled`` says (``height`` as ``x.size(2)``): for
    writing it back as source only."""
    kind = tree[0]
    if kind == "name":
        return ("name", spelled.get(tree[1], tree[1]))
    if kind in ("num", "bool"):
        return tree
    if kind == "call":
        return ("call", tree[1], *(renamed(arg, spelled) for arg in tree[2:]))
    return (kind, *(renamed(arg, spelled) for arg in tree[1:]))


_INVERSE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def negated(tree: Expr) -> Expr:
    """``not tree``, a comparison written as its inverse (``a != b`` for ``not a == b``: sizes
    are integers, so the two agree)."""
    if tree[0] in _INVERSE:
        return (_INVERSE[tree[0]], tree[1], tree[2])
    if tree[0] == "not":
        return tree[1]
    if tree[0] in _PRESENCE:
        return ("is not" if tree[0] == "is" else "is", tree[1])
    return ("not", tree)


# -- writing back ----------------------------------------------------------------------------
def render(tree: Expr) -> str:
    """``tree`` as spec text (``ceil(x)``), spaced as black spaces it."""
    return _join(_emit(tree, {}))


def source(tree: Expr, spelled: Mapping[str, str] | None = None) -> str:
    """``tree`` as Python source (``math.ceil(x)``: a file holding it imports ``modules(tree)``),
    spaced as black spaces it; ``spelled`` writes names otherwise (``forward`` reads an argument
    as ``self.n``)."""
    names_as = {_NAME_KEY + name: text for name, text in (spelled or {}).items()}
    return _join(_emit(tree, {**_PYTHON_NAMES, **names_as} if names_as else _PYTHON_NAMES))


_NAME_KEY = "name:"  # a name's spelling in ``_emit``'s table, next to the functions' (no function has a colon)


# The least binding strength each operand needs without parentheses: (left, right) of a binary
# kind; a comparison's operands may not be comparisons (no chains), a ``**``'s left is a primary.
def _needs(kind: str) -> tuple[int, int]:
    level = _LEVEL[kind]
    if kind in _COMPARISONS:
        return level + 1, level + 1
    if kind == "**":
        return _ATOM, _LEVEL["neg"]
    return level, level + 1


def _level(tree: Expr) -> int:
    kind = tree[0]
    if kind == "num" and tree[1] < 0:
        return _LEVEL["neg"]  # a negative number (made in memory, never parsed) reads as -x
    return _LEVEL.get(kind, _ATOM)


def _emit(tree: Expr, spelled: Mapping[str, str], least: int = 0) -> list[tuple[str, str]]:
    """Tokens of ``tree`` as ``(type, text)``, type NAME, NUMBER, or the operator itself;
    parenthesised when its binding strength is below ``least``."""
    kind = tree[0]
    if kind == "num":
        value = tree[1]
        text = repr(value).replace("e+", "e") if isinstance(value, float) else repr(value)
        out = [("-", "-"), ("NUMBER", text[1:])] if text.startswith("-") else [("NUMBER", text)]
    elif kind == "bool":
        out = [("NAME", str(tree[1]))]
    elif kind == "name":
        out = [("NAME", spelled.get(_NAME_KEY + tree[1], tree[1]))]
    elif kind == "neg":
        # black's visit_factor: a unary minus of a power whose base has no call gets parentheses
        power = tree[1][0] == "**" and tree[1][1][0] != "call"
        out = [("-", "-"), *_emit(tree[1], spelled, _ATOM if power else _LEVEL["neg"])]
    elif kind == "not":
        out = [("NAME", "not"), *_emit(tree[1], spelled, _LEVEL["not"])]
    elif kind in _PRESENCE:
        out = [*_emit(tree[1], spelled), *[("NAME", word) for word in kind.split()], ("NAME", "None")]
    elif kind == "if":
        out = [*_emit(tree[1], spelled, 1), ("NAME", "if"), *_emit(tree[2], spelled, 1), ("NAME", "else"),
               *_emit(tree[3], spelled, 0)]  # fmt: skip
    elif kind == "call":
        name = spelled.get(tree[1], tree[1])
        out = [("NAME", part) if part != "." else (".", ".") for part in re.split(r"(\.)", name)]
        out.append(("(", "("))
        for i, arg in enumerate(tree[2:]):
            if i:
                out.append((",", ","))
            out.extend(_emit(arg, spelled, 0))
        out.append((")", ")"))
    else:
        left, right = _needs(kind)
        word = "NAME" if kind in ("and", "or") else kind
        out = [*_emit(tree[1], spelled, left), (word, kind), *_emit(tree[2], spelled, right)]
    if _level(tree) < least:
        return [("(", "("), *out, (")", ")")]
    return out


def _join(tokens: list[tuple[str, str]]) -> str:
    """Tokens spaced as black spaces them: binary operators and words between spaces, unary
    minus, calls and parentheses tight, ``**`` hugged between simple operands (black's
    ``is_simple_power_operand``, as ``fxgen.blackstyle.power`` ports it)."""
    return "".join(("" if _tight(tokens, i) else " ") + value for i, (_, value) in enumerate(tokens))


def _tight(tokens: list[tuple[str, str]], i: int) -> bool:
    """No space before token ``i``."""
    kind = tokens[i][0]
    if i == 0 or tokens[i - 1][0] in ("(", ".") or kind in (")", ",", "."):
        return True
    before, value = tokens[i - 1]
    if kind == "(" and before == "NAME" and value not in _WORDS:
        return True  # a call
    if before == "-" and _unary(tokens, i - 1):
        return True
    if kind == "**":
        return _simple(tokens, i - 1, -1) and _simple(tokens, i + 1, 1)
    return before == "**" and _simple(tokens, i - 2, -1) and _simple(tokens, i, 1)


def _unary(tokens: list[tuple[str, str]], i: int) -> bool:
    """Is the ``-`` at ``i`` a unary minus (at the start, or after an operator, a word or ``(``)?"""
    if i == 0:
        return True
    kind, value = tokens[i - 1]
    return kind not in ("NAME", "NUMBER", ")") or (kind == "NAME" and value in _WORDS - {"True", "False"})


def _simple(tokens: list[tuple[str, str]], i: int, direction: int) -> bool:
    """Black's simple power operand: a NAME or NUMBER (a unary minus before it on the right)
    that is not called or subscripted (looking forward through names, dots and words)."""
    if not 0 <= i < len(tokens):
        return False
    kind = tokens[i][0]
    if direction == 1 and kind == "-" and i + 1 < len(tokens) and tokens[i + 1][0] in ("NAME", "NUMBER"):
        i += 1
        kind = tokens[i][0]
    if kind not in ("NAME", "NUMBER"):
        return False
    if direction == -1:
        return True  # the leaf before ``**`` ends a primary: a name or number without a call after it
    while i < len(tokens):
        kind = tokens[i][0]
        if kind in ("(", "["):
            return False
        if kind not in ("NAME", "."):
            return True
        i += 1
    return True
