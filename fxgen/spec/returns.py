"""What an implied output returns: a class whose last step calls a block returns what that
block returns (YOLOv8's ``Detect``, a list), so compact bodies are desugared callees first and
each output is typed from the blocks before it.
"""

from __future__ import annotations

from typing import Any

from fxgen.read.imports import class_names

__all__ = ["callees_first", "class_at", "typed_output"]


def typed_output(body: Any) -> bool:
    """Does ``body`` end with an output node written with its type?"""
    nodes = body.get("nodes") if isinstance(body, dict) else None
    last = nodes[-1] if isinstance(nodes, list) and nodes else None
    return isinstance(last, dict) and last.get("op") == "output" and isinstance(last.get("type"), str)


def callees_first(classes: dict[str, Any]) -> list[str]:
    """The classes, each after the blocks its modules build (a cycle, reported later, is cut)."""
    order: list[str] = []
    done: set[str] = set()
    for root in classes:
        stack = [(root, False)]
        while stack:
            name, expanded = stack.pop()
            if expanded:
                order.append(name)
                continue
            if name in done:
                continue
            done.add(name)
            stack.append((name, True))
            body = classes[name]
            used = class_names(body.get("modules") if isinstance(body, dict) else None)
            stack += [(other, False) for other in sorted(used) if other in classes and other not in done]
    return order


def class_at(modules: dict[str, Any], target: str) -> str | None:
    """The class of the module ``target`` names (a declared module, or an item of a declared
    Sequential or ModuleList whose items up to it are written one by one); None if unknown."""
    parts = target.split(".")
    size = next((k for k in range(len(parts), 0, -1) if ".".join(parts[:k]) in modules), 0)
    decl = modules.get(".".join(parts[:size])) if size else None
    for index in parts[size:]:
        if not (isinstance(decl, dict) and index.isdigit()):
            return None
        items = decl.get("args")
        if decl.get("class") == "torch.nn.ModuleList" and isinstance(items, list) and len(items) == 1:
            items = items[0]
        elif decl.get("class") != "torch.nn.Sequential":
            return None
        k = int(index)
        if not (isinstance(items, list) and k < len(items)) or any(
            not (isinstance(item, dict) and set(item) == {"module"}) for item in items[: k + 1]
        ):
            return None
        decl = items[k]["module"]
    return str(decl["class"]) if isinstance(decl, dict) and isinstance(decl.get("class"), str) else None
