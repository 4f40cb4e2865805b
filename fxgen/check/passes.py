"""The passes a spec (or ``fxgen transform --pass``) names, and their arguments, checked.

A pass is written as its name (``eliminate_dead_code``) or as a one-entry mapping of its name to
its arguments (``{replace: {target: operator.add, by: operator.mul}}``). This module knows the
built-in passes and what arguments each takes; it checks targets under the target policy and
the small specs a ``rewrite`` or ``decompose`` carries (through ``check_body``, validation's own
check of a graph), and runs nothing. Passes written in Python (``fxgen.register_pass``) are not
known here: only trusted configuration enables them, and ``allowed`` names them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from fxgen._errors import Suggestions
from fxgen.policy.policy import Policy, TargetError
from fxgen.read.yaml_events import JsonPath

__all__ = ["BUILTIN_PASSES", "DECOMPOSITIONS", "check_passes", "pass_entry"]

# name -> (allowed argument names, required ones)
BUILTIN_PASSES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "replace": (frozenset({"target", "by"}), frozenset({"target", "by"})),
    "rewrite": (frozenset({"pattern", "replacement"}), frozenset({"pattern", "replacement"})),
    "decompose": (frozenset({"rules"}), frozenset({"rules"})),
    "fuse_conv_bn": (frozenset(), frozenset()),
    "eliminate_dead_code": (frozenset(), frozenset()),
    "fold_constants": (frozenset(), frozenset()),
}


def _fn(name: str, body: list[dict[str, Any]], *targets: str) -> tuple[str, dict[str, Any]]:
    return name, {"targets": list(targets), "nodes": body}


def _x(*more: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"op": "placeholder", "name": "x"}, *more, {"op": "output", "args": ["%out"]}]


# The library of ``decompose`` rules: each a small graph traced in place of a node calling one of
# its targets (positional arguments first, then keywords, bound to the graph's placeholders).
DECOMPOSITIONS: dict[str, dict[str, Any]] = dict([
    _fn("relu", _x(  # relu(x) -> (x > 0) * x, the torch.fx documentation's example
        {"op": "call_function", "name": "positive", "target": "operator.gt", "args": ["%x", 0]},
        {"op": "call_function", "name": "out", "target": "operator.mul", "args": ["%positive", "%x"]},
    ), "torch.relu", "torch.nn.functional.relu"),
    _fn("relu6", _x(  # relu6(x) -> clamp(x, 0, 6)
        {"op": "call_function", "name": "out", "target": "torch.clamp", "args": ["%x", 0.0, 6.0]},
    ), "torch.nn.functional.relu6"),
    _fn("silu", _x(  # silu(x) -> x * sigmoid(x)
        {"op": "call_function", "name": "gate", "target": "torch.sigmoid", "args": ["%x"]},
        {"op": "call_function", "name": "out", "target": "operator.mul", "args": ["%x", "%gate"]},
    ), "torch.nn.functional.silu"),
    _fn("hardsigmoid", _x(  # hardsigmoid(x) -> clamp(x + 3, 0, 6) / 6
        {"op": "call_function", "name": "shifted", "target": "operator.add", "args": ["%x", 3.0]},
        {"op": "call_function", "name": "clamped", "target": "torch.clamp", "args": ["%shifted", 0.0, 6.0]},
        {"op": "call_function", "name": "out", "target": "operator.truediv", "args": ["%clamped", 6.0]},
    ), "torch.nn.functional.hardsigmoid"),
    _fn("hardswish", _x(  # hardswish(x) -> x * clamp(x + 3, 0, 6) / 6
        {"op": "call_function", "name": "shifted", "target": "operator.add", "args": ["%x", 3.0]},
        {"op": "call_function", "name": "clamped", "target": "torch.clamp", "args": ["%shifted", 0.0, 6.0]},
        {"op": "call_function", "name": "scaled", "target": "operator.mul", "args": ["%x", "%clamped"]},
        {"op": "call_function", "name": "out", "target": "operator.truediv", "args": ["%scaled", 6.0]},
    ), "torch.nn.functional.hardswish"),
    _fn("mish", _x(  # mish(x) -> x * tanh(softplus(x))
        {"op": "call_function", "name": "soft", "target": "torch.nn.functional.softplus", "args": ["%x"]},
        {"op": "call_function", "name": "squashed", "target": "torch.tanh", "args": ["%soft"]},
        {"op": "call_function", "name": "out", "target": "operator.mul", "args": ["%x", "%squashed"]},
    ), "torch.nn.functional.mish"),
])  # fmt: skip


def pass_entry(entry: Any) -> tuple[str, dict[str, Any]]:
    """A (schema-valid) pass entry as its name and arguments."""
    if isinstance(entry, str):
        return entry, {}
    ((name, args),) = entry.items()
    return name, args


CheckBody = Callable[[JsonPath, Any], None]  # checks a small spec's `{nodes: [...]}` at a path


def check_passes(
    checker: Any,
    passes: list[Any],
    *,
    where: JsonPath = ("passes",),
    allowed: Iterable[str] = (),
    check_body: CheckBody | None = None,
) -> None:
    """Report every problem with ``passes`` (at ``where``) through ``checker.error``.
    ``allowed`` names the passes trusted configuration registered (their arguments are theirs
    to check); ``check_body`` validates the small specs of ``rewrite`` and ``decompose``."""
    registered = frozenset(allowed)
    known = Suggestions([*BUILTIN_PASSES, *registered])
    body = check_body or getattr(checker, "check_body", None)
    for i, entry in enumerate(passes):
        name, args = pass_entry(entry)
        at: JsonPath = (*where, i) if isinstance(entry, str) else (*where, i, name)
        if name in registered and name not in BUILTIN_PASSES:
            continue
        if name not in BUILTIN_PASSES:
            near = known.closest(name)
            hint = f"did you mean {near!r}? " if near else ""
            extra = " (passes written in Python are enabled by [tool.fxgen] passes, not by a spec)"
            checker.error(at, f"unknown pass {name!r}; {hint}the built-in passes are "
                          f"{', '.join(sorted(BUILTIN_PASSES))}{extra if not registered else ''}",
                          key=not isinstance(entry, str))  # fmt: skip
            continue
        names, required = BUILTIN_PASSES[name]
        for key in args:
            if key not in names:
                takes = f"takes {', '.join(sorted(names))}" if names else "takes no arguments"
                checker.error((*at, key), f"pass {name!r} has no argument {key!r}; it {takes}", key=True)
        for key in sorted(required - set(args)):
            checker.error(at, f"pass {name!r} needs the argument {key!r}", key=not isinstance(entry, str))
        if name == "replace":
            for key in ("target", "by"):
                if key in args:
                    _check_function(checker, (*at, key), args[key], name)
        elif name == "rewrite":
            for key in ("pattern", "replacement"):
                if key in args and _is_body(checker, (*at, key), args[key]) and body is not None:
                    body((*at, key), args[key])
        elif name == "decompose" and "rules" in args:
            _check_rules(checker, (*at, "rules"), args["rules"], body)


def _check_function(checker: Any, at: JsonPath, value: Any, pass_name: str) -> bool:
    policy: Policy = checker.policy
    if not isinstance(value, str):
        checker.error(at, f"pass {pass_name!r}: a target is a function's qualified name (`torch.add`)")
        return False
    try:
        policy.resolve_function(value)
    except TargetError as exc:
        checker.error(at, f"pass {pass_name!r}: {exc}")
        return False
    return True


def _is_body(checker: Any, at: JsonPath, value: Any) -> bool:
    if isinstance(value, dict) and set(value) == {"nodes"} and isinstance(value["nodes"], list):
        return True
    checker.error(at, "a pattern, replacement or rule body is a small spec: a mapping with only `nodes` "
                  "(`{nodes: [{op: placeholder, name: x}, ..., {op: output, args: [...]}]}`)")  # fmt: skip
    return False


def _check_rules(checker: Any, at: JsonPath, rules: Any, body: CheckBody | None) -> None:
    if not isinstance(rules, list) or not rules:
        checker.error(at, "decompose: `rules` is a non-empty list of library rule names "
                      f"({', '.join(DECOMPOSITIONS)}) or `{{targets: [...], nodes: [...]}}` rules")  # fmt: skip
        return
    library = Suggestions(DECOMPOSITIONS)
    for j, rule in enumerate(rules):
        here: JsonPath = (*at, j)
        if isinstance(rule, str):
            if rule not in DECOMPOSITIONS:
                near = library.closest(rule)
                hint = f"did you mean {near!r}? " if near else ""
                checker.error(here, f"decompose: no library rule {rule!r}; {hint}the library has "
                              f"{', '.join(DECOMPOSITIONS)}")  # fmt: skip
            continue
        if not (isinstance(rule, dict) and set(rule) == {"targets", "nodes"}):
            checker.error(here, "decompose: a rule is a library rule's name or `{targets: [FUNCTION, ...], "
                          "nodes: [...]}`")  # fmt: skip
            continue
        targets = rule["targets"]
        if not isinstance(targets, list) or not targets:
            checker.error((*here, "targets"), "decompose: `targets` is a non-empty list of function names")
        else:
            for k, target in enumerate(targets):
                _check_function(checker, (*here, "targets", k), target, "decompose")
        if _is_body(checker, here, {"nodes": rule["nodes"]}) and body is not None:
            body(here, {"nodes": rule["nodes"]})
