"""Black's split of the commonest long statements, decided from string lengths alone.

Most long lines fxgen writes are one shape: ``target = callee(arguments)`` (a constructor in
``__init__``, a function call in ``forward``), or ``return``/``target =`` a list, tuple or dict
literal, or a bare call, whose arguments are names, numbers, plain strings, keyword arguments
and nested calls, lists, tuples and dicts, with no operators, subscripts, trailing commas or
method calls on results. For that shape black's algorithm (which ``fxgen.blackstyle.linegen`` runs leaf by
leaf, about 0.1 ms a statement) reduces to three rules, each a branch of linegen.py that the
general port takes on these statements:

1. The statement splits at its last bracket pair (``rhs`` omits the invisible parentheses
   around the value, ``_prefer_split_rhs_oop_over_rhs``), provided ``target = callee(`` fits:
   ``target = callee(`` / the contents one level deeper (rule 2) / ``)``. When it does not fit,
   the call goes in parentheses instead: ``target = (`` / the call (rule 3) / ``)`` (for a
   plain target that is run_transformer's FORCE_OPTIONAL_PARENTHESES second opinion, for one
   with brackets the split black prefers).
2. A bracket's contents that do not fit, or that belong to a list, tuple or dict literal with
   two or more items (``_should_split_line``: collections explode), go one item per line with a
   trailing comma added (``delimiter_split``); a single item that does not fit is split as in 3.
3. An item that does not fit splits at its last bracket pair (``rhs`` with nothing omitted):
   ``head(`` / contents (rule 2) / ``)`` plus the item's comma.

A value without brackets (``target = a.b.c``, ``target = a + b``, ``return a < b``) that is too
long goes in black's invisible parentheses, made visible: ``target = (`` / the value / ``)``;
an operation that does not fit there either is split before its operator (``delimiter_split``):
``a`` / ``+ b``, each on a line of its own.

A call with no arguments that does not fit (``self.a.b.conv = _Helper()``) is wrapped the same
way, ``target = (`` / the call / ``)``, whatever the length of either line, when nothing before
its brackets has brackets of its own.

``format_str``'s second pass (the added commas are magic then) gives the same lines for this
shape: each exploded bracket now ends in a magic comma, so ``generate_trailers_to_omit`` stops
at the first one and ``rhs`` falls back to the same split. Anything else, including a head
that does not fit, returns None and goes to ``fxgen.blackstyle.linegen``. ``tests/test_split_fast.py``
checks this module against black and against the general port on statements drawn in these
shapes.
"""

from __future__ import annotations

import keyword
import re

from black.strings import str_width  # black's own width rule (east asian wide characters)

from fxgen.blackstyle.lines import LINE_LENGTH

__all__ = ["IDENTIFIER", "INDENT", "blank_strings", "fits", "split"]


INDENT = "    "


IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"


# ``target = ``: the target as fxgen writes it (attributes, integer and plain-string subscripts,
# ``getattr(self.a, "0")`` for a name that is not an identifier), or ``return ``: both put the
# value in black's invisible parentheses
_TARGET = re.compile(
    rf'return |(?:{IDENTIFIER}|getattr\({IDENTIFIER}(?:\.{IDENTIFIER}|\[[0-9]+\])*, "x*"\))(?:\.{IDENTIFIER}|\[[0-9]+\]|\["x*"\])* = '
)


# the callee: a dotted name, with integer subscripts (``layers[0].conv``)
_CALLEE = re.compile(rf"{IDENTIFIER}(?:\.{IDENTIFIER}|\[[0-9]+\])*")


# one binary operation on two names, as forward writes it (``**`` is hugged, not modelled)
_OPERATION = re.compile(
    rf"{IDENTIFIER}(?:\.{IDENTIFIER})* (?:[-+*/%@&|^<>]|//|<<|>>|==|!=|<=|>=) {IDENTIFIER}(?:\.{IDENTIFIER})*"
)


# a keyword as a word of its own (``return(x)``, ``not(x)``), or a soft keyword used as a name,
# which black's parser treats apart (so does fxgen.blackstyle.statement); _WORD finds the candidates first
_KEYWORDS = frozenset([*keyword.kwlist, *keyword.softkwlist]) - {"None", "True", "False"}


_KEYWORD = re.compile(rf"(?<![\w.])(?:{'|'.join(sorted(_KEYWORDS))})(?![\w=])")


_WORD = re.compile(IDENTIFIER)


