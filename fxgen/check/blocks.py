"""Format 2's own rules: what only a format-2 spec may use, blocks and their arguments.

These checks look at the document as data (schema-valid): a format-1 spec that uses a
format-2 feature (``args``, ``values``, ``classes``, ``{arg: ...}``, module values, repeats);
block names; blocks that use each other in a cycle; the arguments of a class (their types,
defaults, and the expressions that refer to them); its named values (``values:``, each from the
arguments and the values written before it, each used by a declaration or a node; ``training``
is refused where a value is needed at construction). ``fxgen.check.validate`` runs them, and
constructs the blocks with concrete argument values to check what needs construction.
"""

from __future__ import annotations

import builtins
import inspect
import keyword
import typing
from collections.abc import Collection, Iterator, Mapping, Sequence
from types import UnionType
from typing import Any

from fxgen._errors import closest_name
from fxgen.check.checker import IDENTIFIER, RESERVED_NAMES
from fxgen.read.yaml_events import JsonPath
from fxgen.spec.expr import ExprError, call_problems, names, parse, tested
from fxgen.spec.resolve import (
    TRAINING,
    arg_expressions,
    is_construct,
    is_module_loop,
    loop_names,
    node_expressions,
)
from fxgen.spec.values import DECLARATION_TAGS

__all__ = [
    "MAX_BLOCK_DEPTH",
    "bare_name_problems",
    "bind_written",
    "block_names",
    "class_cycles",
    "class_depth",
    "declaration_problems",
    "float_for_int",
    "format_problems",
    "is_arg",
    "module_values",
    "names_or_none",
    "unknown_names",
    "use_cycle",
    "uses",
    "value_name_problems",
    "value_problems",
    "wants_int",
]

Problem = tuple[JsonPath, str]


def block_names(data: dict[str, Any]) -> set[str]:
    """The names of the spec's blocks (format 2's ``classes``)."""
    classes = data.get("classes", {})
    return set(classes) if isinstance(classes, dict) else set()


def format_problems(data: dict[str, Any]) -> list[Problem]:
    """Format-2 features in a spec that says ``fxgen: 1``, and bad block names in one that says 2."""
    if data.get("fxgen") == 1:
        found: list[Problem] = [((key,), f"`{key}` needs `fxgen: 2`") for key in ("args", "values", "functions", "variants", "classes", "imports") if key in data]
        for k, item in enumerate(data.get("nodes", [])):
            if isinstance(item, dict) and (is_construct(item) or item.get("op") == "alias"):
                what = "`alias`" if item.get("op") == "alias" else f"`{'if' if 'if' in item else 'for'}`"
                found.append((("nodes", k), f"{what} needs `fxgen: 2` (format 2 adds conditionals, repeats "
                                                 "and aliases of nodes)"))  # fmt: skip
                break
        for path, tag in _declaration_tags(data):
            found.append((path, f"{{{tag}: ...}} needs `fxgen: 2` (format 2 adds constructor arguments, module "
                                "values and repeats)"))  # fmt: skip
            break  # one is enough to say what to change
        return found
    problems: list[Problem] = []
    top = data.get("name")
    for name in block_names(data):
        where: JsonPath = ("classes", name)
        if not IDENTIFIER.fullmatch(name):
            problems.append((where, f"block name {name!r} is not an identifier; use only letters, digits and _"))
        elif keyword.iskeyword(name) or keyword.issoftkeyword(name):
            problems.append((where, f"block name {name!r} is a Python keyword; choose another name"))
        elif hasattr(builtins, name) or name in RESERVED_NAMES or name.startswith("_"):
            problems.append((where, f"block name {name!r} would shadow a name the generated code uses; choose "
                                    "another name"))  # fmt: skip
        elif name == top:
            problems.append((where, f"block name {name!r} is the spec's own class name; choose another name"))
    return problems


def _declaration_tags(data: dict[str, Any]) -> Iterator[tuple[JsonPath, str]]:
    """Where format 2's tags appear in a body's declarations (module arguments, tensors)."""
    for path, entry in data.get("modules", {}).items():
        for field in ("args", "kwargs"):
            for rel, tag in _tags(entry.get(field, [] if field == "args" else {})):
                yield ("modules", path, field, *rel), tag
    for table in ("parameters", "buffers"):
        for path, entry in data.get(table, {}).items():
            for field in ("shape", "init"):
                for rel, tag in _tags(entry.get(field)):
                    yield (table, path, field, *rel), tag


