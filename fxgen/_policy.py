"""Target policy: which callables, methods, module classes and types a spec may name.

Specs are untrusted. Resolving ``torch.nn.functional.relu`` must not let a spec import an
arbitrary module or reach ``os.system`` through an alias (``torch.os.system``). So:

* a module is imported only when its name is inside the policy (``torch``, ``operator``,
  ``math``, ``typing`` and what the user allowed), and never one of the denied torch
  sub-packages (I/O, processes, code loading, networking, compilers);
* attributes are walked one segment at a time; a step into a module object is allowed only for
  allowed modules, and a step that would lazily import a denied submodule is refused first;
* the *resolved object* is checked (its ``__module__``/``__qualname__``), so aliases do not
  slip through, and private names (``_x``) are refused except a few torch.fx itself emits.

Users widen the policy only from trusted code: ``Policy(allow=...)``, ``--allow`` or
``[tool.fxgen] allow`` in pyproject.toml. Each entry is a module prefix (``monai``) or a
qualified name (``mypkg.layers.Swish``).
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import sys
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_POLICY", "Policy", "TargetError"]


class TargetError(Exception):
    """A target is unknown or refused; the validator turns it into a located SpecError."""


# Modules a spec may name by default, and torch sub-packages it may never reach (prefixes).
_ALLOWED_ROOTS = ("torch", "operator", "_operator", "math", "typing")
_DENIED_PREFIXES = (
    "torch.hub", "torch.serialization", "torch.package", "torch.utils", "torch.distributed",
    "torch.multiprocessing", "torch.onnx", "torch.profiler", "torch.autograd.profiler",
    "torch.jit", "torch._dynamo", "torch._inductor", "torch.compiler", "torch.export",
    "torch._export", "torch.backends", "torch.cuda", "torch.mps", "torch.xpu", "torch.mtia",
    "torch.library", "torch._library", "torch._ops", "torch.classes", "torch._classes",
    "torch.testing", "torch.fx", "torch._subclasses", "torch.nn.parallel", "torch.storage",
    "torch._utils", "torch.__config__", "torch._logging", "torch.monitor", "torch.random",
)  # fmt: skip
# Names inside allowed torch modules that do I/O or change process-wide state.
_DENIED_NAMES = frozenset({
    "torch.load", "torch.save", "torch.from_file", "torch.compile", "torch.set_default_device",
    "torch.set_default_dtype", "torch.set_default_tensor_type", "torch.set_num_threads",
    "torch.set_num_interop_threads", "torch.set_printoptions", "torch.set_warn_always",
    "torch.use_deterministic_algorithms", "torch.set_deterministic_debug_mode",
    "torch.set_float32_matmul_precision", "torch.manual_seed", "torch.seed",
    "torch.set_rng_state", "torch.set_grad_enabled", "torch.set_flush_denormal",
    "torch.set_anomaly_enabled", "torch.set_autocast_enabled", "torch.import_ir_module",
    "torch.import_ir_module_from_buffer", "torch.vmap", "torch.cond", "torch.while_loop",
    "torch.autograd.backward", "torch.autograd.grad",
    "operator.attrgetter", "operator.methodcaller", "operator.setitem", "operator.delitem",
    "operator.delattr", "operator.setattr", "operator.call",
})  # fmt: skip
# Private names torch.fx itself writes into graphs.
_ALLOWED_PRIVATE = frozenset({"torch._assert", "torch._C._nn", "torch._C._fft", "torch._C._linalg",
                              "torch._C._special", "torch._C._nested", "torch._C._VariableFunctions"})
# Builtins torch.fx emits (or a spec may reasonably use) that cannot do harm.
SAFE_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in ["getattr", "len", "abs", "all", "any", "bool", "complex", "divmod", "float", "int", "isinstance", "list", "max", "min", "pow", "range", "round", "slice", "sorted", "str", "sum", "tuple", "zip", "enumerate", "reversed", "dict", "hasattr"]
}
_TYPE_BUILTINS = {name: getattr(builtins, name) for name in ["int", "float", "bool", "str", "complex", "bytes", "tuple", "list", "dict"]}
# Tensor/container methods a spec may never call (hooks, shared memory, raw storage, callables).
_DENIED_METHODS = frozenset({
    "apply_", "map_", "map2_", "register_hook", "register_post_accumulate_grad_hook",
    "share_memory_", "storage", "untyped_storage", "record_stream", "set_", "from_file",
    "format_map",
})  # fmt: skip


def _builtin_method_names() -> frozenset[str]:
    import torch

    names: set[str] = set()
    for owner in (torch.Tensor, torch.Size, list, tuple, dict, str, int, float):
        names.update(n for n in dir(owner) if not n.startswith("_"))
    return frozenset(names - _DENIED_METHODS)


@dataclass(frozen=True)
class Policy:
    """What a spec may name. ``allow`` widens the default; it comes only from trusted code."""

    allow: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "allow", tuple(sorted({a.strip() for a in self.allow if a.strip()})))

    def widened(self, allow: Iterable[str]) -> Policy:
        return Policy((*self.allow, *allow))

    # -- matching ----------------------------------------------------------------------------
    def _allowed_by_user(self, name: str) -> bool:
        return any(name == a or name.startswith(a + ".") for a in self.allow)

    def may_import(self, module: str) -> bool:
        """May fxgen import ``module`` while resolving a target?"""
        if any(a == module or a.startswith(module + ".") for a in self.allow) or self._allowed_by_user(module):
            return True  # a user entry allows its own module and the packages above it
        root_ok = any(module == r or module.startswith(r + ".") for r in _ALLOWED_ROOTS)
        return root_ok and not _denied_module(module)

    def object_allowed(self, obj: Any, spelled: str) -> bool:
        """Is the resolved ``obj`` (named ``spelled`` in the spec) a permitted target?"""
        if self._allowed_by_user(spelled):
            return True
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
        if isinstance(module, str) and isinstance(qualname, str) and self._allowed_by_user(f"{module}.{qualname}"):
            return True
        if spelled in _DENIED_NAMES:
            return False
        if "." not in spelled:
            return SAFE_BUILTINS.get(spelled) is obj
        if _is_tensor_method(obj):
            return getattr(obj, "__name__", "") in _method_names()
        if not isinstance(module, str):
            return False
        if module == "builtins":
            return any(obj is b for b in SAFE_BUILTINS.values())
        if module == "_operator":
            module = "operator"
        if _denied_module(module) or not any(module == r or module.startswith(r + ".") for r in _ALLOWED_ROOTS):
            return False
        name = getattr(obj, "__name__", "")
        if f"{module}.{name}" in _DENIED_NAMES:
            return False
        return not (module in ("torch", "torch.functional") and f"torch.{name}" in _DENIED_NAMES)

    def class_allowed(self, cls: type, spelled: str) -> bool:
        """May a spec build / call a module of class ``cls``?"""
        if self._allowed_by_user(spelled) or self._allowed_by_user(f"{cls.__module__}.{cls.__qualname__}"):
            return True
        return cls.__module__.startswith("torch.nn.") and not _denied_module(cls.__module__)

    # -- resolution --------------------------------------------------------------------------
    def resolve_function(self, target: str) -> Callable[..., Any]:
        """The callable a ``call_function`` target names, or TargetError."""
        obj = _resolve(self, target)
        if not callable(obj) or (isinstance(obj, type) and not _is_torch_callable_class(obj, target)):
            raise TargetError(f"{target!r} is not a function")
        if not self.object_allowed(obj, target):
            raise TargetError(_refusal(target))
        return obj

    def resolve_module_class(self, target: str) -> type:
        """The nn.Module subclass a ``class:`` entry names, or TargetError."""
        import torch

        obj = _resolve(self, target)
        if not (isinstance(obj, type) and issubclass(obj, torch.nn.Module)):
            raise TargetError(f"{target!r} is not an nn.Module class")
        if not self.class_allowed(obj, target):
            raise TargetError(_refusal(target))
        return obj

    def check_method(self, name: str) -> None:
        """``call_method`` targets: tensor and container methods, never private or hooks."""
        if name.startswith("_"):
            raise TargetError(f"method {name!r} is private; a spec may call public tensor methods only")
        if name in _DENIED_METHODS or name not in _method_names():
            if self._allowed_by_user(name):
                return
            raise TargetError(f"{name!r} is not a tensor method fxgen allows; {_HOW_TO_ALLOW.format(name)}")

    def check_attribute(self, name: str) -> None:
        """Literal attribute names given to ``getattr``: public, and not a denied method."""
        if name.startswith("_") or name in _DENIED_METHODS:
            raise TargetError(f"getattr of {name!r} is not allowed; a spec may read public attributes only")

    def resolve_type(self, expr: str) -> tuple[Any, str]:
        """A type annotation -> (type object, canonical spelling)."""
        try:
            tree = ast.parse(expr, mode="eval")
        except SyntaxError:
            raise TargetError(f"type {expr!r} is not a valid type expression") from None
        value = self._eval_type(tree.body, expr)
        return value, type_repr(value)

    def _eval_type(self, node: ast.AST, expr: str) -> Any:
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        if isinstance(node, ast.Name):
            if node.id in _TYPE_BUILTINS:
                return _TYPE_BUILTINS[node.id]
            raise TargetError(f"unknown type {node.id!r} in {expr!r}; qualify it, e.g. 'torch.Tensor'")
        if isinstance(node, ast.Attribute):
            dotted = ast.unparse(node)
            if not (dotted.startswith(("torch.", "typing.")) or self._allowed_by_user(dotted)):
                raise TargetError(f"type {dotted!r} is not allowed; types come from builtins, typing and torch")
            obj = _resolve(self, dotted)
            if not (isinstance(obj, type) or _is_typing_form(obj)):
                raise TargetError(f"{dotted!r} is not a type")
            return obj
        if isinstance(node, ast.Subscript):
            base = self._eval_type(node.value, expr)
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            args = tuple(self._eval_type(i, expr) for i in items)
            try:
                return base[args if len(args) > 1 else args[0]]
            except TypeError as exc:
                raise TargetError(f"bad type {expr!r}: {exc}") from None
        if isinstance(node, ast.List):
            return [self._eval_type(i, expr) for i in node.elts]
        raise TargetError(f"type {expr!r} uses syntax a spec does not allow")


DEFAULT_POLICY = Policy()
_HOW_TO_ALLOW = "allow it from trusted code with --allow {0}, allow=[{0!r}] or [tool.fxgen] allow in pyproject.toml"


def _refusal(target: str) -> str:
    return f"target {target!r} is not allowed by the target policy; " + _HOW_TO_ALLOW.format(target)


def _denied_module(module: str) -> bool:
    return any(module == d or module.startswith(d + ".") for d in _DENIED_PREFIXES)


@functools.cache
def _method_names() -> frozenset[str]:
    return _builtin_method_names()


def _is_tensor_method(obj: Any) -> bool:
    import torch

    owner = getattr(obj, "__objclass__", None)
    return owner is not None and owner in (torch.Tensor, torch._C.TensorBase)


def _is_typing_form(obj: Any) -> bool:
    return getattr(obj, "__module__", None) == "typing"


def _is_torch_callable_class(obj: type, target: str) -> bool:
    """Classes used as functions in graphs (``torch.Size``, ``torch.device``…)."""
    return obj.__module__ == "torch" or target.startswith("torch.") or obj in SAFE_BUILTINS.values()


def type_repr(value: Any) -> str:
    """Canonical spelling of an annotation, the inverse of ``Policy.resolve_type``."""
    if value is None or value is type(None):
        return "None"
    if isinstance(value, list):
        return "[" + ", ".join(type_repr(v) for v in value) + "]"
    if isinstance(value, type) and not typing.get_args(value):
        if value.__module__ == "builtins":
            return value.__qualname__
        return f"{value.__module__}.{value.__qualname__}"
    return repr(value).replace("NoneType", "None")


@functools.lru_cache(maxsize=4096)
def _resolve(policy: Policy, target: str) -> Any:
    """Import the longest allowed module prefix of ``target`` and walk the rest, checking each step."""
    parts = target.split(".")
    if not all(p.isidentifier() for p in parts):
        raise TargetError(f"{target!r} is not a dotted name")
    if any(p.startswith("_") for p in parts) and not any(
        target == a or target.startswith(a + ".") for a in _ALLOWED_PRIVATE
    ) and not policy._allowed_by_user(target):
        raise TargetError(f"{target!r} names something private; " + _HOW_TO_ALLOW.format(target))
    if len(parts) == 1:
        if parts[0] in SAFE_BUILTINS:
            return SAFE_BUILTINS[parts[0]]
        raise TargetError(f"{target!r} is not a builtin fxgen allows; qualify the name, e.g. 'torch.{target}'")
    obj: Any = None
    rest: list[str] = []
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        if name in sys.modules:
            obj = sys.modules[name]
        elif policy.may_import(name):
            try:
                obj = importlib.import_module(name)
            except ImportError:
                continue
            except Exception as exc:  # a broken allowed module: report, do not crash
                raise TargetError(f"importing {name!r} failed: {type(exc).__name__}: {exc}") from None
        else:
            continue
        if not policy.may_import(name):
            raise TargetError(_refusal(target))
        rest = parts[i:]
        break
    if obj is None:
        raise TargetError(f"cannot resolve {target!r}: module {parts[0]!r} is not allowed or not installed; "
                          + _HOW_TO_ALLOW.format(parts[0]))
    for part in rest:
        if isinstance(obj, types.ModuleType):
            sub = f"{obj.__name__}.{part}"
            if sub not in sys.modules and not policy.may_import(sub) and _looks_like_submodule(obj, part):
                raise TargetError(_refusal(target))
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(f"cannot resolve {target!r}: no attribute {part!r}") from None
        if isinstance(obj, types.ModuleType) and not policy.may_import(obj.__name__):
            raise TargetError(_refusal(target))
    return obj


def _looks_like_submodule(module: types.ModuleType, name: str) -> bool:
    """Would ``getattr(module, name)`` import something (a lazy submodule)?"""
    if name in vars(module):
        return isinstance(vars(module)[name], types.ModuleType)
    return hasattr(module, "__path__") or hasattr(module, "__getattr__")

