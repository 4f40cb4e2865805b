"""Initialisation schemes: the fixed table ``init`` names in a spec, and whether one fits.

``init`` names a ``torch.nn.init`` scheme (``normal`` -> ``torch.nn.init.normal_``) from
``INIT_SCHEMES``, so a spec cannot reach any other function through it. ``check_init`` says why
a scheme cannot initialise a tensor of a given shape and dtype (validation), ``init_call`` splits
a declaration into the scheme's name and arguments (the construct and codegen stages).
"""

from __future__ import annotations

from typing import Any

from fxgen.spec.literals import literal_problem
from fxgen.spec.values import DTYPES

__all__ = ["INIT_SCHEMES", "check_init", "init_call"]


# scheme -> (allowed keyword arguments, minimum number of dimensions, maximum or None)
INIT_SCHEMES: dict[str, tuple[frozenset[str], int, int | None]] = {
    "zeros": (frozenset(), 0, None),
    "ones": (frozenset(), 0, None),
    "constant": (frozenset({"val"}), 0, None),
    "normal": (frozenset({"mean", "std"}), 0, None),
    "uniform": (frozenset({"a", "b"}), 0, None),
    "trunc_normal": (frozenset({"mean", "std", "a", "b"}), 0, None),
    "xavier_uniform": (frozenset({"gain"}), 2, None),
    "xavier_normal": (frozenset({"gain"}), 2, None),
    "kaiming_uniform": (frozenset({"a", "mode", "nonlinearity"}), 2, None),
    "kaiming_normal": (frozenset({"a", "mode", "nonlinearity"}), 2, None),
    "orthogonal": (frozenset({"gain"}), 2, None),
    "eye": (frozenset(), 2, 2),
    "dirac": (frozenset({"groups"}), 3, 5),
}


def init_call(init: Any) -> tuple[str, dict[str, Any]]:
    """``"ones"`` -> ``("ones", {})``; ``{"normal": {"std": 0.02}}`` -> ``("normal", {"std": 0.02})``."""
    if isinstance(init, str):
        return init, {}
    ((name, kwargs),) = init.items()
    return name, dict(kwargs or {})


def check_init(init: Any, shape: list[int], dtype: str) -> str | None:
    """Why ``init`` cannot initialise a tensor of ``shape``/``dtype``, or None."""
    name, kwargs = init_call(init)
    allowed, lo, hi = INIT_SCHEMES[name]
    if unknown := sorted(set(kwargs) - allowed):
        return f"init {name!r} takes no argument {unknown[0]!r} (allowed: {', '.join(sorted(allowed)) or 'none'})"
    if name == "constant" and "val" not in kwargs:
        return "init 'constant' needs a value: {constant: {val: ...}}"
    unfit = literal_problem(kwargs["val"], dtype) if name == "constant" else None
    if unfit:
        return f"init 'constant': val {unfit[1]}"
    if len(shape) < lo or (hi is not None and len(shape) > hi):
        span = f"{lo}" if hi == lo else f"at least {lo}" if hi is None else f"{lo} to {hi}"
        return f"init {name!r} needs a tensor with {span} dimensions, not shape {shape}"
    if name not in ("zeros", "ones", "constant", "eye") and not DTYPES[dtype].is_floating_point:
        return f"init {name!r} needs a floating-point dtype, not {dtype}"
    if name in ("xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "dirac") and 0 in shape:
        return f"init {name!r} cannot initialise an empty tensor of shape {shape}"
    if name == "orthogonal" and dtype not in ("float32", "float64"):
        return f"init 'orthogonal' needs float32 or float64 (torch has no QR for {dtype}); convert after loading"
    if name == "dirac":
        groups = kwargs.get("groups", 1)
        if shape[0] % groups:
            return f"init 'dirac' needs the first dimension ({shape[0]}) to be divisible by groups ({groups})"
    if name in ("uniform", "trunc_normal"):
        low, high = kwargs.get("a", 0 if name == "uniform" else -2), kwargs.get("b", 1 if name == "uniform" else 2)
        if low > high:
            return f"init {name!r} needs a <= b, not a={low}, b={high}; swap them"
    return None
