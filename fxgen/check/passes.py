"""The passes a spec (or ``fxgen transform --pass``) names, and their arguments, checked.

A pass is written as its name (``eliminate_dead_code``) or as a one-entry mapping of its name to
its arguments (``{replace: {target: operator.add, by: operator.mul}}``). What each built-in pass
takes is not known here: each pass's own module in ``fxgen.passes`` says it (its
``PassArguments``), and the catalogue of them reaches this stage as a value (``Catalogue``,
from ``fxgen._api``), asked for only when a spec names a pass: a pass is one module, and imports
still flow down. The checks a pass's arguments need (targets under the target policy, the small
specs a ``rewrite`` or ``decompose`` carries, through ``check_body``, validation's own check of a
graph) are written with what this module offers; nothing runs. Passes written in Python
(``fxgen.register_pass``) are not in the catalogue: only trusted configuration enables them, and
``allowed`` names them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fxgen._errors import Suggestions
from fxgen.policy.policy import Policy, TargetError
from fxgen.read.yaml_events import JsonPath

__all__ = ["Catalogue", "CheckBody", "PassArguments", "check_function", "check_passes", "is_body", "pass_entry"]


CheckBody = Callable[[JsonPath, Any], None]  # checks a small spec's `{nodes: [...]}` at a path


@dataclass(frozen=True)
class PassArguments:
    """What a built-in pass takes: the argument names it knows, those it needs, and a check of
    their values, ``check(checker, at, args, check_body)`` reporting through ``checker.error``."""

    names: frozenset[str] = frozenset()
    required: frozenset[str] = frozenset()
    check: Callable[[Any, JsonPath, Mapping[str, Any], CheckBody | None], None] | None = None


# The built-in passes by name, asked for when a spec names one (None: not checked here).
Catalogue = Callable[[], Mapping[str, PassArguments]]


def pass_entry(entry: Any) -> tuple[str, dict[str, Any]]:
    """A (schema-valid) pass entry as its name and arguments."""
    if isinstance(entry, str):
        return entry, {}
    ((name, args),) = entry.items()
    return name, args


def check_passes(
    checker: Any,
    passes: list[Any],
    catalogue: Catalogue | None,
    *,
    where: JsonPath = ("passes",),
    allowed: Iterable[str] = (),
    check_body: CheckBody | None = None,
) -> None:
    """Report every problem with ``passes`` (at ``where``) through ``checker.error``, against
    the built-in passes of ``catalogue`` (None: they are checked where they run, by the passes
    stage). ``allowed`` names the passes trusted configuration registered (their arguments are
    theirs to check); ``check_body`` validates the small specs of ``rewrite`` and ``decompose``."""
    if not passes or catalogue is None:
        return
    builtin = catalogue()
    registered = frozenset(allowed)
    known = Suggestions([*builtin, *registered])
    body = check_body or getattr(checker, "check_body", None)
    for i, entry in enumerate(passes):
        name, args = pass_entry(entry)
        at: JsonPath = (*where, i) if isinstance(entry, str) else (*where, i, name)
        if name in registered and name not in builtin:
            continue
        if name not in builtin:
            near = known.closest(name)
            hint = f"did you mean {near!r}? " if near else ""
            extra = " (passes written in Python are enabled by [tool.fxgen] passes, not by a spec)"
            checker.error(at, f"unknown pass {name!r}; {hint}the built-in passes are "
                          f"{', '.join(sorted(builtin))}{extra if not registered else ''}",
                          key=not isinstance(entry, str))  # fmt: skip
            continue
        takes = builtin[name]
        for key in args:
            if key not in takes.names:
                them = f"takes {', '.join(sorted(takes.names))}" if takes.names else "takes no arguments"
                checker.error((*at, key), f"pass {name!r} has no argument {key!r}; it {them}", key=True)
        for key in sorted(takes.required - set(args)):
            checker.error(at, f"pass {name!r} needs the argument {key!r}", key=not isinstance(entry, str))
        if takes.check is not None:
            takes.check(checker, at, args, body)


def check_function(checker: Any, at: JsonPath, value: Any, pass_name: str) -> bool:
    """Whether ``value`` names a function the target policy allows; else reported at ``at``."""
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


def is_body(checker: Any, at: JsonPath, value: Any) -> bool:
    """Whether ``value`` is a small spec (``{nodes: [...]}``); else reported at ``at``."""
    if isinstance(value, dict) and set(value) == {"nodes"} and isinstance(value["nodes"], list):
        return True
    checker.error(at, "a pattern, replacement or rule body is a small spec: a mapping with only `nodes` "
                  "(`{nodes: [{op: placeholder, name: x}, ..., {op: output, args: [...]}]}`)")  # fmt: skip
    return False
