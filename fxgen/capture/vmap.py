"""``torch.vmap`` in a TorchDynamo graph, written as the plain tensor operations it stands for.

Dynamo does not record a ``torch.vmap`` call as one node: it inlines functorch's machinery.
``vmap(f)(x)`` becomes ``lazy_load_decompositions()``, ``_vmap_increment_nesting(n, ...)``,
``_add_batch_dim(x, in_dim, level)``, ``f``'s operations on the batched tensor,
``_remove_batch_dim(y, level, n, out_dim)`` and ``_vmap_decrement_nesting()``: private functorch
calls no spec may name, whose meaning (which dimension is the batch) lives in functorch's
dispatcher, not in the graph. Hugging Face transformers 4.5x builds every attention mask so
(``masking_utils._vmap_for_bhqkv``: four nested vmaps over the batch, head, query and key
indices).

:func:`unbatch` rewrites such a region as what vmap computes. Each batched value is kept as
one tensor whose leading dimensions are its batch dimensions, outermost vmap first, followed by
the dimensions ``f`` sees (its logical ones); the logical rank of each value is the one Dynamo
recorded in the node's ``example_value``. Then

- ``_add_batch_dim`` moves the mapped dimension to the front (``torch.movedim``, where it is
  not there already);
- ``_remove_batch_dim`` moves the batch dimension to ``out_dim`` among the logical ones, or,
  for a value the vmap's function did not batch, inserts it there and expands it to the batch
  size (``unsqueeze``, ``expand``), as functorch does;
- an elementwise operation (arithmetic, comparisons, logic, ``torch.where``) lines its tensor
  arguments up first: a size-1 dimension for each batch dimension an argument lacks and for
  each logical dimension it has fewer of, so that broadcasting pairs batch with batch and
  logical with logical; the result is batched in all of them;
- a conversion (``to``, ``float``, ``clone``, ...) keeps its argument's layout, and a factory
  method (``new_ones``, ...) gives an unbatched tensor of the requested size;
- indexing with tensors (``x[i, j]``, which ``TransformGetItemToIndex`` records as
  ``aten.index``) of an unbatched ``x`` lines the index tensors up the same way; the result has
  the batch dimensions first, as advanced indexing puts the broadcast index shape first;
- the nesting markers are dropped.

What this does not know how to write (a reduction, a view, indexing a batched tensor) is
refused, naming the operation and the user's line. The lifted graph is checked against Dynamo's
on the example inputs afterwards (``fxgen.capture.lift``), bit for bit.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, NoReturn

import torch
import torch.fx

from fxgen._errors import ExportError, Location

__all__ = ["unbatch"]

Where = Callable[[torch.fx.Node], tuple[Location | None, str]]


def _functorch(name: str) -> Any:
    try:
        from torch._functorch import predispatch
    except ImportError:  # pragma: no cover - torch without functorch's predispatch module
        return None
    return getattr(predispatch, name, None)


_LOAD = _functorch("lazy_load_decompositions")
_ENTER = _functorch("_vmap_increment_nesting")
_EXIT = _functorch("_vmap_decrement_nesting")
_ADD = _functorch("_add_batch_dim")
_REMOVE = _functorch("_remove_batch_dim")

# Operations that apply elementwise with broadcasting to their tensor arguments.
_ELEMENTWISE_FUNCTIONS: frozenset[Any] = frozenset({
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
    operator.and_, operator.or_, operator.xor, operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
    operator.ge, operator.neg, operator.invert, operator.pos, operator.abs,
    torch.add, torch.sub, torch.mul, torch.div, torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge,
    torch.logical_and, torch.logical_or, torch.logical_xor, torch.logical_not, torch.bitwise_and, torch.bitwise_or,
    torch.bitwise_xor, torch.bitwise_not, torch.where, torch.minimum, torch.maximum, torch.abs, torch.neg,
    torch.remainder, torch.fmod,
})  # fmt: skip
_ELEMENTWISE_METHODS = frozenset({
    "add", "sub", "mul", "div", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "abs", "neg", "remainder", "fmod",
    "minimum", "maximum", "where",
})  # fmt: skip
# Operator methods a batched tensor was called with (``a & b`` on functorch's tensors): written
# as the operator, the way Dynamo records them on plain tensors; True where the operands swap.
_OPERATOR_METHODS: dict[str, tuple[Any, bool]] = {
    "__and__": (operator.and_, False), "__or__": (operator.or_, False), "__xor__": (operator.xor, False),
    "__eq__": (operator.eq, False), "__ne__": (operator.ne, False), "__lt__": (operator.lt, False),
    "__le__": (operator.le, False), "__gt__": (operator.gt, False), "__ge__": (operator.ge, False),
    "__add__": (operator.add, False), "__sub__": (operator.sub, False), "__mul__": (operator.mul, False),
    "__truediv__": (operator.truediv, False), "__floordiv__": (operator.floordiv, False),
    "__mod__": (operator.mod, False), "__pow__": (operator.pow, False), "__invert__": (operator.invert, False),
    "__neg__": (operator.neg, False), "__rand__": (operator.and_, True), "__ror__": (operator.or_, True),
    "__rxor__": (operator.xor, True), "__radd__": (operator.add, True), "__rsub__": (operator.sub, True),
    "__rmul__": (operator.mul, True), "__rtruediv__": (operator.truediv, True),
}  # fmt: skip
# Methods whose result has their tensor's shape (only that tensor may be batched).
_KEEP_LAYOUT_METHODS = frozenset({"to", "float", "double", "half", "bool", "int", "long", "clone", "contiguous",
                                  "type", "detach"})  # fmt: skip
# Methods making a new tensor of the size they are given: unbatched whatever their tensor is.
_FACTORY_METHODS = frozenset({"new_ones", "new_zeros", "new_full", "new_empty", "new_tensor"})


def _index_targets() -> frozenset[Any]:
    packet = getattr(torch.ops.aten, "index", None)
    return frozenset(t for t in (packet, getattr(packet, "Tensor", None)) if t is not None)


_INDEX = _index_targets()


class _Layout:
    """How a value is held: its batch levels (outermost first) and its logical rank."""

    __slots__ = ("levels", "rank")

    def __init__(self, levels: tuple[int, ...], rank: int) -> None:
        self.levels, self.rank = levels, rank


def unbatch(graph: torch.fx.Graph, where: Where) -> None:
    """Rewrite every vmap region Dynamo recorded in ``graph`` as plain tensor operations (see
    the module docstring); refuse what cannot be."""
    if _ADD is None or not any(n.op == "call_function" and n.target in (_ADD, _LOAD) for n in graph.nodes):
        return
    layouts: dict[torch.fx.Node, _Layout] = {}
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in (_LOAD, _ENTER, _EXIT):
            if node.users:
                _refuse(node, "uses the vmap level as a value", where)
            graph.erase_node(node)
            continue
        if node.op == "call_function" and node.target is _ADD:
            _add_batch_dim(graph, node, layouts, where)
            continue
        if node.op == "call_function" and node.target is _REMOVE:
            _remove_batch_dim(graph, node, layouts, where)
            continue
        batched = [arg for arg in node.all_input_nodes if arg in layouts]
        if not batched:
            continue
        if node.op == "output":
            _refuse(node, "returns a batched value", where)
        _rewrite(graph, node, layouts, where)
    for node in list(graph.nodes):  # the markers that moved nothing: their value itself
        if node.op == "call_function" and node.target in (_ADD, _REMOVE):
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)


def _rank(node: Any) -> int:
    """The logical rank Dynamo recorded for a node's value (0 for a Python number)."""
    value = node.meta.get("example_value") if isinstance(node, torch.fx.Node) else node
    if isinstance(value, torch.Tensor):
        return value.dim()
    if isinstance(node, torch.fx.Node) and not isinstance(value, (int, float, bool, torch.SymInt, torch.SymFloat)):
        raise _Unknown
    return 0


