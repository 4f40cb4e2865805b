"""A format-2 spec's named functions (``functions:``): what makes each one a function the
generated module can define with ``def`` and every expression of the spec can call.

A function is data: arguments (as a class's: a type, or ``{type, default}``), named values
computed in order from them, and one returned expression of a declared type, all in
``fxgen.spec.expr``'s grammar and evaluated by it (never ``eval``). These checks look at the
document as data (schema-valid): names that the generated ``def`` can carry without hiding
anything the generated code uses, expressions that use only the function's own arguments and
values and call only the built-in functions and the spec's (with the right number of arguments),
no function calling itself (directly or through others), calls nested at most
``MAX_CALL_DEPTH`` deep, and every function used by some expression of the spec.
``fxgen.check.declarations`` runs them first; a call's values are checked where it is made.
"""

from __future__ import annotations

import builtins
import keyword
from collections.abc import Iterator, Mapping
from typing import Any

from fxgen._errors import closest_name
from fxgen.check.blocks import names_or_none, use_cycle
from fxgen.check.checker import IDENTIFIER, RESERVED_NAMES
from fxgen.read.yaml_events import JsonPath
from fxgen.spec.expr import (
    FUNCTIONS,
    MAX_CALL_DEPTH,
    ExprError,
    call_problems,
    names,
    parse,
    tested,
    user_calls,
)
from fxgen.spec.resolve import TRAINING, arg_expressions, node_expressions, walk_data

__all__ = ["TYPES", "arities", "function_problems", "spec_expressions"]

Problem = tuple[JsonPath, str]

TYPES = ("int", "float", "bool")  # what a function takes and returns: numbers and truth values


