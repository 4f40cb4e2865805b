"""Where specs are, and how a spec's path is shown: the read stage's view of the filesystem.

``find_specs`` lists the spec files named or found under directories; ``label_of`` writes a spec's
path relative to the root of its project (the nearest ``pyproject.toml`` or ``.git``), so the
header of a generated file is the same whichever directory fxgen runs from; ``spec_of_label``
reads a header's label back into a path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from fxgen._errors import Location, SpecError

__all__ = ["SPEC_SUFFIXES", "find_specs", "label_of", "spec_of_label"]


SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def find_specs(paths: Iterable[str | Path]) -> list[Path]:
    """Spec files named directly or found (recursively, sorted) under directories, each file
    once: one named twice (relative and absolute, through a symlink or a hard link, or found
    in two folders given) is the same spec, kept under the first of its names."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.suffix in SPEC_SUFFIXES and p.is_file()))
        elif path.exists():
            found.append(path)
        else:
            raise SpecError.at(Location(str(path)), "no such file or directory")
    first: dict[tuple[int, int] | Path, Path] = {}
    for path in found:
        first.setdefault(_identity(path), path)
    return list(first.values())


def _identity(path: Path) -> tuple[int, int] | Path:
    """What tells one file from another: its device and inode (the path when it cannot be stat'ed)."""
    try:
        st = path.stat()
    except OSError:
        return path
    return st.st_dev, st.st_ino


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


def spec_of_label(label: str, spec_dir: Path) -> Path:
    """Where a header's label points, read the way :func:`label_of` wrote it for specs under
    ``spec_dir``: from that folder's project root, or from the working directory outside one."""
    folder = Path(os.path.abspath(spec_dir))
    root = project_root(folder)
    return Path(os.path.abspath((root if root is not None else Path.cwd()) / label))
