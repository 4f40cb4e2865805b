"""Format stage: black, in-process, with a fixed mode and a pinned version.

The renderer already writes black's style, so black is only run on statements longer than the
line limit, each on its own (wrapped in the class/method scaffold that gives it the right
indentation) and cached. Black formats a simple statement the same way wherever it stands, so
the file is byte-identical to running black on all of it — tests check exactly that.
"""

from __future__ import annotations

import functools

import black
from black.strings import str_width

__all__ = ["BLACK_VERSION", "LINE_LENGTH", "MODE", "format_file", "format_statement"]

BLACK_VERSION = "26.10.1"  # pinned in pyproject.toml: another black may format differently
LINE_LENGTH = 88
MODE = black.Mode(
    target_versions={black.TargetVersion.PY310},
    line_length=LINE_LENGTH,
    string_normalization=True,
    magic_trailing_comma=True,
    preview=False,
)
_INDENT = "    "


def format_file(source: str) -> str:
    """Black on a whole file (the slow reference path, used by tests and as a fallback)."""
    return black.format_str(source, mode=MODE)


def fits(line: str, depth: int) -> bool:
    return str_width(line) + len(_INDENT) * depth <= LINE_LENGTH


@functools.lru_cache(maxsize=65536)
def format_statement(statement: str, depth: int) -> tuple[str, ...]:
    """Black's lines for one simple statement at ``depth`` levels of indentation."""
    if depth == 2:
        scaffold = "class _:\n    def _(self):\n        " + statement + "\n"
    elif depth == 1:
        scaffold = "class _:\n    " + statement + "\n"
    else:
        scaffold = statement + "\n"
    formatted = black.format_str(scaffold, mode=MODE).splitlines()
    body = formatted[depth:]
    prefix = _INDENT * depth
    return tuple(line.removeprefix(prefix) for line in body)


def block(statements: list[str], depth: int) -> list[str]:
    """Indented lines for ``statements``, long ones formatted by black."""
    prefix = _INDENT * depth
    out: list[str] = []
    for statement in statements:
        if fits(statement, depth) and "\n" not in statement:
            out.append(prefix + statement)
        else:
            out.extend(prefix + line if line else line for line in format_statement(statement, depth))
    return out
