"""Recording constructor calls: export support for classes that do not keep their arguments.

``torch.nn`` classes store their constructor arguments as attributes, so ``fxgen.describe.recover``
can read them back. Many third-party blocks do not (MONAI's ``UpCat`` keeps one of its
fourteen). For those, wrap the model's construction::

    with fxgen.record_constructors(UpCat):
        model = BasicUNet(...)
    spec = fxgen.export(model, leaf_modules=[UpCat])

and the recorded ``(args, kwargs)`` become the spec's constructor call — still verified by
rebuilding the module and comparing it, like every other recovery.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Iterator
from typing import Any

import torch

from fxgen._errors import ExportError

__all__ = ["RECORDED_CALLS", "record_constructors"]


RECORDED_CALLS: weakref.WeakKeyDictionary[torch.nn.Module, tuple[tuple[Any, ...], dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)


@contextlib.contextmanager
def record_constructors(*classes: type[torch.nn.Module]) -> Iterator[None]:
    """Record the arguments of every instance of ``classes`` built inside the ``with`` block."""
    from fxgen.describe.recover import RECOVERIES, register_constructor

    originals: dict[type, Any] = {}
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
            raise TypeError(f"record_constructors takes nn.Module classes, not {cls!r}")
        originals[cls] = cls.__dict__.get("__init__")
        original = cls.__init__

        @functools.wraps(original)
        def __init__(self: torch.nn.Module, *args: Any, __cls: type = cls, __orig: Any = original, **kwargs: Any) -> None:
            __orig(self, *args, **kwargs)
            if type(self) is __cls:
                RECORDED_CALLS[self] = (args, dict(kwargs))

        cls.__init__ = __init__  # type: ignore[method-assign]
        register_constructor(cls, functools.partial(_recorded, fallback=RECOVERIES.get(cls)))
    try:
        yield
    finally:
        for cls, original in originals.items():
            if original is None:
                del cls.__init__
            else:
                cls.__init__ = original  # type: ignore[method-assign]


def _recorded(module: torch.nn.Module, fallback: Any = None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The recorded call; for instances built outside the block, the recovery registered before."""
    try:
        return RECORDED_CALLS[module]
    except KeyError:
        if fallback is not None:
            return fallback(module)
        raise ExportError(
            f"{type(module).__qualname__} was built outside fxgen.record_constructors(...); "
            "build the model inside that block to record its constructor arguments"
        ) from None
