"""How a model is captured: the options every capture entry point takes, as one value.

``fxgen.export``, ``fxgen.save_weights`` and ``fxgen export`` take the same options; the stages
below hand on one ``CaptureOptions``. Adding an option is a field here (in both classes: the
keywords the public functions accept, and the value the stages read), its use, and its flag in
``fxgen.cli.export``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypedDict

import torch.fx

from fxgen._errors import ExportError
from fxgen.capture.trace import LeafSpec

__all__ = ["CAPTURES", "CaptureKwargs", "CaptureOptions"]

CAPTURES = ("auto", "trace", "dynamo")


class CaptureKwargs(TypedDict, total=False):
    """The capture options as keywords (``fxgen.export(model, **options)``), for type checkers."""

    example_inputs: Any
    example_kwargs: dict[str, Any] | None
    capture: str
    concrete_args: dict[str, Any] | None
    leaf_modules: Iterable[LeafSpec]
    autowrap_functions: Iterable[Callable[..., Any]]
    tracer_class: type[torch.fx.Tracer] | None
    dynamic: bool | Mapping[str, Sequence[str | None]]


@dataclasses.dataclass(frozen=True)
class CaptureOptions:
    """``capture``: ``"trace"`` (torch.fx's symbolic tracing, with ``concrete_args``,
    ``leaf_modules``, ``autowrap_functions`` and ``tracer_class``), ``"dynamo"`` (TorchDynamo, on
    ``example_inputs``: a tensor, a tuple of tensors or a dict of them by ``forward`` parameter
    name; ``example_kwargs`` are fixed while capturing) or ``"auto"`` (trace, and when tracing
    fails capture with Dynamo if example inputs were given). ``dynamic`` says which sizes a
    Dynamo capture keeps symbolic: every dimension of every input (True), none (False: sizes
    are constants, the spec checks the inputs have exactly the example shapes), or by input
    one entry per dimension, a name (dynamic, so named in the spec) or None (static);
    dimensions not given are dynamic."""

    example_inputs: Any = None
    example_kwargs: dict[str, Any] | None = None
    capture: str = "auto"
    concrete_args: dict[str, Any] | None = None
    leaf_modules: tuple[LeafSpec, ...] = ()
    autowrap_functions: tuple[Callable[..., Any], ...] = ()
    tracer_class: type[torch.fx.Tracer] | None = None
    dynamic: bool | Mapping[str, Sequence[str | None]] = True

    def __post_init__(self) -> None:
        if self.capture not in CAPTURES:
            raise ExportError(f"capture={self.capture!r}: expected one of {', '.join(CAPTURES)}")

    @classmethod
    def of(cls, options: CaptureKwargs) -> CaptureOptions:
        """The options a public function was given as keywords (an unknown one is a TypeError)."""
        given: dict[str, Any] = dict(options)
        given["leaf_modules"] = tuple(given.get("leaf_modules", ()))
        given["autowrap_functions"] = tuple(given.get("autowrap_functions", ()))
        return cls(**given)

    def replace(self, **changes: Any) -> CaptureOptions:
        return dataclasses.replace(self, **changes)
