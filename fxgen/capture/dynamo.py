"""Capture with TorchDynamo: an ``nn.Module`` and example inputs -> Dynamo's torch-level graph.

Symbolic tracing runs ``forward`` on Proxies, so Python that iterates a shape, branches on a
size or hands one to numpy cannot be traced. Dynamo runs that Python for real, on example
inputs, and records the tensor operations it reaches: ``torch.compile(module, backend=...,
fullgraph=True, dynamic=False)`` hands the backend one GraphModule, which is kept as it is
(the backend compiles nothing: the captured graph itself runs, once, on the example inputs).
What comes back (:class:`Captured`) is Dynamo's graph and what is needed to turn it into the
form ``to_spec`` takes (``fxgen.capture.lift``): the tensor behind each of its placeholders
and the tensors the compiled call returned, inside the structure the forward returned them in.

Shapes are symbolic by default: every dimension of every input is marked dynamic
(``torch._dynamo.maybe_mark_dynamic``), under torch's size-oblivious reasoning (a size of 1 is
not specialised, so a capture at batch 1 is a capture of every batch) and without duck sizing
(two dimensions of equal example size are not assumed equal). The graph then computes sizes
from its inputs, and what the capture assumed is kept in the ``ShapeEnv`` it ends with, which
``fxgen.capture.dims`` turns into the spec's named dimensions and checks. ``dynamic=False``
specialises every size, as before; a mapping names each input's dimensions (a name keeps one
dynamic under that name, None makes it static). A dimension the forward guards on more than
``GUARD_LIMIT`` times is specialised to its example size (torch's
``symbol_guard_limit_before_specialize``), and the spec's inputs say so: TensorFlow-style "same"
padding, computed from the size before every convolution (EfficientNet-B0b), nests a ``ceil``
per layer into each size, and reasoning about those expressions grows so fast that the capture
did not end. A graph break is one ExportError naming the user's line and the
reason Dynamo gives. The model is left as it was found: attributes and containers by
``fxgen.capture.preserve``, the values of its buffers (a forward may update them in place)
and the random generator by this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import keyword
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sympy
import torch
import torch.fx
from torch.fx.experimental import _config as fx_config

from fxgen._errors import ExportError
from fxgen.capture.dims import DimFacts, dim_facts
from fxgen.capture.effects import hook_mark, refuse_new_hooks, refuse_root_hooks
from fxgen.capture.preserve import Snapshot
from fxgen.capture.trace import HIDDEN_PARAMETERS, at_user_line

__all__ = ["Captured", "Dynamic", "capture_dynamo", "example_arguments", "kept_state", "no_parameter_requires_grad"]

# Guards on one dimension after which the capture fixes it at its example size (deterministic,
# unlike a time limit): the zoo's transformers, vision transformers and kornia models stay below.
GUARD_LIMIT = 20

# Which dimensions a capture keeps symbolic: all (True), none (False), or by input, one entry
# per dimension, a name (dynamic, so named) or None (static); dimensions not given are dynamic.
Dynamic = bool | Mapping[str, Sequence[str | None]]


@dataclass
class Captured:
    """Dynamo's graph of ``module`` on ``inputs`` (name -> tensor, in ``forward``'s order).

    ``graph_inputs[i]`` is the tensor the backend received for the graph's i-th placeholder
    (an input, a parameter, a buffer, another tensor the forward read); ``graph_outputs`` the
    tensors the graph returned; ``result`` what the compiled call returned (the forward's own
    structure: tuples, dicts, model outputs, holding some of ``graph_outputs``).
    """

    graph: torch.fx.GraphModule
    graph_inputs: list[Any]
    graph_outputs: tuple[Any, ...]
    result: Any
    inputs: dict[str, torch.Tensor]
    kwargs: dict[str, Any]
    facts: DimFacts | None = None  # the inputs' shapes (numbers, names) and the checks over the names
    sizes: dict[int, tuple[str, int] | int] = dataclasses.field(default_factory=dict)  # symbolic placeholders


def example_arguments(
    module: torch.nn.Module, example_inputs: Any, example_kwargs: Mapping[str, Any] | None
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The example inputs by ``forward`` parameter name, and the fixed keyword arguments.

    ``example_inputs`` is a tensor, a tuple of tensors (``forward``'s leading parameters) or a
    mapping from parameter names to tensors; they become the spec's inputs. ``example_kwargs``
    are fixed while capturing (``use_cache=False``) and are no input of the spec.
    """
    try:
        signature = inspect.signature(module.forward)
    except (TypeError, ValueError):
        raise ExportError(f"cannot read the signature of {type(module).__name__}.forward; "
                          "capture with TorchDynamo needs its parameter names") from None  # fmt: skip
    named = [p.name for p in signature.parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]  # fmt: skip
    if not named and signature.parameters:
        raise ExportError(f"cannot name the example inputs of {type(module).__name__}: {HIDDEN_PARAMETERS}")
    positional = [p.name for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]  # fmt: skip
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if isinstance(example_inputs, Mapping):
        given = dict(example_inputs)
        unknown = [name for name in given if name not in named]
        if unknown:
            raise ExportError(f"example input {unknown[0]!r} is not a parameter of {type(module).__name__}.forward "
                              f"(its parameters: {', '.join(named) or 'none'})")  # fmt: skip
    elif isinstance(example_inputs, (tuple, list)):
        if len(example_inputs) > len(positional):
            raise ExportError(f"{len(example_inputs)} example inputs given, but {type(module).__name__}.forward "
                              f"takes {len(positional)} positional parameters ({', '.join(positional)})")  # fmt: skip
        given = dict(zip(positional, example_inputs, strict=False))
    else:
        raise ExportError(f"example_inputs must be a tensor, a tuple of tensors or a dict of them, "
                          f"not {type(example_inputs).__name__}")  # fmt: skip
    for name, value in given.items():
        if not isinstance(value, torch.Tensor):
            raise ExportError(f"example input {name!r} is a {type(value).__name__}, not a tensor: pass values that "
                              "are no tensors in example_kwargs (they are fixed while capturing)")  # fmt: skip
    kwargs = dict(example_kwargs or {})
    for name in kwargs:
        if name in given:
            raise ExportError(f"{name!r} is both an example input and an example kwarg; give it once")
        if name not in named and not any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values()):
            raise ExportError(f"example kwarg {name!r} is not a parameter of {type(module).__name__}.forward "
                              f"(its parameters: {', '.join(named) or 'none'})")  # fmt: skip
    order = {name: i for i, name in enumerate(named)}
    inputs = dict(sorted(given.items(), key=lambda item: order[item[0]]))
    return inputs, kwargs