# after the callee, outside strings: anything black would split or space differently, or that
# this module does not model (operators, spaces other than after ``,`` and ``:``, ``**``,
# subscripts, calls on results, attributes of results, trailing commas, ``==``, a ``-`` that is
# not unary or an exponent sign, a string prefix or implicit concatenation)
_REJECT = re.compile(  # each branch starts with a plain character, so the scan skips ahead fast
    r"""['\\*#;@&|^~<>!%/+`$?\t\n]|==| (?<![,:] )|:[^ ]|,(?! [^ ,)\]}])|[)\]}"][.(]|\[(?<=[\w)\]}"]\[)"""
    r"""|-(?<![(\[{ =e]-)"""
    r'|"(?<=\w")x*"'
)


_STRING = re.compile(r'"[^"\\\n]*"')


_STRUCTURE = re.compile(r"[()\[\]{}]|, |: ")


_NOT_BRACKET = re.compile(r"[^()\[\]{}]+")


_CLOSE = {"(": ")", "[": "]", "{": "}"}


# what may stand before an item's last bracket: a keyword or dict key, then a dotted callee
_ITEM_HEAD = re.compile(rf'(?:{IDENTIFIER}=|(?:"x*"|{IDENTIFIER}|[0-9]+): )?(?:{IDENTIFIER}(?:\.{IDENTIFIER})*)?')


def fits(text: str, depth: int) -> bool:
    """Whether ``text`` fits black's line length at ``depth`` levels of indentation."""
    return str_width(text) + 4 * depth <= LINE_LENGTH


def split(statement: str, depth: int) -> tuple[str, ...] | None:
    """Black's lines for ``statement`` at ``depth`` (without the indentation), or None when the
    statement is not one of the shapes described above."""
    blank = blank_strings(statement)
    target = _TARGET.match(blank)  # None: a bare call, which black puts in no parentheses
    value = target.end() if target else 0
    if not _KEYWORDS.isdisjoint(_WORD.findall(blank, value)) and _KEYWORD.search(blank, value):
        return None
    callee = _CALLEE.match(blank, value)
    start = callee.end() if callee else value  # the opening bracket of the call or literal
    if start == len(statement) or (blank[start] == " " and _OPERATION.fullmatch(blank, value)):
        # ``target = a.b.c`` or ``target = a + b``: black puts the value in parentheses
        body = statement[value:]
        if target is None or "[" in body:
            return None
        if fits(statement, depth):
            return (statement,)
        if " " not in body and "." not in body:
            return None  # a single name: black leaves the line long
        if fits(body, depth + 1):
            return _wrapped(statement[:value], (INDENT + body,), depth)
        # the operation does not fit either: delimiter_split breaks it before the operator
        left, _, right = body.partition(" ")  # ``a`` and ``+ b``; a dotted name has no space
        if not right or not (fits(left, depth + 1) and fits(right, depth + 1)):
            return None  # an operand black leaves long (not modelled here)
        return _wrapped(statement[:value], (INDENT + left, INDENT + right), depth)
    opening = blank[start]
    if (
        opening not in _CLOSE
        or (callee is None and target is None)
        or (callee is not None and opening != "(")
        or not statement.endswith(_CLOSE[opening])
        or _REJECT.search(blank, start)
    ):
        return None
    head, inner = statement[: start + 1], statement[start + 1 : -1]
    if not inner and not fits(statement, depth):
        # ``target = f()`` too long: black wraps the call in parentheses however long either
        # line is (format 2's ``self.a.b.conv = _Helper()``); a bracket before the call (a
        # subscript, ``getattr(...)``) is where black splits instead, left to the port
        if target is None or callee is None or any(c in blank[:start] for c in "[("):
            return None
        return (statement[:value] + "(", INDENT + statement[value:], ")")
    if callee is not None and fits(head, depth) and fits(inner, depth + 1) and _balanced(blank[start + 1 : -1]):
        # the commonest case, without the bracket tree
        return (statement,) if fits(statement, depth) else (head, INDENT + inner, ")")
    tree = _Brackets.scan(statement, blank, start)
    if tree is None or tree.close.get(start) != len(statement) - 1:
        return None
    # a list, dict or tuple literal explodes one item per line (rule 2); ``(x)`` is not a
    # tuple, and black would drop its parentheses
    explode = callee is None and bool(tree.commas[start])
    if callee is None and opening == "(" and not explode:
        return None
    if fits(statement, depth):
        return (statement,)
    lines = [head]
    if fits(head, depth):
        if not tree.body(start, depth + 1, INDENT, lines, explode):
            return None
        lines.append(statement[-1])
        return tuple(lines)
    # ``target = callee(`` is too long: black's FORCE_OPTIONAL_PARENTHESES second opinion (or,
    # for a target with brackets, the split it prefers) wraps the call in parentheses
    lines = []
    if (
        target is None
        or callee is None
        or "[" in blank[value:start]
        or not tree.item(value, len(statement), "", depth + 1, INDENT, lines)
    ):
        return None
    return _wrapped(statement[:value], tuple(lines), depth)


