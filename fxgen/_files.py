"""Files stage: which specs to process, where their output goes, and whether it is up to date.

Deciding that a generated file is current needs only its header and the spec's bytes (both
hashed), so a no-op ``fxgen generate --check`` imports neither torch nor black. Only stale or
missing files are rendered, and only ``fxgen._writer`` writes.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from fxgen._errors import Diagnostic, FxgenError, GenerateError, Location, SpecError
from fxgen._header import VERSION, body_digest, safe_label, spec_digest, split

__all__ = ["SPEC_SUFFIXES", "Job", "find_specs", "orphans", "plan", "render_job"]

SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def find_specs(paths: Iterable[str | Path]) -> list[Path]:
    """Spec files named directly or found (recursively, sorted) under directories."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.suffix in SPEC_SUFFIXES and p.is_file()))
        elif path.exists():
            found.append(path)
        else:
            raise SpecError.at(Location(str(path)), "no such file or directory")
    return list(dict.fromkeys(found))


def label_of(path: Path) -> str:
    """The spec path as headers show it, with / separators: relative to the root of the project
    holding it, so the same spec gets the same header whichever directory fxgen runs from;
    relative to the working directory when no project holds it."""
    spec = Path(os.path.abspath(path))  # not resolve(): a symlinked spec keeps the name it was given
    root = project_root(spec.parent)
    return (spec.relative_to(root) if root is not None else Path(os.path.relpath(spec))).as_posix()


_ROOT_MARKERS = ("pyproject.toml", ".git")


def project_root(directory: Path) -> Path | None:
    """The nearest directory at or above ``directory`` (absolute) with a pyproject.toml or .git."""
    for candidate in (directory, *directory.parents):
        if any((candidate / marker).exists() for marker in _ROOT_MARKERS):
            return candidate
    return None


def _spec_of_label(label: str, spec_dir: Path) -> Path:
    """Where a header's label points, read the way :func:`label_of` wrote it for specs under
    ``spec_dir``: from that folder's project root, or from the working directory outside one."""
    folder = Path(os.path.abspath(spec_dir))
    root = project_root(folder)
    return Path(os.path.abspath((root if root is not None else Path.cwd()) / label))


@dataclass
class Job:
    """One spec and its output file, with what is known about the output's state."""

    spec: Path
    out: Path
    label: str
    raw: bytes
    status: str  # "current" | "missing" | "stale" | "edited" | "foreign"
    old: str | None = None

    @property
    def digest(self) -> str:
        return spec_digest(self.raw)


def plan(specs: Iterable[Path], out_dir: Path) -> list[Job]:
    """A Job per spec, its status decided from hashes alone."""
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
        jobs.append(_status(Job(spec, out, label_of(spec), raw, "missing")))
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


def render_job(job: Job, allow: tuple[str, ...]) -> str:
    """Validate and render one spec (imports torch and black)."""
    from fxgen._api import policy_for
    from fxgen._codegen import render_spec
    from fxgen._reader import parse_text
    from fxgen._validate import validate_document

    doc = parse_text(job.raw, str(job.spec), json_syntax=job.spec.suffix == ".json")
    spec = validate_document(doc, policy_for(allow))
    return render_spec(spec, label=job.label, digest=job.digest)


def render_job_safely(args: tuple[Job, tuple[str, ...]]) -> tuple[str | None, list[Diagnostic] | str]:
    """``render_job`` for a worker process: errors come back as values, never as exceptions."""
    job, allow = args
    try:
        return render_job(job, allow), []
    except SpecError as exc:
        return None, exc.diagnostics
    except FxgenError as exc:
        return None, str(exc)


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
        specs = [(_spec_of_label(header.label, root), root) for root in roots]
        if not any(spec.is_relative_to(root) and not spec.exists() for spec, root in specs):
            continue
        yield path, body_digest(body) == header.body_digest
