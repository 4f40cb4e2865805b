"""The statements fxgen writes, as the token list ``fxgen._split`` runs black's rules on.

A small scanner (names, numbers, single-line string literals as ``fxgen._render.string``
writes them, and the operators ``()[]{},.=:-``) and a recursive-descent check of the shapes:
``target = expression``, ``return expression`` and bare calls. Each leaf carries what black
reads from its syntax tree: whether a bracket belongs to a trailer (call, subscript) or an atom
(tuple, list, dict), and the invisible parentheses black puts around the right-hand side.
Anything else raises :class:`Unsupported` (the caller uses black): operators, ``...``,
comments, keywords, implicit string concatenation, trailing commas, parenthesized expressions,
spacing black would change.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterator

__all__ = ["BRACKET", "BRACKETS", "CLOSING", "OPENING", "Leaf", "Unsupported", "parse"]

OPENING = frozenset("([{")
CLOSING = frozenset(")]}")
BRACKETS = OPENING | CLOSING
BRACKET = {"(": ")", "[": "]", "{": "}"}
_TOKEN = re.compile(
    r"""(?P<space>[ ]*)(?:
      (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<number>[0-9]+(?:\.[0-9]*)?(?:e[-+]?[0-9]+)?|\.[0-9]+(?:e[-+]?[0-9]+)?)
    | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    | (?P<op>[()\[\]{},.=:-])
    )""",
    re.VERBOSE,
)
_KEYWORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
_KEYWORD_VALUES = frozenset({"None", "True", "False"})


class Unsupported(Exception):
    """The statement is not a shape this module reproduces: use black."""


class Leaf:
    """A token with the tree facts black's splitting reads, and the state it mutates."""

    __slots__ = ("bracket_depth", "index", "opening_bracket", "prefix", "space", "trailer", "type", "value")

    def __init__(self, type_: str, value: str, space: str, trailer: bool = False) -> None:
        self.type = type_  # "NAME", "NUMBER", "STRING" or the operator itself
        self.value = value  # "" for invisible parentheses
        self.prefix = ""
        self.space = space  # black's whitespace(leaf): the source is black-spaced already
        self.trailer = trailer  # a bracket of a call/subscript trailer (not an atom's)
        self.opening_bracket: Leaf | None = None
        self.bracket_depth = 0
        self.index = -1  # position in the statement's leaves (copies keep it)

    def __str__(self) -> str:
        return self.prefix + self.value


def parse(statement: str) -> list[Leaf]:
    """The leaves of ``statement``, with black's invisible parentheses; raises Unsupported."""
    leaves = _Parser(statement).leaves()
    for i, leaf in enumerate(leaves):
        leaf.index = i
    return leaves