def capture_dynamo(
    module: torch.nn.Module, inputs: dict[str, torch.Tensor], kwargs: dict[str, Any], dynamic: Dynamic = True
) -> Captured:
    """Run ``torch.compile(module, fullgraph=True)`` once on the inputs, their dimensions
    marked as ``dynamic`` says, and keep the graph its backend receives and what it assumed
    about sizes. The inputs are cloned: each placeholder then has a tensor of its own, and the
    caller's tensors are not touched."""
    if not isinstance(module, torch.nn.Module):
        raise ExportError(f"export needs an nn.Module, got {type(module).__name__}")
    if not inputs:
        raise ExportError("capture with TorchDynamo needs example inputs (example_inputs=, or --example-input "
                          "NAME=DTYPE[SHAPE] on the command line)")  # fmt: skip
    clones = {name: tensor.detach().clone() for name, tensor in inputs.items()}
    names = _dimension_names(clones, dynamic)
    symbolic = any(n is not None for dims in names.values() for n in dims)
    for name, tensor in clones.items():
        for d, dim in enumerate(names[name]):
            (torch._dynamo.maybe_mark_dynamic if dim is not None else torch._dynamo.mark_static)(tensor, d)
    seen: list[tuple[torch.fx.GraphModule, list[Any]]] = []
    returned: list[tuple[Any, ...]] = []
    shape_envs: list[Any] = []

    def backend(gm: torch.fx.GraphModule, graph_inputs: list[Any]) -> Any:
        seen.append((gm, list(graph_inputs)))
        context = torch._guards.TracingContext.try_get()
        if context is not None and context.fake_mode is not None:
            shape_envs.append(context.fake_mode.shape_env)

        def run(*args: Any) -> Any:
            with torch.no_grad():  # (captured with gradients, to record grad-mode regions: none are kept)
                out = gm.forward(*args)
            returned.append(tuple(out) if isinstance(out, (tuple, list)) else (out,))
            return out

        return run

    refuse_root_hooks(module)
    snapshot = Snapshot(module)
    mark = hook_mark()
    torch.compiler.reset()  # a fresh capture: no earlier compile's cache entries or limits
    try:
        compiled = torch.compile(module, backend=backend, fullgraph=True, dynamic=None if symbolic else False)
        # With gradients enabled, Dynamo records the forward's grad-mode regions (``torch.no_grad()``
        # is ``torch._C._set_grad_enabled(False)`` in the graph), which ``fxgen.capture.effects``
        # judges; the captured graph itself runs without them. No parameter requires a gradient
        # meanwhile: Dynamo then inlines a custom autograd.Function's forward, as without
        # gradients, where it would otherwise record a higher-order op no spec can write.
        with torch.enable_grad(), torch.random.fork_rng(), no_parameter_requires_grad(module), \
                fx_config.patch(backed_size_oblivious=True, use_duck_shape=False,  # type: ignore[attr-defined]
                                symbol_guard_limit_before_specialize=GUARD_LIMIT):  # fmt: skip
            torch.manual_seed(0)
            result = compiled(**clones, **kwargs)
        refuse_new_hooks(module, mark)
    except ExportError:
        raise
    except Exception as exc:
        raise _capture_error(exc) from None
    finally:
        torch.compiler.reset()  # drop the cache entries, which hold the model
        snapshot.restore()
    if len(seen) != 1 or len(returned) != 1:
        raise ExportError(f"TorchDynamo captured {len(seen)} graphs of {type(module).__name__} instead of one; "
                          "export it with capture='trace'")  # fmt: skip
    gm, graph_inputs = seen[0]
    facts = DimFacts({name: list(t.shape) for name, t in clones.items()}, [], {}, [])
    sizes: dict[int, tuple[str, int] | int] = {}
    if symbolic and shape_envs and shape_envs[0] is not None:
        facts = dim_facts(shape_envs[0], _fake_inputs(gm, graph_inputs, clones), names)
        sizes = _symbolic_placeholders(gm, graph_inputs, shape_envs[0], facts)
    return Captured(gm, graph_inputs, returned[0], result, clones, kwargs, facts, sizes)


