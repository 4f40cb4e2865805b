"""Value tags: one module per kind of tagged spec value, and the registry the stages look them up in.

A spec value that JSON has no form for is a single-key mapping, ``{tag: body}``
(``{tuple: [...]}``, ``{dtype: float32}``). Everything the stages need to know of one tag lives in
that tag's module, as one ``Tag`` subclass: how its body decodes to a Python value and how such a
value encodes back (spec.values), whether its body holds further encoded values that the
reference, argument and check walks go into (spec.resolve, check, construct, codegen), the check
the schema cannot make, and how it is written as Python source (codegen). Rendering text needs
nothing of codegen: a tag writes through ``Writer``, which codegen implements. Adding a tag is
one module here plus its line in the registration below, the schema's enum and the docs
(docs/architecture.md, "Where a new feature goes").
"""

from __future__ import annotations

from collections.abc import Iterable

from fxgen.spec.tags import (
    complexes,
    devices,
    dicts,
    dtypes,
    ellipsis,
    floats,
    layouts,
    memory_formats,
    sizes,
    slices,
    tuples,
)
from fxgen.spec.tags.base import Named, Tag, UnencodableValue, Writer

__all__ = ["DECLARATION_TAGS", "TAGS", "Named", "Tag", "UnencodableValue", "Writer", "lookup", "register", "registered", "unregister"]


_REGISTRY: dict[str, Tag] = {}


def register(tag: Tag) -> Tag:
    """Make ``tag`` known to every stage (the package registers its own tags; tests add toy tags)."""
    if tag.name in _REGISTRY or tag.name in DECLARATION_TAGS:
        raise ValueError(f"value tag {tag.name!r} is registered already")
    _REGISTRY[tag.name] = tag
    return tag


def unregister(name: str) -> None:
    """Forget a registered tag (tests that registered a toy tag)."""
    del _REGISTRY[name]


def lookup(name: str) -> Tag | None:
    """The registered tag called ``name``, or None (a declaration tag, or an unknown one)."""
    return _REGISTRY.get(name)


def registered() -> Iterable[Tag]:
    """Every registered tag, in registration order (the order ``encode`` asks them in)."""
    return _REGISTRY.values()


# Format 2's tags for declarations: substituted (``fxgen.spec.resolve``) before anything decodes
# (``for`` and ``in``: the keys of a ``for`` over module declarations, beside ``module``).
DECLARATION_TAGS = frozenset({"arg", "module", "repeat", "for", "in"})

for _tag in (tuples.TAG, slices.TAG, ellipsis.TAG, dtypes.TAG, devices.TAG, memory_formats.TAG, layouts.TAG,
             floats.TAG, complexes.TAG, dicts.TAG, sizes.TAG):  # the schema's order (encode asks in it)  # fmt: skip
    register(_tag)

# The tags the schema lists, in its order: the value tags, then format 2's declaration tags.
TAGS = (*_REGISTRY, "arg", "module", "repeat", "for", "in")
