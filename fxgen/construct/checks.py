"""The check ``fxgen.load`` puts first in the graph of a spec with ``checks:``.

``check_inputs`` checks the inputs against the spec's ``inputs:`` and ``checks:`` in the order
and with the messages of ``fxgen.spec.checks``, as the generated forward does in plain ``if``
statements, and raises ValueError naming the input, the dimension and the condition. It is
registered as a side effect, so no pass removes it as dead code; ``to_spec`` reads the spec's
``inputs:`` and ``checks:`` back from the node (``is_check``).
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import torch.fx

from fxgen.spec.check_bounds import size_limit
from fxgen.spec.checks import (
    CONDITION,
    LIMIT,
    RANK,
    SAME,
    STATIC,
    VALUE,
    first_places,
    shape_checks,
    shape_text,
)
from fxgen.spec.expr import Expr, evaluate, names, parse

__all__ = ["check_inputs", "is_check"]


@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> tuple[Expr, list[str]]:
    tree = parse(text)
    return tree, list(dict.fromkeys(names(tree)))


def check_inputs(inputs: tuple[Any, ...], shapes: tuple[tuple[str, tuple[int | str, ...]], ...],
                 texts: tuple[str, ...]) -> None:  # fmt: skip
    """Raise ValueError unless ``inputs`` (in the order of ``shapes``) have the shapes and meet
    the conditions ``texts`` (what a spec's ``inputs:`` and ``checks:`` say)."""
    values = dict(zip((name for name, _ in shapes), inputs, strict=True))
    for kind, input_name, dim, what in shape_checks(shapes):
        tensor = values[input_name]
        if tensor is None or (kind == "same" and values[what[1]] is None):
            continue  # an optional input the call leaves out: what concerns it holds when it is given
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"input {input_name!r} is a {type(tensor).__name__}, not a tensor")
        if kind == "rank" and tensor.dim() != dim:
            raise ValueError(RANK.format(input=input_name, actual=tensor.dim(), rank=dim, shape=shape_text(what)))
        if kind == "static" and tensor.size(dim) != what:
            raise ValueError(STATIC.format(input=input_name, dim=dim, actual=tensor.size(dim), size=what))
        if kind == "same":
            name, other, other_dim = what
            first = values[other].size(other_dim)
            if tensor.size(dim) != first:
                raise ValueError(SAME.format(input=input_name, dim=dim, name=name, actual=tensor.size(dim), first=first,
                                             other=other, other_dim=other_dim))  # fmt: skip
    places = first_places(shapes)
    sizes = {name: values[i].size(d) for name, (i, d) in places.items() if values[i] is not None}
    if not all(type(size) is int for size in sizes.values()):
        return  # symbolic sizes (shape analysis): nothing to decide
    for text in texts:
        tree, used = _parsed(text)
        if not all(name in sizes for name in used):
            continue
        told = ", ".join(VALUE.format(input=places[name][0], dim=places[name][1], name=name, actual=sizes[name])
                         for name in used)  # fmt: skip
        limit = size_limit(tree)
        if limit is not None and any(sizes[name] > limit for name in used):
            raise ValueError(LIMIT.format(values=told, condition=text, limit=limit))
        if not evaluate(tree, sizes):
            raise ValueError(CONDITION.format(values=told, condition=text))


torch.fx.node.has_side_effect(check_inputs)  # never removed as dead code: it returns nothing


def is_check(node: torch.fx.Node) -> bool:
    """Is ``node`` the check of a spec's ``inputs:`` and ``checks:``?"""
    return node.op == "call_function" and node.target is check_inputs
