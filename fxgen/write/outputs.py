"""Generated files: which spec writes which file, and whether that file is up to date.

Deciding that a generated file is current needs only its header and the spec's bytes (both
hashed, ``fxgen.write.header``), so a no-op ``fxgen generate --check`` imports neither torch nor
black. A file edited by hand, written by something else, or left behind by a deleted spec (an
orphan) is recognised here too, when a run starts and again right before a file is replaced or
an orphan removed (:func:`guard`, :func:`remove_orphan`): runs overlap, and people edit files
while fxgen renders. Which spec names make a harmful file is decided here (:func:`unsafe_name`).
Only stale or missing files are rendered (``fxgen.codegen``), and only ``fxgen.write.atomic``
writes.
"""

from __future__ import annotations

import difflib
import keyword
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fxgen._errors import Diagnostic, GenerateError, Location, SpecError, printable_path
from fxgen.read.files import GENERATED_BYTES, SPEC_BYTES, bounded_bytes, bounded_text
from fxgen.read.paths import SPEC_SUFFIXES, label_of, spec_of_label
from fxgen.write.header import (
    VERSION,
    Header,
    body_digest,
    choice_text,
    safe_label,
    spec_digest,
    split,
)
from fxgen.write.targets import check_targets

__all__ = ["Job", "guard", "orphans", "plan", "refusal", "remove_orphan", "unified_diff", "unsafe_name"]


@dataclass
class Job:
    """One spec and its output file, with what is known about the output's state."""

    spec: Path
    out: Path
    label: str
    raw: bytes
    status: str  # "current" | "missing" | "stale" | "edited" | "foreign"
    old: str | None = None
    shapes: bool = False  # generated with `fxgen generate --shapes`
    imported: str | None = None  # the digest of the files the spec imports classes from
    variant: str | None = None  # `fxgen generate --variant`
    arguments: tuple[tuple[str, Any], ...] = ()  # `fxgen generate --set NAME=VALUE`, in order

    @property
    def digest(self) -> str:
        choice = choice_text(self.variant, self.arguments)
        return spec_digest(self.raw, shapes=self.shapes, choice=choice, imported=self.imported)


def plan(
    specs: Iterable[Path],
    out_dir: Path,
    *,
    shapes: bool = False,
    imports: Iterable[str] = (),
    variant: str | None = None,
    arguments: tuple[tuple[str, Any], ...] = (),
) -> list[Job]:
    """A Job per spec, its status decided from hashes alone (``shapes``, ``variant`` and
    ``arguments``: for ``--shapes``, ``--variant`` and ``--set``, which make other files than the
    spec alone). ``imports``: modules the generated files may import (``--allow``), which no file
    may be named after; see :func:`unsafe_name`."""
    specs = list(specs)
    reserved = frozenset(name.split(".")[0] for name in imports)
    unsafe = [Diagnostic(Location(str(spec)), problem) for spec in specs
              if (problem := unsafe_name(spec, out_dir, reserved))]  # fmt: skip
    if unsafe:
        raise SpecError(unsafe)
    jobs: list[Job] = []
    seen: dict[Path, Path] = {}
    for spec in specs:
        out = out_dir / f"{spec.stem}.py"
        if out in seen:
            raise GenerateError(f"{printable_path(spec)} and {printable_path(seen[out])} would both generate "
                                f"{printable_path(out)}; rename one of them", Location(str(spec)))  # fmt: skip
        seen[out] = spec
    check_targets([(f"the generated file of {printable_path(spec)}", out) for out, spec in seen.items()],
                  [(f"the spec {printable_path(spec)}", spec) for spec in specs])  # fmt: skip
    for out, spec in seen.items():
        try:
            raw = bounded_bytes(spec, SPEC_BYTES)
        except OSError as exc:
            raise SpecError.at(Location(str(spec)), f"cannot read spec: {exc.strerror or exc}") from None
        jobs.append(_status(Job(spec, out, label_of(spec), raw, "missing", shapes=shapes, imported=_imported(spec, raw),
                                variant=variant, arguments=arguments)))  # fmt: skip
    return jobs


