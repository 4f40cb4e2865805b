"""The target policy's fixed knowledge: the default namespaces, what they offer and what is
denied in them, the tables built from torch on first use, and introspection that never runs
a looked-up object's code.

``fxgen.policy.policy`` decides; this module only knows. Importing it does not import torch.
"""

from __future__ import annotations

import builtins
import functools
import sys
import types
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_NAMESPACES",
    "GENERIC_BUILTINS",
    "PRIVATE_OK",
    "SAFE_BUILTINS",
    "TORCH_FX_HELPERS",
    "TYPE_BUILTINS",
    "TYPE_MODULE",
    "TYPE_NAMESPACES",
    "class_attr",
    "default_function",
    "default_module_class",
    "default_namespace",
    "is_class",
    "is_module",
    "module_name",
    "object_home",
    "torch_tables",
    "under",
]


# Modules whose names a spec may look up by default. fxgen imports them itself (``import
# torch`` loads them all); resolution never imports anything for the default policy.
DEFAULT_NAMESPACES = (
    "torch", "torch.nn", "torch.nn.functional", "torch.fft", "torch.linalg", "torch.special",
    "torch.functional", "torch._C._nn", "torch._C._fft", "torch._C._linalg", "torch._C._special",
    "operator", "math",
)  # fmt: skip


CLASS_NAMESPACE = "torch.nn.modules"  # nn.Module classes live in its (already imported) submodules


TYPE_NAMESPACES = ("typing",)  # annotations only: nothing in typing is callable from a graph


# ATen bindings that are not tensor operations.
DENIED_ATEN = frozenset({"from_file"})


# operator builtins that call or look up arbitrary things (attrgetter/methodcaller are classes,
# refused anyway as they are not value classes).
DENIED_OPERATOR = frozenset({"call", "delitem", "attrgetter", "methodcaller", "itemgetter"})


# Python-level functions defined in ``torch/__init__.py`` that are tensor helpers (the rest of
# that module's functions set process-wide state: set_default_*, compile, manual_seed…).
TORCH_PY_FUNCTIONS = frozenset({
    "is_tensor", "is_storage", "typename", "_assert", "sym_float", "sym_int", "sym_max",
    "sym_min", "sym_not", "sym_ite", "sym_sum", "sym_sqrt",
})  # fmt: skip


# Modules whose Python functions are all tensor operations.
FUNCTION_MODULES = frozenset({"torch.functional", "torch.nn.functional", "torch._lowrank", "torch._lobpcg"})


# Private torch names a graph may call by default, by their exact names: torch.fx's assertion,
# and the weight normalisation a traced `torch.nn.utils.parametrizations.weight_norm` computes.
PRIVATE_OK = frozenset({"torch._assert", "torch._weight_norm"})


# Functions torch.fx itself writes into traced graphs outside the default namespaces, allowed by
# their exact names only: symbolic_trace's check that an argument fixed to None by concrete_args
# stays None (``assert value is None, message``).
TORCH_FX_HELPERS = ("torch.fx._symbolic_trace._assert_is_none",)


# Builtins torch.fx emits (or a spec may reasonably use) that cannot do harm given the values a
# graph can hold (no node value is a dangerous callable, see the method/attribute tables).
SAFE_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in [
        "getattr", "hasattr", "len", "abs", "all", "any", "bool", "complex", "divmod", "float",
        "int", "isinstance", "list", "max", "min", "pow", "range", "round", "slice", "sorted",
        "str", "sum", "tuple", "zip", "enumerate", "reversed", "dict",
        "format",  # a traced value formatted into a string with a format spec (fxgen.capture.frozen)
    ]
}  # fmt: skip


TYPE_BUILTINS = {name: getattr(builtins, name) for name in ["int", "float", "bool", "str", "complex", "bytes", "tuple", "list", "dict"]}


GENERIC_BUILTINS = (tuple, list, dict, type)


# Tensor methods a spec may never call: hooks and callables, raw storage and shared memory,
# escapes to other object types (numpy arrays have tofile/dump), aliasing and autograd entry.
DENIED_TENSOR_METHODS = frozenset({
    "apply_", "map_", "map2_", "register_hook", "register_post_accumulate_grad_hook",
    "backward", "storage", "untyped_storage", "storage_type", "share_memory_", "set_",
    "record_stream", "numpy", "data_ptr", "module_load", "as_subclass",
})  # fmt: skip


# Tensor attributes a spec may not read with getattr (the autograd graph has hook registration).
DENIED_TENSOR_ATTRS = frozenset({"grad_fn"})


# str methods that evaluate a format string's attribute paths ("{0.__class__}").
DENIED_STR_METHODS = frozenset({"format", "format_map"})


# Data attributes of the other values a graph computes (dtype, device, finfo, slice…).
EXTRA_ATTRS = frozenset({
    "eps", "max", "min", "tiny", "bits", "resolution", "smallest_normal", "is_floating_point",
    "is_complex", "is_signed", "itemsize", "to_real", "to_complex", "type", "index", "start",
    "stop", "step", "real", "imag",
})  # fmt: skip


# -- tables built from torch on first use (importing this module does not import torch) -------
@dataclass(frozen=True)
class Tables:
    aten: tuple[dict[str, Any], ...]
    math: dict[str, Any]
    operator: dict[str, Any]
    value_classes: tuple[type, ...]
    methods: frozenset[str]
    attributes: frozenset[str]
    tensor: type
    module_base: type
    namespaces: dict[str, types.ModuleType] = field(default_factory=dict)


