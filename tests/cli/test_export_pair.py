"""A spec and its weights are one unit (issue 34): ``fxgen export --out S --weights W`` writes W,
then S recording W's digest, and ``fxgen.load(S, weights=W)`` either gets the pair exported
together or refuses. Never a new spec with old weights, nor an old spec with new weights."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from helpers import HANG_WATCHDOG
from safetensors.torch import save_file

import fxgen
from fxgen._errors import GenerateError, WeightsError
from fxgen.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
MODEL = textwrap.dedent("""\
    import torch

    def make(seed):
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 3))
    """)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pair_model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _export(seed: int) -> list[str]:
    return ["export", "pair_model:make", "--kwargs", f'{{"seed": {seed}}}', "--out", "s.yaml",
            "--weights", "w.safetensors", "--quiet"]  # fmt: skip


def _model(seed: int) -> torch.nn.Module:
    import pair_model  # type: ignore[import-not-found]

    return pair_model.make(seed).eval()


def _assert_refused(project: Path) -> None:
    with pytest.raises(WeightsError) as info:
        fxgen.load("s.yaml", weights="w.safetensors")
    message = str(info.value)
    assert "w.safetensors" in message and "s.yaml" in message, message  # both files
    assert "do not belong to the spec" in message and "fxgen export" in message, message  # what to do


def test_the_exported_pair_loads_and_computes_the_model(project: Path) -> None:
    assert main(_export(1)) == 0
    spec = fxgen.load_spec("s.yaml")
    assert spec.weights_digest is not None and spec.weights_digest.startswith("sha256:")
    x = torch.randn(5, 4)
    assert torch.equal(fxgen.load("s.yaml", weights="w.safetensors").eval()(x), _model(1)(x))


def test_a_spec_write_that_fails_after_the_weights_leaves_a_pair_that_refuses(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_export(1)) == 0
    before = Path("s.yaml").read_bytes()
    import fxgen.write.atomic

    def disk_full(path: str | Path, data: str | bytes) -> None:
        raise GenerateError(f"cannot write {path}: No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(fxgen.write.atomic, "write_atomic", disk_full)
        assert main(_export(2)) == 1
    assert "s.yaml: No space left on device" in capsys.readouterr().err
    assert Path("s.yaml").read_bytes() == before  # the old spec, the new weights: refused
    _assert_refused(project)
    assert main(_export(2)) == 0  # exporting again makes the pair whole
    x = torch.randn(5, 4)
    assert torch.equal(fxgen.load("s.yaml", weights="w.safetensors").eval()(x), _model(2)(x))


def test_a_run_killed_between_the_two_writes_leaves_a_pair_that_refuses(project: Path) -> None:
    """The process dies (no cleanup, no exception handler) right when the spec is to be written."""
    assert main(_export(1)) == 0
    before = Path("s.yaml").read_bytes()
    killed = ("import os, sys; import fxgen.write.atomic as atomic; "
              "atomic.write_atomic = lambda *a, **k: os._exit(9); "
              "from fxgen.cli.main import main; sys.exit(main(sys.argv[1:]))")  # fmt: skip
    env = {"PYTHONPATH": f"{ROOT}{':' + str(project)}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", killed, *_export(2)], cwd=project, env=env, capture_output=True,
                          text=True, timeout=HANG_WATCHDOG)  # fmt: skip
    assert done.returncode == 9, done.stderr
    assert Path("s.yaml").read_bytes() == before
    assert sorted(p.name for p in project.iterdir() if p.suffix != ".py" and p.name != "__pycache__") == [
        "s.yaml", "w.safetensors",
    ]  # fmt: skip
    _assert_refused(project)


def test_weights_of_other_tools_load_with_a_spec_that_records_no_digest(project: Path) -> None:
    """A file ``safetensors.torch.save_file`` wrote has no digest: a spec without one loads it (as
    an exported spec after its ``weights_digest`` line is deleted); a spec with one refuses it."""
    assert main(["export", "pair_model:make", "--kwargs", '{"seed": 3}', "--out", "bare.yaml", "--quiet"]) == 0
    assert main(_export(3)) == 0
    assert fxgen.load_spec("bare.yaml").weights_digest is None
    model = _model(3)
    save_file(model.state_dict(), "hf.safetensors")
    x = torch.randn(5, 4)
    loaded = fxgen.load("bare.yaml", weights="hf.safetensors").eval()
    assert torch.equal(loaded(x), model(x))
    assert all(t.data_ptr() % 64 == 0 for t in loaded.state_dict().values())
    with pytest.raises(WeightsError, match=r"records no digest \(it was not written by fxgen export\)"):
        fxgen.load("s.yaml", weights="hf.safetensors")


def test_save_weights_returns_the_digest_that_binds_a_spec(project: Path) -> None:
    model = _model(4)
    spec = fxgen.export(model)
    spec.weights_digest = fxgen.save_weights(model, "mine.safetensors")
    spec.to_file("mine.yaml")
    x = torch.randn(5, 4)
    assert torch.equal(fxgen.load("mine.yaml", weights="mine.safetensors").eval()(x), model(x))
    fxgen.save_weights(_model(5), "mine.safetensors")
    with pytest.raises(WeightsError, match=r"do not belong to the spec mine\.yaml"):
        fxgen.load("mine.yaml", weights="mine.safetensors")
    with pytest.raises(WeightsError, match=r"do not belong to the spec <spec Sequential>"):
        fxgen.load(spec, weights="mine.safetensors")  # a spec in memory is named by its class
    with pytest.raises(WeightsError, match="do not belong to the spec"):
        fxgen.transform("mine.yaml", ["eliminate_dead_code"], weights="mine.safetensors")


def test_transform_checks_the_weights_it_reads_and_binds_those_it_writes(project: Path) -> None:
    assert main(_export(6)) == 0
    argv = ["transform", "s.yaml", "--pass", "eliminate_dead_code", "-o", "t.yaml", "--weights", "w.safetensors",
            "--out-weights", "t.safetensors", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    x = torch.randn(5, 4)
    assert torch.equal(fxgen.load("t.yaml", weights="t.safetensors").eval()(x), _model(6)(x))
    assert fxgen.load_spec("t.yaml").weights_digest == fxgen.load_spec("s.yaml").weights_digest  # the same tensors
    fxgen.save_weights(_model(7), "w.safetensors")
    assert main(argv) == 1  # the weights are not the spec's


BIG = textwrap.dedent("""\
    import torch

    def make(seed, width):
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 3))
    """)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs, full for any weights over that: root and mount(8) only (CI runs as
    root); elsewhere the test is skipped and says why in the report."""
    import os
    import shutil

    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full disk needs a tmpfs mount: root and mount(8) only")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", disk], capture_output=True).returncode:
        pytest.skip("mounting a tmpfs is not allowed here")
    try:
        yield disk
    finally:
        import gc

        gc.collect()  # a loaded model's tensors map the weights file
        if subprocess.run(["umount", disk], capture_output=True).returncode:
            subprocess.run(["umount", "--lazy", disk], check=True)


