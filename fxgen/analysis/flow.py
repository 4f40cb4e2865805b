"""Whether example inputs flow through a graph, on the meta device, without TorchDynamo.

``fxgen validate`` runs on every save in editors and hooks, and a spec's ``inputs:`` make it
ask whether they flow through the graph. ``shapes`` asks that on FakeTensors, and in torch
2.13 making a ``FakeTensorMode`` imports TorchDynamo (1.3 s, half of ``import torch``). This
asks it first on plain meta tensors at the stand-in sizes: the same meta kernels a FakeTensor
runs, without the mode. Its answer is only "they flow" or "cannot tell": anything that fails
here (a shape mismatch, an operation meta tensors do not support) goes on to ``shapes``, which
decides and names the failure, so every error is the one it reports.

Two things make the meta run differ from the FakeTensors' CPU: a factory call the graph makes
(put on the meta device here, as every other tensor), and a device the graph names, which
would make a real tensor on it: a graph that names one is left to ``shapes``.

torch's Python meta kernels of elementwise operations are wrapped in ``torch._disable_dynamo``,
which imports TorchDynamo the first time each runs, to keep TorchDynamo from tracing them. While
TorchDynamo is not imported, nothing can be tracing them: ``without_dynamo_import`` lets those
wrappers run what they wrap for the run (torch's own cache attribute, set on the kernels found in
torch's decomposition tables and reference modules, and removed after). A wrapper it does not
find still imports TorchDynamo: slower, never different. sympy is still imported (``torch._check``
imports ``symbolic_shapes``, 0.6 s).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.fx

__all__ = ["flows_on_meta", "without_dynamo_import"]

# torch._compile._disable_dynamo caches what it calls on the function it wraps, under this name
_CACHE = "__dynamo_disable"


def flows_on_meta(gm: torch.fx.GraphModule, inputs: Sequence[tuple[list[int], torch.dtype]]) -> bool:
    """True when tensors of ``inputs`` (shape and dtype, in the order of the placeholders they
    are given to; every size concrete) flow through ``gm`` (built on the meta device) on the
    meta device; False when this cannot tell. Tensors ``gm`` holds for real are moved there."""
    if any(_names_a_device(node) for node in gm.graph.nodes):
        return False
    for module in gm.modules():  # a tensor made for real (a literal) meets the others on meta
        for name, param in module._parameters.items():
            if param is not None and not param.is_meta:
                module._parameters[name] = torch.nn.Parameter(param.to("meta"), param.requires_grad)
        for name, buffer in module._buffers.items():
            if buffer is not None and not buffer.is_meta:
                module._buffers[name] = buffer.to("meta")
        for name, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and not value.is_meta:
                setattr(module, name, value.to("meta"))
    args = [torch.empty(shape, dtype=dtype, device="meta") for shape, dtype in inputs]
    try:
        with without_dynamo_import(), torch.device("meta"):
            torch.fx.Interpreter(gm).run(*args)
    except Exception:  # whatever it is, shapes decides and names it
        return False
    return True


def _names_a_device(node: torch.fx.Node) -> bool:
    """Whether ``node`` writes a device (``device="cpu"``, ``x.to("cuda")``): a factory call
    given one makes a real tensor there, which the meta run would not meet as the load does."""
    named = False

    def look(value: Any) -> Any:
        nonlocal named
        if isinstance(value, torch.device):
            named = True
        elif isinstance(value, str):
            with contextlib.suppress(RuntimeError, ValueError, TypeError):
                torch.device(value)
                named = True
        return value

    torch.fx.node.map_aggregate((node.args, node.kwargs), look)
    return named


@contextlib.contextmanager
def without_dynamo_import() -> Iterator[None]:
    """While TorchDynamo is not imported, ``torch._disable_dynamo``'s wrappers in torch's meta
    kernels and references call what they wrap instead of importing TorchDynamo to disable it
    (nothing can be tracing them). Undone on exit: a later TorchDynamo disables them as before."""
    if "torch._dynamo" in sys.modules:
        yield
        return
    marked = []
    for wrapped in _disabled():
        if _CACHE not in vars(wrapped):
            setattr(wrapped, _CACHE, wrapped)
            marked.append(wrapped)
    try:
        yield
    finally:
        for wrapped in marked:
            if vars(wrapped).get(_CACHE) is wrapped:
                delattr(wrapped, _CACHE)


@functools.cache
def _disabled() -> tuple[Any, ...]:
    """The functions torch's meta kernels and references wrap in ``torch._disable_dynamo``
    (found by the wrapper's code), or none when that wrapper no longer caches under ``_CACHE``."""
    import torch._decomp
    import torch._refs

    wrapper = torch._disable_dynamo(lambda: None).__code__
    if _CACHE not in wrapper.co_consts or "fn" not in wrapper.co_freevars:  # torch changed: leave it be
        return ()
    found: dict[int, Any] = {}
    seen: set[int] = set()
    todo: list[Any] = [fn for table in torch._decomp.global_decomposition_table.values() for fn in table.values()]
    for name, module in list(sys.modules.items()):
        if name.startswith(("torch._refs", "torch._prims", "torch._decomp")) and module is not None:
            todo.extend(vars(module).values())
    while todo:  # through each wrapper's __wrapped__ and the functions its closure holds
        fn = todo.pop()
        if not isinstance(fn, types.FunctionType) or id(fn) in seen:
            continue
        seen.add(id(fn))
        cells = [cell.cell_contents for cell in fn.__closure__ or () if _filled(cell)]
        if fn.__code__ is wrapper:
            wrapped = fn.__closure__[wrapper.co_freevars.index("fn")].cell_contents  # type: ignore[index]
            found[id(wrapped)] = wrapped
        todo.extend([*cells, vars(fn).get("__wrapped__")])
    return tuple(found.values())


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True
