"""A spec's ``checks:``: the input shapes its graph is right for, as plain data (no torch).

A graph captured with symbolic sizes (``fxgen.capture.dims``) is exact where what the capture
assumed holds: each input has the declared number of dimensions (``inputs:``), a dimension
declared as a number has that size, a name repeated has one size, and each condition of
``checks:`` holds over the names (``height % 8 != 0``, in fxgen's expression grammar). Both
``fxgen.load`` (``fxgen.construct.checks``) and the generated forward (``fxgen.codegen.render``)
check them in this order, with these messages: an input outside raises ValueError naming the
input, the dimension and the condition. A condition is computed only for sizes up to its
``fxgen.spec.check_bounds.size_limit`` (where it has one), so both compute it alike.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["CONDITION", "LIMIT", "RANK", "SAME", "STATIC", "VALUE", "Shapes", "first_places", "shape_checks", "shape_text"]

Shapes = Sequence[tuple[str, Sequence[int | str]]]  # (input, its sizes: numbers and names), in order

# The messages; ``{actual}``, ``{first}`` stand for what the input holds.
RANK = "input {input!r} has {actual} dimensions; the model was exported for {rank}: [{shape}]"
STATIC = "input {input!r}: dimension {dim} is {actual}; the model was exported for {size} there"
SAME = ("input {input!r}: dimension {dim} ({name}) is {actual}, but {name} is {first} (input {other!r} dimension "
        "{other_dim}); the model was exported for equal sizes")  # fmt: skip
CONDITION = "{values}: the model was exported for {condition}"
# a size past the check's ``fxgen.spec.check_bounds.size_limit``: refused before the condition is computed
LIMIT = "{values}: the model was exported for {condition}, computed for sizes of at most {limit}"
VALUE = "input {input!r} dimension {dim} ({name}) is {actual}"


def first_places(shapes: Shapes) -> dict[str, tuple[str, int]]:
    """Each dimension name's first ``(input, dimension)``."""
    where: dict[str, tuple[str, int]] = {}
    for input_name, shape in shapes:
        for d, size in enumerate(shape):
            if isinstance(size, str):
                where.setdefault(size, (input_name, d))
    return where


def shape_checks(shapes: Shapes) -> Iterator[tuple[str, str, int, Any]]:
    """The checks the shapes themselves make, in order: ``("rank", input, rank, shape)``,
    ``("static", input, dim, size)`` and ``("same", input, dim, (name, other, other_dim))``."""
    where = first_places(shapes)
    for input_name, shape in shapes:
        yield "rank", input_name, len(shape), shape
        for d, size in enumerate(shape):
            if isinstance(size, int):
                yield "static", input_name, d, size
            elif where[size] != (input_name, d):
                yield "same", input_name, d, (size, *where[size])


def shape_text(shape: Sequence[int | str]) -> str:
    return ", ".join(str(size) for size in shape)