def arities(data: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Each function of the spec (as data) -> the fewest and most arguments a call gives."""
    out = {}
    for name, function in (data.get("functions") or {}).items():
        args = function.get("args", {})
        required = sum(not (isinstance(a, dict) and "default" in a) for a in args.values())
        out[name] = (required, len(args))
    return out


def function_problems(data: dict[str, Any], taken: frozenset[str]) -> list[Problem]:
    """What is wrong with the spec's ``functions:`` (``data`` the whole document, schema-valid;
    ``taken`` the names the generated module uses at its top: classes, packages)."""
    functions: dict[str, Any] = data.get("functions") or {}
    if not functions:
        return []
    if data.get("fxgen", 1) < 2:
        return [(("functions",), "`functions` needs `fxgen: 2`")]
    declared = arities(data)
    problems: list[Problem] = []
    locals_ = _local_names(data)
    for name, function in functions.items():
        where: JsonPath = ("functions", name)
        problem = _name_problem(name, "function name")
        if problem is None and (name in taken or name in RESERVED_NAMES):
            problem = f"function name {name!r} would shadow a name the generated code uses; choose another name"
        if problem is None and name.startswith("_"):
            problem = (f"function name {name!r} starts with _, as the generated module's own helpers and throwaway "
                       "names do; choose a name without it")  # fmt: skip
        if problem is None and name in locals_:
            problem = (f"function name {name!r} is also {locals_[name]}, which would hide the function where it is "
                       "called; give one of them another name")  # fmt: skip
        if problem is not None:
            problems.append((where, problem))
        problems += _body_problems(name, function, declared)
    problems += _call_graph_problems(functions)
    named = {where[1] for where, _ in problems if len(where) == 2}  # a bad name: not also "not called"
    problems += [(where, m) for where, m in _unused(data, functions) if where[1] not in named]
    return problems


def _name_problem(name: str, what: str) -> str | None:
    if not IDENTIFIER.fullmatch(name):
        return f"{what} {name!r} is not an identifier; use only letters, digits and _"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return f"{what} {name!r} is a Python keyword; choose another name"
    if hasattr(builtins, name) or name in FUNCTIONS or name.startswith("__"):
        return f"{what} {name!r} would shadow a built-in or an expression's function; choose another name"
    if name in RESERVED_NAMES:  # a function's own names too: its body reads math, the file imports the rest
        return f"{what} {name!r} would shadow a name the generated code uses; choose another name"
    return None


def _body_problems(name: str, function: dict[str, Any], declared: Mapping[str, tuple[int, int]]) -> list[Problem]:
    """A function's arguments, values and returned expression."""
    where: JsonPath = ("functions", name)
    problems: list[Problem] = []
    args: dict[str, Any] = function.get("args", {})
    defaulted = False
    for arg, decl in args.items():
        at: JsonPath = (*where, "args", arg)
        kind = decl if isinstance(decl, str) else decl.get("type")
        problem = _name_problem(arg, "argument name")
        if problem is None and arg in declared:
            problem = f"argument name {arg!r} is a function of the spec, which it would hide; choose another name"
        if problem is None and kind not in TYPES:
            problem = (f"argument {arg!r} of function {name!r} is {kind!r}; a function takes {', '.join(TYPES)} "
                       "(`{v: float, divisor: 8}`)")  # fmt: skip
        has_default = isinstance(decl, dict) and "default" in decl
        if problem is None and has_default:
            default = decl["default"]
            fits = isinstance(default, bool) if kind == "bool" else (
                not isinstance(default, bool) and isinstance(default, int if kind == "int" else int | float))
            if not fits:
                problem = f"argument {arg!r} of function {name!r}: the default {default!r} is not {kind}"
        if problem is None and defaulted and not has_default:
            problem = (f"argument {arg!r} of function {name!r} has no default but comes after one that has: "
                       "arguments with defaults come last")  # fmt: skip
        defaulted = defaulted or has_default
        if problem is not None:
            problems.append((at, problem))
    values: dict[str, str] = function.get("values", {})
    known: list[str] = list(args)
    used: set[str] = set()
    parsed = all(_parses(text) for text in [*values.values(), function["return"]])
    for value, text in values.items():
        at = (*where, "values", value)
        problem = _name_problem(value, "value name")
        if problem is None and value in args:
            problem = f"value {value!r} of function {name!r} shadows its argument {value!r}; give it a name of its own"
        if problem is None and value in declared:
            problem = f"value name {value!r} is a function of the spec, which it would hide; choose another name"
        if problem is not None:
            problems.append((at, problem))
        problems += [(at, f"value {value!r} ({text}): {m}") for m in _expression_problems(text, name, known, declared)]
        used.update(names_or_none(text))
        known.append(value)
    returned = function["return"]
    problems += [((*where, "return"), f"return ({returned}): {m}")
                 for m in _expression_problems(returned, name, known, declared)]  # fmt: skip
    used.update(names_or_none(returned))
    for value in values if parsed else ():  # (a text that does not parse uses what it uses)
        if value not in used:
            problems.append(((*where, "values", value), f"value {value!r} of function {name!r} is not used; use it "
                                                        "in a later value or the return, or remove it"))  # fmt: skip
    return problems


def _expression_problems(text: str, function: str, known: list[str], declared: Mapping[str, tuple[int, int]]) -> list[str]:
    """Why ``text`` is no expression of ``function``: it parses, uses only its arguments and
    the values before it, and calls functions that exist with as many arguments as they take."""
    try:
        tree = parse(text)
    except ExprError as exc:
        return [str(exc)]
    if tested(tree):
        return ["`NAME is None` asks whether an input of forward was given; a function knows only its arguments"]
    out = []
    for used in names(tree):
        if used in known:
            continue
        if used == TRAINING:
            out.append("'training' is the module's mode; a function knows only its arguments: pass it as one")
            continue
        close = closest_name(used, known)
        hint = f"; did you mean {close!r}?" if close else (
            f" (it knows {', '.join(known)})" if known else " (it takes no arguments)")  # fmt: skip
        out.append(f"{used!r} is no argument or earlier value of function {function!r}{hint}; a function uses only "
                   "its own arguments and values: pass what it needs as an argument")  # fmt: skip
    return out + call_problems(tree, declared)


def _parses(text: str) -> bool:
    try:
        parse(text)
    except ExprError:
        return False
    return True


def _calls(text: str) -> list[str]:
    try:
        return user_calls(parse(text))
    except ExprError:
        return []


