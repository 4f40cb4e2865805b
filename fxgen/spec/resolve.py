"""Format 2 made concrete for one instance: constructor arguments bound, named values computed,
``{arg: ...}`` evaluated, repeats expanded, conditionals and repeats of nodes resolved.

A class's declarations and its graph may depend on its constructor arguments. Binding the
values a class is constructed with to its ``args``, then computing its ``values:`` (each from
the arguments and the values written before it), gives an environment; substituting it into a
declaration's encoded values gives a format-1 declaration with ``{module: ...}`` items left for
the constructor (each ``{repeat: N, module: D}`` list item becomes N of them), and resolving its
node list with it (``resolve_nodes``: the branch taken, the loops unrolled, aliases followed)
gives a plain graph; the environment may also hold ``training``, the module's mode. The check,
assemble and codegen stages all go through here, so a block is built from the same values
everywhere. Data in, data out: nothing here constructs or imports anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from fxgen.spec.expr import CALLS, REQUIRED, ExprError, Function, evaluate, names, parse, tested
from fxgen.spec.model import NO_DEFAULT, ArgSpec, FunctionSpec, Item, Node, Spec
from fxgen.spec.tags import lookup

__all__ = [
    "GIVEN",
    "MAX_NESTING",
    "MAX_NODES",
    "MAX_REPEAT",
    "MAX_TESTED",
    "TEMPLATE",
    "TRAINING",
    "BindError",
    "NodesError",
    "arg_expressions",
    "bind",
    "callable_functions",
    "cases",
    "data_cases",
    "data_needs_resolution",
    "declared",
    "expand_nodes",
    "has_arguments",
    "is_construct",
    "is_module_loop",
    "last_name",
    "loop_names",
    "loop_rows",
    "module_loop",
    "needs_resolution",
    "node_expressions",
    "resolve_nodes",
    "spec_functions",
    "substitute",
    "substitute_declaration",
    "substitute_init",
    "substitute_kwargs",
    "tested_inputs",
    "uses_training",
    "walk_data",
    "with_values",
]


MAX_REPEAT = 10_000  # copies one repeat makes: a model's deepest stack is hundreds of blocks, not millions


class BindError(ValueError):
    """Constructor arguments that do not fit a class's ``args``."""


