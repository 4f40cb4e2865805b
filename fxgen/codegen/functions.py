"""The spec's named functions (``functions:``) as module-level ``def``s, before the classes.

Each is written as a person writes a small helper: typed arguments with their defaults, one
assignment per named value, one ``return``; the expressions are ``fxgen.spec.expr``'s, written
back by its ``source`` (``ceil`` as ``math.ceil``), so the generated function computes exactly
what validation and ``fxgen.load`` computed. Spec text reaches the source only as validated
identifiers, the literals of numbers and booleans, and parsed expressions.
"""

from __future__ import annotations

import math

from fxgen.blackstyle import formatter
from fxgen.codegen.render import Imports, UnsafeName, checked, expression
from fxgen.spec import expr
from fxgen.spec.model import NO_DEFAULT, FunctionSpec, Spec

__all__ = ["function_defs"]


def function_defs(spec: Spec, imports: Imports) -> list[list[str]]:
    """The lines of each function's ``def``, in the order the spec declares them."""
    return [_function(name, function, imports) for name, function in spec.functions.items()]


def _function(name: str, function: FunctionSpec, imports: Imports) -> list[str]:
    params = ", ".join(_param(arg, spec.type, spec.default) for arg, spec in function.args.items())
    signature = f"def {checked(name)}({params}) -> {_type(function.type)}:"
    body = [f"{checked(value)} = {_source(text, imports)}" for value, text in function.values.items()]
    body.append(f"return {_source(function.returns, imports)}")
    return [*formatter.format_def(signature, 0), *formatter.block(body, 1)]


def _param(name: str, kind: str, default: object) -> str:
    if default is NO_DEFAULT:
        return f"{checked(name)}: {_type(kind)}"
    return f"{checked(name)}: {_type(kind)} = {_number(default)}"


def _type(kind: str) -> str:
    if kind not in ("int", "float", "bool"):
        raise UnsafeName(f"a function's type is int, float or bool, not {kind!r}")
    return kind


def _number(value: object) -> str:
    """A default as Python source: only a bool, an int or a finite float reaches here."""
    if isinstance(value, bool) or (isinstance(value, int) and abs(value) <= expr.MAX_INT):
        return repr(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    raise UnsafeName(f"a function's default is a number or a bool, not {value!r}")


def _source(text: str, imports: Imports) -> str:
    return expression(expr.parse(text), imports)