def _imported(spec: Path, raw: bytes) -> str | None:
    """The digest of the files ``spec`` imports classes from; a spec whose imports cannot be
    read gets a digest no header holds, so it is rendered, and rendering reports why."""
    if b"imports" not in raw:  # most specs: no need to parse them (or import the YAML reader) to know
        return None
    from fxgen.read.imports import imported_digest, with_imports
    from fxgen.read.reader import parse_text

    try:
        return imported_digest(with_imports(parse_text(raw, str(spec), json_syntax=spec.suffix == ".json"), spec))
    except SpecError:
        return "unreadable"


# Modules a generated file imports whatever its spec (``import torch``, ``import typing``), and
# fxgen itself; every standard-library module is reserved too (``sys.stdlib_module_names``).
_ALWAYS_IMPORTED = frozenset({"torch", "fxgen"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def unsafe_name(spec: Path, out_dir: Path, reserved: frozenset[str] = frozenset()) -> str | None:
    """Why ``spec``'s generated file, ``out_dir/<stem>.py``, would be harmful, or None when it is fine.

    The file is always named after the spec, so a spec whose stem is no importable module name
    is refused, never renamed: one rule, which imports, tools and ``git`` patterns can rely on.
    Refused: a stem that is not an ASCII identifier (``my-model.v2``: not importable; non-ASCII
    names are NFKC-normalised on import, so ``ﬁle`` would look for ``file``), a keyword, a dunder
    name (``__init__`` would make ``out_dir`` a package, ``__main__`` its entry point), and the name
    of a module generated files import or Python ships (``torch``, ``typing``, ``copy``, and every
    other ``sys.stdlib_module_names``, plus the top-level packages in ``reserved``): running any
    script from ``out_dir`` would import the generated file instead."""
    stem = spec.stem
    problem = _problem(stem, reserved, out_dir)
    if problem is None:
        return None
    name = re.sub(r"[^A-Za-z0-9]+", "_", stem).strip("_") or "model"
    name = f"model_{name}" if name[0].isdigit() else name
    suggestion = name if _problem(name, reserved, out_dir) is None else f"{name.strip('_')}_model"
    out = out_dir / f"{stem}.py"
    return (f"would generate {printable_path(out)}, {problem}; rename the spec (to {suggestion}{spec.suffix}, "
            "for example)")


def _problem(stem: str, reserved: frozenset[str], out_dir: Path) -> str | None:
    if keyword.iskeyword(stem):
        return f"which Python cannot import: {stem!r} is a Python keyword"
    if not _IDENTIFIER.fullmatch(stem):
        return f"which Python cannot import: {stem!r} is not a Python identifier (ASCII letters, digits, _)"
    if stem.startswith("__") and stem.endswith("__"):
        return "a name Python reserves"
    if stem in _ALWAYS_IMPORTED or stem in reserved or stem in sys.stdlib_module_names:
        return f"which shadows the module {stem} for every script run from {printable_path(out_dir)}"
    return None


def _status(job: Job) -> Job:
    try:
        raw = bounded_bytes(job.out, GENERATED_BYTES)
    except FileNotFoundError:
        if job.out.is_symlink():  # a link to nothing: put there by someone, and no file fxgen wrote
            job.status = "foreign"
        return job
    except OSError as exc:
        raise GenerateError(f"cannot read generated file: {exc.strerror or exc}; remove it, and fxgen writes it again",
                            Location(str(job.out))) from None  # fmt: skip
    try:
        job.status, job.old = _state(job, raw)
    except UnicodeDecodeError as exc:
        raise GenerateError(f"cannot read generated file: {exc}", Location(str(job.out))) from None
    return job


def _state(job: Job, raw: bytes) -> tuple[str, str]:
    """The status of ``raw`` as ``job``'s output, and its text (newlines read as ``open`` reads them,
    so a checkout with CRLF line ends is still current)."""
    text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    header, body = split(text)
    if header is None:
        return "foreign", text
    if body_digest(body) != header.body_digest:
        return "edited", text
    if (header.version, header.label, header.spec_digest) == (VERSION, safe_label(job.label), job.digest):
        return "current", text
    return "stale", text


def guard(job: Job, *, force: bool) -> Callable[[bytes | None], None]:
    """The check made right before ``job.out`` is replaced (``fxgen.write.atomic.replacing``): the
    file there is looked at again, so an edit made while fxgen was rendering is kept, as one made
    before the run is. Another fxgen run's output (intact, whatever its version) may be replaced."""

    def check(current: bytes | None) -> None:
        if force or current is None:
            return
        try:
            status = _state(job, current)[0]
        except UnicodeDecodeError:
            status = "foreign"
        if status in ("edited", "foreign"):
            raise GenerateError(refusal(job, status, when="while fxgen was generating it"), Location(str(job.out)))

    return check


def refusal(job: Job, status: str | None = None, *, when: str = "since fxgen wrote it") -> str:
    """Why ``job.out`` is left as it is (its status at planning time, or ``status`` found later)."""
    if (status or job.status) == "edited":
        return (f"{printable_path(job.out)} was edited by hand {when}; move your change into "
                f"{printable_path(job.label)} (or pass --force to overwrite it)")
    dangling = _dangling(job.out)
    if dangling is not None:
        return (f"{printable_path(job.out)} is a symlink to {printable_path(dangling)}, which does not exist; "
                "fxgen writes a file there, not through the link: remove the link, or pass --force to replace "
                "the link with the generated file")
    if status is not None:
        return (f"{printable_path(job.out)} was replaced by a file fxgen did not write {when}; pass --force to "
                "overwrite it")
    return f"{printable_path(job.out)} was not written by fxgen; pass --force to overwrite it"


def _dangling(path: Path) -> str | None:
    """Where ``path`` points when it is a symlink to nothing, else None."""
    try:
        return os.readlink(path) if path.is_symlink() and not path.exists() else None
    except OSError:
        return None


def unified_diff(job: Job, new: str) -> str:
    old = job.old or ""
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), printable_path(job.out),
            printable_path(job.out),
        )
    )


