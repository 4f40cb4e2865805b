"""Black's splitting of a long ``def`` signature, for the signatures fxgen writes.

``def forward(self, x: torch.Tensor, ...) -> annotation:`` longer than the limit is split by
black's ``left_hand_split`` (linegen.py): the head up to the parameters' opening parenthesis,
the parameters one level deeper (on one line if they fit, else one per line with a trailing
comma, or a lone ``self`` with one), and the tail from the closing parenthesis, which
``fxgen.blackstyle.linegen`` splits further like any line when the return annotation is long. A return
annotation with a magic trailing comma (black's second pass over its own output, see
``fxgen.blackstyle.linegen``) makes black split the whole line from the right instead
(``should_split_funcdef_with_rhs``). The leaves come from ``fxgen.blackstyle.statement.parse_def``.

Most signatures need none of that: when every parameter fits on a line of its own and the
tail fits, :func:`fast_split_def` writes the same lines from string lengths (15 us against
0.6 ms for the port with cold caches on multi_io's signature).
"""

from __future__ import annotations

import functools
import io
import itertools
import re
import tokenize

from fxgen.blackstyle.fast import IDENTIFIER, INDENT, blank_strings, fits
from fxgen.blackstyle.split import lines_for
from fxgen.blackstyle.statement import Unsupported, parse_def

__all__ = ["fast_split_def", "port_split_def", "split_def"]


@functools.lru_cache(maxsize=4096)
def split_def(signature: str, depth: int) -> tuple[str, ...] | None:
    """Black's lines for the ``def ...:`` line ``signature`` at ``depth`` (without the
    indentation), or None when it is not a shape this port reproduces exactly. The common
    case is decided from string lengths (:func:`fast_split_def`), the rest leaf by leaf."""
    fast = fast_split_def(signature, depth)
    return fast if fast is not None else port_split_def(signature, depth)


def port_split_def(signature: str, depth: int) -> tuple[str, ...] | None:
    """:func:`split_def` without the string-length shortcut: black's algorithm on the leaves."""
    try:
        leaves = parse_def(signature)
    except Unsupported:
        return None
    if any(not fits(f"{INDENT}{parameter},", depth) for parameter in _union_parameters(signature)):
        # black.linegen.LineGenerator.visit_tname wraps a parameter's annotation in invisible
        # parentheses, which splitting an ``A | B`` that does not fit makes visible: not modelled
        return None
    return lines_for(leaves, depth)


def _union_parameters(signature: str) -> list[str]:
    """The parameters of ``signature`` whose annotation has a ``|`` outside its brackets."""
    found: list[str] = []
    depth, start, annotated, union = 0, 0, False, False
    tokens = tokenize.generate_tokens(io.StringIO(signature).readline)
    for token in itertools.takewhile(lambda t: t.type != tokenize.NEWLINE, tokens):
        char = token.string if token.type == tokenize.OP else ""
        depth -= char in (")", "]", "}")
        if (depth == 0 and char == ")") or (depth == 1 and char == ","):
            if union:
                found.append(signature[start : token.start[1]].strip())
            start, annotated, union = token.end[1], False, False
        elif depth == 1 and char == ":":
            annotated = True
        elif depth == 1 and char == "|" and annotated:
            union = True
        depth += char in ("(", "[", "{")
        if depth == 1 and char == "(":
            start = token.end[1]
    return found


_DEF = re.compile(rf"def {IDENTIFIER}\(")


_SEPARATOR = re.compile(r"[()\[\]{},]")


# what the fast path reads: names, numbers, plain strings (blanked), brackets, ``, : = - + ->``
# and the ``|`` of a union annotation (only ever split inside a parameter that does not fit,
# which the fast path leaves to the port); not ``*args``, ``/``, comments, other strings or
# operators (the port's, if anyone's)
_PLAIN = re.compile(r'[\w.,:=\[\](){}" +>|-]*')


# a trailing comma (magic, or a one-tuple's), or a parenthesised return annotation, which black
# normalises: the port's
_UNMODELLED = re.compile(r",\s*[)\]}]|-> \(")


def fast_split_def(signature: str, depth: int) -> tuple[str, ...] | None:
    """The left-hand split from string lengths, when no parameter needs splitting of its own
    and the tail ``) -> annotation:`` fits: ``def forward(`` / the parameters one level deeper
    (on one line if they fit, else one per line with a trailing comma; a lone ``self`` gets
    one too) / the tail. With no magic trailing comma anywhere, black's second pass over that
    output splits it the same way. None: not this shape (the port decides)."""
    blank = blank_strings(signature)
    head = _DEF.match(blank)
    if head is None or not _PLAIN.fullmatch(blank) or _UNMODELLED.search(blank):
        return None
    if fits(signature, depth):
        return (signature,)
    opening, level, commas = head.end() - 1, 0, []
    for match in _SEPARATOR.finditer(blank, opening + 1):
        at = match.start()
        char = blank[at]
        if char in "([{":
            level += 1
        elif char in ")]}":
            if level == 0:
                break
            level -= 1
        elif level == 0:
            if blank[at + 1 : at + 2] != " ":
                return None
            commas.append(at)
    else:
        return None
    tail = signature[at:]
    if at == opening + 1 or not fits(tail, depth):
        return None
    starts = [opening + 1, *(c + 2 for c in commas)]
    items = [signature[a:b] for a, b in zip(starts, [*commas, at], strict=True)]
    if len(items) == 1:
        body = [INDENT + items[0] + ","]  # bracket_split_build_line adds one to a def's lone item
    elif fits(signature[opening + 1 : at], depth + 1):
        body = [INDENT + signature[opening + 1 : at]]
    else:
        body = [INDENT + item + "," for item in items]
    if not all(fits(line, depth) for line in body):
        return None
    return (signature[: opening + 1], *body, tail)
