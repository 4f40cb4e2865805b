"""One module from one declaration: the constructor call validation and the build share.

``construct_call`` runs ``cls(*args, **kwargs)`` from encoded (validated) arguments on a device;
``meta_device`` builds on the meta device without running random fills (no memory, and no
import of torch's compiler stack by ``normal_``'s meta kernel); ``same_random_state`` leaves the
global generator as it was. Validation constructs each module this way (on meta, or for real when
validating for a load), the assemble stage builds the model with it, and export's verification
rebuilds recovered modules with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx
from torch.overrides import TorchFunctionMode

from fxgen.spec.init import init_call
from fxgen.spec.tags import lookup
from fxgen.spec.values import decode, decode_kwargs

__all__ = [
    "NO_TENSORS",
    "SMALL_MODULE",
    "MakeModule",
    "construct_call",
    "initialise",
    "meta_device",
    "same_random_state",
    "set_attr_path",
    "tensor_at",
    "tensors_in",
]


MakeModule = Callable[[dict[str, Any]], torch.nn.Module]
"""``declaration -> module``: how a ``{module: DECL}`` constructor argument is made."""


def construct_call(
    cls: type,
    args: list[Any],
    kwargs: dict[str, Any],
    device: torch.device | str | None,
    make_module: MakeModule | None = None,
) -> torch.nn.Module:
    """``cls(*args, **kwargs)`` from encoded (validated) arguments, on ``device``; the one
    constructor call validation and the build share, so both build a module the same way.

    Module values (``{module: DECL}``, format 2, with arguments already substituted) are made
    by ``make_module`` first, in the order Python evaluates the call's arguments, so a seeded
    build draws from the random generator as the generated code does."""
    made: list[torch.nn.Module] = []
    if make_module is not None:
        args, kwargs = _lift_modules(args, make_module, made), _lift_modules(kwargs, make_module, made)

    def module_at(name: str) -> torch.nn.Module:
        return made[int(name)]

    decoded = decode(args, module_at if made else _no_ref)
    decoded_kwargs = decode_kwargs(kwargs, module_at if made else _no_ref)
    if device is None:
        module: torch.nn.Module = cls(*decoded, **decoded_kwargs)
        return module
    with meta_device() if torch.device(device).type == "meta" else torch.device(device):
        module = cls(*decoded, **decoded_kwargs)
    return module


def initialise(module: torch.nn.Module, inits: dict[str, Any] | None) -> torch.nn.Module:
    """``module`` with a declaration's ``init`` applied (concrete: arguments substituted), in the
    order written: each path's tensor (a parameter or buffer of the module, validated) filled by
    its ``torch.nn.init`` scheme, as the generated ``__init__`` does right after the constructor
    call. Tensors on the meta device are left as they are (no values to fill)."""
    for path, init in (inits or {}).items():
        tensor = tensor_at(module, path)
        if tensor.is_meta:
            continue
        name, kwargs = init_call(init)
        with torch.no_grad():
            getattr(torch.nn.init, name + "_")(tensor, **kwargs)
    return module


def tensor_at(module: torch.nn.Module, path: str) -> torch.Tensor:
    """The parameter or buffer at dotted ``path`` in ``module``; KeyError when there is none."""
    owner_path, _, leaf = path.rpartition(".")
    owner = module.get_submodule(owner_path) if owner_path else module
    tensor: torch.Tensor | None = owner._parameters.get(leaf)
    if tensor is None:
        tensor = owner._buffers.get(leaf)
    if tensor is None:
        raise KeyError(path)
    return tensor


SMALL_MODULE = 1 << 14
"""Modules with at most this many parameter and buffer elements are cheaper to build for real
than on the meta device: initialising a few thousand numbers (~3 ns each) costs less than
running every torch call of the constructor through the meta device's Python dispatch (about
100 us for a small layer)."""


_VALUE_FILLS = frozenset(
    {
        "normal_",
        "uniform_",
        "erfinv_",
        "exponential_",
        "log_normal_",
        "cauchy_",
        "geometric_",
        "bernoulli_",
        "random_",
    }
)


def skip_meta_fill(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The meta tensor a random-filling call would fill (so the call can be skipped), or None."""
    name = getattr(func, "__name__", None)
    if name not in _SKIPPED:  # first: every torch call of a constructor comes here
        return None
    # Tensor.normal_(t, ...) passes it first; torch.nn.init.normal_(tensor=t) by name.
    target = args[0] if args else kwargs.get("tensor", kwargs.get("self"))
    if not (isinstance(target, torch.Tensor) and target.is_meta):
        return None
    if name == "kaiming_uniform_":
        _kaiming_checks(target, kwargs)
    return target


_SKIPPED = _VALUE_FILLS | {"kaiming_uniform_"}


