"""The compact node form written: a spec's node lists in compact items wherever they desugar back
to exactly the canonical nodes.

``fxgen export`` (and every spec fxgen writes as YAML) describes a model as canonical nodes;
a person reads the compact form (docs/spec-format.md, "The compact node form"). This writes each
node as the shortest item ``fxgen.spec.compact`` desugars to that very node: the op left to the
target (``{y: conv}``, ``{gv: [.view, "%g", 1, -1]}``, ``{out: "%y"}``), the previous value as
``"%"``, a step nobody else reads left unnamed when torch.fx would give it the same name
(``- relu``), a chain's input ``x: torch.Tensor`` (or the top level's placeholders, where its
``inputs:`` imply them) and returned last value left implied; a body whose nodes are then only
its modules' names, in the order declared, writes no nodes at all. A node
the compact form cannot say (a placeholder with a default, an op its target does not imply, a
field no compact item has) stays canonical, and the two mix freely.

The desugaring decides, not this module: each class's compact list is desugared and compared,
node for node as Specs compare them, with the canonical one; a step whose desugared node
differs (a name torch.fx would make unique otherwise) is written named, and a list that still
differs is written canonical. So loading the written text always gives the same Spec, and the
generated file is the same. A pure function of the data: the same spec is always written the
same way.
"""

from __future__ import annotations

from typing import Any

from fxgen.spec.chains import module_chain
from fxgen.spec.compact import PREVIOUS, CompactError, desugar, fx_name, implied_op

__all__ = ["compacted"]


_INPUT = {"op": "placeholder", "name": "x", "type": "torch.Tensor"}  # what a chain's input is when implied


_STEP_KEYS = frozenset({"op", "name", "target", "args", "kwargs", "type"})  # what a compact item can say


_NODE_KEYS = frozenset({"op", "name", "target", "args", "kwargs", "type", "default", "if", "for"})


