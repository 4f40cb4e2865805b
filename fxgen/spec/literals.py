"""What a dtype holds exactly: a number a spec writes for a tensor element (a buffer's ``value``,
a ``constant`` init's ``val``) must become that element as written, never silently another one.

``torch.tensor`` wraps ``-1`` to 255 in uint8, makes ``2`` True in bool, truncates ``1.5`` to 1 in
int64 and rounds ``70000`` to inf in float16. ``literal_problem`` finds the first number its dtype
cannot hold: an integer dtype's out-of-range or fractional value, a bool that is not 0 or 1, a
finite number a floating-point or complex dtype turns into inf (asked of torch itself, as its
conversion rounds through float32 for the 16-bit types). A number merely rounded to the nearest
value of its dtype (0.1 in float16) is what floating point means, and fits.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch

from fxgen.spec.values import DTYPES

__all__ = ["literal_problem"]


Index = tuple[int, ...]


def literal_problem(value: Any, dtype: str) -> tuple[Index, str] | None:
    """The index (in nested lists) of the first number of ``value`` that ``dtype`` cannot hold,
    and why with what to write instead; None when every number fits."""
    elements = list(_numbers(value, ()))
    kind = DTYPES[dtype]
    if kind.is_floating_point or kind.is_complex:
        largest = torch.finfo(kind.to_real()).max
        widest = kind in (torch.float64, torch.complex128)
        beyond = (f"is beyond the range of {dtype} (finite values from {-largest!r} to {largest!r}) and would "
                  f"become inf; write a value in that range{'' if widest else ', or declare a dtype that holds it'}")  # fmt: skip
        bad = [(at, x, beyond) for at, x in _overflowing(elements, kind)]
    else:
        low, high = (0, 1) if dtype == "bool" else (torch.iinfo(kind).min, torch.iinfo(kind).max)
        held = f"{dtype} holds the integers from {low} to {high}"
        reasons = {
            "bool": "is not a bool value: bool holds 0 and 1 (false and true) only; write false or true",
            "fraction": f"is not a whole number: {held}; write an integer, or declare a floating-point dtype",
            "range": f"is out of range: {held}; write a value in that range, or declare a dtype that holds it",
        }
        bad = []
        for at, x in elements:
            if dtype == "bool":
                if not (x == 0 or x == 1):
                    bad.append((at, x, reasons["bool"]))
            elif isinstance(x, float) and not x.is_integer():
                bad.append((at, x, reasons["fraction"]))
            elif not low <= x <= high:
                bad.append((at, x, reasons["range"]))
    if not bad:
        return None
    (at, x, why), more = bad[0], len(bad) - 1
    tail = f" ({more} more number{'s' * (more > 1)} of the literal do{'es' * (more == 1)} not fit either)" if more else ""
    return at, f"{_shown(x)} {why}{tail}"


def _shown(number: bool | int | float) -> str:
    """``repr(number)``, an integer of many digits cut short (a message stays readable)."""
    text = repr(number)
    return text if len(text) <= 30 else f"{text[:12]}...{text[-4:]} ({len(text.lstrip('-'))} digits)"


def _numbers(value: Any, at: Index) -> Iterator[tuple[Index, bool | int | float]]:
    """Each number of a (schema-valid, at most 64 deep) literal, in row-major order."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _numbers(item, (*at, i))
    else:
        yield at, value


def _overflowing(elements: list[tuple[Index, bool | int | float]], kind: torch.dtype) -> list[tuple[Index, Any]]:
    """The finite numbers that become inf in a tensor of ``kind`` (torch's own conversion)."""
    bad: list[tuple[Index, Any]] = []
    finite: list[tuple[Index, Any, float]] = []
    for at, x in elements:
        try:
            number = float(x)
        except OverflowError:  # an integer beyond even float64
            bad.append((at, x))
            continue
        if math.isfinite(number):
            finite.append((at, x, number))
    if finite:
        made = torch.isinf(torch.tensor([number for _, _, number in finite], dtype=kind)).tolist()
        bad += [(at, x) for (at, x, _), inf in zip(finite, made, strict=True) if inf]
    return sorted(bad, key=lambda item: item[0])
