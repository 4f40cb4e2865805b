"""Scalars for the read stage (:mod:`fxgen.read.reader`): YAML text -> plain values.

Plain scalars are resolved with the YAML 1.2 core schema, the one JSON agrees with (``1e-5``
is a float, ``yes`` is a string). A plain scalar that PyYAML's YAML 1.1 rules would read as a
different value (``yes``/``no``/``on``/``off``, ``010``, ``1_000``, ``1:30``) is refused as
ambiguous instead of being guessed. Non-finite floats take the spec's ``{"float": "inf"}`` form.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NamedTuple

import yaml
from yaml.resolver import Resolver

__all__ = [
    "MAX_INT_DIGITS",
    "MAYBE_TYPED",
    "SCALAR_TAGS",
    "STR",
    "TAG",
    "Refusal",
    "ScalarError",
    "check_int_length",
    "resolve_plain",
    "resolve_tagged",
    "shown_tag",
]


MAX_INT_DIGITS = 400  # far beyond any real size; Python refuses to parse > 4300 digits anyway


TAG = "tag:yaml.org,2002:"


STR = TAG + "str"


SCALAR_TAGS = {STR, TAG + "int", TAG + "float", TAG + "bool", TAG + "null"}


# The YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution).
_NULL_12 = frozenset({"", "~", "null", "Null", "NULL"})


_BOOL_12 = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}


_INT_12 = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")


_FLOAT_12 = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")


_INF_12 = re.compile(r"[-+]?\.(?:inf|Inf|INF)")


_NAN_12 = re.compile(r"\.(?:nan|NaN|NAN)")


_NUMBER_FIRST = frozenset("-+.0123456789")  # how every YAML 1.2 int, float, inf and nan starts


_RESOLVER_11 = Resolver()  # PyYAML's YAML 1.1 rules, only to detect ambiguous scalars


_constructor = yaml.SafeLoader.__new__(yaml.SafeLoader)  # only its scalar constructors are used


yaml.constructor.SafeConstructor.__init__(_constructor)


# How a plain scalar starts if either schema may read it as something other than a string (PyYAML
# picks its YAML 1.1 patterns by first character); any other plain scalar is a string in both.
MAYBE_TYPED = frozenset({"", "~", *"nNtTfF", *_NUMBER_FIRST, *(c for c in Resolver.yaml_implicit_resolvers if c)})


if None in Resolver.yaml_implicit_resolvers:  # a pattern for any first character: no shortcut
    MAYBE_TYPED = frozenset(map(chr, range(0x110000)))


class ScalarError(ValueError):
    """A scalar that cannot be read (the caller reports it at the scalar's location)."""


class Refusal(NamedTuple):
    """A scalar that is reported: why, and the value it stands for meanwhile."""

    message: str
    value: Any


# Plain scalars that both schemas read as the same value, whatever PyYAML's 1.1 rules would do
# with them in general: the null and bool words, decimal integers without leading zeros, and
# floats with a dot (1.1 wants one) and a signed exponent (1.1 wants the sign). Most of a spec's
# numbers are of this kind; checking them against YAML 1.1 costs 1-5 us each.
_SAME_WORDS: dict[str, Any] = {**dict.fromkeys(_NULL_12), **_BOOL_12}


_SIGN_OR_DIGIT = frozenset("-+0123456789")


_SAME_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")


_SAME_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]*(?:[eE][-+][0-9]+)?")


def check_int_length(text: str) -> None:
    """ScalarError for an integer literal of more than MAX_INT_DIGITS digits; its sign and
    ``0o``/``0x`` prefix do not count. The length alone clears almost every literal first: this
    is on the path of every JSON integer."""
    if len(text) <= MAX_INT_DIGITS:
        return
    body = text.lstrip("+-")
    digits = len(body) - 2 if body[:2] in ("0o", "0x") else len(body)
    if digits > MAX_INT_DIGITS:
        raise ScalarError(f"integer with {digits} digits is too long for a spec")


