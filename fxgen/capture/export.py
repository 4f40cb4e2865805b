"""``fxgen.export`` and ``fxgen.save_weights``: trace a module and turn its graph into a Spec, and
write the tensors its checkpoint carries.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
import torch.fx

from fxgen.capture.blocks import keep_blocks
from fxgen.capture.hierarchy import TraceOptions
from fxgen.capture.to_spec import avoid_reserved_names, graph_module_to_spec
from fxgen.capture.trace import LeafSpec, trace
from fxgen.spec.model import Spec

__all__ = ["export", "save_weights", "spec_state", "tied_notes"]


def export(
    module: torch.nn.Module,
    *,
    concrete_args: dict[str, Any] | None = None,
    leaf_modules: Iterable[LeafSpec] = (),
    autowrap_functions: Iterable[Callable[..., Any]] = (),
    tracer_class: type[torch.fx.Tracer] | None = None,
    name: str | None = None,
    flat: bool = False,
) -> Spec:
    """Trace ``module`` with torch.fx and turn the graph into a Spec.

    By default the model's own classes are kept: each user-defined submodule class becomes a
    block of a format-2 spec (``fxgen.capture.hierarchy``, ``fxgen.capture.blocks``), where
    tracing it on its own gives exactly what tracing through it does; the others are inlined,
    with a warning saying why. ``flat=True`` gives one graph (format 1).

    An already traced or transformed GraphModule is accepted as it is. Every call_module
    target becomes a verified constructor call (``fxgen.register_constructor`` covers classes
    fxgen does not know); parameters and buffers keep their paths, shapes and dtypes; the
    weights themselves go to ``save_weights``.
    """
    gm = trace(
        module,
        concrete_args=concrete_args,
        leaf_modules=leaf_modules,
        autowrap_functions=autowrap_functions,
        tracer_class=tracer_class,
    )
    avoid_reserved_names(gm.graph)
    for message in tied_notes(gm):
        warnings.warn(message, UserWarning, stacklevel=2)
    name = name or _class_name(module)
    if not flat and not isinstance(module, torch.fx.GraphModule):
        options = TraceOptions(concrete_args, tuple(leaf_modules), tuple(autowrap_functions), tracer_class)
        spec, notes = keep_blocks(module, gm, options, name)
        for message in notes:
            warnings.warn(message, UserWarning, stacklevel=2)
        if spec is not None:
            return spec
    return graph_module_to_spec(gm, name=name)


def tied_notes(module: torch.nn.Module) -> list[str]:
    """One note per tensor that is the same tensor as an earlier one (tied weights): the spec
    format declares each path's tensor on its own, so the tie is not kept."""
    first: dict[int, str] = {}
    notes = []
    named = (*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False))
    for path, tensor in named:
        earlier = first.setdefault(id(tensor), path)
        if earlier != path:
            notes.append(f"{path} is the same tensor as {earlier} (tied weights); a spec declares each "
                         "tensor on its own, so what is loaded or generated from it holds two equal copies: "
                         "tie them again after loading if the model is trained")  # fmt: skip
    return notes


def save_weights(module: torch.nn.Module, path: str | Path, **trace_options: Any) -> None:
    """Write the tensors of ``module``'s spec as safetensors, keys equal to the spec's paths."""
    from fxgen.write.weights import write_weights

    write_weights(path, spec_state(trace(module, **trace_options)))


def spec_state(gm: torch.fx.GraphModule) -> dict[str, torch.Tensor]:
    """The state a spec's weights file holds: the exported module's state_dict (every tensor
    outside it is declared with its value in the spec)."""
    return {k: v.detach() for k, v in gm.state_dict().items()}


def _class_name(module: torch.nn.Module) -> str:
    if isinstance(module, torch.fx.GraphModule):
        return type(module).__name__.removesuffix("GraphModuleImpl") or "GraphModule"
    return type(module).__name__
