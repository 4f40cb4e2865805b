"""The value encoding of specs, in both directions.

Spec values are JSON: scalars, lists, ``"%name"`` node references, and single-key tagged
mappings for every other Python value a torch.fx graph carries (tuple, slice, Ellipsis, dtype,
device, memory format, layout, non-finite float, complex, dict, torch.Size). ``decode`` turns
them into Python values (node references through a callback), ``encode`` does the reverse for
export. Nothing here imports a module a spec names: dtypes and the like are looked up in fixed
tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import torch

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


DTYPES: dict[str, torch.dtype] = {
    name: getattr(torch, name)
    for name in ["float16", "float32", "float64", "bfloat16", "complex64", "complex128", "int8", "int16", "int32", "int64", "uint8", "bool"]
}


MEMORY_FORMATS: dict[str, torch.memory_format] = {
    name: getattr(torch, name)
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")
}


LAYOUTS: dict[str, torch.layout] = {
    name: getattr(torch, name)
    for name in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn")
}


_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


TAGS = (
    "tuple", "slice", "ellipsis", "dtype", "device", "memory_format", "layout",
    "float", "complex", "dict", "size", "arg", "module", "repeat",
)  # fmt: skip
# Format 2's tags for declarations: substituted (``fxgen.spec.resolve``) before anything decodes.
DECLARATION_TAGS = frozenset({"arg", "module", "repeat"})


_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


_FORMAT_NAMES = {v: k for k, v in MEMORY_FORMATS.items()}


_LAYOUT_NAMES = {v: k for k, v in LAYOUTS.items()}


class UnencodableValue(ValueError):
    """A Python value the spec format has no encoding for (export reports it with its node)."""


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


# Tags whose body is a name looked up in a table (``decode`` cannot fail on a name the table has).
_NAMED_TAGS: dict[str, Any] = {"dtype": DTYPES, "memory_format": MEMORY_FORMATS, "layout": LAYOUTS, "float": _FLOATS}


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
    if tag == "tuple":
        return type(body) is list and plain_refs(body, refs)
    if tag == "slice":
        return type(body) is list and len(body) == 3 and plain_refs(body, refs)
    if tag == "dict":
        # validation reads a one-key {size: ...} mapping anywhere as a torch.Size tag
        if type(body) is not dict or list(body) == ["size"]:
            return False
        return all(type(k) is str and plain_refs(v, refs) for k, v in body.items())
    if tag == "ellipsis":
        return body is None
    table = _NAMED_TAGS.get(tag)
    return table is not None and type(body) is str and body in table


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
    if len(value) != 1:  # the schema allows two keys for a repeat only
        raise ValueError(_NOT_A_VALUE.format(tag="repeat"))
    ((tag, body),) = value.items()
    if tag == "tuple":
        return tuple(decode(body, ref) if type(body) is list else (decode(v, ref) for v in body))
    if tag == "slice":
        return slice(*(decode(body, ref) if type(body) is list else (decode(v, ref) for v in body)))
    if tag == "ellipsis":
        return Ellipsis
    if tag == "dtype":
        return DTYPES[body]
    if tag == "device":
        return torch.device(body)
    if tag == "memory_format":
        return MEMORY_FORMATS[body]
    if tag == "layout":
        return LAYOUTS[body]
    if tag == "float":
        return _FLOATS[body]
    if tag == "complex":
        try:
            return complex(float(body[0]), float(body[1]))
        except OverflowError:  # an integer part beyond a float's range
            raise ValueError(f"complex part too large for a float in {body!r}; use parts below 1.8e308") from None
    if tag == "dict":
        return {k: decode(v, ref) for k, v in body.items()}
    if tag == "size":
        return torch.Size(body)
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


def dtype_name(dtype: torch.dtype) -> str:
    """The spec's name of a dtype (raises UnencodableValue for exotic dtypes)."""
    try:
        return _DTYPE_NAMES[dtype]
    except KeyError:
        raise UnencodableValue(
            f"dtype {dtype} is not supported by the spec format (supported: {', '.join(DTYPES)})"
        ) from None


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
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)  # numpy.float64 is a float subclass YAML cannot write
        return {"float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, torch.Size):
        return {"size": [int(d) for d in value]}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return {"tuple": [encode(v, ref) for v in value]}
    if isinstance(value, list):
        return [encode(v, ref) for v in value]
    if isinstance(value, slice):
        return {"slice": [encode(v, ref) for v in (value.start, value.stop, value.step)]}
    if value is Ellipsis:
        return {"ellipsis": None}
    if isinstance(value, torch.dtype):
        return {"dtype": dtype_name(value)}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, torch.memory_format) and value in _FORMAT_NAMES:
        return {"memory_format": _FORMAT_NAMES[value]}
    if isinstance(value, torch.layout) and value in _LAYOUT_NAMES:
        return {"layout": _LAYOUT_NAMES[value]}
    if isinstance(value, complex) and math.isfinite(value.real) and math.isfinite(value.imag):
        return {"complex": [float(value.real), float(value.imag)]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {str.__str__(k): encode(v, ref) for k, v in value.items()}}
    raise UnencodableValue(
        f"cannot write a {type(value).__qualname__} value ({_short(value)}) in a spec; the value encoding "
        "(docs/spec-format.md, Values) has no form for it"
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
