"""The sizes up to which a check of ``checks:`` is computed within the expression bounds.

``fxgen.spec.expr`` computes within bounds (integers at most 2**63 in magnitude, floats finite,
a ``**`` exponent and ``round``'s digits bounded); the generated forward computes a check with
Python's own unbounded arithmetic. Both would agree on every input only where no bound is
reached, so both apply one rule: a check whose sizes could take it past a bound is computed only
for sizes up to ``size_limit`` (``n * n * n > 0``: 2**21), and an input with a larger size is
refused, by ``fxgen.load`` and the generated forward alike, with the same message
(``fxgen.spec.checks.LIMIT``). The limit is found by interval arithmetic over the sizes
``0 .. limit``: it over-estimates every value the check can compute there, so below it neither
side reaches a bound; a check that cannot reach one for any size has no limit (most do:
``(8 - height % 8) % 8 != 0``, ``seq <= 512``).
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass

from fxgen.spec.expr import MAX_EXPONENT, MAX_INT, Expr

__all__ = ["MAX_SIZE", "size_limit"]


MAX_SIZE = 2**63 - 1  # the largest size a tensor's dimension can have (int64)


class _Unbounded(Exception):
    """A value the check may compute past a bound (or that interval arithmetic cannot bound)."""


@dataclass(frozen=True)
class _Span:
    """Every value a part of a check may take: numbers in ``lo .. hi``, or a bool (``truth``)."""

    lo: float
    hi: float
    floats: bool = False  # may be a float (else an int)
    truth: bool = False  # may be a bool

    def numbers(self) -> _Span:
        if self.truth:  # arithmetic on a bool: refused by fxgen, not by Python
            raise _Unbounded
        return self

    @property
    def magnitude(self) -> float:
        return max(abs(self.lo), abs(self.hi))


def _within(lo: float, hi: float, floats: bool) -> _Span:
    span = _Span(lo, hi, floats)
    if span.magnitude > (sys.float_info.max if floats else MAX_INT):
        raise _Unbounded
    return span


def _union(a: _Span, b: _Span) -> _Span:
    return _Span(min(a.lo, b.lo), max(a.hi, b.hi), a.floats or b.floats, a.truth or b.truth)


_BOOL = _Span(0, 1, truth=True)


def _span(tree: Expr, top: int) -> _Span:
    kind = tree[0]
    if kind == "num":
        return _Span(tree[1], tree[1], isinstance(tree[1], float))
    if kind == "bool":
        return _BOOL
    if kind == "name":
        return _Span(0, top)
    if kind in ("not", "==", "!="):  # any scalars
        for part in tree[1:]:
            _span(part, top)
        return _BOOL
    if kind in ("<", "<=", ">", ">="):  # numbers only: fxgen refuses to order a bool, Python does not
        _span(tree[1], top).numbers()
        _span(tree[2], top).numbers()
        return _BOOL
    if kind in ("and", "or"):  # either operand is the result
        return _union(_span(tree[1], top), _span(tree[2], top))
    if kind == "if":
        _span(tree[2], top)
        return _union(_span(tree[1], top), _span(tree[3], top))
    if kind == "call":
        return _call(tree[1], [_span(arg, top).numbers() for arg in tree[2:]])
    if kind == "neg":
        a = _span(tree[1], top).numbers()
        return _within(-a.hi, -a.lo, a.floats)
    a, b = _span(tree[1], top).numbers(), _span(tree[2], top).numbers()
    return _binary(kind, a, b)


def _binary(kind: str, a: _Span, b: _Span) -> _Span:
    floats = a.floats or b.floats
    if kind in ("+", "-"):
        return _within(a.lo + b.lo, a.hi + b.hi, floats) if kind == "+" else _within(a.lo - b.hi, a.hi - b.lo, floats)
    if kind == "*":
        corners = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        return _within(min(corners), max(corners), floats)
    if kind == "**":
        return _power(a, b)
    # / // %: a divisor of 0 fails on both sides alike; an integer divisor is otherwise at least 1
    if b.floats and b.lo < 1 and b.hi > -1:
        raise _Unbounded  # a float divisor near 0: no bound on the quotient
    if kind == "%":
        return _within(-b.magnitude, b.magnitude, floats)
    floats = floats or kind == "/"
    if b.lo <= 0 <= b.hi:  # an integer divisor other than 0 is at least 1 in magnitude
        return _within(-a.magnitude, a.magnitude, floats)
    corners = [x / y if kind == "/" else x // y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]  # monotone in each
    return _within(min(corners), max(corners), floats)


def _power(base: _Span, exponent: _Span) -> _Span:
    if exponent.magnitude > MAX_EXPONENT:
        raise _Unbounded
    fractional = exponent.floats or exponent.lo < 0  # the result may be a float
    if fractional and (base.lo < 0 or (base.floats and exponent.lo < 0)):
        raise _Unbounded  # a negative base's root is complex; a small float base's negative power is unbounded
    floats = base.floats or fractional
    power, most = max(exponent.hi, 0), max(base.magnitude, 1)
    if most > 1 and power * math.log2(most) > (1023 if floats else 63):
        raise _Unbounded
    top = most**power
    return _within(-top, top, floats)


def _call(function: str, args: list[_Span]) -> _Span:
    floats = any(a.floats for a in args)
    if function in ("min", "max"):
        return _Span(min(a.lo for a in args), max(a.hi for a in args), floats)
    if function == "abs":
        return _within(0, args[0].magnitude, args[0].floats)
    if function == "sqrt":
        return _within(0, math.sqrt(max(args[0].hi, 0)), True)
    if function == "round" and len(args) == 2:
        if args[1].magnitude > 2 * MAX_EXPONENT:
            raise _Unbounded
        return _within(args[0].lo - 1, args[0].hi + 1, args[0].floats)
    return _within(math.floor(args[0].lo), math.ceil(args[0].hi), False)  # int, round, ceil, floor: an int


def _bounded(tree: Expr, top: int) -> bool:
    try:
        _span(tree, top)
    except (_Unbounded, OverflowError):
        return False
    return True


@functools.lru_cache(maxsize=1024)
def size_limit(tree: Expr) -> int | None:
    """The largest size up to which ``tree`` is computed within the bounds, for every size of
    each of its names (None: every size a tensor can have); -1 when not even sizes of 0 are."""
    if _bounded(tree, MAX_SIZE):
        return None
    lo, hi = -1, MAX_SIZE  # _bounded(lo) or lo == -1; not _bounded(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _bounded(tree, mid):
            lo = mid
        else:
            hi = mid
    return lo
