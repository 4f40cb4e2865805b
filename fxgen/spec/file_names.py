"""The names a generated file binds at its top for its own code, in one place.

What it imports (``torch``, ``nn``, ``F``, the standard-library modules targets and expressions
are written under: ``operator.add``, ``math.sqrt``) and what it writes after its classes when
it holds packed tensors: the helper (``PACKED_HELPER_SOURCE``, whose name and the modules it reads
are taken from its own text) and the table of data. ``fxgen.codegen`` writes the file from these
and keeps its own names clear of them; validation refuses a spec name that is one of them
(``fxgen.check.checker.RESERVED_NAMES``), so no class, block, function, argument, value or node
of a spec can take one's place.
"""

from __future__ import annotations

import ast
import builtins

from fxgen.spec import expr

__all__ = ["FILE_NAMES", "PACKED_HELPER", "PACKED_HELPER_SOURCE", "PACKED_IMPORTS", "PACKED_TABLE", "STDLIB_ROOTS"]


_TORCH_NAMES = ("torch", "nn", "F")  # import torch; from torch import nn; import torch.nn.functional as F


STDLIB_ROOTS = frozenset({"operator", "math", "typing", "builtins", *expr.MODULES})
"""Standard-library modules a target is written under (``operator.add``), each imported as itself."""


PACKED_HELPER_SOURCE = '''\
def _unpack(data: str, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    """A tensor fxgen packed: base64 text of its zlib-compressed bytes, elements little-endian."""
    raw = bytearray(zlib.decompress(base64.b64decode(data)))
    flat = torch.frombuffer(raw, dtype=torch.uint8)
    unit = dtype.itemsize // (2 if dtype.is_complex else 1)
    if sys.byteorder == "big" and unit > 1:
        flat = flat.view(-1, unit).flip(1).reshape(-1)
    return flat.view(dtype).reshape(shape)
'''
"""The function a file with packed tensors defines after its classes (``fxgen.spec.packed``'s format)."""


PACKED_TABLE = "_PACKED"
"""The dict of the packed tensors' data, by path, written after the helper."""


def _helper() -> tuple[str, frozenset[str]]:
    """The helper's name and the modules it reads (the globals that are no builtins, torch aside)."""
    (function,) = ast.parse(PACKED_HELPER_SOURCE).body
    assert isinstance(function, ast.FunctionDef)
    names = [node for node in ast.walk(function) if isinstance(node, ast.Name)]
    local = {arg.arg for arg in function.args.args} | {n.id for n in names if isinstance(n.ctx, ast.Store)}
    read = {n.id for n in names if n.id not in local and not hasattr(builtins, n.id)}
    return function.name, frozenset(read - set(_TORCH_NAMES))


PACKED_HELPER, PACKED_IMPORTS = _helper()


FILE_NAMES = frozenset({*_TORCH_NAMES, *STDLIB_ROOTS, *PACKED_IMPORTS, PACKED_HELPER, PACKED_TABLE})
"""Every name the file binds at its top for its own code (a spec's classes and functions aside)."""