def _texts(function: dict[str, Any]) -> list[str]:
    return [*function.get("values", {}).values(), function["return"]]


def _call_graph_problems(functions: dict[str, Any]) -> list[Problem]:
    """No function calls itself, directly or through others; calls nest at most MAX_CALL_DEPTH deep."""
    calls = {name: [c for text in _texts(f) for c in _calls(text) if c in functions] for name, f in functions.items()}
    problems: list[Problem] = []
    depth: dict[str, int] = {}
    for name in functions:
        cycle = use_cycle(calls, name)
        if cycle is not None:
            problems.append((("functions", name), f"function {name!r} calls itself ({' -> '.join(cycle)}); a function "
                                                  "is computed from its arguments, without recursion"))  # fmt: skip
    if problems:
        return problems
    for name in functions:
        if _depth(calls, name, depth) > MAX_CALL_DEPTH:
            problems.append((("functions", name), f"function {name!r} calls functions nested more than "
                                                  f"{MAX_CALL_DEPTH} deep; call fewer in a chain"))  # fmt: skip
    return problems


def _depth(calls: dict[str, list[str]], name: str, memo: dict[str, int]) -> int:
    """How deep calls nest from ``name`` (1: it calls none); the graph has no cycle."""
    if name not in memo:
        memo[name] = 1 + max((_depth(calls, c, memo) for c in calls.get(name, [])), default=0)
    return memo[name]


def spec_expressions(data: dict[str, Any]) -> Iterator[str]:
    """Every expression text of the spec's classes (top and blocks): values, declarations'
    ``{arg: ...}``, repeat counts and conditions, and the node lists' conditions, counts and values."""
    bodies = [data, *(data.get("classes") or {}).values()]
    for body in bodies:
        if not isinstance(body, dict):
            continue
        yield from (text for text in (body.get("values") or {}).values() if isinstance(text, str))
        for entry in (body.get("modules") or {}).values():
            if isinstance(entry, dict):
                if isinstance(entry.get("if"), str):
                    yield entry["if"]
                yield from (text for _, text in arg_expressions([entry.get("args"), entry.get("kwargs")]))
        for table in ("parameters", "buffers"):
            for entry in (body.get(table) or {}).values():
                yield from (text for _, text in arg_expressions(entry))
        yield from node_expressions(body.get("nodes") or [])


def _unused(data: dict[str, Any], functions: dict[str, Any]) -> list[Problem]:
    """Every function is called by an expression of the spec, or by a function that is."""
    texts = list(spec_expressions(data))
    if not all(_parses(text) for text in texts):
        return []  # a text that does not parse is reported; what it calls is not known
    reached: set[str] = set()
    todo = [c for text in texts for c in _calls(text) if c in functions]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(c for text in _texts(functions[name]) for c in _calls(text) if c in functions)
    return [(("functions", name), f"function {name!r} is not called; call it in an expression (`{name}(...)`) or "
                                  "remove it") for name in functions if name not in reached]  # fmt: skip


def _local_names(data: dict[str, Any]) -> dict[str, str]:
    """Names the generated ``__init__`` and ``forward`` methods assign (arguments, values, node
    names, loop variables), which would hide a module-level function of the same name: name -> what it is."""
    out: dict[str, str] = {}
    bodies = [("the top class", data), *((f"block {n!r}", b) for n, b in (data.get("classes") or {}).items())]
    for label, body in bodies:
        if not isinstance(body, dict):
            continue
        for name in body.get("args") or {}:
            out.setdefault(name, f"an argument of {label}")
        for name in body.get("values") or {}:
            out.setdefault(name, f"a value of {label}")
        for _, node in walk_data(body.get("nodes") or []):
            if isinstance(node.get("name"), str):
                out.setdefault(node["name"], f"a node of {label}")
        for item in _loops(body.get("nodes") or []):
            out.setdefault(item["for"], f"a loop variable of {label}")
    return out


def _loops(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for item in items:
        if "for" in item:
            yield item
            yield from _loops(item.get("nodes", []))
        elif "if" in item:
            yield from _loops(item.get("then", []))
            yield from _loops(item.get("else", []))
