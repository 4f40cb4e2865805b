"""A model captured in both modes, and auto capture's proof on the example inputs.

A forward may read ``self.training`` (functional dropout, stochastic depth): a capture records
one mode only, and the other would be lost. So a model is captured in eval mode and in train
mode, each submodule's flag put back as it was afterwards (``modes_kept``). Where both graphs
are the same node for node (most models: ``nn.Dropout`` and ``BatchNorm`` are calls either way),
nothing else changes: one graph, the spec it always was. Where they differ, both go on to
``fxgen.describe.modes``, which writes one spec whose nodes say where the mode matters.

Both modes are captured the same way: if symbolic tracing fails in one mode and example inputs
were given, ``"auto"`` captures both with TorchDynamo. With example inputs, ``"auto"`` also runs
each traced graph against the model on them, in its mode, the random state forked and seeded
alike for both runs (``proven``): a traced graph that computes something else (a random draw or a
flag tracing froze, an optional argument traced as a tensor, a ``__call__`` the trace skipped) is
captured with TorchDynamo instead, or refused naming the mode and the output that differs.

A trace that provably reads no mode is not made twice (``ModeWatch``): while torch.fx's tracer
runs, every read of a module's ``training`` flag is recorded. If none was read and no module of
the model changes anything but that flag in ``train()``, tracing in the other mode runs the same
Python code on the same values and records the same graph, so the one graph stands for both
(auto capture's proof still runs it against the model in each mode).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch
import torch.fx

from fxgen._errors import ExportError

__all__ = ["MODES", "MODE_FREE_KEY", "ONE_MODE_KEY", "Captures", "ModeWatch", "modes_kept", "proven", "refuse_unproven", "same_graph"]


MODES = (False, True)  # eval, train: the order captures are made and specs merged in

MODE_FREE_KEY = "fxgen_mode_free"
"""``gm.meta`` key: True on a trace that provably read no module's mode (``ModeWatch``)."""

ONE_MODE_KEY = "fxgen_one_mode"
"""``gm.meta`` key on the one capture of a model whose other mode cannot be captured: that mode
and why; the spec refuses that mode (``fxgen.capture.export``) instead of computing this one's."""

Captures = dict[bool, tuple[torch.fx.GraphModule, str | None]]
"""Each mode's graph module and doc (``capture_graph``'s), by mode (``True``: train)."""


@contextlib.contextmanager
def modes_kept(module: torch.nn.Module) -> Iterator[None]:
    """Put back every submodule's ``training`` flag as it was (a model may hold both modes)."""
    flags = [(sub, sub.training) for sub in module.modules()]
    try:
        yield
    finally:
        for sub, flag in flags:
            sub.training = flag


class ModeWatch:
    """Whether the code run inside ``with ModeWatch(module) as watch:`` provably read no
    module's ``training`` flag (``watch.independent``), so that ``module`` run in the other mode
    would run the same code.

    While any watch is open, ``nn.Module.training`` is a data descriptor that records each read
    (in any thread: a read elsewhere only costs the proof) and stores the flag where it always
    is, in the instance's ``__dict__``. Not provable, and so not independent: a module of
    ``module`` whose class defines ``training`` or ``train`` itself (``train()`` may change more
    than the flag), or a read of a flag that is not in the instance's ``__dict__``. What it
    cannot see is a forward reading the instance's ``__dict__`` itself (``vars(self)["training"]``),
    which no attribute access goes through."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.read = not all(_plain_mode(type(sub)) for sub in module.modules())

    @property
    def independent(self) -> bool:
        return not self.read

    def __enter__(self) -> ModeWatch:
        with _LOCK:
            if not _WATCHES:
                torch.nn.Module.training = _Flag()  # type: ignore[assignment]
            _WATCHES.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        with _LOCK:
            _WATCHES.remove(self)
            if not _WATCHES:
                del torch.nn.Module.training


_LOCK = threading.Lock()
_WATCHES: list[ModeWatch] = []  # the open watches: the descriptor is installed while there is one


class _Flag:
    """``nn.Module.training`` while watched: the instance's own flag, each read recorded."""

    def __get__(self, instance: torch.nn.Module | None, owner: type | None = None) -> bool:
        for watch in _WATCHES:
            watch.read = True
        if instance is None:  # (the class has no ``training``, as before)
            raise AttributeError("training")
        try:
            return instance.__dict__["training"]
        except KeyError:
            return type(instance).__getattr__(instance, "training")  # type: ignore[return-value]

    def __set__(self, instance: torch.nn.Module, value: bool) -> None:
        instance.__dict__["training"] = value


def _plain_mode(cls: type) -> bool:
    """Whether ``cls`` keeps its mode as ``nn.Module`` does: ``train`` is Module's own, and no
    class of its bases defines ``training`` (which would hide the watch's descriptor)."""
    if getattr(cls, "train", None) is not torch.nn.Module.train:
        return False
    return not any("training" in vars(base) for base in cls.__mro__ if base is not torch.nn.Module)


