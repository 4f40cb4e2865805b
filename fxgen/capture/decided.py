"""Branches a tracer decided from its proxies' example values, kept as checks in the graph.

torch.fx's Proxy refuses ``if proxy:``. A custom tracer may answer it from the metadata it
attaches to each proxy instead: Hugging Face's HFTracer runs the model on meta tensors of its
own dummy inputs and answers ``if width % self.window_size != 0:`` (Swin's padding) or ``if
num_patches == num_positions and height == width:`` (DINOv2's position embeddings) from their
sizes. The graph then holds the one branch those sizes take; at other sizes it computes
something else, or fails deep inside with PyTorch's size mismatch. :class:`Decisions` records
each such answer with the user's line, and ``keep`` writes it into the graph as a
``torch._assert`` right after the node it was decided on: an input that would take the other
branch raises an AssertionError naming the line and what to do, never a wrong result. A branch
every input takes the same way (a sequence longer than 1) keeps working at every size.
"""

from __future__ import annotations

import linecache
import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

__all__ = ["Decisions"]

Frame = tuple[str, int, str]
_OWNER = "_fxgen_decisions"  # the attribute a watched proxy keeps its Decisions under


class Decisions:
    """The ``if proxy:`` a tracer answered from its proxies' metadata while it traced."""

    def __init__(self, where: Callable[[], Frame | None]) -> None:
        self.where = where  # the user's line being traced, when asked
        self.made: list[tuple[torch.fx.Node, bool, Frame | None]] = []

    def watch(self, proxy: Any) -> Any:
        """``proxy``, recording the answers to ``if proxy:`` where its class gives one (torch.fx's
        own Proxy raises instead: nothing to record)."""
        cls = type(proxy)
        if not isinstance(proxy, torch.fx.Proxy) or cls.__bool__ is torch.fx.Proxy.__bool__:
            return proxy
        proxy.__class__ = _deciding(cls)
        proxy.__dict__[_OWNER] = self
        return proxy

    def keep(self, graph: torch.fx.Graph, owner: str) -> None:
        """Each answer as ``torch._assert(node)`` (or of ``not node``) right after its node."""
        for node, value, frame in self.made:
            if node.graph is not graph or node._erased:
                continue
            with graph.inserting_after(node):  # (named after the node: torch.fx's ``_assert`` names may be taken)
                condition = node if value else graph.create_node(
                    "call_function", operator.not_, (node,), name=f"not_{node.name}")
            with graph.inserting_after(condition):
                graph.create_node("call_function", torch._assert, (condition, _message(owner, value, frame)),
                                  name=f"check_{node.name}")  # fmt: skip


_DECIDING: dict[type, type] = {}


def _deciding(cls: type) -> type:
    """``cls`` whose ``__bool__`` records its answer in the proxy's Decisions (one per class)."""
    if cls in _DECIDING:
        return _DECIDING[cls]
    answer = getattr(cls, "__bool__")  # noqa: B009  (the tracer's own, read off its class)

    def __bool__(self: Any) -> bool:
        value = bool(answer(self))
        decisions = self.__dict__.get(_OWNER)
        if decisions is not None:
            decisions.made.append((self.node, value, decisions.where()))
        return value

    _DECIDING[cls] = type(cls.__name__, (cls,), {"__bool__": __bool__, "__module__": cls.__module__})
    return _DECIDING[cls]


def _message(owner: str, value: bool, frame: Frame | None) -> str:
    where = ""
    if frame is not None:
        line = linecache.getline(frame[0], frame[1]).strip()
        where = f" at {frame[0]}:{frame[1]}" + (f" (`{line}`)" if line else "")
    return (f"{owner} was traced with a branch{where} decided {value} for the tracer's own example sizes, and this "
            "input takes the other one: export the model with capture='dynamo' and example inputs, which records "
            "the sizes it needs")  # fmt: skip
