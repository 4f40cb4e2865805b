"""Argument expressions: ``{arg: cout * 4}`` in a format-2 declaration.

A small grammar, parsed here and never by ``eval``::

    expr   := term (("+" | "-") term)*
    term   := factor (("*" | "//" | "%") factor)*
    factor := NUMBER | NAME | "(" expr ")" | "-" factor

NAME is an argument of the enclosing class; NUMBER an integer or a decimal number. The parsed
form is a tree of tuples (``("name", "cout")``, ``("num", 4)``, ``("*", left, right)``,
``("neg", operand)``) that validation checks, the build evaluates with the class's argument
values, and the code generator writes back as source (the same expression, spaced as black
spaces it, parenthesised only where the grammar needs it): generated code contains only
validated argument names, numbers and these operators.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["Expr", "ExprError", "evaluate", "names", "parse", "render"]

Expr = tuple[Any, ...]

_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>//|[-+*%()]))")
_MAX_LENGTH = 200  # an argument expression is a short formula, not a program
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "//": 2, "%": 2}


class ExprError(ValueError):
    """An expression that does not parse, names no argument, or cannot be evaluated."""


def parse(text: str) -> Expr:
    """The tree of ``text``; ExprError says what is wrong and where."""
    if not isinstance(text, str) or not text.strip():
        raise ExprError("an argument expression is a non-empty string such as `cout * 4`")
    if len(text) > _MAX_LENGTH:
        raise ExprError(f"an argument expression has at most {_MAX_LENGTH} characters")
    tokens = _tokens(text)
    parser = _Parser(tokens, text)
    tree = parser.expr()
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
        if match is None or match.end() == pos:
            raise ExprError(f"{text[pos:].strip()[:1]!r} is not allowed in {text!r}: use argument names, numbers, "
                            "+ - * // % and parentheses")  # fmt: skip
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

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ExprError(f"{self.text!r} ends too early")
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def expr(self) -> Expr:
        left = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            left = (op, left, self.term())
        return left

    def term(self) -> Expr:
        left = self.factor()
        while self.peek() in ("*", "//", "%"):
            op = self.take()[1]
            left = (op, left, self.factor())
        return left

    def factor(self) -> Expr:
        self.depth += 1
        if self.depth > 32:
            raise ExprError(f"{self.text!r} nests too deeply")
        try:
            kind, value = self.take()
            if kind == "num":
                return ("num", float(value) if "." in value else int(value))
            if kind == "name":
                if keyword.iskeyword(value):
                    raise ExprError(f"{value!r} is a Python keyword, not an argument name")
                return ("name", value)
            if value == "-":
                return ("neg", self.factor())
            if value == "(":
                inner = self.expr()
                if self.take()[1] != ")":
                    raise ExprError(f"a parenthesis is not closed in {self.text!r}")
                return inner
            raise ExprError(f"unexpected {value!r} in {self.text!r}")
        finally:
            self.depth -= 1


def names(tree: Expr) -> list[str]:
    """The argument names ``tree`` uses, in order of first use."""
    out: dict[str, None] = {}
    _collect(tree, out)
    return list(out)


def _collect(tree: Expr, out: dict[str, None]) -> None:
    if tree[0] == "name":
        out[tree[1]] = None
    elif tree[0] != "num":
        for child in tree[1:]:
            _collect(child, out)


def evaluate(tree: Expr, values: Mapping[str, Any]) -> Any:
    """The value of ``tree`` with the class's argument ``values`` (Python's own arithmetic)."""
    kind = tree[0]
    if kind == "num":
        return tree[1]
    if kind == "name":
        return values[tree[1]]
    if kind == "neg":
        operand = evaluate(tree[1], values)
        _numeric(operand, "-")
        return -operand
    left, right = evaluate(tree[1], values), evaluate(tree[2], values)
    _numeric(left, kind)
    _numeric(right, kind)
    try:
        if kind == "+":
            return left + right
        if kind == "-":
            return left - right
        if kind == "*":
            return left * right
        if kind == "//":
            return left // right
        return left % right
    except ZeroDivisionError:
        raise ExprError(f"{render(tree)} divides by zero") from None


def _numeric(value: Any, op: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExprError(f"{op} needs numbers, not {type(value).__name__} {value!r}")


def render(tree: Expr, parent: int = 0, *, right: bool = False) -> str:
    """``tree`` as Python source, spaced as black spaces it, with the parentheses it needs."""
    kind = tree[0]
    if kind == "num":
        return repr(tree[1])
    if kind == "name":
        return str(tree[1])
    if kind == "neg":
        inner = render(tree[1], 3)
        return f"-{inner}"
    precedence = _PRECEDENCE[kind]
    text = f"{render(tree[1], precedence)} {kind} {render(tree[2], precedence, right=True)}"
    # a right operand of equal precedence keeps its parentheses: a - (b - c), a // (b * c)
    return f"({text})" if precedence < parent or (right and precedence == parent) else text