def same_graph(a: torch.fx.GraphModule, b: torch.fx.GraphModule) -> bool:
    """Are two captures' graphs the same node for node (names, targets, arguments, and the
    values of the constants they read)? False where it cannot tell (the caller then describes
    both, which costs time and nothing else)."""
    if a is b:  # (one trace standing for both modes)
        return True
    nodes_a, nodes_b = list(a.graph.nodes), list(b.graph.nodes)
    if len(nodes_a) != len(nodes_b):
        return False
    for x, y in zip(nodes_a, nodes_b, strict=True):
        if (x.op, x.name, x.target, x.type) != (y.op, y.name, y.target, y.type):
            return False
        if not _same_value((x.args, x.kwargs), (y.args, y.kwargs)):
            return False
        if x.op == "get_attr" and not _same_attribute(a, b, str(x.target)):
            return False
    return True


def _same_value(x: Any, y: Any) -> bool:
    if isinstance(x, torch.fx.Node) or isinstance(y, torch.fx.Node):
        return isinstance(x, torch.fx.Node) and isinstance(y, torch.fx.Node) and x.name == y.name
    if isinstance(x, (tuple, list)) or isinstance(y, (tuple, list)):
        return (type(x) is type(y) and len(x) == len(y)
                and all(_same_value(p, q) for p, q in zip(x, y, strict=True)))  # fmt: skip
    if isinstance(x, dict) or isinstance(y, dict):
        return (type(x) is type(y) and list(x) == list(y)
                and all(_same_value(x[k], y[k]) for k in x))  # fmt: skip
    if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
        return x is y
    try:
        return type(x) is type(y) and bool(x == y)
    except Exception:
        return False


def _same_attribute(a: torch.nn.Module, b: torch.nn.Module, target: str) -> bool:
    x: Any = a
    y: Any = b
    for part in target.split("."):
        x, y = getattr(x, part, None), getattr(y, part, None)
    if x is y:
        return True
    return isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and _same_tensor(x, y)


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape or a.device != b.device:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num()))
    return bool(torch.equal(a, b))


def proven(
    module: torch.nn.Module,
    gm: torch.fx.GraphModule,
    inputs: dict[str, torch.Tensor],
    kwargs: dict[str, Any],
    kept: Callable[[torch.nn.Module], contextlib.AbstractContextManager[None]],
) -> str | None:
    """None if ``gm`` (traced from ``module``, in its current mode) computes what ``module``
    computes on the example inputs, bit for bit, each run from the same seed inside ``kept``
    (which runs the model as the captures do, the random state forked, and leaves it as it was
    found); else what differs."""
    mode = "train" if module.training else "eval"
    try:
        with kept(module):
            torch.manual_seed(0)
            expected = module(**inputs, **kwargs)
    except Exception:
        return None  # the model itself fails on its example: nothing to prove against
    try:
        with kept(module):
            torch.manual_seed(0)
            got = gm(**inputs, **kwargs)
    except Exception as exc:
        text = str(exc).strip().splitlines()
        return f"in {mode} mode the traced graph fails on the example inputs ({type(exc).__name__}: " \
               f"{text[0][:160] if text else ''})"  # fmt: skip
    want, have = _tensors(expected), _tensors(got)
    if len(want) != len(have):
        return f"in {mode} mode the traced graph returns {len(have)} tensors where the model returns {len(want)} on " \
               "the example inputs"  # fmt: skip
    names = _output_names(gm, len(have))
    for k, (x, y) in enumerate(zip(want, have, strict=True)):
        if _same_tensor(x, y):
            continue
        detail = ""
        if x.shape == y.shape and x.is_floating_point() and y.is_floating_point():
            detail = f", by up to {(x.double() - y.double()).abs().nan_to_num().max().item():.3g}"
        elif x.shape != y.shape:
            detail = f" (shape {list(y.shape)} against {list(x.shape)})"
        return f"in {mode} mode output {k}{names[k]} of the traced graph differs from the model's on the example " \
               f"inputs{detail}"  # fmt: skip
    return None


def _tensors(value: Any) -> list[torch.Tensor]:
    """The tensors of an output, in order (a model's output class and the dict a traced graph
    returns for it hold the same: containers are not compared, as ``bench/parity.py`` does not)."""
    return _leaves(value, torch.Tensor)


def _leaves(value: Any, kind: type[_Leaf]) -> list[_Leaf]:
    if isinstance(value, kind):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _leaves(item, kind)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _leaves(item, kind)]
    return []


_Leaf = TypeVar("_Leaf")


def _output_names(gm: torch.fx.GraphModule, count: int) -> list[str]:
    """`` (node 'add')`` for each output tensor, where the output's nodes are the tensors."""
    output = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    leaves = _leaves(output.args[0], torch.fx.Node) if output is not None else []
    if len(leaves) != count:
        return [""] * count
    return [f" (node {leaf.name!r})" for leaf in leaves]


def refuse_unproven(difference: str, dynamo: ExportError) -> ExportError:
    """Auto capture's refusal when the traced graph is not the model and Dynamo fails too."""
    return ExportError(f"symbolic tracing computes something else: {difference}; TorchDynamo cannot capture it "
                       f"either: {dynamo.message}", dynamo.location)  # fmt: skip
