"""What symbolic tracing would freeze into the graph, and export must not.

Tracing runs ``forward`` once on Proxies; whatever Python computes from plain values runs for
real, and its result is pasted into the graph as a constant. Three such values change what the
model computes, silently:

- a random draw made from plain values (``torch.rand(3, 4)``) becomes a ``_tensor_constant``:
  the exported model adds the same numbers on every call. :class:`RandomDraws` records, during
  the trace, every tensor a random function returned (and every tensor computed from one) so
  the tracer can refuse a graph that reads one (``frozen_draw``), and every such tensor Python
  turned into a bool or a number (``if torch.rand([]) < self.layerdrop:``, LayerDrop's skip of
  a layer): the branch is decided once, at trace time, and the graph holds only the one taken
  (``decided``);
- a string formatted from a traced value (``f"height ({x.shape[2]})"``) holds the Proxy's name.
  :func:`traced_strings` makes a Proxy format as a marker while tracing, and ``rebuild_strings``
  turns a string holding markers into nodes that build it at run time (``str(node)`` pieces
  joined with ``+``);
- an optional argument left out (``mask=None``) is traced as a Proxy, so the graph computes the
  branch taken for a tensor: ``none_defaults`` binds it to its default as a concrete argument
  when the caller fixed none (``concrete_args``) and no example input gives it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import operator
import re
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch.fx.node import map_aggregate
from torch.overrides import TorchFunctionMode

__all__ = ["RandomDraws", "none_defaults", "readable", "rebuild_strings", "traced_strings"]


# Random functions whose randomness depends on an argument (dropout's ``train``, an attention's
# ``dropout_p``, an RNN's ``dropout``) draw nothing when it is off: they are not refused.
_SWITCHED = frozenset({"train", "training", "dropout", "dropout_p"})
_UNTAGGED = frozenset({"random", "random_"})  # seeded draws torch's tags leave out
# how Python turns a tensor into a plain value it branches or computes on
_TO_PYTHON = frozenset({"__bool__", "__float__", "__int__", "__index__", "__complex__", "item", "tolist"})


@functools.cache
def _draws(name: str) -> bool:
    """Is the ATen op ``name`` a random draw? ``torch.Tag.nondeterministic_seeded`` on any overload."""
    if name in _UNTAGGED:
        return True
    packet = getattr(torch.ops.aten, name, None) if name.isidentifier() else None
    overloads = getattr(packet, "overloads", None)
    if packet is None or overloads is None:
        return False
    for overload in overloads():
        op = getattr(packet, overload)
        if torch.Tag.nondeterministic_seeded in op.tags:
            return not any(arg.name in _SWITCHED for arg in op._schema.arguments)
    return False


class RandomDraws(TorchFunctionMode):
    """Active while tracing: the tensors random functions returned when called on plain values
    (a call on Proxies is a graph node, which draws at run time), and those computed from them,
    each with the function that drew it and the user's line that called it."""

    def __init__(self) -> None:
        super().__init__()
        self.drawn: dict[int, tuple[torch.Tensor, str, tuple[str, int, str] | None]] = {}
        # the first draw Python made a bool or number of: (the random function, the user's line there)
        self.decided: tuple[str, tuple[str, int, str] | None] | None = None

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not isinstance(out, torch.Tensor):
            name = getattr(func, "__name__", "")
            if self.drawn and self.decided is None and name in _TO_PYTHON and args:
                drawn = self.drawn.get(id(args[0]))
                if drawn is not None and drawn[0] is args[0]:
                    self.decided = (drawn[1], _user_frame())
            return out
        name = getattr(func, "__name__", "")
        if isinstance(name, str) and _draws(name):
            self.drawn[id(out)] = (out, f"{_home(func)}{name}", _user_frame())
        elif self.drawn:
            source = next((self.drawn[id(a)] for a in _flat(args, kwargs) if id(a) in self.drawn
                           and self.drawn[id(a)][0] is a), None)  # fmt: skip
            if source is not None:
                self.drawn[id(out)] = (out, *source[1:])
        return out

    def frozen_draw(self, graph: torch.fx.Graph, root: torch.nn.Module) -> tuple[str, str, tuple[str, int, str] | None] | None:
        """The first constant ``graph`` reads that holds a draw: (its target, the random
        function, the user's line), or None."""
        if not self.drawn:
            return None
        for node in graph.nodes:
            if node.op != "get_attr":
                continue
            value: Any = root
            for part in str(node.target).split("."):
                value = getattr(value, part, None)
            drawn = self.drawn.get(id(value))
            if drawn is not None and drawn[0] is value:
                return str(node.target), drawn[1], drawn[2]
        return None


def _home(func: Any) -> str:
    owner = getattr(func, "__objclass__", None) or getattr(func, "__self__", None)
    if isinstance(owner, type) and issubclass(owner, torch.Tensor):
        return "Tensor."
    return "torch." if getattr(torch, getattr(func, "__name__", ""), None) is func else ""