def resolve_plain(value: str) -> Any:
    """A plain scalar under YAML 1.2, or a :class:`Refusal` if unreadable or YAML 1.1 reads it differently."""
    if value in _SAME_WORDS:
        return _SAME_WORDS[value]
    if value[:1] in _SIGN_OR_DIGIT:
        if _SAME_INT.fullmatch(value) and len(value) <= MAX_INT_DIGITS:
            return int(value)
        if _SAME_FLOAT.fullmatch(value):
            number = float(value)
            if math.isfinite(number):
                return number
    return _checked_plain(value)


def _checked_plain(value: str) -> Any:
    """``resolve_plain`` without its shortcut: YAML 1.2, then compared with what YAML 1.1 reads."""
    try:
        result = _resolve_12(value)
    except ScalarError as exc:
        return Refusal(str(exc), None)
    tag_11 = _RESOLVER_11.resolve(yaml.ScalarNode, value, (True, False))
    if tag_11 != STR:
        try:
            old = _constructor.yaml_constructors[tag_11](_constructor, yaml.ScalarNode(tag_11, value))
        except (ValueError, KeyError, TypeError):
            old = value
        if isinstance(old, float) and not math.isfinite(old):
            old = _nonfinite(old)
        if type(old) is not type(result) or old != result:
            return Refusal(_ambiguous(value, old, result), result)
    return result


def resolve_tagged(value: str, tag: str) -> Any:
    """A scalar with an explicit tag, or a :class:`Refusal` (a tag outside the core schema, a bad value)."""
    if tag == "!" or tag == STR:  # `!` is the non-specific tag: a string
        return value
    if tag not in SCALAR_TAGS:
        return Refusal(f"tag {shown_tag(tag)} is not allowed in a spec; remove it", None)
    try:
        result = _resolve_12(value)
    except ScalarError as exc:
        return Refusal(str(exc), None)
    kind = tag.removeprefix(TAG)
    if kind == "float" and isinstance(result, int) and not isinstance(result, bool):
        result = float(result)
    expected = {"int": int, "float": float, "bool": bool, "null": type(None)}[kind]
    if type(result) is not expected and not (kind == "float" and isinstance(result, dict)):
        return Refusal(f"{value!r} is not a valid !!{kind}; fix the value or remove the tag", None)
    return result


def shown_tag(tag: str) -> str:
    """A tag as it is written: ``!!python/object``, ``!local``."""
    return "!!" + tag.removeprefix(TAG) if tag.startswith(TAG) else tag


def _resolve_12(value: str) -> Any:
    """A plain scalar under the YAML 1.2 core schema; non-finite floats in the spec encoding."""
    if value in _NULL_12:
        return None
    if value in _BOOL_12:
        return _BOOL_12[value]
    if value[:1] not in _NUMBER_FIRST:
        return value
    if _INT_12.fullmatch(value):
        check_int_length(value)
        if value.startswith(("0o", "0x")):
            return int(value[2:], 8 if value[1] == "o" else 16)
        return int(value)
    if _FLOAT_12.fullmatch(value):
        result = float(value)
        return result if math.isfinite(result) else _nonfinite(result)
    if _INF_12.fullmatch(value):
        return _nonfinite(-math.inf if value.startswith("-") else math.inf)
    if _NAN_12.fullmatch(value):
        return _nonfinite(math.nan)
    return value


def _ambiguous(value: str, old: Any, new: Any) -> str:
    def show(x: Any) -> str:
        if isinstance(x, str):
            return f"the string {x!r}"
        return json.dumps(x) if x is None or isinstance(x, (bool, int, float)) else f"a {type(x).__name__}"

    plain = [json.dumps(x) for x in (old, new) if x is not None and isinstance(x, (bool, int, float))]
    return (f"{value!r} is read as {show(old)} by YAML 1.1 and as {show(new)} by YAML 1.2; quote it "
            f"({json.dumps(value)}) for the string" + "".join(f" or write {x}" for x in plain))  # fmt: skip


def _nonfinite(value: float) -> dict[str, str]:
    return {"float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
