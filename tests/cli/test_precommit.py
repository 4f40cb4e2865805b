"""The pre-commit hooks of .pre-commit-hooks.yaml, end to end with the real ``pre-commit``.

A temporary git repository with specs and generated files commits through ``pre-commit
install``-ed hooks:

* a changed spec: fxgen-generate rewrites its file and the commit fails; staged, it passes;
* an unrelated commit: fxgen-generate does not run, fxgen-check passes;
* a new spec: its new (untracked) file is written and the commit fails (--fail-on-change), and
  fails again until that file is staged (--staged);
* a generated file edited by hand, a deleted spec: fxgen-check fails;
* a forged generated file (its header's hashes recomputed): fxgen-check passes, fxgen-check-full fails.

The fast test turns the manifest's hooks into ``repo: local`` hooks with ``language: system``
(the fxgen installed here). The slow one installs the hooks the way users do: from a git
repository holding this working tree, into pre-commit's own virtualenv (with PIP_CONSTRAINT
pinning the CPU torch).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT
from helpers import HANG_WATCHDOG, forge

import fxgen

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

MANIFEST = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
HOOK_KEYS = ("id", "name", "entry", "files", "args", "pass_filenames", "always_run", "require_serial")
MANUAL = {"fxgen-check-full": {"stages": ["manual"]}}  # it renders every spec: run on request, as CI does


def environment(tmp_path: Path) -> dict[str, str]:
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
                         "[commit]\n\tgpgsign = false\n")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CONFIG_NOSYSTEM="1",
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        PIP_CONSTRAINT=str(ROOT / "constraints.txt"),  # the hook venv gets the CPU torch
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    return env


def sh(cwd: Path, env: dict[str, str], *args: str, timeout: float = HANG_WATCHDOG) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def git(cwd: Path, env: dict[str, str], *args: str) -> str:
    result = sh(cwd, env, "git", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def make_project(tmp_path: Path, env: dict[str, str], config: dict[str, Any], *, install: bool = True) -> Path:
    """A git repository with two specs, their generated files and pre-commit installed (unless not ``install``)."""
    repo = tmp_path / "project"
    (repo / "model_specs").mkdir(parents=True)
    for stem in ("mlp", "resnet_block"):
        shutil.copy(ROOT / "model_specs" / f"{stem}.yaml", repo / "model_specs")
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git(repo, env, "init", "-q")
    (repo / "generated").mkdir()
    for spec in (repo / "model_specs").iterdir():  # what `fxgen generate model_specs/` writes
        (repo / "generated" / f"{spec.stem}.py").write_text(expected(repo, spec.stem))
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "--no-verify", "-m", "initial")
    if not install:
        return repo
    result = sh(repo, env, sys.executable, "-m", "pre_commit", "install")
    assert result.returncode == 0, result.stderr
    return repo


def commit(repo: Path, env: dict[str, str], message: str) -> tuple[bool, str]:
    """``git commit`` with the hooks; (whether a commit was made, what the hooks printed)."""
    head = git(repo, env, "rev-parse", "HEAD")
    result = sh(repo, env, "git", "commit", "-m", message)
    made = git(repo, env, "rev-parse", "HEAD") != head
    assert made == (result.returncode == 0), result.stdout + result.stderr
    assert "Failed to initialize NumPy" not in result.stdout + result.stderr  # numpy is a dependency
    return made, result.stdout + result.stderr


def expected(repo: Path, stem: str) -> str:
    return fxgen.generate(repo / "model_specs" / f"{stem}.yaml", label=f"model_specs/{stem}.yaml")


def run_scenario(repo: Path, env: dict[str, str]) -> None:
    specs, generated = repo / "model_specs", repo / "generated"

    # 1. a changed spec: regenerated, the commit fails once; staged, it passes
    text = (specs / "mlp.yaml").read_text()
    (specs / "mlp.yaml").write_text(text.replace("\ndoc: >-\n", "\ndoc: >-\n  Changed.\n", 1))
    git(repo, env, "add", "model_specs/mlp.yaml")
    made, output = commit(repo, env, "change the MLP")
    assert not made, output
    assert "fxgen generate" in output and "Failed" in output and "fxgen: wrote generated/mlp.py" in output
    assert (generated / "mlp.py").read_text() == expected(repo, "mlp")
    git(repo, env, "add", "generated/mlp.py")
    made, output = commit(repo, env, "change the MLP")
    assert made, output
    assert git(repo, env, "show", "HEAD:generated/mlp.py") == expected(repo, "mlp")

    # 2. nothing to regenerate: fxgen-generate does not run, fxgen-check passes, nothing written
    before = {p.name: p.stat().st_mtime_ns for p in generated.iterdir()}
    (repo / "notes.txt").write_text("unrelated\n")
    git(repo, env, "add", "notes.txt")
    made, output = commit(repo, env, "notes")
    assert made, output
    assert any(line.startswith("fxgen generate") and "(no files to check)Skipped" in line for line in output.splitlines())
    assert any(line.startswith("fxgen check") and line.endswith("Passed") for line in output.splitlines())
    assert {p.name: p.stat().st_mtime_ns for p in generated.iterdir()} == before

    # 3. a new spec: its new file is written (pre-commit does not see new files: --fail-on-change)
    shutil.copy(ROOT / "model_specs" / "indexing.yaml", specs)
    git(repo, env, "add", "model_specs/indexing.yaml")
    made, output = commit(repo, env, "add indexing")
    assert not made and "fxgen: 1 generated file changed" in output, output
    assert (generated / "indexing.py").read_text() == expected(repo, "indexing")
    made, output = commit(repo, env, "add indexing")  # again without `git add`: the file is still not staged
    assert not made and output.count("generated/indexing.py: error: not staged: git add generated/indexing.py") == 2, output
    git(repo, env, "add", "generated/indexing.py")
    assert commit(repo, env, "add indexing")[0]

    # 4. a generated file edited by hand: fxgen-check fails and says why
    original = (generated / "mlp.py").read_text()
    (generated / "mlp.py").write_text(original.replace("residual = x + scaled", "residual = x + 2 * scaled"))
    git(repo, env, "add", "generated/mlp.py")
    made, output = commit(repo, env, "tweak")
    assert not made and "fxgen check" in output and "edited by hand" in output, output
    (generated / "mlp.py").write_text(original)
    git(repo, env, "add", "generated/mlp.py")

    # 5. a deleted spec: its orphaned file fails the check until `fxgen generate` removes it
    git(repo, env, "rm", "-q", "model_specs/indexing.yaml")
    made, output = commit(repo, env, "drop indexing")
    assert not made and "orphaned" in output, output
    result = sh(repo, env, "fxgen", "generate", "model_specs/")
    assert result.returncode == 0 and "removed generated/indexing.py" in result.stderr, result.stderr
    git(repo, env, "add", "-A")
    made, output = commit(repo, env, "drop indexing")
    assert made, output
    assert sorted(p.name for p in generated.iterdir()) == ["mlp.py", "resnet_block.py"]

    # 6. a forged file (its body changed, its header's hashes recomputed) fools fxgen-check, whose
    # limit the docs state, and not fxgen-check-full (a manual stage here, as in CI's own run)
    forge(generated / "mlp.py")
    git(repo, env, "add", "generated/mlp.py")
    made, output = commit(repo, env, "forged")
    assert made, output
    result = sh(repo, env, sys.executable, "-m", "pre_commit", "run", "--hook-stage", "manual", "fxgen-check-full")
    assert result.returncode == 1 and "generated/mlp.py: error: forged: " in result.stdout, result.stdout


def test_manifest_follows_pre_commit_conventions() -> None:
    hooks = {hook["id"]: hook for hook in MANIFEST}
    assert set(hooks) == {"fxgen-generate", "fxgen-check", "fxgen-check-full"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["entry"].startswith("fxgen generate")
    generate, check = hooks["fxgen-generate"], hooks["fxgen-check"]
    assert generate["pass_filenames"] is True and generate["files"] == r"^model_specs/.*\.(ya?ml|json)$"
    assert "--fail-on-change" in generate["entry"]
    assert "--check" in check["entry"] and check["pass_filenames"] is False and check["always_run"] is True
    assert check["args"] == ["model_specs/"]
    full = hooks["fxgen-check-full"]
    assert full["entry"] == check["entry"] + " --full"
    own = ("id", "name", "description", "entry")
    assert {k: v for k, v in full.items() if k not in own} == {k: v for k, v in check.items() if k not in own}
    result = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")],
                            capture_output=True, text=True, timeout=HANG_WATCHDOG)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_repository_uses_its_own_hooks() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    local = [hook for repo in config["repos"] if repo["repo"] == "local" for hook in repo["hooks"]]
    ours = {hook["id"]: {k: hook.get(k) for k in HOOK_KEYS} for hook in local}
    offered = {hook["id"]: {k: hook.get(k) for k in HOOK_KEYS} for hook in MANIFEST}
    assert ours == offered  # the same hooks, run with the fxgen installed here


def test_hooks_end_to_end_with_installed_fxgen(tmp_path: Path) -> None:
    env = environment(tmp_path)
    hooks = [{**{k: hook[k] for k in HOOK_KEYS if k in hook}, "language": "system", **MANUAL.get(hook["id"], {})}
             for hook in MANIFEST]  # fmt: skip
    repo = make_project(tmp_path, env, {"repos": [{"repo": "local", "hooks": hooks}]})
    run_scenario(repo, env)


def hook_command(hook_id: str, *files: str) -> list[str]:
    """What pre-commit runs for the manifest's hook ``hook_id``, run with this Python."""
    hook = {hook["id"]: hook for hook in MANIFEST}[hook_id]
    program, *entry = hook["entry"].split()
    assert program == "fxgen"
    return [sys.executable, "-m", "fxgen", *entry, *hook.get("args", []), *files]


