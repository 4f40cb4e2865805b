"""The statements fxgen writes, as the token list ``fxgen.blackstyle.linegen`` runs black's rules on.

A small scanner (names, numbers, single-line string literals as ``fxgen.codegen.render.string``
writes them, ``...`` and operators) and a recursive-descent check of the shapes: ``target =
expression``, ``return expression``, bare calls (:func:`parse`) and ``def name(params) ->
annotation:`` signatures (:func:`parse_def`). Each leaf carries what black reads from its syntax
tree: whether a bracket belongs to a trailer (call, subscript, parameter list) or an atom
(tuple, list, dict, parenthesized operand), the invisible parentheses black puts around the
right-hand side and the return annotation, the delimiter priority of a binary operator
(``black.brackets.is_split_before_delimiter``; unary operators have none) and whether a leaf
is part of an annotation. Anything else raises :class:`Unsupported` (the caller uses black):
comments, keywords (but the ``for`` and ``in`` of ``[item for name in values]`` and the ``if``
and ``else`` of a conditional expression), implicit string concatenation, trailing commas,
redundant parentheses,
operators inside subscripts, a unary operator on a power (black adds parentheses), spacing
black would change.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterator

__all__ = [
    "BRACKET",
    "BRACKETS",
    "CLOSING",
    "OPENING",
    "UNARY",
    "Leaf",
    "Unsupported",
    "parse",
    "parse_def",
]


OPENING = frozenset("([{")


CLOSING = frozenset(")]}")


BRACKETS = OPENING | CLOSING


BRACKET = {"(": ")", "[": "]", "{": "}"}


_TOKEN = re.compile(
    r"""(?P<space>[ ]*)(?:
      (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<number>[0-9]+(?:\.[0-9]*)?(?:e[-+]?[0-9]+)?|\.[0-9]+(?:e[-+]?[0-9]+)?)
    | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    | (?P<op>->|\.\.\.|\*\*|//|<<|>>|<=|>=|==|!=|[()\[\]{},.=:+\-*/%&|^~@<>])
    )""",
    re.VERBOSE,
)


COMPARATOR_PRIORITY = 10


COMPREHENSION_PRIORITY = 20  # black.brackets: a break before a comprehension's ``for``


TERNARY_PRIORITY = 16  # black.brackets: a break before a conditional expression's ``if`` and ``else``


# black.brackets.MATH_PRIORITIES and COMPARATORS: the priority of a line break before a binary operator
BINARY = {
    "|": 9, "^": 8, "&": 7, "<<": 6, ">>": 6, "+": 5, "-": 5, "*": 4, "/": 4, "//": 4, "%": 4, "@": 4, "**": 2,
    "<": COMPARATOR_PRIORITY, ">": COMPARATOR_PRIORITY, "==": COMPARATOR_PRIORITY, "!=": COMPARATOR_PRIORITY,
    "<=": COMPARATOR_PRIORITY, ">=": COMPARATOR_PRIORITY,
}  # fmt: skip


UNARY = frozenset("+-~")


_KEYWORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)


_KEYWORD_VALUES = frozenset({"None", "True", "False"})


class Unsupported(Exception):
    """The statement is not a shape this module reproduces: use black."""


class Leaf:
    """A token with the tree facts black's splitting reads, and the state it mutates."""

    __slots__ = (
        "annotation", "bracket_depth", "created", "index", "opening_bracket", "prefix", "priority", "space",
        "trailer", "type", "value",
    )  # fmt: skip

    def __init__(self, type_: str, value: str, space: str, trailer: bool = False, priority: int = 0) -> None:
        self.type = type_  # "NAME", "NUMBER", "STRING", "def" or the operator itself
        self.value = value  # "" for invisible parentheses
        self.prefix = ""
        self.space = space  # black's whitespace(leaf): the source is black-spaced already
        # a bracket of a call/subscript trailer or parameter list (not an atom's), or a comma
        # directly inside a call's or parameter list's parentheses (black: in an arglist/typedargslist)
        self.trailer = trailer
        self.priority = priority  # a binary operator's delimiter priority (set on the leaf before it)
        self.annotation = ""  # black.nodes.get_annotation_type: "param", "return" or ""
        self.created = False  # made by a split (black's new leaves have no parent in the tree)
        self.opening_bracket: Leaf | None = None
        self.bracket_depth = 0
        self.index = -1  # position in the statement's leaves (copies keep it)

    def copy(self) -> Leaf:
        """A fresh leaf with the same token facts (black.linegen.append_leaves, Leaf.clone)."""
        leaf = Leaf(self.type, self.value, self.space, self.trailer, self.priority)
        leaf.annotation = self.annotation
        leaf.created = self.created
        leaf.index = self.index
        leaf.bracket_depth = self.bracket_depth
        return leaf

    def __str__(self) -> str:
        return self.prefix + self.value


def parse(statement: str) -> list[Leaf]:
    """The leaves of ``statement``, with black's invisible parentheses; raises Unsupported."""
    return _numbered(_Parser(statement).leaves())


def parse_def(signature: str) -> list[Leaf]:
    """The leaves of ``def name(params) -> annotation:`` as ``fxgen.codegen.render.signature`` writes
    it: parameters ``name``, ``name=default``, ``name: annotation [= default]``, an optional
    return annotation in black's invisible parentheses; raises Unsupported."""
    return _numbered(_Parser(signature).signature())


def _numbered(leaves: list[Leaf]) -> list[Leaf]:
    for i, leaf in enumerate(leaves):
        leaf.index = i
    return leaves


class _Parser:
    """Recursive descent over the token list; raises Unsupported for anything outside
    ``[target =] expr``, ``return expr``, bare calls and fxgen's ``def`` signatures, and records
    which brackets are trailers (calls, subscripts) and where black puts invisible parentheses."""

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
        self.subscripts = 0  # open subscript brackets: no binary operators inside (black's complex subscripts)
        self.annotation = ""  # the annotation being read: "param", "return" or ""

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
                if target[0].type != "NAME" or any(leaf.priority for leaf in target):
                    raise Unsupported("assignment target")
                self._expect_space(" ")
                self._take("=")
                self._expect_space(" ")
                self._optional_parens(self.pos)
            else:
                self._bare_expression()
        if self.pos != len(tokens):
            raise Unsupported("trailing tokens")
        return self.out

    def signature(self) -> list[Leaf]:
        if self.tokens[:1] != [("NAME", "def", "")]:
            raise Unsupported("not a def")
        self.pos = 1
        self._append(Leaf("def", "def", ""))
        self._expect_space(" ")
        self._name()
        self._take("(", trailer=True)  # black: a ``parameters`` node, not an atom
        if self._sequence(")", self._parameter, trailer=True)[1]:
            raise Unsupported("trailing comma")
        if self._peek() == "->":
            self._expect_space(" ")
            self._take("->")
            self._expect_space(" ")
            # black.linegen.LineGenerator.visit_funcdef: invisible parentheses around it
            self.annotation = "return"
            self._append(Leaf("(", "", " "))
            self.tokens[self.pos] = (*self.tokens[self.pos][:2], "")
            self._annotation()
            self._append(Leaf(")", "", ""))
            self.annotation = ""
        self._take(":")
        if self.pos != len(self.tokens):
            raise Unsupported("trailing tokens")
        return self.out

    def _bare_expression(self) -> None:
        """An expression statement: black.linegen.LineGenerator.visit_simple_stmt puts invisible
        parentheses around it when it is ``is_arith_like`` (its lowest-precedence operator is
        ``+ - << >> & ^``; not ``|``, ``*``, ``**`` or a comparison) and nowhere else."""
        if self.out[0].type == "STRING":
            raise Unsupported("a bare string")  # a docstring where it stands first
        depth = 0
        top = 0
        for leaf in self.out:
            depth -= leaf.type in CLOSING
            if depth == 0:
                top = max(top, leaf.priority)
            depth += leaf.type in OPENING
        if BINARY["+"] <= top <= BINARY["^"]:
            self.out.insert(0, Leaf("(", "", ""))
            self.out.append(Leaf(")", "", ""))

    # -- helpers
    def _peek(self, offset: int = 0) -> str:
        try:
            return self.tokens[self.pos + offset][0]
        except IndexError:
            return ""

    def _expect_space(self, space: str) -> None:
        if self.pos < len(self.tokens) and self.tokens[self.pos][2] != space:
            raise Unsupported("spacing")

    def _append(self, leaf: Leaf) -> Leaf:
        leaf.annotation = self.annotation
        self.out.append(leaf)
        return leaf

    def _take(self, kind: str, *, trailer: bool = False, space: str | None = None, priority: int = 0) -> Leaf:
        if self._peek() != kind:
            raise Unsupported(f"expected {kind}")
        type_, value, source_space = self.tokens[self.pos]
        if source_space and (kind in CLOSING or kind in ",.:" or (kind in OPENING and trailer)):
            raise Unsupported("spacing")
        self.pos += 1
        return self._append(Leaf(type_, value, source_space if space is None else space, trailer, priority))

    def _name(self) -> None:
        if self._peek() != "NAME" or self.tokens[self.pos][1] in _KEYWORDS:
            raise Unsupported("expected a name")
        self._take("NAME")

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
    def _expression(self, ternary: bool = True) -> None:
        """An operation, or a conditional expression ``a if cond else b`` (where the grammar has
        a ``test``: not a comprehension's iterable). black.linegen.LineGenerator.visit_test puts
        invisible parentheses around a conditional expression unless its sibling before is a
        ``(``: the right-hand side's invisible one, or a call's or atom's whose only item it is
        (in ``f(a, b)`` the items' sibling before is none, in an arglist); a break before its
        ``if`` and ``else`` has TERNARY_PRIORITY."""
        start = len(self.out)
        self._operation()
        if not (ternary and self._peek() == "NAME" and self.tokens[self.pos][1] == "if"):
            return
        if self.subscripts:
            raise Unsupported("a conditional expression in a subscript")
        for keyword_, part in (("if", self._operation), ("else", self._expression)):
            if self._peek() != "NAME" or self.tokens[self.pos][1] != keyword_:
                raise Unsupported(f"expected {keyword_}")
            self._expect_space(" ")
            self._take("NAME", priority=TERNARY_PRIORITY)
            self._expect_space(" ")
            part()
        before = self.out[start - 1] if start else None
        if before is None or before.type != "(" or (before.value and self._peek() != ")"):
            lpar = Leaf("(", "", self.out[start].space)
            lpar.annotation = self.annotation
            self.out[start].space = ""
            self.out.insert(start, lpar)
            self._append(Leaf(")", "", ""))

    def _operation(self) -> None:
        """Operands joined by binary operators (black's priorities only read the operator)."""
        unary = self._operand()
        while self._peek() in BINARY:
            kind = self._peek()
            if self.subscripts and not self.annotation:
                # black spaces such slices differently; an annotation has no slices
                raise Unsupported("an operator in a subscript")
            if kind == "**":
                if unary:
                    raise Unsupported("a unary operator on a power")  # black adds parentheses
                # black's whitespace() puts spaces around ``**``; hug_power_op removes them later
                space = self.tokens[self.pos][2]
                self._take("**", space=" ", priority=BINARY[kind])
                self._expect_space(space)
                self.tokens[self.pos] = (*self.tokens[self.pos][:2], " ")
            else:
                self._expect_space(" ")
                self._take(kind, priority=BINARY[kind])
                self._expect_space(" ")
            unary = self._operand()

    def _operand(self) -> bool:
        """An atom with its trailers, after unary operators; True if there were some."""
        unary = False
        while self._peek() in UNARY:
            self._take(self._peek())
            self._expect_space("")
            unary = True
        self._atom(unary)
        while self._peek() in (".", "(", "["):
            previous = self.out[-1]
            if previous.type in ("NUMBER", "STRING", "."):
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
                self.subscripts += 1
                if self._sequence("]", self._subscript, trailer=True)[1]:
                    raise Unsupported("trailing comma")
                self.subscripts -= 1
        return unary

    def _atom(self, after_unary: bool = False) -> None:
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
        elif kind == "...":  # black's tree has three DOT leaves, never delimiters
            space = self.tokens[self.pos][2]
            self.pos += 1
            for i in range(3):
                self._append(Leaf(".", ".", "" if i else space))
        elif kind == "(":
            operand = bool(self.out) and self.out[-1].priority > 0  # right after a binary operator
            self._take("(")
            count, trailing = self._sequence(")", self._expression)
            operand = operand or self._peek() in BINARY
            if count == 1 and not trailing and not (after_unary or operand or self._peek() in (".", "[", "**")):
                # black may drop parentheses that are not an operand's; fxgen writes them only there
                raise Unsupported("parenthesized expression")
            if trailing and count != 1:
                raise Unsupported("trailing comma")
        elif kind == "[" and self._comprehension_ahead():
            self._take("[")
            self._expect_space("")
            self._expression()
            while self._peek() == "NAME" and self.tokens[self.pos][1] == "for":  # each ``for`` clause
                self._expect_space(" ")
                self._take("NAME", priority=COMPREHENSION_PRIORITY)  # for
                self._expect_space(" ")
                self._loop_variable()
                while self._peek() == ",":  # ``for t, c in rows``: a tuple of names, unparenthesized
                    self._take(",")
                    self._expect_space(" ")
                    self._loop_variable()
                if self._peek() != "NAME" or self.tokens[self.pos][1] != "in":
                    raise Unsupported("a comprehension other than [item for names in values ...]")
                self._expect_space(" ")
                self._take("NAME")  # in
                self._expect_space(" ")
                self._expression(ternary=False)  # an or_test: `if` there would begin a comprehension's condition
            self._take("]")
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

    def _loop_variable(self) -> None:
        if self._peek() != "NAME" or keyword.iskeyword(self.tokens[self.pos][1]):
            raise Unsupported("a loop variable")
        self._take("NAME")  # a name, or ``_``

    def _comprehension_ahead(self) -> bool:
        """Is the list opening here ``[item for name in values]`` (a ``for`` at its own depth)?"""
        depth = 0
        for kind, value, _ in self.tokens[self.pos :]:
            depth += kind in OPENING
            depth -= kind in CLOSING
            if depth == 0:
                return False
            if depth == 1 and kind == "NAME" and value == "for":
                return True
        return False

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
            # black.nodes.is_one_sequence_between counts a comma whose parent is an arglist or
            # typedargslist twice: mark the commas of a call's or a parameter list's parentheses
            self._take(",", trailer=trailer and closing == ")")
            if self._peek() == closing:
                trailing = True
            else:
                self._expect_space(" ")
        self._take(closing, trailer=trailer)
        return count, trailing

    def _argument(self) -> None:
        if self._peek() in ("*", "**"):  # ``*items``: black.nodes.is_vararg, no delimiter
            self._take(self._peek())
            self._expect_space("")
            self._expression(ternary=False)  # a star_expr takes an expr
            return
        if self._peek() == "NAME" and self._peek(1) == "=":
            self._take("NAME")
            self._expect_space("")
            self._take("=")
            self._expect_space("")
        self._expression()

    def _parameter(self) -> None:
        self._name()
        if self._peek() == ":":
            self._take(":")
            self._expect_space(" ")
            self.annotation = "param"
            self._annotation()
            self.annotation = ""
            if self._peek() == "=":
                self._expect_space(" ")
                self._take("=")
                self._expect_space(" ")
                self._expression()
        elif self._peek() == "=":
            self._expect_space("")
            self._take("=")
            self._expect_space("")
            self._expression()

    def _annotation(self) -> None:
        """A type expression as ``fxgen.codegen.render.annotation`` allows: names, attributes,
        subscripts, lists, ``...`` and ``|`` unions (no strings, numbers, calls or other operators)."""
        mark = len(self.out)
        self._expression()
        if any(leaf.type not in _ANNOTATION for leaf in self.out[mark:]) or self.out[mark].type == "[":
            raise Unsupported("annotation")

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
            self._append(Leaf(":", ":", self.tokens[self.pos][2]))
            self.pos += 1
            if self._peek() not in (":", ",", "]"):
                self._expression()


_ANNOTATION = frozenset({"NAME", ".", "[", "]", ",", "|"})

