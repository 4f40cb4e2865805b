"""The top class's argument values a user chose: a named variant of the spec (``variants:``,
Ultralytics' sizes n/s/m/l/x), then single overrides (``--set width=0.5``, ``args={...}``).

A choice is applied by making its values the top class's defaults: the model ``fxgen.load``
builds, the one ``fxgen show`` describes and the class ``fxgen generate`` writes (whose
constructor defaults they become) are then all the chosen one, through the same stages as a
spec written with those defaults. Plain data, nothing here checks or builds anything
(``fxgen.check.arguments`` does the checking).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fxgen.write.header import choice_text

__all__ = ["Choice"]


@dataclass(frozen=True)
class Choice:
    """A variant's name (or None) and overrides (name -> encoded value, applied after the
    variant's), and what the user wrote them with (``--set``, ``load(args=...)``), for messages."""

    variant: str | None = None
    values: tuple[tuple[str, Any], ...] = ()
    origin: str = "--set"

    @classmethod
    def of(cls, variant: str | None = None, values: Mapping[str, Any] | None = None, origin: str = "--set") -> Choice:
        return cls(variant, tuple((values or {}).items()), origin)

    def __bool__(self) -> bool:
        return self.variant is not None or bool(self.values)

    def describe(self) -> str:
        """``variant 's', num_classes=80``: what was chosen, for messages."""
        parts = [f"variant {self.variant!r}"] if self.variant is not None else []
        return ", ".join(parts + [f"{name}={value!r}" for name, value in self.values])

    def key(self) -> str | None:
        """Canonical text of the choice (what a generated file's header hash takes in), or None."""
        return choice_text(self.variant, self.values)
