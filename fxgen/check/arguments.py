"""The top class's chosen arguments (``fxgen.spec.choice``) and the spec's ``variants:``, checked.

A variant's names are validated identifiers the generated class can have a classmethod of
(``WidthNet.s()``); a variant or an override names arguments the top class has, with values of
their declared types; a choice names a variant the spec declares. Applying a choice makes its
values the top class's defaults, in the document's data before the declarations are checked (so
every check runs with them, each error naming the values) or in a validated Spec.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import keyword
from typing import Any

from fxgen._errors import Diagnostic, SpecError, closest_name
from fxgen.check.checker import IDENTIFIER
from fxgen.read.reader import Document
from fxgen.read.yaml_events import JsonPath
from fxgen.spec.choice import Choice
from fxgen.spec.model import ArgSpec, Spec
from fxgen.spec.resolve import has_arguments

__all__ = ["SIMPLE_TYPES", "choose", "choose_data", "is_a", "variant_problems"]


SIMPLE_TYPES: dict[str, type] = {"int": int, "float": float, "bool": bool, "str": str}

Problem = tuple[JsonPath, str, bool]  # where, message, located at the key


def is_a(value: Any, expected: type) -> bool:
    """``value`` as an argument of ``expected`` type, as a type checker reads it (an int is a
    float; a bool is not an int)."""
    if isinstance(value, bool):
        return expected is bool
    return isinstance(value, (int, float) if expected is float else expected)


@functools.cache
def _module_attributes() -> frozenset[str]:
    import torch

    return frozenset(dir(torch.nn.Module()))  # an instance: `training` too


def variant_problems(data: dict[str, Any]) -> list[Problem]:
    """The problems of a (format 2, schema-valid) spec's ``variants``: names, arguments, types."""
    problems: list[Problem] = []
    params = _params(data)
    top = {path.split(".")[0] for table in ("modules", "parameters", "buffers") for path in data.get(table, {})}
    for name, values in data.get("variants", {}).items():
        where: JsonPath = ("variants", name)
        why = _name_problem(name, top | set(params))
        if why:
            problems.append((where, f"variant name {name!r} {why}", True))
        for arg, value in values.items():
            problem = _value_problem(params, arg, value, f"variant {name!r}")
            if problem:
                problems.append(((*where, arg), problem, problem.startswith("variant") and "is not an argument" in problem))
    return problems


def _name_problem(name: str, attributes: set[str]) -> str | None:
    """Why ``name`` cannot be a classmethod of the generated class, or None."""
    if not IDENTIFIER.fullmatch(name):
        return "is not an identifier; use only letters, digits and _ (it names a classmethod of the generated class)"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return "is a Python keyword; choose another name"
    if name.startswith("_"):
        return "starts with _ (the class's own private names do); choose another name"
    if name in _module_attributes():
        return f"is an attribute of every nn.Module (nn.Module.{name}); choose another name"
    if name in attributes:
        return "is also an attribute or argument of the class; choose another name"
    return None


def _params(data: dict[str, Any]) -> dict[str, ArgSpec]:
    return {n: ArgSpec.from_data(a) for n, a in data.get("args", {}).items()}


def _value_problem(params: dict[str, ArgSpec], arg: str, value: Any, origin: str) -> str | None:
    if arg not in params:
        close = closest_name(arg, params)
        hint = f"did you mean {close!r}?" if close else f"its arguments: {', '.join(params) or 'none'}"
        return f"{origin}: {arg!r} is not an argument of the model's class; {hint}"
    if has_arguments(value):
        return f"{origin}: the value of {arg!r} is a constant, not an expression or a module"
    expected = SIMPLE_TYPES.get(params[arg].type)
    if expected is not None and not is_a(value, expected):  # None too: an int | None allows it, an int does not
        return f"{origin}: argument {arg!r} is {params[arg].type}, not {value!r}; give a value of that type"
    return None


def _choice_problems(data: dict[str, Any], choice: Choice) -> list[Problem]:
    problems: list[Problem] = []
    variants = data.get("variants", {})
    if choice.variant is not None and choice.variant not in variants:
        if variants:
            close = closest_name(choice.variant, variants)
            hint = f"did you mean {close!r}?" if close else f"its variants: {', '.join(variants)}"
            problems.append((("variants",), f"no variant {choice.variant!r} in this spec; {hint}", True))
        else:
            problems.append((("name",), f"variant {choice.variant!r} chosen, but this spec declares no `variants:`", False))
    params = _params(data)
    for arg, value in choice.values:
        problem = _value_problem(params, arg, value, f"{choice.origin} {arg}={value!r}")
        if problem:
            where: JsonPath = ("args", arg) if arg in params else ("args",) if params else ("name",)
            problems.append((where, problem, arg not in params and bool(params)))
    return problems


def _chosen(data: dict[str, Any], choice: Choice) -> dict[str, Any]:
    """The values the choice gives (the variant's, then the overrides)."""
    out = dict(data.get("variants", {}).get(choice.variant, {})) if choice.variant is not None else {}
    out.update(choice.values)
    return out


def choose_data(doc: Document, choice: Choice) -> Document:
    """``doc`` whose top class's defaults are the chosen values (the original is left as it is);
    a SpecError locates a choice that does not fit the spec."""
    if not choice:
        return doc
    _raise(doc, _choice_problems(doc.data, choice))
    data = copy.copy(doc.data)
    data["args"] = {name: dict(decl) if isinstance(decl, dict) else {"type": decl}
                    for name, decl in data.get("args", {}).items()}  # fmt: skip
    for name, value in _chosen(doc.data, choice).items():
        data["args"][name]["default"] = value
    return dataclasses.replace(doc, data=data)


def choose(spec: Spec, choice: Choice) -> Spec:
    """A validated ``spec`` whose top class's defaults are the chosen values (for ``fxgen.load``
    of a Spec: the build checks what the values make, at the declarations)."""
    if not choice:
        return spec
    data = {"args": {n: a.to_dict() for n, a in spec.args.items()}, "variants": spec.variants}
    problems = _choice_problems(data, choice)
    if problems:
        doc = spec.document
        raise SpecError([Diagnostic(doc.key_location(where) if key and doc is not None else spec.locate(where), message)
                         for where, message, key in problems])  # fmt: skip
    args = dict(spec.args)
    for name, value in _chosen(data, choice).items():
        args[name] = ArgSpec(args[name].type, value)
    return dataclasses.replace(spec, args=args)


def _raise(doc: Document, problems: list[Problem]) -> None:
    if problems:
        raise SpecError([Diagnostic(doc.key_location(w) if key else doc.locate(w), m) for w, m, key in problems])
