"""Format stage: black's output, in-process, with a fixed mode and a pinned version.

The renderer already writes black's style, so only statements longer than the line limit need
splitting. Those go to ``fxgen.blackstyle.linegen``, a port of black's splitting for the statement shapes
fxgen writes (black costs 0.3-2 ms a statement; the commonest shapes are decided from string
lengths by ``fxgen.blackstyle.fast``, about 7 us), and a long ``def forward(...)`` signature to
``fxgen.blackstyle.funcdef``, its port of black's left-hand split; anything they do not claim goes to black, many
statements per call, each in the class/method scaffold that gives it the right indentation.
Black formats a simple statement the same way wherever it stands, so the file is
byte-identical to running black on all of it — tests check exactly that.
"""

from __future__ import annotations

import functools

import black
from black.strings import str_width  # black's own width rule, as fxgen.blackstyle.fast.fits uses it

from fxgen.blackstyle import funcdef, split
from fxgen.blackstyle.fast import fits
from fxgen.blackstyle.lines import LINE_LENGTH  # the one black line length every splitter uses

__all__ = ["BLACK_VERSION", "LINE_LENGTH", "MODE", "black_statements", "block", "clear_caches", "format_def", "format_header",
           "format_statement"]


BLACK_VERSION = "26.10.1"  # pinned in pyproject.toml: another black may format differently


MODE = black.Mode(
    target_versions={black.TargetVersion.PY310},
    line_length=LINE_LENGTH,
    string_normalization=True,
    magic_trailing_comma=True,
    preview=False,
)


_INDENT = "    "


_BATCH = 100  # statements per black call: one parse of a small file instead of 100


_BOUNDARY = "# fxgen: statement boundary"  # a comment line between statements of a batch


_SCAFFOLDS = ("", "class _:\n", "class _:\n    def _(self):\n")


def _scaffold(depth: int) -> str:
    """Source that opens ``depth`` levels of indentation: a class, its method, then ``if``
    blocks (the statements of a forward's conditionals and loops)."""
    if depth < len(_SCAFFOLDS):
        return _SCAFFOLDS[depth]
    return _SCAFFOLDS[-1] + "".join(_INDENT * level + "if _:\n" for level in range(2, depth))


_black_cache: dict[tuple[str, int], tuple[str, ...]] = {}


@functools.lru_cache(maxsize=65536)
def format_statement(statement: str, depth: int) -> tuple[str, ...]:
    """Black's lines for one statement at ``depth`` levels of indentation (without them)."""
    fast = split.split(statement, depth) if "\n" not in statement else None
    return fast if fast is not None else black_statements([statement], depth)[0]


def format_header(header: str, depth: int) -> tuple[str, ...]:
    """Black's lines for the header of a compound statement (``if ...:``, ``for ...:``) at
    ``depth``: as it is when it fits, else black's wrapping of it with a dummy ``pass`` body."""
    if fits(header, depth):
        return (header,)
    return format_statement(header + "\n" + _INDENT * (depth + 1) + "pass", depth)[:-1]


def format_def(signature: str, depth: int) -> tuple[str, ...]:
    """Black's lines for a ``def ...:`` line at ``depth`` (without the indentation): as it is
    when it fits, else ``fxgen.blackstyle.funcdef``'s left-hand split, else black's own wrapping of it
    with a dummy ``pass`` body."""
    if fits(signature, depth):
        return (signature,)
    fast = funcdef.split_def(signature, depth)
    if fast is not None:
        return fast
    return format_statement(signature + "\n" + _INDENT * (depth + 1) + "pass", depth)[:-1]


def black_statements(statements: list[str], depth: int) -> list[tuple[str, ...]]:
    """Black's lines for each statement, formatting up to ``_BATCH`` of them in one call.

    The statements are written one after the other into the scaffold, each after a boundary
    comment, and the output is cut at those comments. A comment line before a simple statement
    does not change how black formats it; if the output still does not have the expected
    shape (a boundary count off, a blank line black added), the chunk is redone one statement
    per call.
    """
    results: dict[int, tuple[str, ...]] = {}
    # Several-line statements (a def with its body) and bare strings (a docstring in a
    # scaffold of its own) depend on their place in a block: those go to black one by one.
    alone = [i for i, s in enumerate(statements) if "\n" in s or s.startswith(("'", '"'))]
    for i in alone:
        results[i] = _black_one(statements[i], depth)
    rest = [i for i in range(len(statements)) if i not in results]
    for start in range(0, len(rest), _BATCH):
        chunk = rest[start : start + _BATCH]
        batched = _black_batch([statements[i] for i in chunk], depth) if len(chunk) > 1 else None
        for n, i in enumerate(chunk):
            results[i] = batched[n] if batched is not None else _black_one(statements[i], depth)
    return [results[i] for i in range(len(statements))]