def orphans(spec_dirs: Iterable[Path], out_dir: Path, jobs: list[Job]) -> Iterator[tuple[Path, bool]]:
    """Generated files in ``out_dir`` whose spec was under one of ``spec_dirs`` and is gone, with
    whether their body is untouched. Files made from specs elsewhere are never orphans, so
    running from another directory or with other spec folders cannot delete them."""
    if not out_dir.is_dir():
        return
    claimed = {os.path.realpath(job.out) for job in jobs}  # (Path.resolve raises on a symlink loop)
    roots = [Path(os.path.abspath(d)) for d in spec_dirs]
    for path in sorted(out_dir.glob("*.py")):
        if os.path.realpath(path) in claimed:
            continue
        try:
            header, body = split(bounded_text(path, GENERATED_BYTES))
        except (OSError, UnicodeDecodeError):
            continue
        if header is None or Path(header.label).suffix not in SPEC_SUFFIXES:
            continue
        specs = [(spec_of_label(header.label, root), root) for root in roots]
        if not any(spec.is_relative_to(root) and not spec.exists() for spec, root in specs):
            continue
        yield path, _intact(body, header)


def _intact(body: str, header: Header) -> bool:
    return body_digest(body) == header.body_digest


def remove_orphan(path: Path) -> bool:
    """Remove the orphan ``path`` if it is still there and still intact (looked at again right
    before: an edit made since :func:`orphans` saw it is kept); False when another run removed it
    first. A file that cannot be removed, or was edited since, is a ``GenerateError`` at it."""
    try:
        header, body = split(bounded_text(path, GENERATED_BYTES))
        if header is None or not _intact(body, header):
            raise GenerateError("orphaned: its spec no longer exists, and it was edited by hand while fxgen "
                                "was running, so fxgen leaves it: delete it", Location(str(path)))  # fmt: skip
        path.unlink()
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise GenerateError(f"cannot remove this orphaned file (its spec no longer exists): {why}; delete it",
                            Location(str(path))) from None  # fmt: skip
    return True
