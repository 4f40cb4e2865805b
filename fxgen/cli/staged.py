"""``fxgen generate --staged`` (the hooks): whether git would commit the files a run looked at as
fxgen saw them.

A hook checks the working tree, but a commit holds the index. pre-commit stashes unstaged
changes to tracked files while hooks run, so for those the two agree; an untracked file (the
generated file of a new spec, which the hook itself wrote) stays in the working tree, and a hook
would pass a commit that lacks it. So each spec and its generated file must be in the index with
their working-tree content (the content fxgen checked), unless neither is tracked (neither is
part of the commit). One ``git status`` answers for all of them, without taking git's index lock
(a commit holds it while hooks run).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from fxgen._errors import FxgenError

__all__ = ["not_staged"]


def not_staged(pairs: Iterable[tuple[Path, Path]]) -> list[Path]:
    """The specs and generated files among ``pairs`` (spec, its generated file) that the commit
    would not hold as they are in the working tree, in order; none outside a git work tree. A
    file that does not exist is left to the run's own report (missing)."""
    pairs = list(pairs)
    paths = [path for pair in pairs for path in pair if path.exists()]
    states = _states(paths) if paths else {}
    if states is None:
        return []
    found: list[Path] = []
    for spec, out in pairs:
        spec_state, out_state = states.get(_key(spec)), states.get(_key(out))
        if spec_state == out_state == "untracked" or (spec_state == "untracked" and not out.exists()):
            continue  # neither is part of the commit
        found += [path for path, state in ((spec, spec_state), (out, out_state)) if state and path.exists()]
    return found


def _key(path: Path) -> str:
    return os.path.realpath(path)


def _states(paths: list[Path]) -> dict[str, str] | None:
    """``"untracked"`` or ``"changed"`` (the working tree is not the index) for each of ``paths``
    git would not commit as it is, keyed by real path; None outside a git work tree."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, env=env,
                             check=False)  # fmt: skip
    except FileNotFoundError:
        raise FxgenError("--staged asks git which files are staged, and git is not on PATH") from None
    if top.returncode != 0:
        return None  # not in a git work tree: no commit to judge
    root = Path(os.path.realpath(top.stdout.rstrip("\n")))
    inside = [key for key in map(_key, paths) if Path(key).is_relative_to(root)]  # others are in no commit here
    if not inside:
        return {}
    command = ["git", "--literal-pathspecs", "status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all", "--", *inside]
    done = subprocess.run(command, capture_output=True, env=env, check=False)
    if done.returncode != 0:
        raise FxgenError(f"--staged: `git status` failed: {done.stderr.decode(errors='replace').strip()[:300]}")
    states: dict[str, str] = {}
    for entry in done.stdout.split(b"\0"):
        if len(entry) < 4:
            continue
        index, tree, name = chr(entry[0]), chr(entry[1]), os.fsdecode(entry[3:])
        if index == "?":
            states[_key(root / name)] = "untracked"
        elif tree != " ":
            states[_key(root / name)] = "changed"
    return states