def test_the_hooks_fail_while_a_file_they_wrote_or_checked_is_not_staged(tmp_path: Path) -> None:
    """The hooks' entries, run in a git repository as pre-commit runs them (pre-commit's stash of
    unstaged changes left out, as other hook runners do): what the commit would hold is judged,
    not only the working tree."""
    env = environment(tmp_path)
    repo = make_project(tmp_path, env, {"repos": []}, install=False)
    specs = repo / "model_specs"

    def run(hook_id: str, *files: str) -> tuple[int, str]:
        result = sh(repo, env, *hook_command(hook_id, *files))
        return result.returncode, result.stderr

    def unstaged(path: str) -> str:
        return f"{path}: error: not staged: git add {path}"

    # a new spec, staged: the hook writes its file and fails; run again without `git add`, both fail
    shutil.copy(ROOT / "model_specs" / "indexing.yaml", specs)
    git(repo, env, "add", "model_specs/indexing.yaml")
    code, err = run("fxgen-generate", "model_specs/indexing.yaml")
    assert code == 1 and "fxgen: wrote generated/indexing.py" in err, err
    for code, err in (run("fxgen-generate", "model_specs/indexing.yaml"), run("fxgen-check")):
        assert code == 1 and unstaged("generated/indexing.py") in err.splitlines(), err
        assert "fxgen: 1 file not staged" in err
    git(repo, env, "add", "generated/indexing.py")
    assert run("fxgen-generate", "model_specs/indexing.yaml")[0] == run("fxgen-check")[0] == 0

    # a generated file rewritten after `git add` of its spec: fails until it is staged too
    text = (specs / "mlp.yaml").read_text()
    (specs / "mlp.yaml").write_text(text.replace("\ndoc: >-\n", "\ndoc: >-\n  Changed.\n", 1))
    git(repo, env, "add", "model_specs/mlp.yaml")
    assert run("fxgen-generate", "model_specs/mlp.yaml")[0] == 1
    code, err = run("fxgen-check")
    assert code == 1 and unstaged("generated/mlp.py") in err.splitlines(), err
    git(repo, env, "add", "generated/mlp.py")
    assert run("fxgen-check")[0] == 0

    # a spec changed since `git add`, its new file staged: the commit would pair that file with the old spec
    (specs / "mlp.yaml").write_text(text.replace("\ndoc: >-\n", "\ndoc: >-\n  Changed again.\n", 1))
    assert run("fxgen-generate", "model_specs/mlp.yaml")[0] == 1
    git(repo, env, "add", "generated/mlp.py")
    code, err = run("fxgen-check")
    assert code == 1 and unstaged("model_specs/mlp.yaml") in err.splitlines(), err
    git(repo, env, "add", "model_specs/mlp.yaml")
    assert run("fxgen-check")[0] == 0

    # a spec and its file both untracked are in no commit: nothing to say
    shutil.copy(ROOT / "model_specs" / "multi_io.yaml", specs)
    assert sh(repo, env, sys.executable, "-m", "fxgen", "generate", "model_specs/").returncode == 0
    assert run("fxgen-check") == (0, "fxgen: 4 specs, every generated file up to date\n")


