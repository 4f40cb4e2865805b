"""A GraphModule whose graph depends on the mode: one plain torch.fx graph per mode, swapped by
``train()``.

A class whose nodes mention ``training`` (an ``if: training`` group, a ``{arg: training}``
argument) resolves to two plain graphs, one per mode (docs/design-conditionals.md). torch.fx's
own control flow (``torch.ops.higher_order.cond``) cannot carry them: under autograd it refuses
closed-over parameters and BatchNorm's buffer updates, and training is the point. So the
GraphModule holds both graphs over one set of submodules, parameters and buffers (one state
dict, loaded strictly) and ``train(mode)`` swaps ``self.graph`` as it switches ``nn.Dropout``:
``gm.graph`` and ``gm.code`` are always the current mode's plain graph and code. Each mode's code
is generated and compiled once, the first time the module is in that mode, and kept: switching
back and forth compiles nothing. A class that does not mention ``training`` is a plain
GraphModule, as it always was. (``fxgen.assemble.module`` compiles each mode's graph when it
builds one; this module only swaps.)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.fx
import torch.nn

__all__ = ["ModeGraphModule", "mode_graph_module"]


@dataclass
class _Compiled:
    """One mode's graph and what torch.fx compiled of it (what ``recompile`` sets)."""

    graph: torch.fx.Graph
    code: str | None = None
    lineno_map: dict[int, int | None] | None = None
    prologue_start: int = 0
    forward: Any = None


class ModeGraphModule(torch.fx.GraphModule):
    """A ``torch.fx.GraphModule`` with one graph per mode (``train()``/``eval()`` swap them).

    ``fxgen.assemble.module`` compiles each mode's graph once (``compiled``) and sets the state;
    a copy or an unpickled one compiles them again with torch.fx's own ``recompile``."""

    _modes: dict[bool, _Compiled]

    def train(self, mode: bool = True) -> ModeGraphModule:
        super().train(mode)
        self.use_mode(mode)
        return self

    def use_mode(self, mode: bool) -> None:
        """Make ``mode``'s graph and code this module's."""
        modes = self.__dict__.get("_modes")
        if modes is None:  # (while torch.fx's constructor runs)
            return
        compiled = modes[bool(mode)]
        if compiled.forward is None:  # not compiled yet: torch.fx's setter and recompile
            self.graph = compiled.graph
            return
        self._graph = compiled.graph
        compiled.graph.owning_module = self
        self._code, self._lineno_map = compiled.code, compiled.lineno_map
        self._prologue_start = compiled.prologue_start
        type(self).forward = compiled.forward

    def compiled(self, mode: bool) -> None:
        """The graph, code and forward this module has now are ``mode``'s (compiled once)."""
        self._modes[bool(mode)] = _Compiled(self._graph, self._code, self._lineno_map, self._prologue_start,
                                            type(self).forward)  # fmt: skip

    def mode_graphs(self) -> dict[bool, torch.fx.Graph]:
        """Both graphs, by mode (``True``: train)."""
        return {mode: compiled.graph for mode, compiled in self._modes.items()}

    def recompile(self) -> Any:
        """torch.fx's ``recompile`` of the current graph (after an edit): it becomes the
        current mode's."""
        code = super().recompile()
        if "_modes" in self.__dict__:
            self.compiled(self.training)
        return code

    def __deepcopy__(self, memo: dict[int, Any]) -> ModeGraphModule:
        """A copy with both graphs (torch.fx's copy rebuilds from the current graph alone, keeping
        only the attributes that graph reads)."""
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        body = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_modes")}
        torch.nn.Module.__init__(res)
        res.__dict__.update(copy.deepcopy(body, memo))
        graphs = {mode: copy.deepcopy(c.graph, memo) for mode, c in self._modes.items()}
        _install(res, graphs, type(self).__name__)
        return res

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its two graphs' code and its state; unpickled, both graphs are traced
        back from that code, as torch.fx unpickles a GraphModule."""
        body = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_modes")}
        sources = {}
        for mode in (False, True):
            compiled = self._modes[mode]
            code = compiled.graph.python_code(root_module="self")
            sources[mode] = (code.src, code.globals)
        return (_unpickle, (body, {m: _import_block(g) + src for m, (src, g) in sources.items()},
                            type(self).__name__))  # fmt: skip


def mode_graph_module(graphs: dict[bool, torch.fx.Graph], class_name: str) -> ModeGraphModule:
    """An empty ``ModeGraphModule`` holding ``graphs`` (none compiled yet), in train mode."""
    gm = ModeGraphModule(torch.nn.Module(), torch.fx.Graph(), class_name=class_name)
    gm.__dict__["_modes"] = {bool(mode): _Compiled(graph) for mode, graph in graphs.items()}
    return gm


def _install(gm: ModeGraphModule, graphs: dict[bool, torch.fx.Graph], class_name: str) -> None:
    """A copy's or an unpickled module's graphs, compiled with torch.fx's own ``recompile``."""
    if "_wrapped_call" not in vars(type(gm)):  # (a copy: torch.fx's constructor did not run)
        torch.fx.GraphModule.recompile(_with_graph(gm, torch.fx.Graph()))
    type(gm).__name__ = class_name
    gm.__dict__["_modes"] = {bool(mode): _Compiled(graph) for mode, graph in graphs.items()}
    training = gm.training
    for mode in graphs:
        gm.training = mode
        gm.use_mode(mode)
    gm.training = training
    gm.use_mode(training)
def _with_graph(gm: ModeGraphModule, graph: torch.fx.Graph) -> ModeGraphModule:
    gm._graph = graph
    graph.owning_module = gm
    return gm


def _import_block(globals_: dict[str, Any]) -> str:
    from torch.fx.graph_module import _format_import_block
    from torch.package import sys_importer

    return _format_import_block(globals_, sys_importer)


def _unpickle(body: dict[str, Any], sources: dict[bool, str], class_name: str) -> ModeGraphModule:
    from torch.fx.graph_module import _deserialize_graph_module, _forward_from_src

    graphs: dict[bool, torch.fx.Graph] = {}
    for mode, src in sources.items():
        forward = _forward_from_src(src, {}, {})
        graphs[mode] = cast(torch.fx.Graph, _deserialize_graph_module(forward, dict(body)).graph)
    gm = type.__call__(ModeGraphModule, torch.nn.Module(), torch.fx.Graph(), class_name)
    gm.__dict__.update({k: v for k, v in body.items() if k not in ("_code", "_lineno_map")})
    _install(gm, graphs, class_name)
    return gm