def _black_one(statement: str, depth: int) -> tuple[str, ...]:
    formatted = black.format_str(_scaffold(depth) + _INDENT * depth + statement + "\n", mode=MODE).splitlines()
    return tuple(line.removeprefix(_INDENT * depth) for line in formatted[depth:])


def _black_batch(chunk: list[str], depth: int) -> list[tuple[str, ...]] | None:
    prefix = _INDENT * depth
    source = _scaffold(depth) + "".join(f"{prefix}{_BOUNDARY}\n{prefix}{s}\n" for s in chunk)
    lines = black.format_str(source, mode=MODE).splitlines()[depth:]
    marker = prefix + _BOUNDARY
    results: list[list[str]] = []
    for line in lines:
        if line == marker:
            results.append([])
        elif not results or not line:
            return None
        else:
            results[-1].append(line.removeprefix(prefix))
    if len(results) != len(chunk) or not all(results):
        return None
    return [tuple(r) for r in results]


def clear_caches() -> None:
    """Forget every formatted statement (as a fresh process would), for benchmarks and tests."""
    format_statement.cache_clear()
    split.split.cache_clear()
    funcdef.split_def.cache_clear()
    split._plans.clear()
    _black_cache.clear()


def block(statements: list[str], depth: int) -> list[str]:
    """Indented lines for ``statements``: long ones split by ``fxgen.blackstyle.linegen`` or, for shapes
    it does not claim, by black in batches."""
    prefix = _INDENT * depth
    formatted: dict[str, tuple[str, ...]] = {}
    missing: dict[str, None] = {}  # insertion-ordered set
    width = LINE_LENGTH - len(prefix)  # fits(statement, depth), without a call per statement
    for statement in statements:
        if (str_width(statement) <= width and "\n" not in statement) or statement in formatted or statement in missing:
            continue
        result = split.split(statement, depth) if "\n" not in statement else None
        if result is None:
            result = _black_cache.get((statement, depth))
        if result is None:
            missing[statement] = None
        else:
            formatted[statement] = result
    if missing:
        if len(_black_cache) > 65536:
            _black_cache.clear()
        for statement, result in zip(missing, black_statements(list(missing), depth), strict=True):
            _black_cache[statement, depth] = formatted[statement] = result
    if not formatted:
        return [prefix + statement for statement in statements]
    out: list[str] = []
    for statement in statements:
        lines = formatted.get(statement)
        if lines is None:
            out.append(prefix + statement)
        else:
            out.extend(prefix + line if line else line for line in lines)
    return out


def commented_block(statements: list[tuple[str, str | None]], depth: int) -> list[str]:
    """``block`` for statements that may end with a comment (``y = f(x)  # float32[2, 8]``): one
    that fits stays on its line; one that does not goes to black itself, which knows where a
    trailing comment goes when it splits a statement. Comments must be one printable line."""
    prefix = _INDENT * depth
    width = LINE_LENGTH - len(prefix)
    texts = [f"{s}  # {c}" if c is not None else s for s, c in statements]
    long = list(dict.fromkeys(
        t for t, (_, c) in zip(texts, statements, strict=True) if c is not None and str_width(t) > width
    ))  # fmt: skip
    done = dict(zip(long, black_statements(long, depth), strict=True)) if long else {}
    out: list[str] = []
    run: list[str] = []
    for text, (statement, comment) in zip(texts, statements, strict=True):
        if comment is None:
            run.append(statement)
            continue
        out += block(run, depth) if run else []
        run = []
        lines = done.get(text)
        out += [prefix + text] if lines is None else [prefix + line if line else line for line in lines]
    return out + (block(run, depth) if run else [])