class _Parser:
    """Recursive descent over the token list; raises Unsupported for anything outside
    ``[target =] expr``, ``return expr`` and bare calls, and records which brackets are trailers
    (calls, subscripts) and where black puts invisible parentheses."""

    def __init__(self, statement: str) -> None:
        self.tokens: list[tuple[str, str, str]] = []  # (type, value, space before)
        end = 0
        for m in _TOKEN.finditer(statement):
            if m.start() != end:
                raise Unsupported(statement[end:])
            end = m.end()
            space, name, number, string, op = m.groups()
            if op is not None:
                self.tokens.append((op, op, space))
            elif name is not None:
                self.tokens.append(("NAME", name, space))
            elif number is not None:
                self.tokens.append(("NUMBER", number, space))
            else:
                self.tokens.append(("STRING", string, space))
        if end != len(statement):
            raise Unsupported(statement[end:])
        self.pos = 0
        self.out: list[Leaf] = []

    def leaves(self) -> list[Leaf]:
        tokens = self.tokens
        if not tokens:
            raise Unsupported("empty")
        if tokens[0][1] == "return":
            self._take("NAME")
            self._expect_space(" ")
            self._optional_parens(self.pos)
        else:
            start = len(self.out)
            self._expression()
            if self.pos < len(tokens) and tokens[self.pos][0] == "=":
                target = self.out[start:]
                if target[0].type != "NAME":
                    raise Unsupported("assignment target")
                self._expect_space(" ")
                self._take("=")
                self._expect_space(" ")
                self._optional_parens(self.pos)
            elif not (self.out[-1].type == ")" and self.out[-1].trailer):
                raise Unsupported("a bare expression that is not a call")
        if self.pos != len(tokens):
            raise Unsupported("trailing tokens")
        return self.out

    # -- helpers
    def _peek(self, offset: int = 0) -> str:
        try:
            return self.tokens[self.pos + offset][0]
        except IndexError:
            return ""

    def _expect_space(self, space: str) -> None:
        if self.pos < len(self.tokens) and self.tokens[self.pos][2] != space:
            raise Unsupported("spacing")

    def _take(self, kind: str, *, trailer: bool = False, space: str | None = None) -> Leaf:
        if self._peek() != kind:
            raise Unsupported(f"expected {kind}")
        type_, value, source_space = self.tokens[self.pos]
        if source_space and (kind in CLOSING or kind in ",.:" or (kind in OPENING and trailer)):
            raise Unsupported("spacing")
        leaf = Leaf(type_, value, source_space if space is None else space, trailer)
        self.out.append(leaf)
        self.pos += 1
        return leaf

    def _optional_parens(self, start: int) -> None:
        """The expression after ``=``/``return``, in black's invisible parentheses unless it
        is a bracketed atom with a comma inside (a tuple, list or dict literal)."""
        tokens = self.tokens
        if start >= len(tokens):
            raise Unsupported("nothing after = or return")
        space = tokens[start][2]
        lpar = Leaf("(", "", space)
        self.out.append(lpar)
        mark = len(self.out)
        self.tokens[start] = (tokens[start][0], tokens[start][1], "")
        self._expression()
        body = self.out[mark:]
        if body[0].type in OPENING and body[-1].type == BRACKET[body[0].type] and self._encloses(body):
            if any(leaf.type == "," for leaf in self._top_level(body)):
                del self.out[mark - 1]
                body[0].space = space
                return
            if body[0].type == "(":
                raise Unsupported("redundant parentheses")
        self.out.append(Leaf(")", "", ""))

    @staticmethod
    def _encloses(body: list[Leaf]) -> bool:
        depth = 0
        for i, leaf in enumerate(body):
            depth += leaf.type in OPENING
            depth -= leaf.type in CLOSING
            if depth == 0 and i != len(body) - 1:
                return False
        return True

    @staticmethod
    def _top_level(body: list[Leaf]) -> Iterator[Leaf]:
        depth = 0
        for leaf in body:
            depth -= leaf.type in CLOSING
            if depth == 1:
                yield leaf
            depth += leaf.type in OPENING

    # -- grammar
    def _expression(self) -> None:
        if self._peek() == "-":
            self._take("-")
            self._expect_space("")
            self._expression()
            return
        self._atom()
        while self._peek() in (".", "(", "["):
            previous = self.out[-1]
            if previous.type in ("NUMBER", "STRING"):
                raise Unsupported("trailer on a literal")
            if self._peek() == ".":
                self._take(".")
                self._expect_space("")
                self._take("NAME")
            elif self._peek() == "(":
                self._take("(", trailer=True)
                if self._sequence(")", self._argument, trailer=True)[1]:
                    raise Unsupported("trailing comma")
            else:
                self._take("[", trailer=True)
                if self._sequence("]", self._subscript, trailer=True)[1]:
                    raise Unsupported("trailing comma")

    def _atom(self) -> None:
        kind = self._peek()
        if kind == "NAME":
            value = self.tokens[self.pos][1]
            if value in _KEYWORDS and value not in _KEYWORD_VALUES:
                raise Unsupported("keyword")
            self._take("NAME")
        elif kind in ("NUMBER", "STRING"):
            self._take(kind)
            if self._peek() == "STRING":
                raise Unsupported("implicit concatenation")
        elif kind == "(":
            self._take("(")
            count, trailing = self._sequence(")", self._expression)
            if count == 1 and not trailing:
                raise Unsupported("parenthesized expression")  # black may drop or keep them
            if trailing and count != 1:
                raise Unsupported("trailing comma")
        elif kind == "[":
            self._take("[")
            if self._sequence("]", self._expression)[1]:
                raise Unsupported("trailing comma")
        elif kind == "{":
            self._take("{")
            if self._sequence("}", self._dict_item)[1]:
                raise Unsupported("trailing comma")
        else:
            raise Unsupported(f"unexpected {kind!r}")

    def _sequence(self, closing: str, item: Callable[[], None], trailer: bool = False) -> tuple[int, bool]:
        """Comma-separated items up to ``closing``: (count, has a trailing comma)."""
        self._expect_space("")
        count = 0
        trailing = False
        while self._peek() != closing:
            item()
            count += 1
            if self._peek() != ",":
                break
            self._take(",")
            if self._peek() == closing:
                trailing = True
            else:
                self._expect_space(" ")
        self._take(closing, trailer=trailer)
        return count, trailing

    def _argument(self) -> None:
        if self._peek() == "NAME" and self._peek(1) == "=":
            self._take("NAME")
            self._expect_space("")
            self._take("=")
            self._expect_space("")
        self._expression()

    def _dict_item(self) -> None:
        self._expression()
        self._take(":")
        self._expect_space(" ")
        self._expression()

    def _subscript(self) -> None:
        if self._peek() not in (":", ",", "]"):
            self._expression()
        for _ in range(2):
            if self._peek() != ":":
                break
            self.out.append(Leaf(":", ":", self.tokens[self.pos][2]))
            self.pos += 1
            if self._peek() not in (":", ",", "]"):
                self._expression()