def _balanced(text: str) -> bool:
    """Whether the brackets in ``text`` (string contents hidden) pair up."""
    brackets = _NOT_BRACKET.sub("", text)
    while brackets:
        shorter = brackets.replace("()", "").replace("[]", "").replace("{}", "")
        if len(shorter) == len(brackets):
            return False
        brackets = shorter
    return True


def _wrapped(assign: str, body: tuple[str, ...], depth: int) -> tuple[str, ...] | None:
    """``target = (`` / body / ``)``, if the first line fits."""
    return (assign + "(", *body, ")") if fits(assign + "(", depth) else None


def blank_strings(text: str) -> str:
    """``text`` with the contents of its plain string literals hidden (same length), so that the
    structure regexes see no bracket, comma or keyword inside a string."""
    if '"' not in text:
        return text
    if "\\" in text or "\n" in text:
        return _STRING.sub(_blanked, text)
    # no escapes or line breaks: quotes pair up from the left, as _STRING matches them, so the
    # pieces between them alternate outside / inside (a last unpaired quote opens nothing)
    pieces = text.split('"')
    inside = slice(1, len(pieces) - 1, 2)
    pieces[inside] = ["x" * len(piece) for piece in pieces[inside]]
    return '"'.join(pieces)


def _blanked(match: re.Match[str]) -> str:
    """A string literal with its contents hidden from the structure regexes (same length)."""
    return '"' + "x" * (len(match[0]) - 2) + '"'


class _Brackets:
    """The statement's brackets: where each closes, and its top-level ``, `` separators."""

    __slots__ = ("blank", "close", "commas", "opening_of", "text")

    def __init__(self, text: str, blank: str) -> None:
        self.text = text
        self.blank = blank  # the text with string contents hidden
        self.close: dict[int, int] = {}
        self.opening_of: dict[int, int] = {}
        self.commas: dict[int, list[int]] = {}

    @classmethod
    def scan(cls, text: str, blank: str, start: int) -> _Brackets | None:
        tree = cls(text, blank)
        close, opening_of, commas = tree.close, tree.opening_of, tree.commas
        stack: list[int] = []
        for at in [m.start() for m in _STRUCTURE.finditer(blank, start)]:
            token = blank[at]  # the first character tells the four tokens apart
            if token in _CLOSE:
                stack.append(at)
                commas[at] = []
            elif not stack:
                return None  # a separator or closing bracket after the call
            elif token == ",":
                commas[stack[-1]].append(at)
            elif token == ":":
                if blank[stack[-1]] != "{":
                    return None
            else:
                opening = stack.pop()
                if _CLOSE[blank[opening]] != token:
                    return None
                close[opening] = at
                opening_of[at] = opening
        return None if stack else tree

    def body(self, opening: int, depth: int, indent: str, lines: list[str], explode: bool) -> bool:
        """Append the lines of a bracket's contents (rule 2); False: not this module's shape."""
        closing = self.close[opening]
        inner = self.text[opening + 1 : closing]
        if not inner:
            return False
        if not explode and fits(inner, depth):
            lines.append(indent + inner)
            return True
        commas = self.commas[opening]
        if not commas:
            return self.item(opening + 1, closing, "", depth, indent, lines)
        starts = [opening + 1, *(at + 2 for at in commas)]
        ends = [*commas, closing]
        return all(
            self.item(a, b, ",", depth, indent, lines) for a, b in zip(starts, ends, strict=True)
        )

    def item(
        self, start: int, end: int, comma: str, depth: int, indent: str, lines: list[str]
    ) -> bool:
        """Append the lines of one item followed by ``comma`` (rule 3)."""
        text = self.text
        line = text[start:end] + comma
        if fits(line, depth):
            lines.append(indent + line)
            return True
        closing = end - 1
        opening = self.opening_of.get(closing)
        if opening is None or opening + 1 == closing:
            return False  # no brackets at the end (black leaves the line long), or empty ones
        head = text[start : opening + 1]
        if _ITEM_HEAD.fullmatch(self.blank, start, opening) is None or not fits(head, depth):
            return False
        call = opening > start and (
            self.blank[opening - 1].isalnum() or self.blank[opening - 1] == "_"
        )
        lines.append(indent + head)
        explode = not call and bool(self.commas[opening])
        if not self.body(opening, depth + 1, indent + INDENT, lines, explode):
            return False
        lines.append(indent + text[closing] + comma)
        return True