def test_a_full_disk_during_the_weights_write_leaves_the_old_pair_and_no_temporary_file(
    small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a real full disk: the weights write fails with a located one-line error, the old spec
    and old weights stay as they were (and still load, as the pair they are), and no temporary
    file is left behind."""
    (tmp_path / "big_model.py").write_text(BIG)
    monkeypatch.chdir(small_disk)
    monkeypatch.syspath_prepend(str(tmp_path))

    def export(width: int) -> int:
        return main(["export", "big_model:make", "--kwargs", f'{{"seed": 1, "width": {width}}}', "--out", "s.yaml",
                     "--weights", "w.safetensors", "--quiet"])  # fmt: skip

    assert export(8) == 0
    spec_before, weights_before = Path("s.yaml").read_bytes(), Path("w.safetensors").read_bytes()
    capsys.readouterr()
    assert export(1024) == 1  # 4 MiB of weights on a 1 MiB disk
    err = capsys.readouterr().err
    assert "w.safetensors" in err and "No space left on device" in err and "Traceback" not in err, err
    assert Path("s.yaml").read_bytes() == spec_before and Path("w.safetensors").read_bytes() == weights_before
    assert sorted(p.name for p in small_disk.iterdir()) == ["s.yaml", "w.safetensors"]  # nothing half-written
    import big_model  # type: ignore[import-not-found]

    x = torch.randn(2, 8)
    loaded = fxgen.load("s.yaml", weights="w.safetensors").eval()
    assert torch.equal(loaded(x), big_model.make(1, 8).eval()(x))
    del loaded


def test_export_removes_and_names_what_a_killed_export_left(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A killed export leaves its temporary files (unlocked once the process is gone): the next
    export removes those of its spec and weights and names each, as generate does."""
    left = [project / ".w.safetensors.fxgen-k2x9a0bq.tmp", project / ".s.yaml.fxgen-0123abcd.tmp"]
    for path in left:
        path.write_bytes(b"half a file")
    other = project / ".other.yaml.fxgen-zzzzzzzz.tmp"  # another file's: not this export's to remove
    other.write_bytes(b"x")
    assert main([*_export(1)[:-1]]) == 0
    err = capsys.readouterr().err
    for path in left:
        assert not path.exists()
        assert f"fxgen: removed {path.name} (a temporary file left by an interrupted fxgen run)" in err, err
    assert other.exists()
