"""Validate stage, the graph: node names, references and their order, node targets under the
target policy, and the values torch.fx would write wrongly (operators, number literals).

``NodeChecks.check_nodes`` walks the nodes once, in order; a node whose values pass one walk
(``plain_refs``, the common case) skips the walks that could only report.
"""

from __future__ import annotations

import functools
import keyword
import operator
from collections.abc import Iterator
from typing import Any

import torch

from fxgen._errors import SpecError, did_you_mean
from fxgen.check.checker import DECODE_ERRORS, IDENTIFIER, RESERVED_NAMES, CheckerBase
from fxgen.check.constructs import construct_problems, shown_path
from fxgen.check.functions import arities
from fxgen.policy.policy import TargetError
from fxgen.read.yaml_events import JsonPath
from fxgen.spec.expr import shown
from fxgen.spec.resolve import (
    TRAINING,
    NodesError,
    data_cases,
    data_needs_resolution,
    expand_nodes,
    walk_data,
)
from fxgen.spec.values import decode, decode_kwargs, iter_refs, parse_ref, plain_refs

__all__ = ["NodeChecks"]


class NodeChecks(CheckerBase):
    """The checks of ``nodes``, on top of the shared state; ``fxgen.check.declarations.Checker`` adds the declarations."""

    # set by the Checker: the class's argument and value names, its name in messages, and the
    # values of its arguments and named values when known
    arguments: list[str]
    value_names: list[str]
    label: str
    env: dict[str, Any] | None
    top_runs: dict[int, int]  # block instance (by id of its stand-in) -> its forward_runs
    forward_runs = 0  # graph nodes one call of this body's forward runs, block calls opened

    def check_nodes(self) -> None:
        nodes: list[dict[str, Any]] = self.data["nodes"]
        if self.doc.data["fxgen"] >= 2 and data_needs_resolution(nodes):
            self.check_resolved_nodes(nodes)
        else:
            with self.located(("nodes",)):
                self.budget.charge("nodes", len(nodes))
            self.check_node_list([(("nodes", i), node) for i, node in enumerate(nodes)])
        if not self.scope:  # one call of the model's forward, every block call opened
            with self.located(("nodes",)):
                self.budget.charge("runs", self.forward_runs)

    def runs_of(self, target: str) -> int:
        """The graph nodes one call of the module at ``target`` runs: a block instance's forward
        (``forward_runs``, block calls opened), a Sequential's items' in turn; 0 for any other
        module (its own code, not a graph of the spec)."""
        if not self.top_runs:
            return 0  # no block instance yet: no call opens one
        head, rest = target, list[str]()
        while head not in self.instances and "." in head:  # the declared module, then the items in it
            head, _, name = head.rpartition(".")
            rest.insert(0, name)
        module = self.instances.get(head)
        for name in rest:
            module = getattr(module, "_modules", {}).get(name)
        return _runs(module, self.top_runs)

    def check_resolved_nodes(self, nodes: list[dict[str, Any]]) -> None:
        """A node list with conditionals, repeats, aliases or ``{arg: ...}`` values: its rules
        as written (``fxgen.check.constructs``), then, with this instance's argument values,
        the graph it resolves to, node by node, each located at the item it comes from."""
        problems = construct_problems(nodes, self.arguments, self.value_names, self.label,
                                      attributes=self.attribute_names(), functions=arities(self.doc.data))
        for where, message in problems:
            self.error(where, message)
        self.canonical_types.extend(self.check_type(node, where) for where, node in walk_data(nodes))
        for where, node in walk_data(nodes):
            # Names the resolved graph does not show as written: an alias's, a loop's node's
            # (h_0, h_1 there); the generated forward writes them as they are.
            if node.get("name") is not None and (node["op"] == "alias" or "for" in _kinds(nodes, where)):
                self.check_name(node["name"], (*where, "name"), node["op"])
        if problems or self.env is None:
            return  # without argument values (a block nothing uses), the items as written are all there is
        # A graph that depends on the mode is checked in both (each mode's graph is a plain one).
        # and one that depends on the optional inputs a call gives, with each of them left out
        modes = sorted(data_cases(nodes), key=lambda case: case.get(TRAINING) is False)  # train mode first
        for mode in modes:
            env = {**self.env, **mode}
            try:
                with self.located(("nodes",)):
                    flat = expand_nodes(nodes, env)
                    self.budget.charge("nodes", len(flat))  # each mode's graph is built
            except NodesError as exc:
                self.error(exc.path, f"{exc} (with {shown(env) or 'no arguments'})")
                return  # (the other mode's graph would mostly report it again)
            reported = self.reported
            self.check_node_list(flat, types=False)
            if self.reported > reported:
                return
            if any(n.get("name") is None and n["op"] != "output" for n, _ in flat):
                self.check_unnamed(flat)

    def attribute_names(self) -> dict[str, str]:
        """The class's own attributes (first segment of each module, parameter and buffer path ->
        which kind), but a bool argument that says whether the module of its name is declared
        (``downsample`` and ``downsample: {..., if: downsample}``): forward asks the module itself."""
        out: dict[str, str] = {}
        for table, kind in (("buffers", "buffer"), ("parameters", "parameter"), ("modules", "module")):
            for path, decl in (self.data.get(table) or {}).items():
                name = str(path).split(".")[0]
                flag = isinstance(decl, dict) and decl.get("if") == name
                if flag and name in self.arguments:
                    continue
                out[name] = kind
        return out

    def check_unnamed(self, flat: list[tuple[dict[str, Any], JsonPath]]) -> None:
        """torch.fx names unnamed nodes itself (``relu``); a later explicit name may collide with
        one of those. Building the bare graph (no modules, no tensors) is the exact check."""
        from fxgen.construct.graph import build_graph
        from fxgen.spec.model import Node, Spec

        nodes = [Node(**node) for node, _ in flat]
        try:
            build_graph(Spec(name="Graph", nodes=list(nodes)), self.policy)
        except SpecError as exc:
            self.error((*flat[getattr(exc, "index", 0)][1], "name"), exc.message)

    def check_node_list(self, nodes: list[Any], *, types: bool = True) -> None:
        """The nodes of a plain graph in order, each as ``(where, node)`` (or, resolved,
        ``(node, where)``: ``where`` the item it comes from)."""
        if nodes and isinstance(nodes[0][0], dict):
            nodes = [(where, node) for node, where in nodes]
        calls = sum(self.runs_of(node["target"]) for _, node in nodes
                    if node["op"] == "call_module" and isinstance(node.get("target"), str))  # fmt: skip
        self.forward_runs = max(self.forward_runs, len(nodes) + calls)  # one mode's graph runs per call
        defined: dict[str, Any] = {}
        seen_other = False
        with_default: str | None = None
        outputs = [i for i, (_, n) in enumerate(nodes) if n["op"] == "output"]
        if not outputs:
            self.error(("nodes",), "the graph has no output node; end `nodes` with {op: output, args: [...]}",
                       key=True)  # fmt: skip
        for i in outputs[:-1]:
            self.error(nodes[i][0], "only one output node is allowed, and it must come last; "
                       "return several values as {tuple: [...]}")  # fmt: skip
        if outputs and outputs[-1] != len(nodes) - 1:
            self.error(nodes[outputs[-1]][0], "the output node must be the last node; move it to the end")
        for i, (where, node) in enumerate(nodes):
            op = node["op"]
            if op == "placeholder":
                if seen_other:
                    self.error(where, "placeholders must come before every other node; move it up")
                elif "default" in node:
                    with_default = with_default or node["name"]
                elif with_default is not None:
                    self.error((*where, "name"), f"placeholder {node['name']!r} has no default but follows "
                               f"{with_default!r}, which has one; give it a default or move it before "
                               f"{with_default!r}")  # fmt: skip
            seen_other = seen_other or op != "placeholder"
            # The same checks in the same order (references, type, values, target); a node whose
            # values pass one walk (the common case) skips the walks that could only report.
            clean = self.clean_values(node, op, defined)
            if not clean:
                self.check_refs(node, where, defined)
            if types:
                self.canonical_types.append(self.check_type(node, where))
            if not clean and op != "get_attr":
                self.check_values(node, where)
            getattr(self, f"check_{op}")(node, where)
            name = node.get("name")
            if name is None:
                continue
            if name in defined:
                self.error((*where, "name"), f"node name {name!r} is already used by node {defined[name]}; "
                           "node names must be unique, rename one")  # fmt: skip
                continue
            self.check_name(name, (*where, "name"), op)
            # even when refused, so references to it are not reported again
            defined[name] = i if len(where) == 2 else shown_path(where)

    def check_name(self, name: str, where: JsonPath, op: str) -> None:
        if not IDENTIFIER.fullmatch(name):
            self.error(where, f"node name {name!r} is not an identifier; use only letters, digits and _")
        elif keyword.iskeyword(name) or keyword.issoftkeyword(name):
            self.error(where, f"node name {name!r} is a Python keyword; choose another name")
        elif name in self.builtin_names:
            self.error(where, f"node name {name!r} would shadow the builtin {name!r}; choose another name")
        elif name in RESERVED_NAMES or name in self.imported_roots:
            self.error(where, f"node name {name!r} is reserved for a name the generated code uses (an import "
                       "or its own helper); choose another name")  # fmt: skip
        elif name == "output" and op != "output":
            self.error(where, "node name 'output' is reserved for the output node; choose another name")

    def clean_values(self, node: dict[str, Any], op: str, defined: dict[str, int]) -> bool:
        """Whether ``check_refs`` and ``check_values`` would find nothing to report in ``node``,
        answered by one walk per value (``plain_refs``); False means "run them", not "wrong"."""
        refs: list[str] = []
        if "args" in node and not plain_refs(node["args"], refs):
            return False
        if "kwargs" in node:
            kwargs = node["kwargs"]
            if type(kwargs) is not dict:
                return False
            for key, value in kwargs.items():
                if not self.is_keyword_name(key) or not plain_refs(value, refs):
                    return False
        if "default" in node:
            constant: list[str] = []  # a default may not refer to nodes at all
            if op != "placeholder" or not plain_refs(node["default"], constant) or constant:
                return False
        return all(name in defined for name in refs)

    def check_refs(self, node: dict[str, Any], where: JsonPath, defined: dict[str, int]) -> None:
        for field in ("args", "kwargs", "default"):
            if field not in node:
                continue
            for rel in _size_paths(node[field], kwargs=field == "kwargs"):
                self.error((*where, field, *rel), "torch.fx stores torch.Size arguments as tuples; "
                           "write {tuple: [...]} here ({size: ...} is for module arguments)")
            for rel, name in iter_refs(node[field]):
                at = (*where, field, *rel)
                if field == "default":
                    self.error(at, f"%{name}: a placeholder default is a constant and cannot refer to a node; "
                               f"write '%%{name}' for the literal string '%{name}'")  # fmt: skip
                elif name not in defined:
                    later = any(n.get("name") == name for n in self.data["nodes"])
                    reason = "is defined later (nodes must come in execution order)" if later else (
                        "is not defined" + did_you_mean(name, defined))
                    if not later and not any(n.get("op") == "placeholder" for n in self.data["nodes"]):
                        reason += (", and the nodes declare no input: to read an input, declare it first, "
                                   f"{{op: placeholder, name: {name}, type: torch.Tensor}}")  # fmt: skip
                    self.error(at, f"%{name}: node {name!r} {reason}; write '%%{name}' for a literal string")

    def check_type(self, node: dict[str, Any], where: JsonPath) -> str | None:
        if "type" not in node:
            return None
        try:
            return self.policy.resolve_type(node["type"])[1]
        except TargetError as exc:
            self.error((*where, "type"), str(exc))
            return None

    def check_values(self, node: dict[str, Any], where: JsonPath) -> None:
        for field in ("args", "kwargs", "default"):
            if field not in node:
                continue
            names_ok = self.check_kwargs(node[field], (*where, field)) if field == "kwargs" else True
            if not (self.check_tags(node[field], (*where, field), mapping=field == "kwargs") and names_ok):
                continue
            try:
                (decode_kwargs if field == "kwargs" else decode)(node[field], _any_ref)
            except DECODE_ERRORS as exc:
                self.error((*where, field), f"invalid value: {exc}")

    def check_placeholder(self, node: dict[str, Any], where: JsonPath) -> None:
        pass  # its values were checked by check_nodes, like every node's

    def check_output(self, node: dict[str, Any], where: JsonPath) -> None:
        pass

    def not_declared_here(self, node: dict[str, Any], where: JsonPath) -> bool:
        """Does ``node`` reach into a module declared on a condition false for this instance?
        (Reported: the branch using it needs the same condition.)"""
        target: str = node["target"]
        for path, condition in self.absent.items():
            if target == path or target.startswith(path + "."):
                self.error((*where, "target"), f"{node['op']} target {target!r}: module {path!r} is declared only if "
                           f"{condition} (false with {', '.join(f'{k}={v!r}' for k, v in (self.env or {}).items())}); "
                           "use it in a branch on the same condition")  # fmt: skip
                return True
        return False

    def check_get_attr(self, node: dict[str, Any], where: JsonPath) -> None:
        target: str = node["target"]
        if self.absent and self.not_declared_here(node, where):
            return
        if target in self.data.get("parameters", {}) or target in self.data.get("buffers", {}):
            return
        path = self.owning_module(target)
        if path is not None:
            cls = self.module_classes.get(path)
            if cls is None:
                return  # a module whose declaration is invalid was reported already
            module = self.instances[path]
            attr = target[len(path) + 1 :]
            found, value = _attribute(module, attr)
            if not found:
                names = _attribute_names(module)
                has = f"; it has {', '.join(names)}" if names else ""
                self.error((*where, "target"), f"module {path!r} ({cls.__name__}) has no attribute {attr!r}{has}")
                return
            try:  # public tensors and plain data only: not submodules, methods, hooks, _modules...
                self.policy.check_module_attribute(attr, value)
            except TargetError as exc:
                self.error((*where, "target"), _node_prefix(node) + str(exc))
            return
        tensors = (*self.data.get("parameters", {}), *self.data.get("buffers", {}))
        self.error((*where, "target"), f"get_attr target {target!r} is not a declared parameter, buffer "
                   f"or attribute of a declared module{did_you_mean(target, tensors)}; declare it under "
                   "`parameters` or `buffers`")  # fmt: skip

    def owning_module(self, target: str) -> str | None:
        """The first declared module (in declaration order) whose path is a prefix of ``target``:
        only the target's own prefixes are looked up, not every module per get_attr node."""
        order = self.module_order
        found = [prefix for prefix in _prefixes(target) if prefix in order]
        return min(found, key=order.__getitem__) if found else None

    @functools.cached_property
    def module_order(self) -> dict[str, int]:
        return {path: i for i, path in enumerate(self.data.get("modules", {}))}

    def check_call_module(self, node: dict[str, Any], where: JsonPath) -> None:
        target = node["target"]
        if self.absent and self.not_declared_here(node, where):
            return
        if target in self.data.get("modules", {}):
            return
        path = self.owning_module(target) if self.doc.data["fxgen"] >= 2 else None
        if path is not None and path in self.refused:
            return  # an item of a declared module whose declaration is refused: reported there
        if path is not None and self.module_classes.get(path) in _CONTAINERS:
            found, item = _attribute(self.instances[path], target[len(path) + 1 :])
            if found and isinstance(item, torch.nn.Module):
                return  # an item of a declared container (`m.{i}` in a loop): torch.fx calls it by its path
            self.error((*where, "target"), f"call_module target {target!r}: {self.module_classes[path].__name__} "
                       f"{path!r} has no module {target[len(path) + 1 :]!r} (with "
                       f"{', '.join(f'{k}={v!r}' for k, v in (getattr(self, 'env', None) or {}).items()) or 'no arguments'})")
            return
        self.error((*where, "target"), f"call_module target {target!r} is not declared"
                   f"{did_you_mean(target, self.data.get('modules', {}))}; declare it under `modules`")  # fmt: skip

    def check_call_method(self, node: dict[str, Any], where: JsonPath) -> None:
        target: str = node["target"]
        if not IDENTIFIER.fullmatch(target):
            self.error((*where, "target"), f"method name {target!r} is not an identifier")
            return
        if _is_number_literal(node.get("args", [None])[0]):
            # torch.fx writes repr(obj).method(...): `2.view()` does not parse, `-2.5.abs()` means -(2.5.abs())
            self.error((*where, "args", 0), _node_prefix(node) + "a method cannot be called on the number literal "
                       "in args[0]; call it on a node (such as '%x')")  # fmt: skip
            return
        try:
            self.policy.check_method(target)
        except TargetError as exc:
            self.error((*where, "target"), _node_prefix(node) + str(exc))

    def check_call_function(self, node: dict[str, Any], where: JsonPath) -> None:
        target = node["target"]
        try:
            function = self.policy.resolve_function(target)
        except TargetError as exc:
            hint = did_you_mean(target, self.data.get("modules", {})) if "." not in target else ""
            why = f"{target!r} is no declared module{hint} and no builtin fxgen knows" if hint else str(exc)
            self.error((*where, "target"), _node_prefix(node) + why)
            return
        arity = self.arities.get(target, _UNSET)
        if arity is _UNSET:  # one lookup per distinct target, not per node
            arity = _fx_operator_arity().get(getattr(function, "__name__", "")) if _is_operator(function) else None
            self.arities[target] = arity
        if arity is not None and (len(node.get("args", [])) != arity or node.get("kwargs")):
            self.error((*where, "args"), _node_prefix(node) + f"{target} takes exactly {arity} positional "
                       f"argument{'s' * (arity != 1)} and no keywords (torch.fx writes it as an operator)")  # fmt: skip
            return
        if function is operator.getitem:
            self.check_constant_subscript(node, where)
            return
        if target in ("getattr", "hasattr"):
            args = node.get("args", [])
            attr = args[1] if len(args) > 1 else None
            if not isinstance(attr, str) or (attr.startswith("%") and not attr.startswith("%%")):
                self.error((*where, "args"), f"{target} needs a literal attribute name as its second argument")
                return
            if target == "getattr" and _is_number_literal(args[0]):
                # torch.fx writes repr(obj).attr: `0.shape` does not parse
                self.error((*where, "args", 0), _node_prefix(node) + "getattr cannot read an attribute of the "
                           "number literal in args[0]; read it from a node (such as '%x')")  # fmt: skip
                return
            try:
                self.policy.check_attribute(attr.removeprefix("%"))
            except TargetError as exc:
                self.error((*where, "args", 1), _node_prefix(node) + str(exc))

    def check_constant_subscript(self, node: dict[str, Any], where: JsonPath) -> None:
        """``operator.getitem`` of a constant by a constant, which torch.fx writes as ``value[index]``:
        if it fails, it fails on every run, and on some (``'abc'[None]``, ``5[0]``) Python's compiler
        prints a SyntaxWarning when the GraphModule or the generated file is compiled."""
        value, index = node["args"]
        if (isinstance(value, str) and parse_ref(value) is not None) or any(True for _ in iter_refs(index)):
            return  # depends on a node's value: known only when the graph runs
        try:
            value, index = decode(value, _any_ref), decode(index, _any_ref)
        except DECODE_ERRORS:
            return  # reported by check_values
        try:
            operator.getitem(value, index)  # plain decoded data: runs no code the spec names
        except Exception as exc:
            self.error((*where, "args"), _node_prefix(node) + f"indexing the constant in args[0] with args[1] "
                       f"always fails ({type(exc).__name__}: {exc}); index a node (such as '%x') or fix the "
                       "index")  # fmt: skip


