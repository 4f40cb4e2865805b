"""Generated files: which spec writes which file, and whether that file is up to date.

Deciding that a generated file is current needs only its header and the spec's bytes (both
hashed, ``fxgen.write.header``), so a no-op ``fxgen generate --check`` imports neither torch nor
black. A file edited by hand, written by something else, or left behind by a deleted spec (an
orphan) is recognised here too. Only stale or missing files are rendered (``fxgen.codegen``), and
only ``fxgen.write.atomic`` writes.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from fxgen._errors import GenerateError, Location, SpecError
from fxgen.read.paths import SPEC_SUFFIXES, label_of, spec_of_label
from fxgen.write.header import VERSION, body_digest, safe_label, spec_digest, split

__all__ = ["Job", "orphans", "plan", "refusal", "unified_diff"]


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

    @property
    def digest(self) -> str:
        return spec_digest(self.raw, shapes=self.shapes)


def plan(specs: Iterable[Path], out_dir: Path, *, shapes: bool = False) -> list[Job]:
    """A Job per spec, its status decided from hashes alone (``shapes``: for ``--shapes``, which
    makes other files than the spec alone)."""
    jobs: list[Job] = []
    seen: dict[Path, Path] = {}
    for spec in specs:
        out = out_dir / f"{spec.stem}.py"
        if out in seen:
            raise GenerateError(
                f"{spec} and {seen[out]} would both generate {out}; rename one of them", Location(str(spec))
            )
        seen[out] = spec
        try:
            raw = spec.read_bytes()
        except OSError as exc:
            raise SpecError.at(Location(str(spec)), f"cannot read spec: {exc.strerror or exc}") from None
        jobs.append(_status(Job(spec, out, label_of(spec), raw, "missing", shapes=shapes)))
    return jobs


def _status(job: Job) -> Job:
    try:
        job.old = job.out.read_text(encoding="utf-8")
    except FileNotFoundError:
        return job
    except (OSError, UnicodeDecodeError) as exc:
        raise GenerateError(f"cannot read generated file: {exc}", Location(str(job.out))) from None
    header, body = split(job.old)
    if header is None:
        job.status = "foreign"
    elif body_digest(body) != header.body_digest:
        job.status = "edited"
    elif (header.version, header.label, header.spec_digest) == (VERSION, safe_label(job.label), job.digest):
        job.status = "current"
    else:
        job.status = "stale"
    return job


def refusal(job: Job) -> str:
    if job.status == "edited":
        return f"{job.out} was edited by hand since fxgen wrote it; move your change into {job.label} (or pass --force to overwrite it)"
    return f"{job.out} was not written by fxgen; pass --force to overwrite it"


def unified_diff(job: Job, new: str) -> str:
    old = job.old or ""
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), str(job.out), str(job.out)
        )
    )


def orphans(spec_dirs: Iterable[Path], out_dir: Path, jobs: list[Job]) -> Iterator[tuple[Path, bool]]:
    """Generated files in ``out_dir`` whose spec was under one of ``spec_dirs`` and is gone, with
    whether their body is untouched. Files made from specs elsewhere are never orphans, so
    running from another directory or with other spec folders cannot delete them."""
    if not out_dir.is_dir():
        return
    claimed = {job.out.resolve() for job in jobs}
    roots = [Path(os.path.abspath(d)) for d in spec_dirs]
    for path in sorted(out_dir.glob("*.py")):
        if path.resolve() in claimed:
            continue
        try:
            header, body = split(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        if header is None or Path(header.label).suffix not in SPEC_SUFFIXES:
            continue
        specs = [(spec_of_label(header.label, root), root) for root in roots]
        if not any(spec.is_relative_to(root) and not spec.exists() for spec, root in specs):
            continue
        yield path, body_digest(body) == header.body_digest
