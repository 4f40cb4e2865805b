"""The line model of black's splitting: black.lines.Line and black.brackets.BracketTracker.

A port of the parts of black 26.10.1's ``lines.py``, ``brackets.py`` and ``nodes.py`` that
``fxgen.blackstyle.linegen`` (black's ``linegen.py``), ``fxgen.blackstyle.power`` (``trans.py``) and
``fxgen.blackstyle.funcdef`` consult: a :class:`Line` of ``fxgen.blackstyle.statement`` leaves with its
:class:`Tracker` (bracket depths, delimiter priorities, invisible parentheses, magic trailing
commas), and the questions black asks of a line (is it short, can it be split, can the
invisible parentheses around its body be omitted). It is its own module so that each part of
the port can be read beside the black module it follows, and so that the transforms can share
it without importing each other. :class:`CannotSplit` (black.linegen.CannotSplit, a
black.trans.CannotTransform) lives here because every transform raises it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from black.strings import str_width  # black's own width rule (east asian wide characters)

from fxgen.blackstyle.statement import BRACKET, CLOSING, OPENING, Leaf

__all__ = [
    "COMMA_PRIORITY",
    "DOT_PRIORITY",
    "LINE_LENGTH",
    "CannotSplit",
    "Line",
    "RHSResult",
    "Tracker",
    "can_be_split",
    "can_omit_invisible_parens",
    "is_one_sequence_between",
    "is_short",
    "leaves_inside_matching_brackets",
]


LINE_LENGTH = 88


COMMA_PRIORITY = 18


DOT_PRIORITY = 1


class CannotSplit(Exception):
    """black.linegen.CannotSplit / CannotTransform: this transform does not apply."""


class Tracker:
    """black.brackets.BracketTracker for fxgen's tokens (no lambda; the ``for`` of a comprehension)."""

    __slots__ = ("bracket_match", "delimiters", "depth", "for_loop_depths", "invisible", "previous")

    def __init__(self) -> None:
        self.depth = 0
        self.for_loop_depths: list[int] = []
        self.bracket_match: dict[tuple[int, str], Leaf] = {}
        self.delimiters: dict[int, int] = {}
        self.previous: Leaf | None = None
        self.invisible: list[Leaf] = []

    def mark(self, leaf: Leaf) -> None:
        kind = leaf.type
        # maybe_decrement_after_for_loop_variable: the loop variable sits one level deeper
        if self.for_loop_depths and self.for_loop_depths[-1] == self.depth and kind == "NAME" and leaf.value == "in":
            self.depth -= 1
            self.for_loop_depths.pop()
        if kind in CLOSING:
            if self.depth == 0 and (0, kind) not in self.bracket_match:
                return
            self.depth -= 1
            leaf.opening_bracket = self.bracket_match.pop((self.depth, kind))
            if not leaf.value:
                self.invisible.append(leaf)
        leaf.bracket_depth = self.depth
        if self.depth == 0:
            previous = self.previous
            if leaf.priority and previous is not None:  # is_split_before_delimiter: an operator
                self.delimiters[id(previous)] = leaf.priority
            elif kind == "." and previous is not None and previous.type in CLOSING:
                self.delimiters[id(previous)] = DOT_PRIORITY
            elif kind == ",":
                self.delimiters[id(leaf)] = COMMA_PRIORITY
        if kind in OPENING:
            self.bracket_match[self.depth, BRACKET[kind]] = leaf
            self.depth += 1
            if not leaf.value:
                self.invisible.append(leaf)
        self.previous = leaf
        if kind == "NAME" and leaf.value == "for":  # maybe_increment_for_loop_variable
            self.depth += 1
            self.for_loop_depths.append(self.depth)

    def max_priority(self, exclude: set[int] | frozenset[int] = frozenset()) -> int:
        return max(v for k, v in self.delimiters.items() if k not in exclude)

    def count_with_priority(self, priority: int) -> int:
        if not self.delimiters:
            return 0
        priority = priority or self.max_priority()
        return sum(1 for p in self.delimiters.values() if p == priority)