def _flat(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[Any]:
    for value in (*args, *kwargs.values()):
        if isinstance(value, (tuple, list)):
            yield from value
        else:
            yield value


def _user_frame() -> tuple[str, int, str] | None:
    """The innermost frame of the running stack outside torch and fxgen: the user's line."""
    inside = (str(Path(torch.__file__).parent), str(Path(__file__).parent.parent))
    found = None
    for frame in traceback.extract_stack():
        if not frame.filename.startswith(inside) and frame.lineno is not None:
            found = (frame.filename, frame.lineno, frame.name)
    return found


# -- strings formatted from traced values -----------------------------------------------------
_MARK = re.compile("\ue000([0-9]+)\ue001")


@contextlib.contextmanager
def traced_strings() -> Iterator[list[tuple[torch.fx.Proxy, str]]]:
    """While active, a Proxy formatted into a string (``f"{p}"``, ``str(p)``, ``"{}".format(p)``)
    gives a marker; the list holds each marker's Proxy and format spec, by index."""
    formatted: list[tuple[torch.fx.Proxy, str]] = []
    saved = {name: vars(torch.fx.Proxy).get(name) for name in ("__format__", "__str__")}

    def mark(proxy: torch.fx.Proxy, spec: str = "") -> str:
        formatted.append((proxy, spec))
        return f"\ue000{len(formatted) - 1}\ue001"

    torch.fx.Proxy.__format__ = mark  # type: ignore[method-assign, assignment]
    torch.fx.Proxy.__str__ = mark  # type: ignore[method-assign, assignment]
    try:
        yield formatted
    finally:
        for name, value in saved.items():
            if value is None:
                delattr(torch.fx.Proxy, name)
            else:
                setattr(torch.fx.Proxy, name, value)


def readable(text: str) -> str:
    """``text`` with each marker written ``<traced value>`` (an error message tracing formatted)."""
    return _MARK.sub("<traced value>", text)


def rebuild_strings(graph: torch.fx.Graph, formatted: list[tuple[torch.fx.Proxy, str]]) -> str | None:
    """Every string argument holding markers becomes nodes building it at run time, right
    before the node that reads it. A marker of a value of another graph cannot be rebuilt: the
    name of the node reading it is returned (else None)."""
    if not formatted:
        return None
    for node in list(graph.nodes):
        if node.op in ("placeholder", "get_attr"):
            continue
        failed: list[str] = []

        def rebuild(value: Any, node: torch.fx.Node = node, failed: list[str] = failed) -> Any:
            if not isinstance(value, str) or not _MARK.search(value):
                return value
            with graph.inserting_before(node):
                built = _string_nodes(graph, value, formatted, node.meta.get("nn_module_stack"))
            if built is None:
                failed.append(node.name)
                return value
            return built

        args, kwargs = map_aggregate(node.args, rebuild), map_aggregate(node.kwargs, rebuild)
        if failed:
            return failed[0]
        node.args, node.kwargs = args, kwargs
    return None


def _string_nodes(graph: torch.fx.Graph, text: str, formatted: list[tuple[torch.fx.Proxy, str]],
                  stack: dict[str, Any] | None) -> Any:  # fmt: skip
    """The nodes building ``text`` at run time, each recorded as run inside the module calls
    (``stack``: ``nn_module_stack``) of the node that reads it, so they stay in its block."""
    pieces: list[Any] = []

    def made(new: torch.fx.Node) -> torch.fx.Node:
        if stack is not None:
            new.meta["nn_module_stack"] = dict(stack)
        return new

    at = 0
    for match in _MARK.finditer(text):
        if match.start() > at:
            pieces.append(text[at:match.start()])
        proxy, spec = formatted[int(match.group(1))]
        if proxy.node.graph is not graph:  # (an Attribute's node, ``x.shape``, is made now: here, in the reader's calls)
            return None
        if "nn_module_stack" not in proxy.node.meta:
            made(proxy.node)
        pieces.append(made(graph.call_function(format, (proxy.node, spec)) if spec else graph.call_function(str, (proxy.node,))))
        at = match.end()
    if at < len(text):
        pieces.append(text[at:])
    result = pieces[0]
    for piece in pieces[1:]:
        result = made(graph.call_function(operator.add, (result, piece)))
    return result


# -- optional arguments -----------------------------------------------------------------------
def none_defaults(
    module: torch.nn.Module, concrete_args: dict[str, Any] | None, given: Iterable[str] = ()
) -> dict[str, Any] | None:
    """Without ``concrete_args``, every ``forward`` parameter whose default is None bound to None
    unless ``given`` (an example input names it): traced as a Proxy, such an argument takes the
    branch of a value (``x + mask``) the model is called without. ``concrete_args`` given as they
    are: they say which arguments are fixed, and every other one is an input (torch.fx's and
    Hugging Face's ``get_concrete_args``' convention: ``input_ids=None`` is an input there)."""
    if isinstance(module, torch.fx.GraphModule) or concrete_args is not None:
        return concrete_args
    try:
        parameters = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return concrete_args
    bound: dict[str, Any] = {}
    taken = set(given)
    for p in parameters:
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is None and p.name not in taken:
            bound[p.name] = None
    return bound or None