def _symbolic_placeholders(gm: torch.fx.GraphModule, graph_inputs: list[Any], shape_env: Any,
                           facts: DimFacts) -> dict[int, tuple[str, int] | int]:  # fmt: skip
    """For each placeholder of Dynamo's graph that is a size (by position), where the graph gets
    it: an input's dimension, or a number (a size the capture fixed)."""
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    out: dict[int, tuple[str, int] | int] = {}
    for index, (node, value) in enumerate(zip(placeholders, graph_inputs, strict=False)):
        if isinstance(value, torch.Tensor):
            continue
        example = node.meta.get("example_value", value)
        if isinstance(example, int):
            out[index] = example
            continue
        if not isinstance(example, torch.SymInt):
            continue  # (lift refuses it by name)
        expr = shape_env.simplify(example.node.expr)
        expr = expr.xreplace({s: sympy.Integer(v) for s, v in facts.where.items() if isinstance(v, int)})
        if expr.is_Integer:
            out[index] = int(expr)
        elif expr in facts.where:
            out[index] = facts.where[expr]
        else:
            raise ExportError(f"TorchDynamo's graph takes the size {expr} as input {node.name!r}, which is no "
                              "dimension of an input; report it, or capture with dynamic=False")  # fmt: skip
    return out


def _dimension_names(inputs: dict[str, torch.Tensor], dynamic: Dynamic) -> dict[str, list[str | None]]:
    """For each input, each dimension's name (``""``: dynamic, fxgen names it) or None (static)."""
    if isinstance(dynamic, bool):
        return {name: ["" if dynamic else None] * tensor.dim() for name, tensor in inputs.items()}
    unknown = [name for name in dynamic if name not in inputs]
    if unknown:
        raise ExportError(f"dynamic names {unknown[0]!r}, which is no example input (the inputs: {', '.join(inputs)})")
    out: dict[str, list[str | None]] = {}
    for name, tensor in inputs.items():
        given = list(dynamic.get(name, ()))
        if len(given) > tensor.dim():
            raise ExportError(f"dynamic gives {len(given)} dimensions for input {name!r}, which has {tensor.dim()}")
        for dim in given:
            if dim is not None and not (isinstance(dim, str) and dim.isidentifier() and dim.isascii()
                                        and not keyword.iskeyword(dim) and dim not in inputs):  # fmt: skip
                raise ExportError(f"dynamic: dimension {dim!r} of input {name!r} is no name (an identifier, not a "
                                  "keyword or an input's name) or None")  # fmt: skip
        out[name] = [*given, *[""] * (tensor.dim() - len(given))]
    seen: dict[str, tuple[str, int]] = {}
    for name, dims in out.items():
        for d, dim in enumerate(dims):
            if not dim:
                continue
            other, e = seen.setdefault(dim, (name, d))
            if inputs[other].shape[e] != inputs[name].shape[d]:
                raise ExportError(f"dynamic gives the name {dim!r} to input {other!r} dimension {e} and input {name!r} "
                                  f"dimension {d}, whose example sizes differ ({inputs[other].shape[e]}, "
                                  f"{inputs[name].shape[d]}): one name is one size")  # fmt: skip
    return out


