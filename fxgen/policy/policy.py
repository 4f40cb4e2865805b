"""Target policy: which callables, methods, attributes, module classes and types a spec may name.

Specs are untrusted (see docs/security.md). Resolving a name a spec gives must not run code the
spec chooses, and what it resolves to must be harmless to call. So:

* **No imports on a spec's behalf.** The default namespaces (``torch``, ``torch.nn``,
  ``torch.nn.functional``, ``torch.fft``, ``torch.linalg``, ``torch.special``, ``operator``,
  ``math``; ``typing`` for annotations) are modules fxgen imports itself. A name is looked up in
  a module's ``__dict__`` only, never with ``getattr``: no module ``__getattr__`` (``torch``
  lazily imports ``torch._dynamo``, ``torch.onnx``…), no descriptors. Attributes of classes are
  looked up statically in the MRO's ``__dict__`` as well. Modules are imported only for names
  the *user* allowed from trusted code.
* **The resolved object is checked, not the spelling.** ``torch.os.system``,
  ``torch.nn.functional.torch.load`` or ``torch.nn.modules.module.torch.load`` walk to ``os`` /
  ``torch.serialization.load``, which are refused whatever the path to them. By default a
  ``call_function`` target must be an ATen operator binding (``torch.relu``,
  ``torch._C._nn.gelu``; ``torch.from_file`` excepted), a function defined in
  ``torch.functional`` / ``torch.nn.functional`` (or a few listed torch helpers), a
  ``math``/``operator`` builtin, a public tensor method (``torch.Tensor.add``), one of a few
  value classes (``torch.Size``…) or a harmless builtin (``getattr``, ``len``…). Module classes
  must be ``nn.Module`` subclasses defined in ``torch.nn.modules``.
* **Methods and attributes** (``call_method`` targets, ``getattr``'s literal names) are public
  tensor/container methods and tensor data attributes, without hooks, storage access,
  ``numpy`` (an escape to objects with ``tofile``), ``apply_``/``map_`` or ``str.format``.
  Together these keep every value a graph can compute harmless: no node value is ever a
  callable that could write a file or evaluate a string.

Users widen the policy only from trusted code: ``Policy(allow=...)``, ``allow=`` in the API,
``--allow`` or ``[tool.fxgen] allow`` in pyproject.toml. An entry is a module (``monai``: every
object *defined* in ``monai`` or its submodules, which may then be imported), or a qualified
name (``mypkg.layers.Swish``: exactly that object; its parent modules may be imported to reach
it), or ``torch.Tensor.NAME`` for a method or attribute name (a bare ``numpy`` would be the package).

The namespaces, deny lists, torch-derived tables and the introspection helpers that never run
a looked-up object's code are in ``fxgen.policy.tables``; this module decides with them.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import keyword
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fxgen._errors import FxgenError, Suggestions
from fxgen.policy.lookup import findable, import_named, where_looked
from fxgen.policy.tables import (
    GENERIC_BUILTINS,
    PRIVATE_OK,
    SAFE_BUILTINS,
    TORCH_FX_HELPERS,
    TYPE_BUILTINS,
    TYPE_MODULE,
    TYPE_NAMESPACES,
    class_attr,
    default_function,
    default_module_class,
    default_namespace,
    is_class,
    is_module,
    module_name,
    object_home,
    torch_tables,
    under,
)

__all__ = [
    "DEFAULT_POLICY",
    "Policy",
    "TargetError",
    "allow_entry_problem",
    "is_identifier",
    "policy_for",
    "type_repr",
]


class TargetError(Exception):
    """A target is unknown or refused; the validator turns it into a located SpecError."""


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# Canonical type text: what ``type_repr`` writes for types the policy accepts.
_TYPE_TEXT = re.compile(r"[A-Za-z_][A-Za-z0-9_.\[\], ]*")


_HOW_TO_ALLOW = (
    "allow it from trusted code with --allow {0}, allow=[{0!r}] or `allow = [{0!r}]` under "
    "[tool.fxgen] in pyproject.toml"
)


def is_identifier(name: object) -> bool:
    """An ASCII identifier (``[A-Za-z_][A-Za-z0-9_]*``, no trailing newline) that is not a keyword."""
    return isinstance(name, str) and _IDENTIFIER.fullmatch(name) is not None and not keyword.iskeyword(name)


def allow_entry_problem(entry: object) -> str | None:
    """Why ``entry`` cannot be an allow entry (a module, dotted name or method name), or None."""
    if not isinstance(entry, str):
        return f"allow entries must be strings, not {type(entry).__name__}"
    if not all(is_identifier(part) for part in entry.strip().split(".")):
        return f"invalid allow entry {entry!r}: expected a module or a dotted name such as 'mypkg.layers'"
    return None


def _refusal(target: str, what: str = "target") -> str:
    return f"{what} {target!r} is not allowed by the target policy; " + _HOW_TO_ALLOW.format(target)


_T = TypeVar("_T")


# What Python code imports under short names, which a spec writes in full.
ALIASES = {"nn": "torch.nn", "F": "torch.nn.functional", "fx": "torch.fx"}


MEMO_LIMIT = 4096  # entries per Policy memo; far more than any real set of specs names


def _remember(memo: dict[str, _T], key: str, value: _T) -> _T:
    """``memo[key] = value``, emptying a full memo first (see ``Policy``)."""
    if len(memo) >= MEMO_LIMIT:
        memo.clear()
    memo[key] = value
    return value


@dataclass(frozen=True)
class _Resolved:
    obj: Any
    via_tensor: bool = False  # looked up on torch.Tensor (a method used as a function)


@dataclass(frozen=True)
class Policy:
    """What a spec may name. ``allow`` widens the default; it comes only from trusted code."""

    allow: tuple[str, ...] = ()
    # Memo of resolve_function/resolve_module_class successes, per instance: an instance's
    # answers depend only on its ``allow`` (widened() makes a new Policy with an empty memo).
    # Refusals are not kept (they are rare and re-derived, with the same message). Each memo
    # holds at most MEMO_LIMIT entries: a long-lived process validating untrusted specs (whose
    # type expressions alone can be spelled in countless ways) must not grow without bound.
    _functions: dict[str, Callable[..., Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    _classes: dict[str, type] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)
    # resolve_type successes and check_method passes, memoised the same way (every node may
    # carry a type, and models call the same few methods over and over)
    _types: dict[str, tuple[Any, str]] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)
    _methods: dict[str, None] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        entries = set()
        for entry in self.allow:
            if isinstance(entry, str) and not entry.strip():
                continue
            problem = allow_entry_problem(entry)
            if problem:
                raise FxgenError(problem)
            entries.add(typing.cast(str, entry).strip())
        object.__setattr__(self, "allow", tuple(sorted(entries)))

    def widened(self, allow: Iterable[str]) -> Policy:
        return Policy((*self.allow, *allow))

    # -- user entries --------------------------------------------------------------------------
    def _user_covers(self, name: str) -> bool:
        """``name`` is an allow entry or inside one (a module entry's submodule or member)."""
        return any(under(name, entry) for entry in self.allow)

    def _user_leads_to(self, name: str) -> bool:
        """``name`` is an allow entry, inside one, or a parent on the way to one."""
        return any(under(name, entry) or entry.startswith(name + ".") for entry in self.allow)

    def _user_allows_object(self, obj: Any, spelled: str) -> bool:
        if spelled in self.allow:
            return True  # exactly the object the user named
        module, qualname = object_home(obj)
        if module is None:
            return False
        if any(under(module, entry) for entry in self.allow):
            return True  # defined in an allowed module
        return qualname is not None and f"{module}.{qualname}" in self.allow

    # -- namespaces ----------------------------------------------------------------------------
    def may_import(self, module: str) -> bool:
        """May names be looked up in ``module`` (imported if the user allowed it)?"""
        return default_namespace(module) is not None or self._user_leads_to(module)

    def _namespace(self, name: str) -> types.ModuleType | None:
        """The module ``name`` if resolution may start there (importing only user-allowed ones)."""
        module = default_namespace(name)
        if module is not None or not self._user_leads_to(name):
            return module
        try:
            return import_named(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (exc.name == name or name.startswith(exc.name + ".")):
                return None  # not a module (or not installed): a shorter prefix may be
            raise TargetError(f"importing {name!r} failed: ModuleNotFoundError: {exc}") from None
        except Exception as exc:  # a broken allowed module: report, do not crash
            raise TargetError(f"importing {name!r} failed: {type(exc).__name__}: {exc}") from None

    # -- resolution ----------------------------------------------------------------------------
    def _resolve(self, target: str, kind: str) -> _Resolved:
        return _resolve(self, target, kind)

    def resolve_function(self, target: str) -> Callable[..., Any]:
        """The callable a ``call_function`` target names, or TargetError."""
        try:
            function = self._functions.get(target)
        except TypeError:  # not a string: the checks below refuse it
            return self._resolve_function(target)
        if function is None:
            function = _remember(self._functions, target, self._resolve_function(target))
        return function

    def _resolve_function(self, target: str) -> Callable[..., Any]:
        if target in TORCH_FX_HELPERS:  # by exact name: the module holding it is not a namespace
            module, _, name = target.rpartition(".")
            return typing.cast(Callable[..., Any], getattr(importlib.import_module(module), name))
        if "." not in target:
            if is_identifier(target) and SAFE_BUILTINS.get(target) is not None:
                return typing.cast(Callable[..., Any], SAFE_BUILTINS[target])
            if is_identifier(target) and target in self.allow and callable(vars(builtins).get(target)):
                return typing.cast(Callable[..., Any], vars(builtins)[target])
            if is_identifier(target) and target in vars(builtins):
                raise TargetError(_refusal(target, "builtin"))
            raise TargetError(f"{target!r} is not a builtin fxgen knows; qualify the name, e.g. 'torch.{target}'")
        resolved = self._resolve(target, "function")
        obj = resolved.obj
        if not callable(obj):
            raise TargetError(f"{target!r} is not a function")
        if resolved.via_tensor:
            try:
                self.check_method(target.rsplit(".", 1)[1])
            except TargetError:
                raise TargetError(_refusal(target)) from None
            return typing.cast(Callable[..., Any], obj)
        if self._user_allows_object(obj, target) or default_function(obj):
            return typing.cast(Callable[..., Any], obj)
        raise TargetError(_refusal(target))

    def resolve_module_class(self, target: str) -> type:
        """The nn.Module subclass a ``class:`` entry names, or TargetError."""
        try:
            cls = self._classes.get(target)
        except TypeError:
            return self._resolve_module_class(target)
        if cls is None:
            cls = _remember(self._classes, target, self._resolve_module_class(target))
        return cls

    def _resolve_module_class(self, target: str) -> type:
        obj = self._resolve(target, "class").obj
        tables = torch_tables()
        if not (is_class(obj) and issubclass(obj, tables.module_base)):
            raise TargetError(f"{target!r} is not an nn.Module class")
        if self._user_allows_object(obj, target) or default_module_class(obj):
            return typing.cast(type, obj)
        raise TargetError(_refusal(target, "module class"))

    def check_method(self, name: str) -> None:
        """``call_method`` targets: public tensor and container methods, never hooks or storage."""
        try:
            if name in self._methods:
                return
        except TypeError:  # not a string: refused below
            pass
        self._check_method(name)
        _remember(self._methods, name, None)

    def _check_method(self, name: str) -> None:
        if not is_identifier(name):
            raise TargetError(f"method name {name!r} is not an identifier")
        if name.startswith("_"):
            raise TargetError(f"method {name!r} is private; a spec may call public tensor methods only")
        if name in torch_tables().methods or f"torch.Tensor.{name}" in self.allow:
            return
        close = None if _tensor_has(name) else _method_suggestions().closest(name)
        if close:  # a typo, not a method to allow
            raise TargetError(f"method {name!r} is not a tensor or container method; did you mean {close!r}?")
        raise TargetError(
            f"method {name!r} is not a tensor or container method fxgen allows; "
            + _HOW_TO_ALLOW.format(f"torch.Tensor.{name}")
        )

    def check_attribute(self, name: str) -> None:
        """Literal attribute names given to ``getattr``/``hasattr``: public tensor attributes."""
        if not is_identifier(name) or name.startswith("_"):
            raise TargetError(f"getattr of {name!r} is not allowed; a spec may read public attributes only")
        if name in torch_tables().attributes or f"torch.Tensor.{name}" in self.allow:
            return
        raise TargetError(
            f"getattr of {name!r} is not allowed: not a tensor attribute or method fxgen allows; "
            + _HOW_TO_ALLOW.format(f"torch.Tensor.{name}")
        )

    def check_module_attribute(self, path: str, value: Any) -> None:
        """A ``get_attr`` of an attribute inside a declared module: public, and a tensor or plain data."""
        for segment in path.split("."):
            if not is_identifier(segment) and not segment.isdigit():
                raise TargetError(f"attribute path {path!r} has an invalid segment {segment!r}")
            if segment.startswith("_"):
                raise TargetError(f"get_attr of {path!r} reads a private attribute; only public ones are allowed")
        if not _plain_value(value):
            raise TargetError(
                f"get_attr of {path!r} reads a {type(value).__name__}; only tensors and plain values "
                "(numbers, strings, tuples, dtypes, devices) may be read (use call_module for modules)"
            )

    # -- types ---------------------------------------------------------------------------------
    def resolve_type(self, expr: str) -> tuple[Any, str]:
        """A type annotation -> (type object, canonical spelling); nothing in it is called."""
        try:
            known = self._types.get(expr)
        except TypeError:  # not a string: refused by _parse_type
            return self._resolve_type(expr)
        if known is None:
            known = _remember(self._types, expr, self._resolve_type(expr))
        return known

    def _resolve_type(self, expr: str) -> tuple[Any, str]:
        value = self._parse_type(expr)
        canonical = type_repr(value)
        if _TYPE_TEXT.fullmatch(canonical) is None:
            raise TargetError(f"type {expr!r} cannot be written back as a plain type expression ({canonical!r})")
        if canonical != expr:
            try:
                again = self._parse_type(canonical)
            except TargetError:
                again = None
            if again != value:
                raise TargetError(f"type {expr!r} has no canonical spelling fxgen can read back ({canonical!r})")
        return value, canonical

    def _parse_type(self, expr: str) -> Any:
        if not isinstance(expr, str) or len(expr) > 1000:
            raise TargetError("a type expression must be a string of at most 1000 characters")
        try:
            tree = ast.parse(expr.strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise TargetError(f"type {expr!r} is not a valid type expression") from None
        try:
            return self._eval_type(tree.body, expr, 0)
        except RecursionError:
            raise TargetError(f"type {expr!r} nests too deeply") from None

    def _eval_type(self, node: ast.AST, expr: str, depth: int, *, in_subscript: bool = False) -> Any:
        if depth > 20:
            raise TargetError(f"type {expr!r} nests too deeply")
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        if isinstance(node, ast.Constant) and node.value is Ellipsis and in_subscript:
            return Ellipsis
        if isinstance(node, ast.Name):
            if node.id in TYPE_BUILTINS:
                return TYPE_BUILTINS[node.id]
            raise TargetError(f"unknown type {node.id!r} in {expr!r}; qualify it, e.g. 'torch.Tensor'")
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted is None:
                raise TargetError(f"type {expr!r} uses syntax a spec does not allow")
            obj = self._resolve(dotted, "type").obj
            if not (is_class(obj) or _is_typing_form(obj)):
                raise TargetError(f"{dotted!r} is not a type")
            return obj
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            left = self._eval_type(node.left, expr, depth + 1)
            right = self._eval_type(node.right, expr, depth + 1)
            return _subscript(typing.Union, (left, right), expr)
        if isinstance(node, ast.Subscript):
            base = self._eval_type(node.value, expr, depth + 1)
            if not (base in GENERIC_BUILTINS or _is_typing_form(base)):
                raise TargetError(f"type {expr!r}: {type_repr(base)} cannot be subscripted in a spec")
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            args = tuple(self._eval_type(i, expr, depth + 1, in_subscript=True) for i in items)
            return _subscript(base, args, expr)
        if isinstance(node, ast.List) and in_subscript:
            return [self._eval_type(i, expr, depth + 1) for i in node.elts]
        raise TargetError(f"type {expr!r} uses syntax a spec does not allow")


DEFAULT_POLICY = Policy()


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _subscript(base: Any, args: tuple[Any, ...], expr: str) -> Any:
    try:
        return base[args if len(args) > 1 else args[0]]
    except Exception as exc:  # typing raises TypeError, but any failure is the spec's
        raise TargetError(f"bad type {expr!r}: {type(exc).__name__}: {exc}") from None


def _is_typing_form(obj: Any) -> bool:
    """A typing construct usable in annotations (``typing.Optional``, ``typing.List[int]``…)."""
    kind = type(obj)
    if kind in (types.FunctionType, types.BuiltinFunctionType) or is_class(obj):
        return False
    return TYPE_MODULE.__get__(kind) == "typing" or kind is types.GenericAlias


def _plain_value(value: Any) -> bool:
    import torch

    if value is None or type(value) in (bool, int, float, complex, str):
        return True
    if isinstance(value, (torch.Tensor, torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return True
    if type(value) in (tuple, list, torch.Size):
        return all(_plain_value(v) for v in value)
    return False


def type_repr(value: Any) -> str:
    """Canonical spelling of an annotation, the inverse of ``Policy.resolve_type``."""
    if value is None or value is type(None):
        return "None"
    if value is Ellipsis:
        return "..."
    if isinstance(value, list):
        return "[" + ", ".join(type_repr(v) for v in value) + "]"
    if isinstance(value, types.UnionType):
        value = typing.Union.__getitem__(value.__args__)  # int | None -> typing.Optional[int]
    if is_class(value) and not typing.get_args(value):
        module, qualname = object_home(value)
        if module == "builtins":
            return str(qualname)
        return f"{module}.{qualname}"
    return repr(value).replace("NoneType", "None")


@functools.lru_cache(maxsize=4096)
def _resolve(policy: Policy, target: str, kind: str) -> _Resolved:
    """Walk ``target`` from the longest permitted module prefix, one checked step at a time."""
    parts = target.split(".")
    if not all(is_identifier(p) for p in parts):
        raise TargetError(f"{target!r} is not a dotted name of ASCII identifiers")
    if any(p.startswith("__") for p in parts):
        raise TargetError(f"{target!r} names a dunder attribute; a spec may not")
    user = policy._user_covers(target)
    start: tuple[int, types.ModuleType] | None = None
    for i in range(len(parts) - 1, 0, -1):
        module = policy._namespace(".".join(parts[:i]))
        if module is not None:
            start = (i, module)
            break
    if start is None:
        root = parts[0]
        if findable(root):
            raise TargetError(_refusal(target) if kind != "type" else _refusal(target, "type"))
        if root in ALIASES:  # `nn.ReLU`, `F.relu`: the import aliases of Python code
            full = ALIASES[root] + target[len(root) :]
            raise TargetError(f"cannot resolve {target!r}: a spec names things in full; write {full!r}")
        allowed = "" if policy._user_leads_to(root) else "; once it is, it must be allowed too: " + (
            _HOW_TO_ALLOW.format(target)
        )
        raise TargetError(f"cannot resolve {target!r}: no module {root!r} {where_looked()} (is it installed?){allowed}")
    i, obj = start
    private_ok = user or target in PRIVATE_OK
    for p in parts[i:]:
        if p.startswith("_") and not private_ok:
            raise TargetError(f"{target!r} names something private; " + _HOW_TO_ALLOW.format(target))
    if kind == "type" and not user and not _type_namespace_ok(".".join(parts[:i])):
        raise TargetError(_refusal(target, "type"))
    via_tensor = False
    for j in range(i, len(parts)):
        part, so_far = parts[j], ".".join(parts[: j + 1])
        if is_module(obj):
            obj = _module_attr(policy, obj, part, so_far, target)
            if is_module(obj):
                name = module_name(obj)
                if name is None or not policy.may_import(name):
                    raise TargetError(_refusal(target))
        elif is_class(obj) and (obj is torch_tables().tensor or policy._user_leads_to(so_far)):
            via_tensor = obj is torch_tables().tensor and not user
            try:
                obj = class_attr(typing.cast(type, obj), part)
            except KeyError:
                raise TargetError(f"cannot resolve {target!r}: no attribute {part!r}") from None
        else:
            raise TargetError(_refusal(target))
    return _Resolved(obj, via_tensor)


def _type_namespace_ok(module: str) -> bool:
    return under(module, "torch") or module in TYPE_NAMESPACES


def _module_attr(policy: Policy, module: types.ModuleType, part: str, so_far: str, target: str) -> Any:
    """``module.part`` without running code, unless the user trusts the module (then import/getattr)."""
    namespace = vars(module)
    name = module_name(module)
    trusted = name is not None and default_namespace(name) is None and policy._user_leads_to(so_far)
    if name is not None and default_namespace(name) is None and not policy._user_leads_to(so_far):
        raise TargetError(_refusal(target))  # a parent of an allowed name: only the way to it
    if part in namespace:
        return namespace[part]
    if trusted:
        sub = policy._namespace(so_far)
        if sub is not None:
            return sub
        try:
            return getattr(module, part)  # the user's package, its own lazy attributes
        except Exception:
            pass
    close = _namespace_suggestions(name).closest(part) if name else None
    raise TargetError(
        f"cannot resolve {target!r}: {name or 'module'} has no attribute {part!r} "
        "(fxgen looks names up without importing anything)"
        + (f"; did you mean {so_far[: -len(part)] + close!r}?" if close else "")
    )


@functools.lru_cache(maxsize=64)
def _namespace_suggestions(module: str) -> Suggestions:
    """The public names of an (imported) module, for misspelt targets."""
    found = sys.modules.get(module)
    return Suggestions(key for key in (vars(found) if found else ()) if not key.startswith("_"))


def _tensor_has(name: str) -> bool:
    try:
        class_attr(torch_tables().tensor, name)
    except KeyError:
        return False
    return True


@functools.cache
def _method_suggestions() -> Suggestions:
    return Suggestions(torch_tables().methods)


def policy_for(allow: Iterable[str] | Policy | None) -> Policy:
    """``allow=`` as the API takes it -> a Policy (the default when None)."""
    if allow is None:
        return DEFAULT_POLICY
    if isinstance(allow, Policy):
        return allow
    if isinstance(allow, str):
        allow = [allow]
    allow = tuple(allow)
    if all(isinstance(entry, str) and not entry.strip() for entry in allow):
        # Nothing added (``allow=()``, as the CLI and bench pass): the default policy itself, and
        # its memo of resolved targets, instead of a new Policy resolving every target again.
        return DEFAULT_POLICY
    # A new Policy per call otherwise: one shared across loads would keep the classes it resolved
    # from the user's modules after an importlib.reload.
    return DEFAULT_POLICY.widened(allow)