@functools.cache
def torch_tables() -> Tables:
    import inspect
    import math
    import operator

    import torch
    import torch.fft
    import torch.linalg
    import torch.nn.functional
    import torch.special

    def static_dict(ns: Any) -> dict[str, Any]:
        if isinstance(ns, types.ModuleType):
            return dict(vars(ns))
        return {k: v.__func__ if isinstance(v, staticmethod) else v for k, v in vars(type(ns)).items()}

    c_namespaces = [getattr(torch._C, name) for name in ("_VariableFunctions", "_nn", "_fft", "_linalg", "_special")]
    aten = tuple(static_dict(ns) for ns in c_namespaces)
    tensor_methods: set[str] = set()
    tensor_attrs: set[str] = set()
    for name in dir(torch.Tensor):
        if name.startswith("_"):
            continue
        raw = inspect.getattr_static(torch.Tensor, name)
        (tensor_methods if callable(raw) else tensor_attrs).add(name)
    container: set[str] = set()
    for owner in (torch.Size, tuple, list, dict, int, float, complex, bool):
        container.update(n for n in dir(owner) if not n.startswith("_"))
    strings = {n for n in dir(str) if not n.startswith("_")} - DENIED_STR_METHODS
    methods = frozenset((tensor_methods - DENIED_TENSOR_METHODS) | container | strings)
    attributes = frozenset(methods | (tensor_attrs - DENIED_TENSOR_ATTRS) | EXTRA_ATTRS)
    namespaces = {name: sys.modules[name] for name in DEFAULT_NAMESPACES}
    return Tables(
        aten=aten,
        math=dict(vars(math)),
        operator=dict(vars(operator)),
        value_classes=(torch.Size, torch.device, torch.finfo, torch.iinfo),
        methods=methods,
        attributes=attributes,
        tensor=torch.Tensor,
        module_base=torch.nn.Module,
        namespaces=namespaces,
    )


# -- safe introspection --------------------------------------------------------------------------
INTROSPECTABLE = (
    types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
    types.WrapperDescriptorType, types.ClassMethodDescriptorType,
)  # fmt: skip


TYPE_MODULE = type.__dict__["__module__"]


TYPE_QUALNAME = type.__dict__["__qualname__"]


def is_class(obj: Any) -> bool:
    return issubclass(type(obj), type)  # never consults obj.__class__


def is_module(obj: Any) -> bool:
    return issubclass(type(obj), types.ModuleType)


def object_home(obj: Any) -> tuple[str | None, str | None]:
    """``(__module__, __qualname__)`` of a function or class, read without running its code."""
    try:
        if is_class(obj):
            module, qualname = TYPE_MODULE.__get__(obj), TYPE_QUALNAME.__get__(obj)
        elif type(obj) in INTROSPECTABLE:
            module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        else:
            return None, None
    except Exception:
        return None, None
    module = "operator" if module == "_operator" else module
    return (module if isinstance(module, str) else None, qualname if isinstance(qualname, str) else None)


def class_attr(cls: type, name: str) -> Any:
    """``cls.name`` looked up in the MRO's ``__dict__`` (only static/class methods are unwrapped)."""
    for klass in type.__dict__["__mro__"].__get__(cls):
        if name in vars(klass):
            value = vars(klass)[name]
            if type(value) is staticmethod:
                return value.__func__
            if type(value) is classmethod:
                return types.MethodType(value.__func__, cls)
            return value
    raise KeyError(name)


def module_name(module: types.ModuleType) -> str | None:
    name = vars(module).get("__name__")
    return name if isinstance(name, str) and sys.modules.get(name) is module else None


def under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


# -- what the default policy allows ---------------------------------------------------------------
def default_namespace(name: str) -> types.ModuleType | None:
    """The already-imported module ``name`` if it is a default namespace, else None."""
    tables = torch_tables()
    if name in tables.namespaces:
        return tables.namespaces[name]
    if under(name, CLASS_NAMESPACE) or name in TYPE_NAMESPACES:
        module = sys.modules.get(name)
        return module if module is not None and is_module(module) else None
    return None


def default_function(obj: Any) -> bool:
    """Is ``obj`` a tensor operation the default policy lets a graph call?"""
    tables = torch_tables()
    kind = type(obj)
    if kind is types.BuiltinFunctionType:
        name = obj.__name__
        if any(ns.get(name) is obj for ns in tables.aten):
            return name not in DENIED_ATEN
        if tables.math.get(name) is obj:
            return True
        return tables.operator.get(name) is obj and name not in DENIED_OPERATOR
    if kind is types.FunctionType:
        module, name = obj.__module__, obj.__name__
        home = sys.modules.get(module) if isinstance(module, str) else None
        if home is None or vars(home).get(name) is not obj:
            return False
        if module in FUNCTION_MODULES:
            return True
        # by the public name: torch.sym_sqrt is the function torch defines as _sym_sqrt
        return module == "torch" and any(vars(home).get(public) is obj for public in TORCH_PY_FUNCTIONS)
    if is_class(obj):
        return any(obj is c for c in tables.value_classes) or any(obj is b for b in SAFE_BUILTINS.values())
    return False


def default_module_class(cls: type) -> bool:
    module, _ = object_home(cls)
    if module is None or not module.startswith(CLASS_NAMESPACE + "."):
        return False
    home = sys.modules.get(module)
    return home is not None and vars(home).get(TYPE_QUALNAME.__get__(cls)) is cls
