"""One statement -> black's lines: the fast string-length path (``fxgen.blackstyle.fast``) or the
port of black's rules (``fxgen.blackstyle.linegen``), computed once per statement skeleton.

A statement's split depends only on its skeleton (token kinds, lengths, spacing), so the port
runs once per skeleton and its result (a plan of text pieces and leaf indices) is reused.
"""

from __future__ import annotations

import functools

from black.strings import str_width  # black's own width rule (east asian wide characters)

from fxgen.blackstyle import fast
from fxgen.blackstyle.linegen import new_comma, transform_line
from fxgen.blackstyle.lines import (
    CannotSplit,
    Line,
)
from fxgen.blackstyle.statement import Leaf, Unsupported, parse

__all__ = ["lines_for", "port_split", "split"]


# -- the statement: tokens, checked against the shapes fxgen writes ---------------------------
@functools.lru_cache(maxsize=65536)
def split(statement: str, depth: int) -> tuple[str, ...] | None:
    """Black's lines for ``statement`` at ``depth`` (without the indentation), or None when the
    statement is not a shape this module reproduces exactly. The commonest shape is decided
    from string lengths alone (``fxgen.blackstyle.fast``); the rest run black's rules leaf by leaf."""
    quick = fast.split(statement, depth)
    return quick if quick is not None else port_split(statement, depth)


def port_split(statement: str, depth: int) -> tuple[str, ...] | None:
    """:func:`split` without the string-length shortcut: black's algorithm on the leaves."""
    try:
        leaves = parse(statement)
    except Unsupported:
        return None
    return lines_for(leaves, depth)


def lines_for(leaves: list[Leaf], depth: int) -> tuple[str, ...] | None:
    """Black's lines for the leaves of a statement or signature, or None (black must decide)."""
    key = (depth, *(_skeleton(leaf) for leaf in leaves))
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) > 16384:
            _plans.clear()
        plan = _plans[key] = _plan(leaves, depth)
    if not plan:
        return None
    return tuple("".join(p if isinstance(p, str) else leaves[p].value for p in pieces) for pieces in plan)


# Black's decisions read a leaf's type, bracket kind, spacing and length/width, never the text
# of a name, number or string, so statements with the same skeleton split the same way: the
# line structure (a "plan") is computed once per skeleton. Graphs repeat their shapes a lot.
_plans: dict[tuple[object, ...], tuple[tuple[str | int, ...], ...]] = {}  # () = black cannot be reproduced


_VALUES = frozenset({"NAME", "NUMBER", "STRING"})  # leaves whose text the plan does not hold


def _format_once(leaves: list[Leaf], depth: int) -> list[Line] | None:
    line = Line(depth)
    for leaf in leaves:
        line.append(leaf)
    try:
        return list(transform_line(line))
    except (CannotSplit, KeyError, ValueError, IndexError, RecursionError):
        return None


def _skeleton(leaf: Leaf) -> tuple[object, ...] | str:
    value = leaf.value
    if leaf.type in _VALUES:
        return (leaf.type, len(value), str_width(value), leaf.space)
    return (value, leaf.space, leaf.trailer, leaf.priority, leaf.annotation)


def _plan(leaves: list[Leaf], depth: int) -> tuple[tuple[str | int, ...], ...]:
    """Run black's algorithm; record each output line as text pieces and leaf indices."""
    pristine = [leaf.copy() for leaf in leaves]
    lines = _format_once(leaves, depth)
    if lines and any(leaf.created and leaf.type == "," for ln in lines for leaf in ln.leaves):
        # black.format_str formats a changed file a second time: the trailing commas the first
        # pass added are magic trailing commas then (a def's return annotation, for one)
        again: list[Leaf] = []
        for ln in lines:
            for leaf in ln.leaves:
                again.append(pristine[leaf.index].copy() if leaf.index >= 0 else new_comma(leaf.annotation, leaf.trailer))
                again[-1].created = False
        lines = _format_once(again, depth)
    if not lines:
        return ()
    plan = []
    for ln in lines:
        if not ln.leaves or ln.leaves[0].prefix or ln.depth < depth:
            return ()
        pieces: list[str | int] = ["    " * (ln.depth - depth)]
        for leaf in ln.leaves:
            if leaf.prefix:
                pieces.append(leaf.prefix)
            if leaf.type in _VALUES and leaf.index < 0:
                return ()
            pieces.append(leaf.index if leaf.type in _VALUES else leaf.value)
        plan.append(tuple(pieces))
    return tuple(plan)
