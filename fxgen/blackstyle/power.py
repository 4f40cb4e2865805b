"""Black's hugging of the power operator: ``x**2`` rather than ``x ** 2``.

A port of black 26.10.1's ``trans.hug_power_op`` (the stable style, not the preview
``simplify_power_operator_hugging``) with the simple-operand rules it uses, on
``fxgen.blackstyle.lines`` lines. It runs last in ``fxgen.blackstyle.linegen.transform_line``'s transformer
list and decides the length check's view of a line. Black keeps it apart from the splitting
in linegen.py; so does this port.
"""

from __future__ import annotations

from collections.abc import Iterator

from fxgen.blackstyle.lines import CannotSplit, Line
from fxgen.blackstyle.statement import UNARY, Leaf

__all__ = ["hug_power_op"]


def hug_power_op(line: Line, force_optional: bool) -> Iterator[Line]:
    """No spaces around ``**`` between simple operands; the other leaves are kept as they are."""
    leaves = line.leaves
    if not any(leaf.type == "**" for leaf in leaves):
        raise CannotSplit("no doublestar")
    new_line = line.clone()
    should_hug = False
    for idx, leaf in enumerate(leaves):
        hug_this_leaf = should_hug
        should_hug = (
            0 < idx < len(leaves) - 1
            and leaf.type == "**"
            and _is_simple_operand(leaves, idx - 1, -1)
            and _is_simple_operand(leaves, idx + 1, 1)
        )
        if hug_this_leaf or should_hug:
            new_leaf = leaf.copy()  # black's Leaf.clone(): no parent, no opening_bracket
            new_leaf.created = True
        else:
            new_leaf = leaf
        new_line.append(new_leaf, preformatted=True)
    yield new_line


def _is_simple_operand(leaves: list[Leaf], index: int, kind: int) -> bool:
    start = leaves[index]
    if start.type in ("NAME", "NUMBER"):
        return _is_simple_lookup(leaves, index, kind)
    if start.type in UNARY and leaves[index + 1].type in ("NAME", "NUMBER"):
        return _is_simple_lookup(leaves, index + 1, 1)
    return False


def _is_simple_lookup(leaves: list[Leaf], index: int, kind: int) -> bool:
    """handle_is_simple_look_up_prev / handle_is_simple_lookup_forward (which stops at the
    ``for`` of a comprehension)."""
    if kind == 1:
        while 0 <= index < len(leaves):
            current = leaves[index]
            if current.type in ("(", "["):
                return False
            if current.type not in ("NAME", ".") or current.value == "for":
                return True
            index += 1
        return True
    contains_disallowed = False
    chain: list[Leaf] = []
    while 0 <= index < len(leaves):
        current = leaves[index]
        chain.append(current)
        if not contains_disallowed and current.type in (")", "]"):
            contains_disallowed = True
        if not _is_expression_chained(chain):
            return not contains_disallowed
        index -= 1
    return True


def _is_expression_chained(chained: list[Leaf]) -> bool:
    if len(chained) < 2:
        return True
    current, past = chained[-1].type, chained[-2].type
    if past == "NAME":
        return current == "."
    if past in (")", "]"):
        return current in ("]", ")")
    if past in ("(", "["):
        return current in ("NAME", "(", "[")
    return False
