"""What a value tag is (``Tag``, and ``Named`` for the tags whose body names an entry of a fixed
table), and what it writes source through (``Writer``): the base every tag module of
``fxgen.spec.tags`` builds on, apart from the registry so that tag modules import no registry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal, Protocol

__all__ = ["Named", "Tag", "UnencodableValue", "Writer"]


class UnencodableValue(ValueError):
    """A Python value the spec format has no encoding for (export reports it with its node)."""


class Writer(Protocol):
    """What a tag needs to write itself as Python source; codegen implements it."""

    def value(self, value: Any) -> str:
        """The source of an encoded value inside the body."""

    def number(self, value: int | float) -> str:
        """A number literal as black writes it."""

    def string(self, value: str) -> str:
        """A string literal as black writes it."""

    def name(self, value: str) -> str:
        """An identifier, checked (raises on anything else)."""

    def module(self, name: str) -> None:
        """The generated file imports ``name`` (``torch`` or a standard-library module)."""


class Tag:
    """One value tag: subclass it in a module of its own and ``register`` an instance."""

    name: ClassVar[str]
    # What the body is, for the walks that look for references, ``{arg: ...}`` and values to check:
    # an encoded list ("list": tuple, slice), a mapping of names to encoded values ("mapping":
    # dict), or a leaf that holds no encoded value (None).
    holds: ClassVar[Literal["list", "mapping"] | None] = None

    def decode(self, body: Any, value: Callable[[Any], Any]) -> Any:
        """The Python value of a (schema-valid) body; ``value`` decodes an encoded value inside it."""
        raise NotImplementedError

    def encodes(self, value: Any) -> bool:
        """Is ``value`` one this tag writes (``encode`` may still raise UnencodableValue)?"""
        return False

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        """The body for ``value``; ``item`` encodes a Python value inside it."""
        raise NotImplementedError

    def plain(self, body: Any, walk: Callable[[Any], bool]) -> bool:
        """Can ``decode`` not fail on this body, with nothing more to check (``walk`` answers for
        an encoded value inside it)? Validation's fast path; False sends it to the full checks."""
        return False

    def problem(self, body: Any) -> str | None:
        """What is wrong with a schema-valid body that the schema cannot see, with what to write."""
        return None

    def render(self, body: Any, out: Writer) -> str:
        """The body as Python source."""
        raise NotImplementedError

    def compound(self, body: Any, inner: Callable[[Any], bool]) -> bool:
        """Is the source a call, attribute or operator (black's non-trivial slice bound)?"""
        return True

    def negative(self, body: Any) -> bool:
        """Is the source written with a leading minus sign?"""
        return False

    def attribute(self, body: Any) -> bool:
        """Is the source a plain attribute (``torch.float32``) without a call?"""
        return False


class Named(Tag):
    """A tag whose body is a name in a fixed table of torch values (nothing a spec names is imported),
    written as the attribute of torch of that name (``torch.float32``)."""

    table: ClassVar[dict[str, Any]]
    kind: ClassVar[type]

    def __init__(self) -> None:
        self.names = {v: k for k, v in self.table.items()}

    def decode(self, body: Any, value: Callable[[Any], Any]) -> Any:
        return self.table[body]

    def encodes(self, value: Any) -> bool:
        return isinstance(value, self.kind) and value in self.names

    def encode(self, value: Any, item: Callable[[Any], Any]) -> Any:
        return self.names[value]

    def plain(self, body: Any, walk: Callable[[Any], bool]) -> bool:
        return type(body) is str and body in self.table

    def render(self, body: Any, out: Writer) -> str:
        out.module("torch")
        return f"torch.{out.name(body)}"

    def attribute(self, body: Any) -> bool:
        return True