class _Unknown(Exception):
    pass


def _layout(node: Any, layouts: dict[torch.fx.Node, _Layout]) -> _Layout:
    if isinstance(node, torch.fx.Node) and node in layouts:
        return layouts[node]
    return _Layout((), _rank(node))


def _replace(graph: torch.fx.Graph, node: torch.fx.Node, new: torch.fx.Node, layouts: dict[torch.fx.Node, _Layout],
             layout: _Layout | None) -> None:  # fmt: skip
    """Put ``new`` in place of ``node`` (erased), holding ``layout`` (None: unbatched)."""
    node.replace_all_uses_with(new)
    if new is not node:
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
            if key in node.meta and key not in new.meta:
                new.meta[key] = node.meta[key]
        graph.erase_node(node)
    layouts.pop(node, None)
    layouts.pop(new, None)  # the value itself, when it changes layout with this node
    if layout is not None and layout.levels:
        layouts[new] = layout


def _method(graph: torch.fx.Graph, before: torch.fx.Node, name: str, *args: Any) -> torch.fx.Node:
    with graph.inserting_before(before):
        return graph.call_method(name, args)


def _add_batch_dim(graph: torch.fx.Graph, node: torch.fx.Node, layouts: dict[torch.fx.Node, _Layout],
                   where: Where) -> None:  # fmt: skip
    _, in_dim, level = _args(node, 3)
    value, old = _held(node, (in_dim, level), layouts, where, "maps")
    levels = tuple(sorted((*old.levels, level)))
    source = len(old.levels) + in_dim % max(old.rank, 1)
    target = levels.index(level)
    _replace(graph, node, _moved(graph, node, value, source, target), layouts, _Layout(levels, old.rank - 1))