def _fake_inputs(gm: torch.fx.GraphModule, graph_inputs: list[Any],
                 inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:  # fmt: skip
    """Each input's fake tensor in Dynamo's graph (its sizes as the capture saw them)."""
    by_id = {id(tensor): name for name, tensor in inputs.items()}
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    fakes: dict[str, torch.Tensor] = {}
    for node, value in zip(placeholders, graph_inputs, strict=False):
        name = by_id.get(id(value))
        if name is not None:
            fakes[name] = node.meta["example_value"]
    for name, tensor in inputs.items():  # an input the graph never reads: its sizes are its own
        fakes.setdefault(name, tensor)
    return {name: fakes[name] for name in inputs}


@contextlib.contextmanager
def no_parameter_requires_grad(module: torch.nn.Module) -> Iterator[None]:
    """``requires_grad`` off on every parameter of ``module`` that has it, and on again after."""
    trained = [p for p in module.parameters() if p.requires_grad]
    try:
        for parameter in trained:
            parameter.requires_grad_(False)
        yield
    finally:
        for parameter in trained:
            parameter.requires_grad_(True)


@contextlib.contextmanager
def kept_state(module: torch.nn.Module) -> Iterator[None]:
    """Put back the values of ``module``'s buffers and parameters after running it (a forward may
    update one in place: batch norm its statistics in train mode, an EMA codebook its embedding
    weight under ``torch.no_grad()``, as monai's VQVAE does) and the global random state. This holds
    a copy of the model's tensors while the capture runs."""
    tensors = [(t, t.detach().clone()) for t in (*module.buffers(), *module.parameters())]
    with torch.random.fork_rng():
        try:
            yield
        finally:
            with torch.no_grad():
                for tensor, value in tensors:
                    if tensor.shape != value.shape:
                        tensor.data = value  # resized in place: the original storage is gone
                    elif not _same_bits(tensor, value):
                        tensor.copy_(value)


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                      and torch.equal(a.nan_to_num(), b.nan_to_num())))  # fmt: skip


# -- graph breaks ----------------------------------------------------------------------------
def _capture_error(exc: BaseException) -> ExportError:
    """One line: what Dynamo could not capture, why, and the user's line."""
    reason = str(getattr(exc, "gb_type", "") or "").strip()
    message = str(getattr(exc, "msg", "") or exc)
    explanation = re.search(r"Explanation:\s*(.+)", message)
    first = message.strip().splitlines()[0].strip() if message.strip() else type(exc).__name__
    text = reason or first
    if len(text) > 300:
        text = text[:297] + "..."
    if explanation:
        text = f"{text}: {explanation.group(1).strip()}"
    where, detail = at_user_line(_user_frame(getattr(exc, "real_stack", None)))
    kind = "graph break" if type(exc).__name__ == "Unsupported" else type(exc).__name__
    return ExportError(f"TorchDynamo cannot capture the module as one graph: {kind}: {text}{detail}; "
                       "change that line, or pass other example inputs or example_kwargs", where)  # fmt: skip


def _user_frame(stack: Any) -> tuple[str, int, str] | None:
    """The innermost frame of Dynamo's user stack outside torch (else the innermost)."""
    frames = [f for f in stack or () if getattr(f, "lineno", None) is not None]
    if not frames:
        return None
    torch_dir = str(Path(torch.__file__).parent)
    outside = [f for f in frames if not str(f.filename).startswith(torch_dir)]
    frame = (outside or frames)[-1]
    return str(frame.filename), int(frame.lineno), str(frame.name)