def _tags(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _tags(item, (*path, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in DECLARATION_TAGS:
                yield (*path, key), key
                return
            yield from _tags(item, (*path, key))


def uses(entry: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Every class a module declaration names, itself and in its module values: (path, name)."""
    yield ("class",), entry.get("class", "")
    for field in ("args", "kwargs"):
        yield from module_values(entry.get(field), (field,))


def module_values(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """The classes of the module values inside a declaration value, each with its path."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from module_values(item, (*path, i))
    elif isinstance(value, dict):
        if is_module_loop(value) and isinstance(value["module"], dict) and is_module_loop(value["module"]):
            yield from module_values(value["module"], (*path, "module"))
            return
        if isinstance(value.get("module"), dict):
            inner = value["module"]
            for rel, name in uses(inner):
                yield (*path, "module", *rel), name
            return
        for key, item in value.items():
            yield from module_values(item, (*path, key))


MAX_BLOCK_DEPTH = 32
"""Blocks nest at most this deep (a block in a block ... in the model's class): exported models
nest a few levels, and checking, building and running a block each take Python stack frames."""


def _block_graph(data: dict[str, Any]) -> dict[str, list[tuple[JsonPath, str]]]:
    """Each block -> the blocks its declarations use, with where (``""``: the model's class)."""
    blocks = block_names(data)
    bodies: dict[str, tuple[JsonPath, dict[str, Any]]] = {"": ((), data)}
    bodies.update({name: (("classes", name), data["classes"][name]) for name in blocks})
    return {name: [((*prefix, "modules", path, *rel), used)
                   for path, entry in body.get("modules", {}).items()
                   for rel, used in uses(entry) if used in blocks]
            for name, (prefix, body) in bodies.items()}  # fmt: skip


def class_cycles(data: dict[str, Any]) -> list[Problem]:
    """Blocks that contain themselves, through their own modules or others' (located at the
    declaration that closes the cycle). A walk with its own stack: a chain of blocks may be
    longer than Python's recursion limit."""
    graph = _block_graph(data)
    problems: list[Problem] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(block_names(data)):
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(graph[root]))]
        while stack:
            name, todo = stack[-1]
            for where, used in todo:
                if state.get(used) == 1:
                    trail = [n for n, _ in stack[:-1]]
                    cycle = " -> ".join([*trail[trail.index(used):], name, used]) if used in trail else f"{name} -> {used}"
                    problems.append((where, f"block {used!r} contains itself ({cycle}); a block cannot be built "
                                            "from itself"))  # fmt: skip
                elif used not in state:
                    state[used] = 1
                    stack.append((used, iter(graph[used])))
                    break
            else:
                state[name] = 2
                stack.pop()
    return problems


def class_depth(data: dict[str, Any]) -> list[Problem]:
    """Blocks nested deeper than ``MAX_BLOCK_DEPTH``, reported once, at the declaration that
    goes one level too deep on the deepest chain (from the model's class, or else from a block
    nothing uses). Nothing for blocks in a cycle (``class_cycles`` reports those)."""
    graph = _block_graph(data)
    heights: dict[str, int] = {}  # block -> the blocks on its longest chain, itself included
    for root in sorted(graph):
        stack, on_path = [(root, iter(graph[root]))], {root}
        while stack:
            name, todo = stack[-1]
            for _, used in todo:
                if used in on_path:
                    return []
                if used not in heights:
                    stack.append((used, iter(graph[used])))
                    on_path.add(used)
                    break
            else:
                stack.pop()
                on_path.discard(name)
                heights[name] = (name != "") + max((heights[u] for _, u in graph[name]), default=0)
    start = max(sorted(graph), key=lambda name: (heights[name], name == ""))
    if heights[start] <= MAX_BLOCK_DEPTH:
        return []
    chain, level, name = [start or data.get("name", "")], int(start != ""), start
    while True:
        where, name = max(graph[name], key=lambda use: heights[use[1]])  # the first of the deepest
        chain.append(name)
        level += 1
        if level > MAX_BLOCK_DEPTH:
            shown = " -> ".join(chain if len(chain) <= 6 else [*chain[:3], "...", *chain[-2:]])
            return [(where, f"block {name!r} nests blocks {level} deep here ({shown}); blocks nest at most "
                            f"{MAX_BLOCK_DEPTH} deep: declare some of them in the blocks that use them instead")]  # fmt: skip


def declaration_problems(
    value: Any, where: JsonPath, arguments: list[str], scope: str, values: list[str] | None = None,
    taken: Collection[str] = RESERVED_NAMES,
    functions: Mapping[str, tuple[int, int]] | None = None,
) -> list[Problem]:
    """What is wrong with the ``{arg: ...}`` expressions and repeats in a declaration value:
    each must parse and name only arguments and named ``values`` of its class (``scope`` names
    it for messages) or the names of the ``for`` items around it, which shadow none of those,
    nor a name the generated ``__init__`` uses (``taken``: the classes it calls too)."""
    problems: list[Problem] = []
    for path, text, bound in _scoped_expressions(value, where, ()):
        known = [*(values or []), *bound]
        problems += [(path, f"{{arg: {text}}}: {message}") for message in _unknown(text, arguments, known, scope, functions or {})]
    for path, item, bound in _module_loops(value, where, ()):
        problems += _loop_problems(item, path, [*arguments, *(values or [])], bound, scope, taken)
    return problems


_NOT_VALUES = frozenset({"class", "repeat", "for", "in", "if", "dtype", "device", "memory_format", "layout", "float",
                         "complex", "ellipsis"})  # keys whose strings are names or texts, not argument values


def bare_name_problems(value: Any, where: JsonPath, names_: Collection[str], scope: str) -> list[Problem]:
    """A plain string in a module's arguments that is the name of an argument or value of its
    class, or of a ``for`` item around it (``args: [32, num_classes]``): a string there is a
    literal, so the constructor would get the text; an expression is written ``{arg: num_classes}``."""
    return [(path, f"{text!r} is a string here, the name of an argument or value of {scope}, not its value: "
                   f"write {{arg: {text}}} for the value (a plain string is passed as written)")
            for path, text, bound in _bare_strings(value, where, ()) if text in names_ or text in bound]  # fmt: skip


def _bare_strings(value: Any, path: JsonPath, bound: tuple[str, ...]) -> Iterator[tuple[JsonPath, str, tuple[str, ...]]]:
    """Every plain string among a declaration value's arguments, with the names the ``for`` items
    over module declarations around it bind."""
    if isinstance(value, str):
        yield path, value, bound
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _bare_strings(item, (*path, i), bound)
    elif isinstance(value, dict) and set(value) != {"arg"}:
        inner = (*bound, *loop_names(value)) if is_module_loop(value) else bound
        for key, item in value.items():
            if key not in _NOT_VALUES:
                yield from _bare_strings(item, (*path, key), inner)


def _scoped_expressions(value: Any, path: JsonPath, bound: tuple[str, ...]) -> Iterator[tuple[JsonPath, str, tuple[str, ...]]]:
    """Every ``{arg: ...}`` of a declaration value, with the names the ``for`` items over module
    declarations around it bind (a ``for``'s ``in:`` sees only the enclosing ones)."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _scoped_expressions(item, (*path, i), bound)
    elif isinstance(value, dict):
        if is_module_loop(value):
            yield from _scoped_expressions(value.get("in"), (*path, "in"), bound)
            yield from _scoped_expressions(value["module"], (*path, "module"), (*bound, *loop_names(value)))
        elif set(value) == {"arg"} and isinstance(value["arg"], str):
            yield (*path, "arg"), value["arg"], bound
        else:
            for key, item in value.items():
                yield from _scoped_expressions(item, (*path, key), bound)


def _module_loops(value: Any, path: JsonPath, bound: tuple[str, ...]) -> Iterator[tuple[JsonPath, dict[str, Any], tuple[str, ...]]]:
    """Every ``for`` over module declarations in a declaration value, with the names the
    ``for`` items around it bind."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _module_loops(item, (*path, i), bound)
    elif isinstance(value, dict):
        if is_module_loop(value):
            yield path, value, bound
            yield from _module_loops(value["module"], (*path, "module"), (*bound, *loop_names(value)))
        else:
            for key, item in value.items():
                yield from _module_loops(item, (*path, key), bound)


def _loop_problems(
    item: dict[str, Any], path: JsonPath, known: list[str], bound: tuple[str, ...], scope: str, taken: Collection[str]
) -> list[Problem]:
    """A ``for`` over module declarations whose names the generated comprehension cannot bind
    (a keyword, a name the generated code uses, an argument's, a value's or an enclosing
    ``for``'s), or whose rows do not have one value per name."""
    problems: list[Problem] = []
    written = item["for"]
    for k, name in enumerate(loop_names(item)):
        where: JsonPath = (*path, "for") if isinstance(written, str) else (*path, "for", k)
        shadows = [(known, f"`for` name {name!r} would shadow the argument or value {name!r} of {scope}; choose "
                           "another name"),
                   (bound, f"`for` name {name!r} would shadow the name {name!r} of an enclosing `for`; choose "
                           "another name")]  # fmt: skip
        problem = _name_problem(name, "`for` name", taken, shadows)
        if problem is not None:
            problems.append((where, problem))
    rows = item.get("in")
    if isinstance(written, list) and isinstance(rows, list):
        for k, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != len(written):
                got = f"{len(row)} values" if isinstance(row, list) else "not a list"
                problems.append(((*path, "in", k), f"row {k} of a `for` over [{', '.join(written)}] has {got}: each "
                                                   f"row is a list of {len(written)} values, one per name"))  # fmt: skip
    return problems


def _unknown(
    text: str, arguments: list[str], values: list[str], scope: str, functions: Mapping[str, tuple[int, int]]
) -> list[str]:
    """Why ``text`` does not parse, the names it uses that are neither an argument nor a value,
    and its calls of functions the spec does not declare (``functions``: name -> arity)."""
    try:
        tree = parse(text)
    except ExprError as exc:
        return [str(exc)]
    if tested(tree):
        return [PRESENCE_ONLY_IN_CONDITIONS]
    return unknown_names(names(tree), arguments, values, scope) + call_problems(tree, functions)


PRESENCE_ONLY_IN_CONDITIONS = ("`NAME is None` asks whether an optional input of forward was given, which is known "
                               "only when forward is called: write it only as the `if:` of a node-list conditional")


def unknown_names(used: list[str], arguments: list[str], values: list[str], scope: str) -> list[str]:
    """Why each of the names an expression ``used`` is neither an argument nor a value."""
    out = []
    known = [*arguments, *values]
    for name in used:
        if name in known:
            continue
        if name == TRAINING:
            out.append("'training' is the module's mode, which train() and eval() change after it is built; "
                       "a declaration is built once: use it in the nodes (`if: training`, `{arg: training}`)")
            continue
        close = closest_name(name, known)
        has = f" (its arguments: {', '.join(arguments)})" if arguments else " (it takes no arguments)"
        hint = f"; did you mean {close!r}?" if close else f"; declare it under `args` or `values`{has}"
        kinds = "an argument or value" if values else "an argument"
        out.append(f"{name!r} is not {kinds} of {scope}{hint}")
    return out


def value_name_problems(body: dict[str, Any], taken: frozenset[str], scope: str) -> list[Problem]:
    """Names of a class's named values (``values:``) the generated ``__init__`` cannot assign:
    not identifiers, keywords, builtins, names it uses (``taken``), or an argument's."""
    arguments = body.get("args", {})
    problems: list[Problem] = []
    for name in body.get("values", {}):
        shadows = [(arguments, f"value {name!r} shadows the argument {name!r} of {scope}; give the value a name of "
                               "its own")]  # fmt: skip
        problem = _name_problem(name, "value name", taken, shadows)
        if problem is not None:
            problems.append((("values", name), problem))
    return problems


def _name_problem(name: str, what: str, taken: Collection[str], shadows: Sequence[tuple[Collection[str], str]]) -> str | None:
    """Why the generated ``__init__`` cannot bind ``name`` (``what`` says what it names): not an
    identifier, a keyword, one of ``shadows``' names (its message), a builtin or a name it uses
    (``taken``); None if it can."""
    if not IDENTIFIER.fullmatch(name):
        return f"{what} {name!r} is not an identifier; use only letters, digits and _"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return f"{what} {name!r} is a Python keyword; choose another name"
    for names_, message in shadows:
        if name in names_:
            return message
    if hasattr(builtins, name) or name in taken or name.startswith("__"):
        return f"{what} {name!r} would shadow a name the generated code uses; choose another name"
    return None


def value_problems(body: dict[str, Any], scope: str, functions: Mapping[str, tuple[int, int]] | None = None) -> list[Problem]:
    """What is wrong with the expressions of a class's named values: each parses and uses the
    arguments and the values written before it (so none uses itself, through others or not),
    and each value is used, by a declaration or a value. The generated ``__init__`` assigns
    them in the order written."""
    values: dict[str, str] = body.get("values", {})
    arguments = list(body.get("args", {}))
    problems: list[Problem] = []
    uses_of: dict[str, list[str]] = {}
    for name, text in values.items():
        unknown = _unknown(text, arguments, list(values), scope, functions or {})
        problems += [(("values", name), f"value {name!r} ({text}): {message}") for message in unknown]
        if not unknown:
            uses_of[name] = names(parse(text))
    order = list(values)
    for name, used in uses_of.items():
        later = [other for other in used if other in values and order.index(other) >= order.index(name)]
        if not later:
            continue
        cycle = use_cycle(uses_of, name)
        if cycle:
            message = (f"value {name!r} uses itself ({' -> '.join(cycle)}); a value is computed from the "
                       "arguments and the values written before it")  # fmt: skip
        else:
            message = (f"value {name!r} uses {later[0]!r}, which is written after it; values are computed in "
                       f"the order written: move {later[0]!r} before {name!r}")  # fmt: skip
        problems.append((("values", name), message))
    used_by_declarations = {n for _, text in _body_expressions(body) for n in names_or_none(text)}
    used_by_declarations |= {n for text in node_expressions(body.get("nodes", [])) for n in names_or_none(text)}
    used_by_values = {n for used in uses_of.values() for n in used}
    for name in values:
        if name not in used_by_declarations and name not in used_by_values:
            problems.append((("values", name), f"value {name!r} is not used; use it as `{{arg: {name}}}` in a "
                                               "declaration or a node, or remove it"))  # fmt: skip
    return problems


def use_cycle(uses_of: dict[str, list[str]], start: str) -> list[str] | None:
    """A path of uses from ``start`` back to itself, or None."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        name, trail = stack.pop()
        for used in uses_of.get(name, []):
            if used == start:
                return [*trail, start]
            if used in uses_of and used not in seen:
                seen.add(used)
                stack.append((used, [*trail, used]))
    return None


def names_or_none(text: str) -> list[str]:
    """The names ``text`` uses, or none where it does not parse (its own error says why)."""
    try:
        return names(parse(text))
    except ExprError:
        return []


def _body_expressions(body: dict[str, Any]) -> Iterator[tuple[JsonPath, str]]:
    """Every ``{arg: ...}`` expression of a body's declarations."""
    for path, entry in body.get("modules", {}).items():
        for field in ("args", "kwargs"):
            yield from arg_expressions(entry.get(field), ("modules", path, field))
    for table in ("parameters", "buffers"):
        for path, entry in body.get(table, {}).items():
            for field in ("shape", "init"):
                yield from arg_expressions(entry.get(field), (table, path, field))


def is_arg(value: Any) -> typing.TypeGuard[dict[str, str]]:
    return isinstance(value, dict) and set(value) == {"arg"}


def bind_written(names: list[str], decl: dict[str, Any]) -> dict[str, Any]:
    """Which argument each value of a declaration as written goes to (its repeats unexpanded:
    none where a list of arguments holds one)."""
    args = decl.get("args", [])
    if any(isinstance(item, dict) and ("repeat" in item or is_module_loop(item)) for item in args):
        return {}
    return {**dict(zip(names, args, strict=False)), **decl.get("kwargs", {})}


def float_for_int(signature: inspect.Signature, written: dict[str, Any], args: list[Any], kwargs: dict[str, Any]) -> str | None:
    """An expression of ``written`` (a declaration as written) that gives a float for a
    parameter its class's ``signature`` annotates as an int (``in_features: int``), or None."""
    params = [name for name, p in signature.parameters.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL]
    sources = bind_written(params, written)
    for name, value in signature.bind(*args, **kwargs).arguments.items():
        source = sources.get(name)
        if isinstance(value, float) and is_arg(source) and wants_int(signature.parameters[name].annotation):
            return f"{name} of {written['class']} is an int, but {{arg: {source['arg']}}} gives {value!r}"
    return None


def wants_int(annotation: Any) -> bool:
    """``int``, or a union holding ``int`` but not ``float`` (``int | tuple[int, int]``)."""
    if annotation is int or annotation == "int":
        return True
    members = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, UnionType) else ()
    return int in members and float not in members
