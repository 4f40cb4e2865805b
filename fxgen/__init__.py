"""fxgen: declarative model specs <-> torch.fx GraphModules <-> readable PyTorch source.

The public API is what this module exports (``__all__``); the subpackages are the pipeline's
stages (docs/architecture.md) and are internal. Names are imported lazily (PEP 562) so that
``import fxgen`` imports neither torch nor black, and ``fxgen generate --check`` can decide a
file is up to date without them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from fxgen._version import __version__

__all__ = [
    "DEFAULT_POLICY",
    "BufferSpec",
    "Diagnostic",
    "ExportError",
    "FxgenError",
    "GenerateError",
    "Location",
    "ModuleSpec",
    "Node",
    "ParameterSpec",
    "Policy",
    "Spec",
    "SpecError",
    "WeightsError",
    "__version__",
    "export",
    "generate",
    "load",
    "load_spec",
    "record_constructors",
    "register_constructor",
    "register_pass",
    "save_weights",
    "to_spec",
    "transform",
    "validate",
]

_WHERE = {
    "Diagnostic": "_errors", "ExportError": "_errors", "FxgenError": "_errors",
    "GenerateError": "_errors", "Location": "_errors", "SpecError": "_errors",
    "WeightsError": "_errors",
    "BufferSpec": "spec.model", "ModuleSpec": "spec.model", "Node": "spec.model",
    "ParameterSpec": "spec.model", "Spec": "spec.model",
    "DEFAULT_POLICY": "policy.policy", "Policy": "policy.policy",
    "load_spec": "_api", "validate": "_api", "load": "_api", "generate": "_api", "transform": "_api",
    "to_spec": "_api", "register_pass": "passes.registry",
    "export": "capture.export", "save_weights": "capture.export",
    "register_constructor": "describe.recover", "record_constructors": "describe.record",
}  # fmt: skip

if TYPE_CHECKING:
    from fxgen._api import generate, load, load_spec, to_spec, transform, validate
    from fxgen._errors import (
        Diagnostic,
        ExportError,
        FxgenError,
        GenerateError,
        Location,
        SpecError,
        WeightsError,
    )
    from fxgen.capture.export import export, save_weights
    from fxgen.describe.record import record_constructors
    from fxgen.describe.recover import register_constructor
    from fxgen.passes.registry import register_pass
    from fxgen.policy.policy import DEFAULT_POLICY, Policy
    from fxgen.spec.model import BufferSpec, ModuleSpec, Node, ParameterSpec, Spec


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'fxgen' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"fxgen.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
