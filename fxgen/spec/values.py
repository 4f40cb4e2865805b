"""The value encoding of specs, in both directions.

Spec values are JSON: scalars, lists, ``"%name"`` node references, and single-key tagged
mappings for every other Python value a torch.fx graph carries (tuple, slice, Ellipsis, dtype,
device, memory format, layout, non-finite float, complex, dict, torch.Size). ``decode`` turns
them into Python values (node references through a callback), ``encode`` does the reverse for
export. What each tag means is its own module's (``fxgen.spec.tags``): this module walks the
plain JSON (scalars, lists, references) and hands each tagged mapping to its tag. Nothing here
imports a module a spec names: dtypes and the like are looked up in fixed tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from fxgen.spec.tags import DECLARATION_TAGS, TAGS, UnencodableValue, lookup, registered
from fxgen.spec.tags.dtypes import DTYPES, dtype_name
from fxgen.spec.tags.layouts import LAYOUTS
from fxgen.spec.tags.memory_formats import MEMORY_FORMATS

__all__ = [
    "DECLARATION_TAGS",
    "DTYPES",
    "LAYOUTS",
    "MEMORY_FORMATS",
    "TAGS",
    "UnencodableValue",
    "decode",
    "decode_kwargs",
    "dtype_name",
    "encode",
    "iter_refs",
    "parse_ref",
    "plain_refs",
]

def parse_ref(value: str) -> str | None:
    """``"%x"`` -> ``"x"``; ``"%%x"`` (an escaped literal) and plain strings -> None."""
    if value.startswith("%") and not value.startswith("%%"):
        return value[1:]
    return None


def iter_refs(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Every node reference inside an encoded value, with its path relative to ``value``."""
    if isinstance(value, str):
        ref = parse_ref(value)
        if ref is not None:
            yield path, ref
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from iter_refs(item, (*path, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from iter_refs(item, (*path, key))


def plain_refs(value: Any, refs: list[str]) -> bool:
    """Append the names of the node references in ``value`` to ``refs``, in ``iter_refs`` order;
    False (and ``refs`` incomplete) if ``value`` holds anything but scalars, references, lists
    and the tags ``decode`` cannot fail on. One walk instead of validation's several: a value
    this accepts has no torch.Size or device to check, and decodes. Anything else (a device, a
    size, a complex number, a ``{dict: {size: ...}}``, a malformed tag) gets the full checks.
    """
    kind = type(value)
    if kind is str:
        if value[:1] == "%" and value[1:2] != "%":
            refs.append(value[1:])
        return True
    if kind is list:
        for item in value:
            kind = type(item)
            if kind is str:
                if item[:1] == "%" and item[1:2] != "%":
                    refs.append(item[1:])
            elif (kind is not int and kind is not float and kind is not bool and item is not None
                  and not plain_refs(item, refs)):  # fmt: skip
                return False
        return True
    if kind is int or kind is float or kind is bool or value is None:
        return True
    if kind is not dict or len(value) != 1:
        return False
    ((tag, body),) = value.items()
    kind_ = lookup(tag)
    return kind_ is not None and kind_.plain(body, lambda inner: plain_refs(inner, refs))


def decode(value: Any, ref: Callable[[str], Any]) -> Any:
    """Encoded spec value -> Python value; ``ref(name)`` supplies the value of node ``name``."""
    kind = type(value)  # exact types first: the graph builder decodes every node's arguments
    if kind is str:
        if value[:1] == "%":
            return value[1:] if value[1:2] == "%" else ref(value[1:])
        return value
    if kind is list:
        out = []
        for item in value:
            kind = type(item)
            if (kind is str and item[:1] != "%") or kind is int or kind is float or item is None:
                out.append(item)
            else:
                out.append(decode(item, ref))
        return out
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        if value.startswith("%"):
            return value[1:] if value.startswith("%%") else ref(value[1:])
        return value
    if isinstance(value, list):
        return [decode(v, ref) for v in value]
    if len(value) != 1:  # the schema allows two keys for a repeat only, three for a `for` over module declarations
        tag = "for" if "for" in value else "repeat"
        raise ValueError(f"{{{tag}: ..., module: ...}} stands for modules as items of a list of constructor "
                         "arguments (nn.Sequential's arguments, nn.ModuleList's list), not as a value of its own")  # fmt: skip
    ((tag, body),) = value.items()
    kind_ = lookup(tag)
    if kind_ is not None:
        return kind_.decode(body, lambda inner: decode(inner, ref))
    if tag in DECLARATION_TAGS:
        raise ValueError(_NOT_A_VALUE.format(tag=tag))
    raise ValueError(f"unknown value tag {tag!r}")


_NOT_A_VALUE = ("{{{tag}: ...}} belongs in a format-2 declaration (module arguments, tensor shapes and "
                "inits); a node argument may hold {{arg: ...}} only, in a spec that says `fxgen: 2`")


def decode_kwargs(kwargs: dict[str, Any], ref: Callable[[str], Any]) -> dict[str, Any]:
    """A ``kwargs`` mapping (plain keys, encoded values) -> Python dict."""
    if not kwargs:
        return {}  # most calls: a new dict, as below, without the comprehension
    return {key: decode(value, ref) for key, value in kwargs.items()}


def encode(value: Any, ref: Callable[[Any], str | None] = lambda _: None) -> Any:
    """Python value -> encoded spec value. ``ref(v)`` names graph nodes (returns None otherwise)."""
    name = ref(value)
    if name is not None:
        return "%" + name
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)  # IntEnum and friends become plain ints (YAML cannot write them)
    if isinstance(value, str):
        text = str.__str__(value)  # a plain str, also for str subclasses
        return "%" + text if text.startswith("%") else text
    if isinstance(value, float) and math.isfinite(value):
        return float(value)  # numpy.float64 is a float subclass YAML cannot write
    if isinstance(value, list):
        return [encode(v, ref) for v in value]
    for tag in registered():
        if tag.encodes(value):
            return {tag.name: tag.encode(value, lambda inner: encode(inner, ref))}
    raise UnencodableValue(
        f"cannot write a {type(value).__qualname__} value ({_short(value)}) in a spec; the value encoding "
        "(docs/spec-format.md, Values) has no form for it"
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
