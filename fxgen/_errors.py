"""The one exception tree of fxgen.

    FxgenError                 base of everything fxgen raises on purpose
    ├── SpecError              a spec (file or object) is invalid; carries every Diagnostic found
    ├── ExportError            a module cannot be traced or turned into a spec
    ├── WeightsError           a safetensors file does not fit the spec
    └── GenerateError          generated output cannot be written (stale/hand-edited file, I/O)

Every error renders as one or more ``PATH:LINE:COL: error: message`` lines, the format
editors and CI annotators understand; the CLI prints ``str(error)`` and exits 1.
``Suggestions`` finds the name a misspelt one meant (``did you mean 'torch.relu'?``).
``printable_path`` is how every diagnostic prints a file name: on one line, whatever it holds.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Diagnostic",
    "ExportError",
    "FxgenError",
    "GenerateError",
    "Location",
    "SpecError",
    "Suggestions",
    "WeightsError",
    "closest_name",
    "did_you_mean",
    "printable_path",
]


def printable_path(path: str | os.PathLike[str]) -> str:
    """A file name as diagnostics print it, always on one line and never read as a command.

    File names are attacker text (a spec's, a symlink's target): a line break in one would turn
    one diagnostic into several lines, the later ones the attacker's (``::error file=...::``, which
    GitHub Actions reads as an annotation at the start of a line), and escape sequences would
    repaint the terminal. A name holding any character Python does not call printable (line
    breaks, tabs, control and format characters), or starting with ``::``, is printed as a Python
    string literal, ``'specs/a\\nb.yaml'``; any other name as it is."""
    text = os.fspath(path)
    return text if text.isprintable() and not text.startswith("::") else repr(text)


@dataclass(frozen=True, order=True)
class Location:
    """A place in a source file; ``line`` and ``column`` are 1-based, 0 when unknown."""

    path: str = "<spec>"
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return printable_path(self.path)
        return f"{printable_path(self.path)}:{self.line}:{max(self.column, 1)}"


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem at one place."""

    location: Location
    message: str

    def __str__(self) -> str:
        return f"{self.location}: error: {self.message}"


class FxgenError(Exception):
    """Base class of all errors fxgen raises on purpose (never a bug)."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        self.location = location
        self.message = message
        super().__init__(str(Diagnostic(location, message)) if location else message)


class SpecError(FxgenError):
    """A spec is invalid. ``diagnostics`` holds every problem found, sorted by place."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics: list[Diagnostic] = sorted(set(diagnostics))
        if not self.diagnostics:
            raise ValueError("SpecError needs at least one diagnostic")
        first = self.diagnostics[0]
        self.location = first.location
        self.message = first.message
        Exception.__init__(self, "\n".join(map(str, self.diagnostics)))

    @classmethod
    def at(cls, location: Location, message: str) -> SpecError:
        return cls([Diagnostic(location, message)])


class ExportError(FxgenError):
    """A module cannot be traced, or a traced graph cannot be written as a spec."""


class WeightsError(FxgenError):
    """A weights file is missing keys, has extra keys, or has tensors of the wrong shape/dtype."""


class GenerateError(FxgenError):
    """Generated output cannot be written: a hand-edited file, or an I/O failure."""


class Suggestions:
    """The name a misspelt one was probably meant to be, among a fixed set of names. Only names
    with the same first letter are compared: a typo keeps it nearly always, and it keeps each
    lookup to tens of microseconds against torch's thousand names. For error messages only.
    ``cutoff``: difflib's similarity a suggestion needs (0.75 against a library's names; the few
    names in scope of a spec take difflib's own 0.6, so `bn` finds `bn1` and `rr` finds `r`)."""

    def __init__(self, names: Iterable[str], cutoff: float = 0.75) -> None:
        self._by_letter: dict[str, list[str]] = {}
        self._cutoff = cutoff
        for name in sorted({n for n in names if isinstance(n, str) and n}):
            self._by_letter.setdefault(name[0].lower(), []).append(name)

    def closest(self, word: str) -> str | None:
        if not isinstance(word, str) or not word or len(word) > 100:
            return None
        same_letter = self._by_letter.get(word[0].lower(), ())
        longer = [n for n in same_letter if n.startswith(word)]
        if len(longer) == 1:  # a shortened name: `kernel` for `kernel_size`
            return longer[0]
        # a similarity of `cutoff` needs the shorter word to be at least cutoff / (2 - cutoff) times the longer
        shortest = self._cutoff / (2 - self._cutoff)
        near = [n for n in same_letter if shortest * len(word) <= len(n) <= len(word) / shortest]
        found = difflib.get_close_matches(word, near, n=1, cutoff=self._cutoff)
        return found[0] if found else None


def closest_name(word: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` (the names in scope where ``word`` was not found: modules, nodes,
    arguments) that ``word`` is probably a misspelling of, if any: the one matching every "not
    declared" and "not defined" message uses."""
    return Suggestions((n for n in names if n != word), cutoff=0.6).closest(word)


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """``" (did you mean 'bn1'?)"`` when ``word`` is probably a misspelling of one of ``names``
    (``closest_name``), else ``""``."""
    close = closest_name(word, names)
    return f" (did you mean {close!r}?)" if close else ""
