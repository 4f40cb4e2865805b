"""The order in which a load makes what draws from the random generator.

A seeded ``fxgen.load`` and the generated class must hold the same values, so a load creates every
module, and every tensor with a random ``init``, in the order the generated ``__init__`` does
(``fxgen.spec.tree.construction_plan``) whenever that differs from the declarations' order."""

from __future__ import annotations

from typing import Any

from fxgen.spec.init import init_call

__all__ = ["draw_plan"]


_NO_DRAW_INITS = frozenset({"zeros", "ones", "constant", "eye", "dirac"})


def draw_plan(data: dict[str, Any]) -> list[tuple[str, str]] | None:
    """The generated ``__init__``'s order of the declarations (``_build.construction_plan``)
    when the ones that may draw from the random generator (every module; tensors with a random
    ``init``) come in another order there than in the spec; else None, and a load constructs the
    modules in validation and the tensors in the build, as declared. ``data`` is schema-valid."""
    from fxgen.spec.tree import construction_plan

    modules, parameters, buffers = (data.get(table, {}) for table in ("modules", "parameters", "buffers"))
    drawing = [("modules", path) for path in modules]
    drawing += [("parameters", path) for path, entry in parameters.items() if _random_init(entry)]
    drawing += [("buffers", path) for path, entry in buffers.items() if _random_init(entry)]
    if len(drawing) == len(modules) and not any("." in path for path in modules):
        return None  # the modules alone draw, none inside a container: as declared
    plan = construction_plan(modules, parameters, buffers)
    wanted = set(drawing)
    return plan if [item for item in plan if item in wanted] != drawing else None


def _random_init(entry: dict[str, Any]) -> bool:
    return "value" not in entry and init_call(entry.get("init", "zeros"))[0] not in _NO_DRAW_INITS