def hook_repository(tmp_path: Path, env: dict[str, str]) -> tuple[Path, str]:
    """This working tree (what fxgen's install needs) committed to a fresh git repository."""
    repo = tmp_path / "fxgen-hooks"
    repo.mkdir()
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy(ROOT / name, repo / name)
    for folder in ("fxgen", "schemas"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(repo, env, "init", "-q")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "fxgen hooks")
    return repo, git(repo, env, "rev-parse", "HEAD").strip()


@pytest.mark.slow
def test_hooks_end_to_end_installed_by_pre_commit(tmp_path: Path) -> None:
    env = environment(tmp_path)
    hooks_repo, rev = hook_repository(tmp_path, env)
    hooks = [{"id": "fxgen-generate"}, {"id": "fxgen-check"}, {"id": "fxgen-check-full", **MANUAL["fxgen-check-full"]}]
    config = {"repos": [{"repo": str(hooks_repo), "rev": rev, "hooks": hooks}]}
    repo = make_project(tmp_path, env, config)
    start = time.monotonic()
    result = sh(repo, env, sys.executable, "-m", "pre_commit", "install-hooks")
    assert result.returncode == 0, result.stdout + result.stderr
    print(f"hook environment installed in {time.monotonic() - start:.0f} s")
    installed = list((tmp_path / "pre-commit-home").glob("repo*/py_env-*/lib/python*/site-packages"))
    assert len(installed) == 1
    site = installed[0]
    assert (site / "fxgen" / "codegen" / "templates" / "module.py.jinja").exists()  # package data is installed
    assert [p.name for p in site.glob("torch-*.dist-info")] == ["torch-2.13.0+cpu.dist-info"]
    assert not list(site.glob("nvidia*")), "CUDA wheels were installed: is PIP_CONSTRAINT honoured?"
    run_scenario(repo, env)
