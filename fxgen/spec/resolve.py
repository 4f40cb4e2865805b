"""Format 2's declarations made concrete: constructor arguments bound, named values computed,
``{arg: ...}`` evaluated, repeats expanded.

A class's declarations may depend on its constructor arguments; its graph never does. Binding
the values a class is constructed with to its ``args``, then computing its ``values:`` (each from
the arguments and the values written before it), gives an environment; substituting it
into a declaration's encoded values gives a format-1 declaration with ``{module: ...}`` items
left for the constructor (each ``{repeat: N, module: D}`` list item becomes N of them). The
check, assemble and codegen stages all go through here, so a block is built from the same
values everywhere. Data in, data out: nothing here constructs or imports anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fxgen.spec.expr import ExprError, evaluate, parse
from fxgen.spec.model import NO_DEFAULT, ArgSpec

__all__ = [
    "MAX_REPEAT",
    "BindError",
    "bind",
    "has_arguments",
    "substitute",
    "substitute_declaration",
    "substitute_init",
    "substitute_kwargs",
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


def with_values(env: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """``env`` (the bound arguments) and the class's named ``values``, each computed in the
    order written, from the arguments and the values before it; ExprError names the value."""
    out = dict(env)
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
    if tag in ("tuple", "slice"):
        return {tag: substitute(body, env)}
    if tag == "dict":
        return {tag: substitute_kwargs(body, env)}
    return value


def substitute_kwargs(kwargs: Mapping[str, Any], env: Mapping[str, Any]) -> dict[str, Any]:
    """A mapping of names to encoded values (keyword arguments, init arguments), substituted."""
    return {key: substitute(item, env) for key, item in kwargs.items()}


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
