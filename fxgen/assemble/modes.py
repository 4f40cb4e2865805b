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

The same holds for a class whose conditions ask whether an optional input was given (``if: mask
is None``): what changes is not the mode but the call. Its graphs are one per mode and per set of
inputs left out (``cases``); ``gm.graph`` and ``gm.code`` are the current mode's graph with every
input given, and ``forward`` looks at the call (which of the tested inputs are None) and runs that
case's compiled forward. Modes and presence are one mechanism: the same class, the same state.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.fx
import torch.nn

from fxgen.spec.model import Item
from fxgen.spec.resolve import TRAINING, cases

__all__ = ["Case", "ModeGraphModule", "case_envs", "mode_graph_module"]

Case = tuple[bool, frozenset[str]]
"""A graph's mode (``True``: train) and the optional inputs left out (None) in the calls it runs."""


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

    _modes: dict[bool, _Compiled]  # every input given, by mode
    _cases: dict[Case, _Compiled]  # some optional input left out
    _optional: tuple[tuple[str, int | None], ...]  # the inputs tested, each with its position (None: keyword only)

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
        self._dispatching()

    def compiled(self, mode: bool, absent: frozenset[str] = frozenset()) -> None:
        """The graph, code and forward this module has now are ``mode``'s, for calls leaving out
        ``absent`` (compiled once)."""
        compiled = _Compiled(self._graph, self._code, self._lineno_map, self._prologue_start, type(self).forward)
        if absent:
            self._cases[(bool(mode), absent)] = compiled
        else:
            self._modes[bool(mode)] = compiled

    def mode_graphs(self) -> dict[bool, torch.fx.Graph]:
        """Both graphs with every input given, by mode (``True``: train)."""
        return {mode: compiled.graph for mode, compiled in self._modes.items()}

    def case_graphs(self) -> dict[Case, torch.fx.Graph]:
        """Every graph, by mode and the optional inputs its calls leave out."""
        out: dict[Case, torch.fx.Graph] = {(mode, frozenset()): c.graph for mode, c in self._modes.items()}
        out.update((case, c.graph) for case, c in self.__dict__.get("_cases", {}).items())
        return out

    def recompile(self) -> Any:
        """torch.fx's ``recompile`` of the current graph (after an edit): it becomes the
        current mode's."""
        code = super().recompile()
        if "_modes" in self.__dict__:
            self.compiled(*self.__dict__.get("_compiling", (self.training, frozenset())))
            self._dispatching()
        return code

    def _dispatching(self) -> None:
        """Where conditions test optional inputs, ``forward`` picks the graph for each call."""
        if self.__dict__.get("_optional"):
            type(self).forward = _dispatch

    def __deepcopy__(self, memo: dict[int, Any]) -> ModeGraphModule:
        """A copy with both graphs (torch.fx's copy rebuilds from the current graph alone, keeping
        only the attributes that graph reads)."""
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        body = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_modes", "_cases")}
        torch.nn.Module.__init__(res)
        res.__dict__.update(copy.deepcopy(body, memo))
        graphs = {case: copy.deepcopy(graph, memo) for case, graph in self.case_graphs().items()}
        _install(res, graphs, type(self).__name__)
        return res

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its two graphs' code and its state; unpickled, both graphs are traced
        back from that code, as torch.fx unpickles a GraphModule."""
        body = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_modes", "_cases")}
        sources = {}
        for case, graph in self.case_graphs().items():
            code = graph.python_code(root_module="self")
            sources[case] = _import_block(code.globals) + code.src
        return (_unpickle, (body, sources, type(self).__name__))


def mode_graph_module(
    graphs: dict[bool, torch.fx.Graph], class_name: str, optional: tuple[tuple[str, int | None], ...] = ()
) -> ModeGraphModule:
    """An empty ``ModeGraphModule`` holding ``graphs`` (none compiled yet), in train mode;
    ``optional`` are the inputs its conditions test, each with its position in ``forward``."""
    gm = ModeGraphModule(torch.nn.Module(), torch.fx.Graph(), class_name=class_name)
    gm.__dict__["_modes"] = {bool(mode): _Compiled(graph) for mode, graph in graphs.items()}
    gm.__dict__["_cases"] = {}
    gm.__dict__["_optional"] = optional
    return gm


def case_envs(items: list[Item]) -> dict[Case, dict[str, Any]]:
    """The cases a class's graph depends on (``fxgen.spec.resolve.cases``), each with what it adds
    to the environment; both modes always (a graph that reads only the presence of inputs is the
    same in both); empty when it depends on neither mode nor presence."""
    envs = cases(items)
    if envs == [{}]:
        return {}
    out: dict[Case, dict[str, Any]] = {}
    for mode in (False, True):
        for extra in envs:
            if extra.get(TRAINING, mode) == mode:
                absent = frozenset(name for name, value in extra.items() if name != TRAINING and value is None)
                out[(mode, absent)] = {**extra, TRAINING: mode} if TRAINING in extra else extra
    return out


def _dispatch(self: ModeGraphModule, *args: Any, **kwargs: Any) -> Any:
    """``forward`` of a module whose graph depends on which optional inputs a call gives: the
    current mode's graph for the inputs this call leaves out (None)."""
    absent = frozenset(name for name, at in self._optional
                       if (args[at] if at is not None and at < len(args) else kwargs.get(name)) is None)  # fmt: skip
    compiled = self._modes[self.training] if not absent else self._cases[(self.training, absent)]
    return compiled.forward(self, *args, **kwargs)


def _install(gm: ModeGraphModule, graphs: dict[Case, torch.fx.Graph], class_name: str) -> None:
    """A copy's or an unpickled module's graphs, compiled with torch.fx's own ``recompile``."""
    if "_wrapped_call" not in vars(type(gm)):  # (a copy: torch.fx's constructor did not run)
        torch.fx.GraphModule.recompile(_with_graph(gm, torch.fx.Graph()))
    type(gm).__name__ = class_name
    gm.__dict__["_modes"] = {mode: _Compiled(graph) for (mode, absent), graph in graphs.items() if not absent}
    gm.__dict__["_cases"] = {}
    training = gm.training
    for (mode, absent), graph in graphs.items():
        if absent:  # compiled as the current graph, then the mode's own graph is put back
            gm.__dict__["_compiling"] = (mode, absent)
            try:
                gm.graph = graph
            finally:
                del gm.__dict__["_compiling"]
            continue
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


def _unpickle(body: dict[str, Any], sources: dict[Case, str], class_name: str) -> ModeGraphModule:
    from torch.fx.graph_module import _deserialize_graph_module, _forward_from_src

    graphs: dict[Case, torch.fx.Graph] = {}
    for case, src in sources.items():
        forward = _forward_from_src(src, {}, {})
        graphs[case] = cast(torch.fx.Graph, _deserialize_graph_module(forward, dict(body)).graph)
    gm = type.__call__(ModeGraphModule, torch.nn.Module(), torch.fx.Graph(), class_name)
    gm.__dict__.update({k: v for k, v in body.items() if k not in ("_code", "_lineno_map")})
    _install(gm, graphs, class_name)
    return gm