def bind(params: Mapping[str, ArgSpec], args: list[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``{name: value}`` for a class constructed with ``args`` and ``kwargs`` (already concrete
    encoded values), defaults filled in; BindError says what does not fit, as Python would."""
    names = list(params)
    if len(args) > len(names):
        raise BindError(f"takes {len(names)} positional argument{'s' * (len(names) != 1)} but {len(args)} were given")
    env = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key not in params:
            raise BindError(f"got an unexpected keyword argument {key!r}")
        if key in env:
            raise BindError(f"got multiple values for argument {key!r}")
        env[key] = value
    for name, param in params.items():
        if name not in env:
            if param.default is NO_DEFAULT:
                raise BindError(f"missing a required argument: {name!r}")
            env[name] = param.default
    return env


def callable_functions(
    functions: Mapping[str, FunctionSpec], locate: Callable[[tuple[str | int, ...]], Any] | None = None
) -> dict[str, Function]:
    """The spec's ``functions:`` as the evaluator calls them; ``locate`` (a JSON path of the
    spec -> its location) lets a failure inside one name the line of the part that failed."""
    out = {}
    for name, spec in functions.items():
        where = None if locate is None else _locator(locate, name)
        out[name] = Function(
            name, tuple((arg, a.type, REQUIRED if a.default is NO_DEFAULT else a.default) for arg, a in spec.args.items()),
            tuple(spec.values.items()), spec.returns, spec.type, where,
        )  # fmt: skip
    return out


def spec_functions(spec: Spec) -> dict[str, Function]:
    """``callable_functions`` of a spec, each located in the file it was read from."""
    if not spec.functions:
        return {}
    return callable_functions(spec.functions, spec.document.locate if spec.document is not None else None)


def _locator(locate: Callable[[tuple[str | int, ...]], Any], name: str) -> Callable[[tuple[str, ...]], str]:
    return lambda part: str(locate(("functions", name, *part)))


def with_values(
    env: Mapping[str, Any], values: Mapping[str, str], functions: Mapping[str, Function] | None = None
) -> dict[str, Any]:
    """``env`` (the bound arguments) and the class's named ``values``, each computed in the
    order written, from the arguments and the values before it; ExprError names the value.
    ``functions`` (``callable_functions``) are what the expressions may call: the result holds
    them under ``CALLS``, for every expression evaluated with it."""
    out = dict(env)
    if functions:
        out[CALLS] = functions
    for name, text in values.items():
        try:
            out[name] = evaluate(parse(text), out)
        except ExprError as exc:
            raise ExprError(f"value {name!r} ({text}): {exc}") from None
    return out


def substitute(value: Any, env: Mapping[str, Any]) -> Any:
    """An encoded value with every ``{arg: EXPR}`` replaced by its value in ``env`` and every
    ``{repeat: N, module: D}`` list item by N copies of ``{module: D}`` (their own arguments
    substituted too); ExprError when an expression cannot be evaluated."""
    if isinstance(value, list):
        out: list[Any] = []
        for item in value:
            if isinstance(item, dict) and "repeat" in item:
                times = substitute(item["repeat"], env)
                if isinstance(times, bool) or not isinstance(times, int) or times < 0:
                    raise ExprError(f"a repeat count is a non-negative integer, not {times!r}")
                if times > MAX_REPEAT:
                    raise ExprError(f"a repeat count is at most {MAX_REPEAT}, not {times}: every copy is a module "
                                    "of its own, built and checked one by one")  # fmt: skip
                copy = {"module": substitute_declaration(item["module"], env)}
                out.extend(dict(copy) for _ in range(times))
            elif is_module_loop(item):
                made = module_loop(item, env)
                if len(made) > MAX_REPEAT:
                    raise ExprError(f"a `for` over module declarations makes at most {MAX_REPEAT} modules, and this "
                                    "one makes more: every one is a module of its own, built and checked one by one")  # fmt: skip
                out.extend(made)
            else:
                out.append(substitute(item, env))
        return out
    if not isinstance(value, dict) or len(value) != 1:
        return value
    ((tag, body),) = value.items()
    if tag == "arg":
        return evaluate(parse(body), env)
    if tag == "module":
        return {"module": substitute_declaration(body, env)}
    holds = _holds(tag)
    if holds == "list":
        return {tag: substitute(body, env)}
    if holds == "mapping":
        return {tag: substitute_kwargs(body, env)}
    return value


def is_module_loop(value: Any) -> bool:
    """Is ``value`` (an item of a list of constructor arguments) a ``for`` over module
    declarations, ``{for: NAMES, in: ROWS, module: DECL}``?"""
    return isinstance(value, dict) and "for" in value and "module" in value


def loop_names(item: Mapping[str, Any]) -> list[str]:
    """The names a ``for`` over module declarations binds: ``for: c`` binds one, ``for: [t, c,
    n, s]`` one per column of each row."""
    names_ = item["for"]
    return [names_] if isinstance(names_, str) else list(names_)


def loop_rows(item: Mapping[str, Any], env: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The bindings of a ``for`` over module declarations in ``env``, in order: ``in:`` a count
    (an integer or ``{arg: EXPR}``) binds its one name to 0 .. count-1, a list binds each row
    (a value for one name, a list of as many values as names for several). ExprError says what
    does not fit."""
    names_ = loop_names(item)
    written = item["in"]
    if isinstance(written, list):
        rows = [substitute(row, env) for row in written]
    else:
        count = substitute(written, env)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ExprError(f"the count of a `for` over module declarations is a non-negative integer, not {count!r}")
        if count > MAX_REPEAT:
            raise ExprError(f"the count of a `for` over module declarations is at most {MAX_REPEAT}, not {count}")
        rows = list(range(count))
    if isinstance(item["for"], str):
        return [{names_[0]: row} for row in rows]
    out = []
    for k, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(names_):
            raise ExprError(f"row {k} of a `for` over {', '.join(names_)} is {row!r}: each row is a list of "
                            f"{len(names_)} values, one per name")  # fmt: skip
        out.append(dict(zip(names_, row, strict=True)))
    return out


def module_loop(item: Mapping[str, Any], env: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``{module: D}`` items a ``for`` over module declarations stands for, in the order a list
    comprehension makes them (the outer loop first): D substituted with each row's names bound
    (a nested ``for`` in place of D runs inside, with the outer names bound)."""
    out: list[dict[str, Any]] = []
    for bound in loop_rows(item, env):
        inner = {**env, **bound}
        body = item["module"]
        if is_module_loop(body):
            out += module_loop(body, inner)
        else:
            out.append({"module": substitute_declaration(body, inner)})
        if len(out) > MAX_REPEAT:
            break
    return out


def substitute_kwargs(kwargs: Mapping[str, Any], env: Mapping[str, Any]) -> dict[str, Any]:
    """A mapping of names to encoded values (keyword arguments, init arguments), substituted."""
    return {key: substitute(item, env) for key, item in kwargs.items()}


def declared(decl: Mapping[str, Any], env: Mapping[str, Any]) -> bool:
    """Is a module declaration (``{class, ..., if: COND}``) declared for the instance ``env``
    describes? ExprError when its condition cannot be evaluated or is not a bool."""
    condition = decl.get("if", True)
    value = condition if isinstance(condition, bool) else evaluate(parse(condition), env)
    if not isinstance(value, bool):
        raise ExprError(f"a declaration's condition gives True or False, not {value!r}; compare: `n > 0`, `not tie`")
    return value


def substitute_declaration(decl: Mapping[str, Any], env: Mapping[str, Any]) -> dict[str, Any]:
    """A module declaration (``{class, args, kwargs, init}``) with its arguments substituted."""
    out: dict[str, Any] = {"class": decl["class"]}
    if decl.get("args"):
        out["args"] = substitute(decl["args"], env)
    if decl.get("kwargs"):
        out["kwargs"] = substitute_kwargs(decl["kwargs"], env)
    if decl.get("init"):
        out["init"] = {path: substitute_init(init, env) for path, init in decl["init"].items()}
    return out


def substitute_init(init: Any, env: Mapping[str, Any]) -> Any:
    """An ``init`` (a scheme name, or ``{scheme: {argument: value}}``) with its arguments substituted."""
    if isinstance(init, dict):
        return {scheme: substitute_kwargs(kwargs or {}, env) for scheme, kwargs in init.items()}
    return init


def has_arguments(value: Any) -> bool:
    """Does ``value`` use ``{arg: ...}``, a module value or a repeat anywhere (format 2 only)?"""
    if isinstance(value, list):
        return any(has_arguments(item) for item in value)
    if isinstance(value, dict):
        if value.keys() & {"arg", "module", "repeat"}:
            return True
        return any(has_arguments(item) for item in value.values())
    return False


# -- format 2's conditionals and repeats of nodes --------------------------------------------
MAX_NESTING = 16  # conditionals and repeats nested in each other: a forward nests two or three; the reader allows 31
MAX_NODES = 200_000  # nodes one class's graph may unroll to: ten times the largest exported model's
TRAINING = "training"  # the one runtime name conditions and node arguments may use: the module's mode

TEMPLATE = re.compile(r"\{([^{}]*)\}")  # `{i}` in a target inside a loop


class NodesError(ExprError):
    """A conditional or repeat that cannot be resolved with these values, at ``path`` (a JSON
    path inside the class's body, ``("nodes", 3, "in")``)."""

    def __init__(self, message: str, path: tuple[str | int, ...]) -> None:
        super().__init__(message)
        self.path = path


def is_construct(item: Mapping[str, Any]) -> bool:
    """Is a node-list item (as data) a conditional or a repeat rather than a node?"""
    return "if" in item or "for" in item


def needs_resolution(items: list[Item]) -> bool:
    """Does a node list hold a conditional, a repeat, an alias or an ``{arg: ...}`` value: does
    its graph depend on the class's arguments (or the mode)?"""
    for item in items:
        if type(item) is not Node:
            return True
        if item.op == "alias" or _holds_arguments(item.args) or (item.kwargs and _holds_arguments(item.kwargs)):
            return True
    return False


_NESTED = (list, dict)


def _holds_arguments(value: Any) -> bool:
    """``has_arguments`` for node values, without a call per scalar (checked on every node of
    every load and validation: most values are references and numbers)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is list:
            stack.extend(x for x in item if type(x) in _NESTED)
        elif type(item) is dict:
            if "arg" in item or "module" in item or "repeat" in item:
                return True
            stack.extend(x for x in item.values() if type(x) in _NESTED)
    return False


def uses_training(items: list[Item]) -> bool:
    """Does a node list's graph depend on the module's mode (``training`` in a condition, a
    count or a node argument)?"""
    return any(TRAINING in names(parse(text)) for text in node_expressions([i.to_dict() for i in items]))


GIVEN = "given"  # an optional input's value in an environment where the call gives it (``mask is None`` is False)
MAX_TESTED = 4  # optional inputs one class's conditions test: a graph per mode and per subset of them


def tested_inputs(items: list[Item]) -> list[str]:
    """The optional inputs a node list's conditions ask about (``mask is None``), in order: its
    graph depends on which of them a call gives."""
    return _tested([i.to_dict() for i in items])


def _tested(data: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(n for text in node_expressions(data) for n in tested(parse(text))))


def cases(items: list[Item]) -> list[dict[str, Any]]:
    """The environments a node list's graph depends on beyond its arguments: each mode where it
    reads ``training`` and each subset of the optional inputs it tests left out (None), every
    input given first; ``[{}]`` for a graph that depends on neither."""
    return data_cases([i.to_dict() for i in items])


def data_cases(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``cases`` for a node list as (schema-valid) data."""
    texts = list(node_expressions(data))
    uses = any(TRAINING in names(parse(text)) for text in texts)
    modes: list[dict[str, Any]] = [{TRAINING: False}, {TRAINING: True}] if uses else [{}]
    optional = _tested(data)
    out = []
    for mode in modes:
        for k in range(2 ** len(optional)):
            out.append({**mode, **{name: None if k >> i & 1 else GIVEN for i, name in enumerate(optional)}})
    return out


def node_expressions(items: list[dict[str, Any]]) -> Iterator[str]:
    """The expression texts of a node list as data: conditions, counts, ``{arg: ...}`` values."""
    for item in items:
        if "if" in item:
            if isinstance(item["if"], str):
                yield item["if"]
            yield from node_expressions(item["then"])
            yield from node_expressions(item.get("else", []))
        elif "for" in item:
            if isinstance(item["in"], str):
                yield item["in"]
            yield from node_expressions(item["nodes"])
        else:
            for field in ("args", "kwargs"):
                yield from (text for _, text in arg_expressions(item.get(field)))


def arg_expressions(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    """Every ``{arg: ...}`` text inside an encoded value, in the order written, each with its
    path (``path`` and the keys and indices down to it, ``"arg"`` last): the one walk the
    check, resolve and codegen stages share."""
    out: list[tuple[tuple[Any, ...], str]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, path)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, list):
            stack.extend((v, (*at, i)) for i, v in reversed(list(enumerate(item))))
        elif isinstance(item, dict):
            if set(item) == {"arg"} and isinstance(item["arg"], str):
                out.append(((*at, "arg"), item["arg"]))
            else:
                stack.extend((v, (*at, k)) for k, v in reversed(list(item.items())))
    return out


def resolve_nodes(items: list[Item], env: Mapping[str, Any]) -> list[Node]:
    """A class's node list as the plain graph of one instance: ``env`` holds its argument and
    named values (and ``training``, the mode, where the graph depends on it). NodesError (an
    ExprError) says what cannot be resolved, and where."""
    if not needs_resolution(items):
        return items  # type: ignore[return-value]  # plain nodes only
    return [Node(**data) for data, _ in expand_nodes([item.to_dict() for item in items], env)]


def expand_nodes(
    items: list[dict[str, Any]], env: Mapping[str, Any], prefix: tuple[str | int, ...] = ("nodes",)
) -> list[tuple[dict[str, Any], tuple[str | int, ...]]]:
    """``resolve_nodes`` on schema-valid data: each resolved node (as data) with the path of the
    item it comes from (``("nodes", 2, "then", 0)``), for diagnostics.

    The ``then`` or the ``else`` items of a conditional are taken; a repeat is unrolled, its
    nodes named as torch.fx names repeated nodes (``h`` at index 1 is ``h_1``, at index 1 of
    an inner loop at index 2 of an outer one ``h_2_1``), ``{i}`` formatted in targets and ``i`` given to its
    expressions; references follow: to this step's nodes inside the body, to the carried values
    (``carry``) in the next step and after the loop, to the list of each step's last value
    (``collect``) after it. An ``alias`` expands to nothing: its uses become its argument.
    """
    expander = _Expander(env)
    expander.items(items, prefix, {}, [], 0)
    return expander.out


def _collected_item(item: dict[str, Any], node: dict[str, Any], scope: Mapping[str, Any]) -> str | None:
    """The node an ``operator.getitem`` of a collected list at a constant index names, or None.
    The generated class holds the list as a Python list, and indexing it is no graph operation
    (torch.fx records none when it traces that class): the instance's graph is the same."""
    if item.get("op") != "call_function" or item.get("target") != "operator.getitem" or item.get("kwargs"):
        return None
    args = node.get("args", [])
    written = item.get("args", [])
    if len(args) != 2 or not isinstance(written[0], str) or not isinstance(scope.get(written[0][1:]), list):
        return None
    collected, index = args
    if isinstance(index, bool) or not isinstance(index, int) or not -len(collected) <= index < len(collected):
        return None
    element = collected[index]
    return element if isinstance(element, str) and item.get("name") is not None else None


class _Expander:
    def __init__(self, env: Mapping[str, Any]) -> None:
        self.env = dict(env)
        self.out: list[tuple[dict[str, Any], tuple[str | int, ...]]] = []
        self.last: Any = None  # the value of the last node expanded (what a step's `collect` takes)

    def items(
        self, items: list[dict[str, Any]], prefix: tuple[str | int, ...], scope: dict[str, Any],
        loops: list[tuple[str, int]], depth: int,
    ) -> None:  # fmt: skip
        """Expand ``items`` into ``self.out``; ``scope`` maps a name written in the spec to the
        value its uses become (``"%h_1"``, a list for a collect), where that is not itself."""
        for k, item in enumerate(items):
            where = (*prefix, k)
            if "if" in item:
                self.nested(depth, where)
                cond = self.value(item["if"], (*where, "if"))
                if not isinstance(cond, bool):
                    raise NodesError(f"the condition {_text(item['if'])} gives {cond!r}, not True or False; write a "
                                     "comparison such as `n > 0`", (*where, "if"))  # fmt: skip
                key = "then" if cond else "else"
                self.items(item.get(key, []), (*where, key), scope, loops, depth + 1)
            elif "for" in item:
                self.nested(depth, where)
                self.repeat(item, where, scope, loops, depth)
            elif item["op"] == "alias":
                self.last = scope[item["name"]] = self.rewrite(item["args"][0], scope, (*where, "args", 0))
            else:
                self.node(item, where, scope, loops)

    def nested(self, depth: int, where: tuple[str | int, ...]) -> None:
        if depth >= MAX_NESTING:
            raise NodesError(f"conditionals and repeats nest at most {MAX_NESTING} deep; move the inner part "
                             "into a block of its own (`classes:`)", where)  # fmt: skip

    def repeat(
        self, item: dict[str, Any], where: tuple[str | int, ...], scope: dict[str, Any],
        loops: list[tuple[str, int]], depth: int,
    ) -> None:  # fmt: skip
        count = self.value(item["in"], (*where, "in"))
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise NodesError(f"a loop count is a non-negative integer, but {_text(item['in'])} gives {count!r}",
                             (*where, "in"))  # fmt: skip
        if count > MAX_REPEAT:
            raise NodesError(f"a loop count is at most {MAX_REPEAT}, but {_text(item['in'])} gives {count}",
                             (*where, "in"))  # fmt: skip
        var = item["for"]
        outer = self.env.get(var, _UNSET)
        collected: list[Any] = []
        try:
            for index in range(count):
                self.env[var] = index
                inner = dict(scope)  # what the loop sees of the names outside, and its own nodes
                self.items(item["nodes"], (*where, "nodes"), inner, [*loops, (var, index)], depth + 1)
                collected.append(self.last)
                carried = {name: self.rewrite(value, inner, (*where, "carry", name))
                           for name, value in item.get("carry", {}).items()}  # fmt: skip
                scope.update(carried)  # the next step's, and after the loop, the last step's
        finally:
            if outer is _UNSET:
                self.env.pop(var, None)
            else:
                self.env[var] = outer
        if item.get("collect") is not None:
            self.last = scope[item["collect"]] = collected

    def node(
        self, item: dict[str, Any], where: tuple[str | int, ...], scope: dict[str, Any], loops: list[tuple[str, int]]
    ) -> None:
        node = dict(item)
        for field in ("args", "kwargs"):
            if field in node:
                node[field] = self.rewrite(node[field], scope, (*where, field))
        element = _collected_item(item, node, scope)
        if element is not None:  # `qkvs[0]` in Python: indexing a list, not an operation of the graph
            self.last = scope[item["name"]] = element
            return
        if loops and "{" in node.get("target", ""):
            node["target"] = _format(node["target"], loops)
        name = node.get("name")
        if name is not None and loops:
            node["name"] = name + "".join(f"_{index}" for _, index in loops)
        if name is not None and (loops or name in scope):
            scope[name] = "%" + node["name"]
        self.last = "%" + node["name"] if node.get("name") is not None else None
        self.out.append((node, where))
        if len(self.out) > MAX_NODES:
            raise NodesError(f"the graph unrolls to more than {MAX_NODES} nodes; use smaller loop counts, or a "
                             "block (`classes:`) called in a loop", where)  # fmt: skip

    def value(self, value: Any, where: tuple[str | int, ...]) -> Any:
        """A condition or a count: an expression (text) or a constant."""
        if not isinstance(value, str):
            return value
        return self.evaluate(value, where)

    def evaluate(self, text: str, where: tuple[str | int, ...]) -> Any:
        try:
            tree = parse(text)
            if TRAINING in names(tree) and TRAINING not in self.env:
                raise ExprError("`training` is the module's mode, known only when the graph is built for a mode "
                                "(train or eval)")  # fmt: skip
            return evaluate(tree, self.env)
        except NodesError:
            raise
        except ExprError as exc:
            raise NodesError(f"{_text(text)}: {exc}", where) from None

    def rewrite(self, value: Any, scope: Mapping[str, Any], where: tuple[str | int, ...]) -> Any:
        """An encoded node value with references renamed as ``scope`` says and ``{arg: ...}``
        evaluated."""
        if isinstance(value, str):
            if scope and value.startswith("%") and not value.startswith("%%"):
                return scope.get(value[1:], value)
            return value
        if isinstance(value, list):
            return [self.rewrite(item, scope, (*where, i)) for i, item in enumerate(value)]
        if not isinstance(value, dict):
            return value
        if len(value) != 1:  # a node's kwargs mapping
            return {key: self.rewrite(item, scope, (*where, key)) for key, item in value.items()}
        ((tag, body),) = value.items()
        if tag == "arg":
            return _encoded(self.evaluate(body, (*where, "arg")))
        known = lookup(tag)
        if known is not None and known.holds == "list":
            return {tag: [self.rewrite(item, scope, (*where, tag, i)) for i, item in enumerate(body)]}
        if known is not None and known.holds == "mapping":
            return {tag: {key: self.rewrite(item, scope, (*where, tag, key)) for key, item in body.items()}}
        if known is not None or tag in ("module", "repeat"):
            return value
        return {tag: self.rewrite(body, scope, (*where, tag))}  # a one-keyword kwargs mapping


_UNSET: Any = object()


def _holds(tag: str) -> str | None:
    """What a tag's body holds for the walks (``fxgen.spec.tags.Tag.holds``): "list", "mapping" or None."""
    known = lookup(tag)
    return known.holds if known is not None else None


def _encoded(value: Any) -> Any:
    """An expression's value in the value encoding (a string starting with ``%`` escaped)."""
    if isinstance(value, str) and value.startswith("%"):
        return "%" + value
    return value


def _text(value: Any) -> str:
    return f"`{value}`" if isinstance(value, str) else repr(value)


def _format(template: str, loops: list[tuple[str, int]]) -> str:
    """``m.{i}`` at index 2 -> ``m.2``: each ``{NAME}`` naming an enclosing loop's index is
    that index; any other brace is part of the path (a module may be named ``{x}``)."""
    indices = dict(loops)
    return TEMPLATE.sub(lambda found: str(indices.get(found.group(1), found.group(0))), template)


def last_name(items: list[dict[str, Any]]) -> str | None:
    """The name of a node list's last value (as data): its last node's (an alias's too), or the
    name both branches of a last conditional end with; None when it has none (what a repeat's
    ``collect`` gathers of each step)."""
    if not items:
        return None
    last = items[-1]
    if "if" in last:
        then, orelse = last_name(last["then"]), last_name(last.get("else", []))
        return then if then is not None and then == orelse else None
    if "for" in last or last.get("op") == "output":
        return None
    name = last.get("name")
    return name if isinstance(name, str) else None


def walk_data(
    items: list[dict[str, Any]], prefix: tuple[str | int, ...] = ("nodes",)
) -> Iterator[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """Every node of a node list as data (inside conditionals and repeats too), with its path,
    in the order written (``fxgen.spec.model.walk_nodes``'s order)."""
    for k, item in enumerate(items):
        where = (*prefix, k)
        if "if" in item:
            yield from walk_data(item["then"], (*where, "then"))
            yield from walk_data(item.get("else", []), (*where, "else"))
        elif "for" in item:
            yield from walk_data(item["nodes"], (*where, "nodes"))
        else:
            yield where, item


def data_needs_resolution(items: list[dict[str, Any]]) -> bool:
    """``needs_resolution`` for a node list as (schema-valid) data."""
    for item in items:
        if "op" not in item or item["op"] == "alias" or _holds_arguments(item.get("args")):
            return True
        if "kwargs" in item and _holds_arguments(item["kwargs"]):
            return True
    return False