def _remove_batch_dim(graph: torch.fx.Graph, node: torch.fx.Node, layouts: dict[torch.fx.Node, _Layout],
                      where: Where) -> None:  # fmt: skip
    _, level, size, out_dim = _args(node, 4)
    value, old = _held(node, (level, out_dim), layouts, where, "returns")
    rest = tuple(lv for lv in old.levels if lv != level)
    target = len(rest) + out_dim % (old.rank + 1)
    if level in old.levels:
        new = _moved(graph, node, value, old.levels.index(level), target)
    else:  # the function returned a value that does not depend on the mapped one: repeated
        inserted = _method(graph, node, "unsqueeze", value, target)
        sizes = [-1] * (len(old.levels) + old.rank + 1)
        sizes[target] = size
        new = _method(graph, node, "expand", inserted, *sizes)
    _replace(graph, node, new, layouts, _Layout(rest, old.rank + 1))


def _held(node: torch.fx.Node, integers: tuple[Any, ...], layouts: dict[torch.fx.Node, _Layout], where: Where,
          verb: str) -> tuple[torch.fx.Node, _Layout]:  # fmt: skip
    """The value a vmap marker takes (its first argument) and how it is held; refused unless
    the level and dimensions (``integers``) are numbers in the graph."""
    value = node.args[0] if node.args else None
    if not isinstance(value, torch.fx.Node) or not all(isinstance(i, int) for i in integers):
        _refuse(node, f"{verb} a value fxgen cannot place (a level or dimension computed at run time)", where)
    try:
        return value, _layout(value, layouts)
    except _Unknown:
        _refuse(node, f"{verb} a value of unknown rank", where)


def _args(node: torch.fx.Node, count: int) -> list[Any]:
    """The first ``count`` positional arguments of ``node``, None for those it lacks."""
    return [*node.args, *[None] * count][:count]


def _moved(graph: torch.fx.Graph, node: torch.fx.Node, value: torch.fx.Node, source: int, target: int) -> torch.fx.Node:
    """``value`` with dimension ``source`` moved to ``target``. Where nothing moves, ``node``
    itself, kept until the end as the name of the value in its new layout (the value may be
    used in another layout too: one arange mapped as the queries and as the keys)."""
    if source == target:
        return node
    with graph.inserting_before(node):
        return graph.call_function(torch.movedim, (value, source, target))


def _rewrite(graph: torch.fx.Graph, node: torch.fx.Node, layouts: dict[torch.fx.Node, _Layout], where: Where) -> None:
    """One operation on batched values, written on their physical tensors."""
    try:
        if node.op == "call_method" and node.target in _FACTORY_METHODS:
            if any(arg in layouts for arg in _nodes((node.args[1:], node.kwargs))):
                _refuse(node, "makes a tensor of a batched size", where)
            layouts.pop(node, None)  # unbatched: the logical size it was asked for
            return
        if node.op == "call_method" and node.target in _KEEP_LAYOUT_METHODS:
            if any(arg in layouts for arg in _nodes((node.args[1:], node.kwargs))):
                _refuse(node, "converts to a batched tensor", where)
            layouts[node] = layouts[node.args[0]]  # type: ignore[index]
            return
        if node.op == "call_method" and node.target in _OPERATOR_METHODS and not node.kwargs and len(node.args) <= 2:
            function, swap = _OPERATOR_METHODS[str(node.target)]
            node.op, node.target = "call_function", function
            node.args = tuple(reversed(node.args)) if swap else node.args
        elementwise = (node.op == "call_function" and node.target in _ELEMENTWISE_FUNCTIONS) or (
            node.op == "call_method" and node.target in _ELEMENTWISE_METHODS)  # fmt: skip
        if elementwise:
            _elementwise(graph, node, layouts)
            return
        if node.op == "call_function" and (node.target in _INDEX or node.target is operator.getitem):
            _index(graph, node, layouts, where)
            return
    except _Unknown:
        _refuse(node, "works on a value of unknown rank", where)
    _refuse(node, "is an operation fxgen cannot write without vmap (it writes elementwise operations, "
            "conversions and indexing an unbatched tensor with batched indices)", where)  # fmt: skip