class Line:
    """black.lines.Line: leaves at an indentation depth, with their bracket tracker."""

    __slots__ = ("bt", "depth", "inside_brackets", "leaves", "magic_trailing_comma", "should_split_rhs")

    def __init__(self, depth: int, inside_brackets: bool = False) -> None:
        self.depth = depth
        self.inside_brackets = inside_brackets
        self.should_split_rhs = False
        self.magic_trailing_comma: Leaf | None = None
        self.leaves: list[Leaf] = []
        self.bt = Tracker()

    def append(self, leaf: Leaf, preformatted: bool = False, track_bracket: bool = False) -> None:
        # (black skips empty leaves here: every leaf of ours has a value or is a bracket)
        if self.leaves and not preformatted:
            leaf.prefix += leaf.space
        if self.inside_brackets or not preformatted or track_bracket:
            self.bt.mark(leaf)
            if leaf.type in CLOSING and self.has_magic_trailing_comma(leaf):
                self.magic_trailing_comma = leaf
        self.leaves.append(leaf)

    def has_magic_trailing_comma(self, closing: Leaf) -> bool:
        if not (closing.type in CLOSING and self.leaves and self.leaves[-1].type == ","):
            return False
        opening = closing.opening_bracket
        if closing.type == "]" and closing.trailer and opening is not None:  # a subscript: x[a,] is not magic
            return not is_one_sequence_between(opening, closing, self.leaves, ("[", "]"))
        if closing.type != ")":
            return True
        return opening is not None and not is_one_sequence_between(opening, closing, self.leaves)

    @property
    def is_def(self) -> bool:
        return bool(self.leaves) and self.leaves[0].type == "def"

    @property
    def is_chained_assignment(self) -> bool:
        return [leaf.type for leaf in self.leaves].count("=") > 1

    def clone(self) -> Line:
        line = Line(self.depth, self.inside_brackets)
        line.should_split_rhs = self.should_split_rhs
        line.magic_trailing_comma = self.magic_trailing_comma
        return line

    def __bool__(self) -> bool:
        return bool(self.leaves)

    def __str__(self) -> str:
        if not self.leaves:
            return "\n"
        first = self.leaves[0]
        rest = "".join([leaf.prefix + leaf.value for leaf in self.leaves[1:]])
        return f"{first.prefix}{'    ' * self.depth}{first.value}{rest}\n"

    def enumerate_with_length(self, is_reversed: bool = False) -> Iterator[tuple[int, Leaf, int]]:
        indexed = list(enumerate(self.leaves))
        for index, leaf in reversed(indexed) if is_reversed else indexed:
            yield index, leaf, len(leaf.prefix) + len(leaf.value)


def is_one_sequence_between(
    opening: Leaf, closing: Leaf, leaves: list[Leaf], brackets: tuple[str, str] = ("(", ")")
) -> bool:
    if (opening.type, closing.type) != brackets:
        return False
    depth = closing.bracket_depth + 1
    start = next((i for i, leaf in enumerate(leaves) if leaf is opening), -1)
    if start == -1:
        return False
    commas = 0
    for leaf in leaves[start + 1 :]:
        if leaf is closing:
            break
        if leaf.bracket_depth == depth and leaf.type == ",":
            commas += 1
            if leaf.trailer and not leaf.created:  # its parent is an arglist or typedargslist
                commas += 1
                break
    return commas < 2


def is_short(line: Line, line_str: str = "") -> bool:
    return str_width(line_str or str(line).strip("\n")) <= LINE_LENGTH


def leaves_inside_matching_brackets(leaves: list[Leaf]) -> set[int]:
    """black.brackets.get_leaves_inside_matching_brackets."""
    start = next((i for i, leaf in enumerate(leaves) if leaf.type in OPENING), None)
    if start is None:
        return set()
    ids: set[int] = set()
    stack: list[tuple[str, list[int]]] = []
    for leaf in leaves[start:]:
        if leaf.type in OPENING:
            stack.append((BRACKET[leaf.type], [id(leaf)]))
        elif leaf.type in CLOSING:
            if stack and leaf.type == stack[-1][0]:
                _, level = stack.pop()
                level.append(id(leaf))
                ids.update(level)
            else:
                break
        elif stack:
            stack[-1][1].append(id(leaf))
    return ids


@dataclass
class RHSResult:
    """black.lines.RHSResult: a right-hand split's three lines and the brackets it split at."""

    head: Line
    body: Line
    tail: Line
    opening_bracket: Leaf
    closing_bracket: Leaf


def can_be_split(line: Line) -> bool:
    """black.lines.can_be_split (its string-method-chain case cannot occur: parse() rejects it)."""
    return len(line.leaves) >= 2


def can_omit_invisible_parens(rhs_: RHSResult) -> bool:
    line = rhs_.body
    bt = line.bt
    if not bt.delimiters:
        return True
    max_priority = bt.max_priority()
    if bt.count_with_priority(max_priority) > 1:
        return False
    if max_priority == DOT_PRIORITY:
        return True
    first, second = line.leaves[0], line.leaves[1]
    if first.type in OPENING and second.type not in CLOSING and _can_omit_opening_paren(line, first):
        return True
    penultimate, last = line.leaves[-2], line.leaves[-1]
    if last.type in (")", "}") or (last.type == "]" and not last.trailer):
        if penultimate.type in OPENING:
            return False
        if _can_omit_closing_paren(line, last):
            return True
    return False


def _can_omit_opening_paren(line: Line, first: Leaf) -> bool:
    remainder = False
    length = 4 * line.depth
    _index = -1
    for _index, leaf, leaf_length in line.enumerate_with_length():
        if leaf.type in CLOSING and leaf.opening_bracket is first:
            remainder = True
        if remainder:
            length += leaf_length
            if length > LINE_LENGTH:
                break
            if leaf.type in OPENING:
                remainder = False
    else:
        if len(line.leaves) == _index + 1:
            return True
    return False


def _can_omit_closing_paren(line: Line, last: Leaf) -> bool:
    length = 4 * line.depth
    seen_other_brackets = False
    for _, leaf, leaf_length in line.enumerate_with_length():
        length += leaf_length
        if leaf is last.opening_bracket:
            if seen_other_brackets or length <= LINE_LENGTH:
                return True
        elif leaf.type in OPENING:
            seen_other_brackets = True
    return False