_UNSET: Any = object()


def _runs(module: Any, known: dict[int, int]) -> int:
    """``NodeChecks.runs_of`` for a module: ``known`` holds each block instance's (by id)."""
    if module is None:
        return 0
    if id(module) in known:
        return known[id(module)]
    if isinstance(module, torch.nn.Sequential):  # its items, in turn (a repeated instance once per place)
        return sum(_runs(item, known) for item in module._modules.values())
    return 0


def _kinds(items: list[dict[str, Any]], where: JsonPath) -> set[str]:
    """The kinds of items (``if``, ``for``) that the item at ``where`` is inside."""
    out: set[str] = set()
    value: Any = items
    for key in where[1:]:
        value = value[key]
        if isinstance(value, dict) and "op" not in value:
            out.add("if" if "if" in value else "for")
    return out
_CONTAINERS = (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)  # whose items a node may call


def _prefixes(target: str) -> list[str]:
    """``"a.b.c"`` -> ``["a", "a.b"]``: the paths a declared module owning ``target`` could have."""
    parts = target.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _is_number_literal(value: Any) -> bool:
    """An int or float literal (not bool): torch.fx writes it bare before a dot, which cannot parse."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
        isinstance(value, dict) and "float" in value
    )


def _size_paths(value: Any, path: tuple[Any, ...] = (), *, kwargs: bool = False) -> Iterator[tuple[Any, ...]]:
    """Where ``value`` holds a ``{size: ...}`` tag; a node's kwargs mapping is not itself a value
    (``kwargs: {size: ...}`` passes ``size=``)."""
    if kwargs and isinstance(value, dict):
        for key, item in value.items():
            yield from _size_paths(item, (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _size_paths(item, (*path, i))
    elif isinstance(value, dict):
        if list(value) == ["size"]:
            yield path
        for key, item in value.items():
            yield from _size_paths(item, (*path, key))


def _node_prefix(node: dict[str, Any]) -> str:
    name = node.get("name")
    return f"node {name!r}: " if isinstance(name, str) else ""


def _any_ref(name: str) -> Any:
    return None  # node values are not known while validating


@functools.cache
def _fx_operator_arity() -> dict[str, int]:
    """operator functions torch.fx prints as Python operators (``"{} + {}".format(*args)``): with
    other arguments it crashes (too few) or silently drops them (too many, keywords)."""
    from torch.fx.graph import inplace_methods, magic_methods

    return {name: text.count("{}") for name, text in {**magic_methods, **inplace_methods}.items()}


def _is_operator(function: Any) -> bool:
    name = getattr(function, "__name__", None)
    return isinstance(name, str) and getattr(operator, name, None) is function


def _attribute(module: Any, attr: str) -> tuple[bool, Any]:
    """``module.<attr>`` (a dotted path): whether it exists, and its value."""
    obj = module
    try:
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception:
        return False, None
    return True, obj


def _attribute_names(module: Any) -> list[str]:
    """The state a module instance holds (``weight``, ``bias``, ``0.weight``), for messages."""
    if not isinstance(module, torch.nn.Module):
        return []
    names = [name for name, _ in module.named_parameters()] + [name for name, _ in module.named_buffers()]
    return names[:12]