def _nodes(value: Any) -> list[torch.fx.Node]:
    found: list[torch.fx.Node] = []
    torch.fx.node.map_arg(value, found.append)
    return found


def _align(graph: torch.fx.Graph, before: torch.fx.Node, value: Any, layout: _Layout, levels: tuple[int, ...],
           rank: int) -> Any:  # fmt: skip
    """``value`` with a size-1 dimension for each of ``levels`` it lacks and enough logical ones
    for ``rank``: broadcasting then pairs it with the other arguments dimension by dimension."""
    if not layout.levels:  # broadcasting puts a plain tensor's dimensions last already
        return value
    for position, level in enumerate(levels):
        if level not in layout.levels:
            value = _method(graph, before, "unsqueeze", value, position)
    for _ in range(rank - layout.rank):
        value = _method(graph, before, "unsqueeze", value, len(levels))
    return value


def _elementwise(graph: torch.fx.Graph, node: torch.fx.Node, layouts: dict[torch.fx.Node, _Layout]) -> None:
    tensors = [arg for arg in _nodes((node.args, node.kwargs)) if arg in layouts or _is_tensor(arg)]
    held = {arg: _layout(arg, layouts) for arg in tensors}
    levels = tuple(sorted({lv for layout in held.values() for lv in layout.levels}))
    rank = max(layout.rank for layout in held.values())
    aligned = {arg: _align(graph, node, arg, held[arg], levels, rank) for arg in tensors}
    node.args = torch.fx.node.map_arg(node.args, lambda n: aligned.get(n, n))
    node.kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: aligned.get(n, n))
    layouts[node] = _Layout(levels, rank)


def _is_tensor(node: torch.fx.Node) -> bool:
    """Is the value Dynamo recorded for ``node`` a tensor? (Unknown: it recorded none.)"""
    if "example_value" not in node.meta:
        raise _Unknown
    return isinstance(node.meta["example_value"], torch.Tensor)


def _index(graph: torch.fx.Graph, node: torch.fx.Node, layouts: dict[torch.fx.Node, _Layout], where: Where) -> None:
    """``x[i, j, ...]`` with tensor indices, ``x`` unbatched: the indices lined up as for an
    elementwise operation, the result's batch dimensions first."""
    source, indices = _args(node, 2)
    if node.target is operator.getitem and isinstance(indices, torch.fx.Node):
        indices = [indices]
    if source in layouts:
        _refuse(node, "indexes a batched tensor", where)
    if not isinstance(indices, (list, tuple)) or not indices or not all(
            isinstance(i, torch.fx.Node) and (i in layouts or _is_tensor(i)) for i in indices):  # fmt: skip
        _refuse(node, "indexes with something other than index tensors", where)
    for index in indices:
        dtype = getattr(index.meta.get("example_value"), "dtype", None)
        if dtype in (torch.bool, torch.uint8):
            _refuse(node, "indexes with a mask", where)
    held = {index: _layout(index, layouts) for index in indices}
    levels = tuple(sorted({lv for layout in held.values() for lv in layout.levels}))
    rank = max(layout.rank for layout in held.values())
    aligned = tuple(_align(graph, node, index, held[index], levels, rank) for index in indices)
    with graph.inserting_before(node):
        new = graph.call_function(operator.getitem, (source, aligned))
    new.meta = {k: v for k, v in node.meta.items() if k != "example_value"}
    _replace(graph, node, new, layouts, _Layout(levels, rank + _rank(source) - len(indices)))


def _refuse(node: torch.fx.Node, why: str, where: Where) -> NoReturn:
    location, line = where(node)
    shown = getattr(node.target, "__name__", None) or str(node.target)
    raise ExportError(f"the captured graph runs torch.vmap, and its node {node.name!r} ({shown}){line} {why}; "
                      "compute it without torch.vmap in the forward, or export with capture='trace'", location)
