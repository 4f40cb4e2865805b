"""A declared module's ``init:``: which of its tensors it names, and whether each scheme fits.

``init`` initialises parameters and buffers of a constructed module (``{weight: {normal: {std:
0.02}}}``), as a person writes ``nn.init.normal_(self.fc.weight, std=0.02)`` after the
constructor call. The constructed module (on the meta device: only shapes and dtypes are looked
at) says what each path is; ``fxgen.spec.init.check_init`` says whether its scheme fits. The
kinds found (``parameter`` or ``buffer``) are what the generated code asks the module for.
"""

from __future__ import annotations

from typing import Any

import torch

from fxgen._errors import closest_name
from fxgen.construct.modules import tensor_at
from fxgen.read.yaml_events import JsonPath
from fxgen.spec.init import check_init
from fxgen.spec.values import DTYPES

__all__ = ["init_problems"]


_DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}


def init_problems(
    module: torch.nn.Module, inits: dict[str, Any], label: str
) -> tuple[list[tuple[JsonPath, str]], dict[str, str]]:
    """Problems of the (concrete) ``inits`` of ``module`` (``label`` names it in messages), each
    at its path under ``init``, and the kind of every tensor named (path -> ``parameter`` or
    ``buffer``)."""
    problems: list[tuple[JsonPath, str]] = []
    kinds: dict[str, str] = {}
    for path, init in inits.items():
        try:
            tensor = tensor_at(module, path)
        except (KeyError, AttributeError):
            problems.append(((path,), _unknown(module, path, label)))
            continue
        kinds[path] = "parameter" if isinstance(tensor, torch.nn.Parameter) else "buffer"
        dtype = _DTYPE_NAMES.get(tensor.dtype)
        if dtype is None:
            problems.append(((path,), f"{label}: init of {path!r}: its dtype {tensor.dtype} is not one fxgen knows"))
            continue
        problem = check_init(init, list(tensor.shape), dtype)
        if problem:
            problems.append(((path,), f"{label}: init of {kinds[path]} {path!r} ({dtype}{list(tensor.shape)}): {problem}"))
    return problems, kinds


def _unknown(module: torch.nn.Module, path: str, label: str) -> str:
    names = [name for name, _ in (*module.named_parameters(), *module.named_buffers())]
    close = closest_name(path, names)
    hint = f"did you mean {close!r}?" if close else f"its tensors: {', '.join(names[:12]) or 'none'}"
    return f"{label}: init names {path!r}, which is no parameter or buffer of the module; {hint}"