def compacted(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a spec's canonical data, ``Spec.to_dict``) with the node list of the top class
    and of each block written compactly where that desugars to the same nodes."""
    inputs = data.get("inputs")
    out = _chained(data, _class_nodes(data, list(inputs) if isinstance(inputs, dict) else []))
    if isinstance(data.get("classes"), dict):
        out["classes"] = {name: _chained(body, _class_nodes(body, [])) for name, body in data["classes"].items()}
    return out


def _chained(body: dict[str, Any], nodes: list[Any]) -> dict[str, Any]:
    """``body`` with its compact ``nodes``; without them where they are the chain of its modules
    in the order declared, which a body without nodes stands for (``fxgen.spec.chains``)."""
    bare = {key: value for key, value in body.items() if key != "nodes"}
    problems: list[Any] = []
    chain = module_chain(bare, (), problems)
    canonical: list[Any] = body["nodes"]
    calls = [node.get("target") for node in canonical[1:-1] if isinstance(node, dict)]
    looks_so = bool(chain) and not problems and calls == chain and len(canonical) == len(chain) + 2  # cheap, first
    if looks_so and _desugared(body, list(chain)) == _items(canonical):  # the desugaring decides
        return bare
    return {**body, "nodes": nodes}


def _class_nodes(body: dict[str, Any], inputs: list[str]) -> list[Any]:
    """One class's nodes, compact where they round-trip (its canonical nodes otherwise): first with
    the placeholders ``inputs`` (the top level's ``inputs:``) implies left to it, then written."""
    canonical: list[Any] = body["nodes"]
    want = _items(canonical)
    for implied in ([inputs, []] if inputs else [[]]):
        writer = _Writer(body, implied)
        while True:
            nodes = writer.top(canonical)
            got = _desugared(body, nodes)
            if got == want:
                return nodes
            wrong = _differing(want, got) - writer.named
            if got is None or not wrong:
                break
            writer.named |= wrong
    return canonical


def _items(nodes: list[Any]) -> list[Any]:
    """``nodes`` as Specs compare them: a node's empty ``args`` and ``kwargs`` written or not
    alike (``spec.model.Node``'s defaults; this module is below the model, which writes with it)."""
    out: list[Any] = []
    for node in nodes:
        if "op" in node:
            out.append({**node, "args": node.get("args", []), "kwargs": node.get("kwargs", {})})
        else:
            out.append({k: _items(v) if k in ("then", "else", "nodes") else v for k, v in node.items()})
    return out


def _walk(items: list[Any]) -> list[dict[str, Any]]:
    """Every node of ``items``, inside conditionals and repeats too, in the order written."""
    out: list[dict[str, Any]] = []
    for item in items:
        out.extend([item] if "op" in item else _walk([*item.get("then", []), *item.get("else", []), *item.get("nodes", [])]))
    return out


def _desugared(body: dict[str, Any], nodes: list[Any]) -> list[Any] | None:
    """The items ``nodes`` desugar to in ``body``'s class (None: not well formed)."""
    tables = {key: body[key] for key in ("modules", "parameters", "buffers", "inputs") if key in body}
    try:
        data, _ = desugar({**tables, "nodes": nodes})
        return _items(data["nodes"])
    except (CompactError, TypeError, KeyError):
        return None


def _differing(want: list[Any], got: list[Any] | None) -> set[str]:
    """The names of the nodes of ``want`` whose desugared node differs (all of them when the
    lists do not pair up)."""
    nodes = _walk(want)
    names = {node["name"] for node in nodes if isinstance(node.get("name"), str)}
    if got is None:
        return names
    mine = _walk(got)
    if len(mine) != len(nodes):
        return names
    return {a["name"] for a, b in zip(nodes, mine, strict=True) if a != b and isinstance(a.get("name"), str)}


class _Writer:
    """Writes one class's canonical items as compact ones; ``named``: the nodes to keep named."""

    def __init__(self, body: dict[str, Any], inputs: list[str]) -> None:
        self.modules = _keys(body.get("modules"))
        self.tensors = _keys(body.get("parameters")) | _keys(body.get("buffers"))
        self.implied = [{"op": "placeholder", "name": name, "type": "torch.Tensor"} for name in inputs]
        self.named: set[str] = set()

    def top(self, nodes: list[Any]) -> list[Any]:
        """The class's list: its placeholders implied where they are those of its ``inputs:`` (the
        first step's previous value the first of them), else its lone input ``x: torch.Tensor``
        when the first step takes it as the previous value; its output implied when it returns
        the last value."""
        end = nodes[-1] if nodes else None
        returns_last = isinstance(end, dict) and end == {"op": "output", "args": end.get("args"), "type": "torch.Tensor"}
        body = nodes[:-1] if returns_last else nodes
        size = len(self.implied)
        by_inputs = bool(size) and body[:size] == self.implied and len(body) > size
        by_inputs = by_inputs and not any(node.get("op") == "placeholder" for node in body[size:])
        out, last = self.items(body[size:], body[0]["name"]) if by_inputs else self.items(body, None)
        if returns_last and not (out and last is not None and end["args"] == [f"%{last}"]):  # type: ignore[index]
            out.append(end)
        if not by_inputs and len(out) >= 2 and out[0] == _INPUT and _takes_previous(out[1]):
            out = out[1:]
        return out

    def items(self, nodes: list[Any], previous: str | None) -> tuple[list[Any], str | None]:
        """The compact items of ``nodes`` (``previous``: the value before the first) and the
        value after the last, as the desugaring sees it."""
        out: list[Any] = []
        names_next = _consumers(nodes)
        k = 0
        while k < len(nodes):
            node = nodes[k]
            unpacking = self.unpacking(nodes, k, previous)
            if unpacking is not None:  # after it there is no previous value
                out.append(unpacking[0])
                k, previous = k + unpacking[1], None
                continue
            k += 1
            if "if" in node:
                then, a = self.items(node["then"], previous)
                item = {**node, "then": then}
                if "else" in node:
                    item["else"], b = self.items(node["else"], previous)
                previous = a if "else" in node and a == b else None
                out.append(item)
            elif "for" in node:
                out.append({**node, "nodes": self.items(node["nodes"], previous)[0]})
                previous = None
            else:
                out.append(self.node(node, previous, names_next[k - 1]))
                op, name = node.get("op"), node.get("name")
                keeps = op in ("placeholder", "get_attr", "alias") or str(op).startswith("call_")
                previous = name if keeps and isinstance(name, str) else None
        return out, previous

    def unpacking(self, nodes: list[Any], k: int, previous: str | None) -> tuple[dict[str, Any], int] | None:
        """At ``nodes[k]``: a run of ``operator.getitem`` nodes taking items 0, 1, ... of one value
        as ``{"a, b": "%value"}``, or a call followed by such a run on its result as
        ``{"a, b": CALL}`` (its own name then the one torch.fx gives it); with how many nodes
        it stands for. None where no run of two or more starts."""
        node = nodes[k]
        if not isinstance(node, dict):
            return None
        name = node.get("name")
        if node.get("op") == "call_function" and node.get("target") == "operator.getitem" and _is_item(node, 0):
            names = _items_of(nodes, k, node["args"][0])
            return ({", ".join(names): node["args"][0]}, len(names)) if len(names) >= 2 else None
        if not isinstance(name, str) or not set(node) <= {"op", "name", "target", "args"}:
            return None
        names = _items_of(nodes, k + 1, f"%{name}")
        step = self.node(node, previous, True) if len(names) >= 2 else None
        if isinstance(step, str):
            call: Any = step
        elif isinstance(step, dict) and len(step) == 1 and isinstance(step.get(name), list):
            call = step[name]
            if not self.unnamed(node["op"], node["target"], name, True):
                return None
        else:
            return None
        return {", ".join(names): call}, 1 + len(names)

    def node(self, node: dict[str, Any], previous: str | None, next_takes: bool) -> Any:
        """One canonical node as the shortest compact item that says it (itself when none can);
        ``next_takes``: the next item reads this node's value as its previous value."""
        op, name, target = node.get("op"), node.get("name"), node.get("target")
        if not set(node) <= _STEP_KEYS or not isinstance(name, str) or name in _NODE_KEYS:
            return node
        if op == "alias" and set(node) == {"op", "name", "args"} and _is_ref(node["args"]):
            return {name: node["args"][0]}
        if not isinstance(target, str) or op not in ("get_attr", "call_function", "call_method", "call_module"):
            return node
        written = "." + target if op == "call_method" else target
        if implied_op(written, self.modules, self.tensors) != op:
            return node
        args, kwargs = node.get("args", []), node.get("kwargs")
        if op == "get_attr":
            if args or kwargs is not None or "type" in node:
                return node
            return written if self.unnamed(op, target, name, next_takes) else {name: written}
        ref = f"%{previous}" if previous is not None else None
        if ref is not None and (_holds(args, ref) or _holds(kwargs, ref)):
            args, kwargs = _replaced(args, ref), _replaced(kwargs, ref)
        if kwargs is not None or "type" in node:
            item: dict[str, Any] = {"name": name, "target": written}
            if "args" in node:
                item["args"] = args
            if kwargs is not None:
                item["kwargs"] = kwargs
            if "type" in node:
                item["type"] = node["type"]
            return item
        if args == [PREVIOUS]:
            return written if self.unnamed(op, target, name, next_takes) else {name: written}
        return {name: [written, *args]}

    def unnamed(self, op: str, target: str, name: str, next_takes: bool) -> bool:
        """Whether a step may go unnamed: the next item takes its value as the previous one, and
        torch.fx would name it so (the desugaring's check decides the suffix)."""
        if not next_takes or name in self.named:
            return False
        base = fx_name(op, target)
        return name == base or (name.startswith(base + "_") and name[len(base) + 1 :].isdigit())


def _consumers(nodes: list[Any]) -> list[bool]:
    """For each item, whether the next one is a node reading it, as its previous value, in its
    arguments (a node written out with a default or other fields does not), or the output
    returning it, which the desugaring implies."""
    out = []
    for k, node in enumerate(nodes):
        after = nodes[k + 1] if k + 1 < len(nodes) else None
        name = node.get("name") if isinstance(node, dict) else None
        returned = after == {"op": "output", "args": [f"%{name}"], "type": "torch.Tensor"}  # the implied output
        takes = returned or (isinstance(after, dict) and isinstance(name, str) and set(after) <= _STEP_KEYS
                 and after.get("op") not in ("output", "placeholder", "alias")
                 and (_holds(after.get("args"), f"%{name}") or _holds(after.get("kwargs"), f"%{name}")))  # fmt: skip
        out.append(takes)
    return out


def _is_item(node: Any, index: int) -> bool:
    """Whether ``node`` is exactly ``{op: call_function, name, target: operator.getitem, args:
    ["%value", index]}``."""
    return (isinstance(node, dict) and set(node) == {"op", "name", "target", "args"} and node["op"] == "call_function"
            and node["target"] == "operator.getitem" and isinstance(node["args"], list) and len(node["args"]) == 2
            and isinstance(node["args"][0], str) and node["args"][0].startswith("%") and node["args"][1] == index
            and type(node["args"][1]) is int)  # fmt: skip


def _items_of(nodes: list[Any], start: int, value: str) -> list[str]:
    """The names of the run of nodes from ``start`` taking items 0, 1, ... of ``value``."""
    names: list[str] = []
    while start + len(names) < len(nodes):
        node = nodes[start + len(names)]
        if not (_is_item(node, len(names)) and node["args"][0] == value):
            break
        names.append(node["name"])
    return names


def _takes_previous(item: Any) -> bool:
    """Whether a compact item reads the previous value (``"%"`` in its arguments, or a bare
    step)."""
    if isinstance(item, str):
        return True
    if isinstance(item, dict) and "op" not in item and "if" not in item and "for" not in item:
        if "target" in item:
            return _holds(item.get("args"), PREVIOUS) or _holds(item.get("kwargs"), PREVIOUS)
        (value,) = item.values()
        if isinstance(value, list):
            return _holds(value[1:], PREVIOUS)
        return isinstance(value, str) and not value.startswith("%")
    return False


def _is_ref(args: Any) -> bool:
    return isinstance(args, list) and len(args) == 1 and isinstance(args[0], str) and args[0].startswith("%")


def _holds(value: Any, ref: str) -> bool:
    """Whether ``ref`` is one of the values ``value`` holds, at any depth."""
    if value == ref:
        return True
    if isinstance(value, list):
        return any(_holds(v, ref) for v in value)
    if isinstance(value, dict):
        return any(_holds(v, ref) for v in value.values())
    return False


def _replaced(value: Any, ref: str) -> Any:
    """``value`` with each ``ref`` the previous value's ``"%"``."""
    if value == ref:
        return PREVIOUS
    if isinstance(value, list):
        return [_replaced(v, ref) for v in value]
    if isinstance(value, dict):
        return {k: _replaced(v, ref) for k, v in value.items()}
    return value


def _keys(table: Any) -> set[str]:
    return {key for key in table if isinstance(key, str)} if isinstance(table, dict) else set()
