"""fxgen: declarative model specs <-> torch.fx GraphModules <-> readable PyTorch source.

The public API is re-exported here. Names are imported lazily (PEP 562) so that
``fxgen generate --check`` can decide a file is up to date without importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.1"

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
    "save_weights",
    "to_spec",
    "validate",
]

_WHERE = {
    "Diagnostic": "_errors", "ExportError": "_errors", "FxgenError": "_errors",
    "GenerateError": "_errors", "Location": "_errors", "SpecError": "_errors",
    "WeightsError": "_errors",
    "BufferSpec": "_spec", "ModuleSpec": "_spec", "Node": "_spec", "ParameterSpec": "_spec",
    "Spec": "_spec",
    "DEFAULT_POLICY": "_policy", "Policy": "_policy",
    "load": "_api", "load_spec": "_api", "to_spec": "_api", "validate": "_api",
    "generate": "_codegen",
    "export": "_export", "save_weights": "_export",
    "register_constructor": "_recover", "record_constructors": "_record",
}  # fmt: skip

if TYPE_CHECKING:
    from fxgen._api import load, load_spec, to_spec, validate
    from fxgen._codegen import generate
    from fxgen._errors import (
        Diagnostic,
        ExportError,
        FxgenError,
        GenerateError,
        Location,
        SpecError,
        WeightsError,
    )
    from fxgen._export import export, save_weights
    from fxgen._policy import DEFAULT_POLICY, Policy
    from fxgen._record import record_constructors
    from fxgen._recover import register_constructor
    from fxgen._spec import BufferSpec, ModuleSpec, Node, ParameterSpec, Spec


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'fxgen' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"fxgen.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