def _kaiming_checks(tensor: torch.Tensor, kwargs: dict[str, Any]) -> None:
    """What ``torch.nn.init.kaiming_uniform_`` checks before it fills (it raises for a tensor of
    fewer than 2 dimensions, an unknown mode or non-linearity), so skipping its fill on the meta
    device refuses what a real construction refuses. It handles torch functions itself
    (``nn.Linear`` calls it), so the ``uniform_`` it calls inside would not reach the mode, and
    would run torch's Python decomposition on the meta device for nothing."""
    if 0 not in tensor.shape:
        torch.nn.init._calculate_correct_fan(tensor, kwargs.get("mode", "fan_in"))
        torch.nn.init.calculate_gain(kwargs.get("nonlinearity", "leaky_relu"), kwargs.get("a", 0))


class SkipMetaFills(TorchFunctionMode):
    """Make random initialisation of meta tensors a no-op.

    Meta tensors have no values, so these calls do nothing anyway -- but several (``normal_``,
    used by nn.Embedding and MultiheadAttention) run Python meta kernels whose first call
    imports torch's compiler stack, about 1.5 s. Only value-filling methods are skipped;
    anything that changes shape, dtype or ``requires_grad`` still runs.
    """

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        skipped = skip_meta_fill(func, args, kwargs)
        return func(*args, **kwargs) if skipped is None else skipped


def meta_device() -> contextlib.AbstractContextManager[Any]:
    """``torch.device("meta")`` plus :class:`SkipMetaFills`, as one torch-function mode when
    torch's device context can be extended (every torch call in a constructor goes through
    each mode in Python, so one mode instead of two saves a sixth of a construction)."""
    if _MetaDevice is None:
        return _stacked_meta_device()
    return _MetaDevice(torch.device("meta"))


@contextlib.contextmanager
def _stacked_meta_device() -> Iterator[None]:
    with torch.device("meta"), SkipMetaFills():
        yield


try:
    from torch.utils._device import DeviceContext as _DeviceContext

    class _MetaDevice(_DeviceContext):
        def __torch_function__(
            self,
            func: Any,
            types: Any,
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            skipped = skip_meta_fill(func, args, kwargs or {})
            return super().__torch_function__(func, types, args, kwargs) if skipped is None else skipped

except ImportError:  # pragma: no cover - a torch without the private device context
    _MetaDevice = None  # type: ignore[assignment, misc]


@contextlib.contextmanager
def same_random_state() -> Iterator[None]:
    """Leave the global random generator as it was, whatever the block draws (building a module
    for a check or with loaded weights must not shift what the user's next draws are)."""
    state = torch.random.get_rng_state()
    try:
        yield
    finally:
        torch.random.set_rng_state(state)


NO_TENSORS: frozenset[type] = frozenset({int, float, str, bool, complex, type(None), torch.dtype, torch.device})
"""Types of attribute values that cannot hold a tensor (skipped without a walk)."""


def tensors_in(value: Any) -> Iterator[torch.Tensor]:
    """The tensors in a plain attribute value (a tensor, or tuples, lists and dicts of them)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from tensors_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item)


def set_attr_path(root: torch.nn.Module, path: str, value: Any, *, persistent: bool = True) -> None:
    """Put ``value`` at dotted ``path`` under ``root``, creating plain container modules."""
    *parents, leaf = path.split(".")
    owner = root
    for part in parents:
        child = owner._modules.get(part)
        if child is None:
            child = torch.nn.Module()
            owner.add_module(part, child)
        owner = child
    if isinstance(value, torch.nn.Module):
        owner.add_module(leaf, value)
    elif isinstance(value, torch.nn.Parameter):
        owner.register_parameter(leaf, value)
    else:
        owner.register_buffer(leaf, value, persistent=persistent)


def _lift_modules(value: Any, make_module: MakeModule, made: list[torch.nn.Module]) -> Any:
    """``value`` with each ``{module: DECL}`` made now and replaced by a reference to it
    (declaration values hold no node references, so references are free to stand for modules)."""
    if isinstance(value, list):
        return [_lift_modules(item, make_module, made) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1 and "module" in value:
        made.append(make_module(value["module"]))
        return f"%{len(made) - 1}"
    if len(value) == 1 and _holds_values(next(iter(value))):
        ((tag, body),) = value.items()
        return {tag: _lift_modules(body, make_module, made)}
    return {key: _lift_modules(item, make_module, made) for key, item in value.items()}


def _holds_values(tag: str) -> bool:
    """Does a tag's body hold encoded values (``fxgen.spec.tags.Tag.holds``: a tuple, slice or dict)?"""
    known = lookup(tag)
    return known is not None and known.holds is not None


def _no_ref(name: str) -> Any:
    raise AssertionError(f"unexpected reference %{name}")
