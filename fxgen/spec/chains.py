"""A body without ``nodes`` runs its modules in the order declared, each on the previous one's
output, as ``torch.nn.Sequential`` does: the chain of compact steps it stands for, located at
the module declarations (``fxgen.spec.compact`` desugars it with the other compact items).
"""

from __future__ import annotations

from typing import Any

from fxgen.read.yaml_events import JsonPath
from fxgen.spec.shorthand import Source

__all__ = ["at_modules", "module_chain"]


_CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.ParameterList", "torch.nn.ParameterDict"})


def module_chain(body: dict[str, Any], where: JsonPath, problems: list[tuple[JsonPath, str]]) -> list[str]:
    """The steps a body without ``nodes`` stands for: its modules called in the order declared,
    each on the previous one's output (``torch.nn.Sequential``'s forward); none when it has nodes
    (or no modules: the schema then says what is missing). A module declared with ``if:`` is not
    in every instance, so such a body writes its nodes."""
    modules = body.get("modules")
    if "nodes" in body or not isinstance(modules, dict) or not modules:
        return []
    for path, decl in modules.items():
        if isinstance(decl, dict) and "if" in decl:
            problems.append(((*where, "modules", path), f"module {path!r} is declared with `if:`, so a class without "
                             "`nodes:` cannot run its modules in order; write its nodes (a conditional runs it)"))
            return []
        # a class that is no string is the schema's to report (the data is untrusted: a list is unhashable)
        if isinstance(decl, dict) and isinstance(decl.get("class"), str) and decl["class"] in _CONTAINERS:
            problems.append(((*where, "modules", path), f"module {path!r} is a {decl['class']}, which holds modules "
                             "and cannot be called, so a class without `nodes:` cannot run its modules in order; "
                             "write its nodes (a `for` over its items runs them)"))  # fmt: skip
            return []
    return [str(path) for path in modules]


def at_modules(sources: dict[JsonPath, Source], where: JsonPath, chain: list[str]) -> dict[JsonPath, Source]:
    """``sources`` of a module chain's nodes, which are written nowhere: each step is located at
    its module's declaration, the implied input and output at ``modules:``."""
    nodes, size = (*where, "nodes"), len(where) + 1
    moved: dict[JsonPath, Source] = {}
    for path, (written, same) in sources.items():
        if written[:size] == nodes:
            index = written[size] if len(written) > size else None
            written, same = ((*where, "modules", chain[index]) if isinstance(index, int) else (*where, "modules")), False
        moved[path] = (written, same)
    return moved
