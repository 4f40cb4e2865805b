"""Smoke test of the benchmark suite: ``bench/run.py --quick`` runs and writes its report.

Benchmarks are not tests: nothing here asserts on a timing, only that the suite works. The runs
are marked ``slow`` (minutes): CI runs them in its second step, ``python -m pytest`` leaves them out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HANG_WATCHDOG

ROOT = Path(__file__).resolve().parent.parent


def _bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python bench/SCRIPT ARGS...`` from the checkout's root; it must succeed."""
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=HANG_WATCHDOG)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.slow  # CI's second step
def test_quick_benchmark_writes_a_table(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    raw = tmp_path / "benchmarks.json"
    _bench("run.py", "--quick", "--out", str(out), "--json", str(raw))
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# fxgen benchmarks")
    assert "## Targets (issue 6)" in text
    # a Markdown table with a measured row for the synthetic chain
    assert "| stage |" in text and "| --- |" in text
    assert "| read+validate (`load_spec`) | " in text
    assert "## `fxgen generate --check` with nothing to do" in text
    assert raw.is_file()
    # the target pairs timed alternately: one record per pair, whose ratio the report prints
    records = json.loads(raw.read_text(encoding="utf-8"))["records"]
    paired = {(r["workload"], r["stage"]): r for r in records if str(r.get("stage", "")).startswith("paired:")}
    stages = {stage for _, stage in paired}
    assert {"paired:read_validate+load", "paired:generate", "paired:export", "paired:load_weights"} <= stages, stages
    rec = paired["example/mlp", "paired:read_validate+load"]
    assert rec["status"] == "ok" and rec["extra"]["reference"] == "fx_direct", rec
    assert rec["extra"]["median_ratio"] > 0 and rec["extra"]["rounds"] >= 3, rec
    mlp = next(line for line in text.splitlines() if line.startswith("| mlp |"))
    assert f"{rec['extra']['median_ratio']:.2f}x" in mlp and "(seq " in mlp, mlp
    assert "**Ratios to a reference are paired**" in text and "paired, on " in text
    # weights files in and out (bench/weights_io.py): each method measured, the loads exact
    weights = {r["stage"]: r for r in records if r["workload"] == "weights/4" and "stage" in r}
    assert set(weights) == {"load_save_file", "ref_one_read", "load_fxgen_file", "save_weights"}, weights
    assert all(r["status"] == "ok" and r["extra"]["exact"] for r in weights.values()), weights
    assert weights["load_save_file"]["extra"]["misaligned"] == 0 and "## Weights files in and out (issue 34)" in text


@pytest.mark.slow  # CI's second step
def test_pair_times_a_stage_against_its_reference() -> None:
    """``bench/pair.py`` (alternate timing for small workloads) runs and prints one ratio per
    workload, for each kind of pair."""
    for kind, workload in (("load", "model_specs/mlp.yaml"), ("generate", "model_specs/mlp.yaml"),
                           ("export", "monai.FullyConnectedNet"), ("export_blocks", "monai.UNet")):  # fmt: skip
        proc = _bench("pair.py", kind, workload, "--rounds", "2")
        row = proc.stdout.splitlines()[-1].split()
        assert row[0] == workload and row[-1].endswith("x") and float(row[-1][:-1]) > 0, proc.stdout


@pytest.mark.slow  # CI's second step
def test_export_parts_split_both_exports_into_their_steps() -> None:
    """``bench/pair.py export --parts`` (the flat export) and ``export_blocks --parts`` (the
    default export, classes kept) print one line per step, each a time and a multiple."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from export_parts import BLOCK_LEAVES, LEAVES  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "bench"))
    for kind, steps in (("export", LEAVES), ("export_blocks", BLOCK_LEAVES)):
        proc = _bench("pair.py", kind, "--parts", "monai.UNet", "--rounds", "2")
        lines = proc.stdout.splitlines()
        assert lines[0].startswith("monai.UNet: export ") and "the largest step besides tracing:" in lines[0]
        printed = {line[:26].strip(): line[26:].split() for line in lines[1:-1]}
        assert list(printed) == list(steps), proc.stdout
        assert all(float(cells[0]) >= 0 and cells[1] == "ms" for cells in printed.values()), proc.stdout
    blocks_steps = dict(item.rsplit(" ", 1) for item in lines[-1].removeprefix("  calls: ").split(", "))
    assert int(blocks_steps["block GraphModules"]) > 0, lines[-1]  # UNet's blocks were split off the trace


@pytest.mark.slow  # CI's second step
def test_load_parts_splits_a_load_into_its_steps() -> None:
    """``bench/load_parts.py`` (read / validate / build with the collector on and off) runs and
    prints a line per step, with a time for each collector setting."""
    proc = _bench("load_parts.py", "model_specs/mlp.yaml", "--synthetic", "chain:100", "--runs", "1")
    lines = proc.stdout.splitlines()
    assert [line.split(":")[0] for line in lines if not line.startswith(" ")] == ["mlp.yaml", "chain_100.yaml"]
    steps = [line.split("  ")[1].strip() for line in lines if line.startswith("  ")]
    assert steps.count("load(path)") == 2 and steps.count("build after read+validate") == 2, proc.stdout
    for line in lines:
        if line.startswith("  "):
            on, off = (float(x) for x in line.split()[-4::2])
            assert on > 0 and off > 0, line


@pytest.mark.slow  # CI's second step
def test_cli_startup_writes_its_section(tmp_path: Path) -> None:
    """``bench/cli_startup.py`` (fxgen validate against ``import torch``, whole processes) writes
    its table into the report, where ``bench/run.py`` keeps it."""
    out = tmp_path / "benchmarks.md"
    out.write_text("# fxgen benchmarks\n", encoding="utf-8")
    _bench("cli_startup.py", "--specs", "mlp", "--runs", "1", "--out", str(out))
    text = out.read_text(encoding="utf-8")
    assert "<!-- bench/cli_startup.py -->" in text and "| mlp | yes |" in text and "| mlp | no |" in text


@pytest.mark.slow  # CI's second step
def test_export_blocks_writes_the_default_against_the_flat_export(tmp_path: Path) -> None:
    """``bench/export_blocks.py`` (issue 30: the default export judged against the flat one)
    puts its table between its markers, keeping what the file held, and says how often each
    model was traced (UNet reads no mode: once)."""
    out = tmp_path / "benchmarks.md"
    out.write_text("# fxgen benchmarks\n\nkept\n", encoding="utf-8")
    _bench("export_blocks.py", "--models", "monai.UNet", "--rounds", "1", "--out", str(out))
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# fxgen benchmarks\n\nkept\n") and "<!-- end bench/export_blocks.py -->" in text
    assert "## Default export against the flat export (issue 30)" in text and "**Median " in text
    row = next(line for line in text.splitlines() if line.startswith("| monai.UNet |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "1" and cells[4].split("x")[0].replace(".", "").isdigit(), row


@pytest.mark.slow  # CI's second step
def test_export_classes_writes_the_classes_of_each_model(tmp_path: Path) -> None:
    """``bench/export_classes.py`` (issue 42) puts its table between its markers, keeping what the
    file held: a row per model, its own classes counted without its top class, the export exact."""
    out = tmp_path / "zoo.md"
    out.write_text("# zoo\n\nkept\n", encoding="utf-8")
    _bench("export_classes.py", "--small", "--only", "DenseNet (small)", "--rounds", "1", "--out", str(out))
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# zoo\n\nkept\n") and "<!-- end bench/export_classes.py -->" in text
    row = next(line for line in text.splitlines() if line.startswith("| DenseNet (small) |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "3" and cells[8] == "yes", row  # _DenseLayer, _DenseBlock, _Transition
    assert "_DenseLayer " in cells[9] and "| **total: 1 models** | 3 |" in text


def test_class_counts_map_each_original_class_to_the_spec_classes_at_its_paths() -> None:
    """An original class is kept where a spec class instance (a GraphModule named after it) sits at
    one of its instances' paths; the spec classes each became are counted per original class. One
    the spec declares as itself (a leaf) is counted apart."""
    sys.path.insert(0, str(ROOT / "bench"))
    import torch
    from class_counts import class_counts

    class Block(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 1

    class Other(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2

    class Leaf(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return -x

    original = torch.nn.Sequential(Block(), Block(), Other(), torch.nn.ReLU(), Leaf())
    graph = torch.fx.symbolic_trace(Block()).graph
    loaded = torch.nn.Sequential(torch.fx.GraphModule(Block(), graph, "Block"),
                                 torch.fx.GraphModule(Block(), graph, "Block2"), torch.nn.Identity(), torch.nn.ReLU(),
                                 Leaf())  # fmt: skip
    counts = class_counts(original, loaded, spec_classes=2)
    assert (counts.original, counts.kept, counts.spec) == (2, 1, 2)
    assert counts.kept_share == 0.5 and counts.per_class == 1.0
    assert counts.detail() == "Block 2, Other 0; leaves: Leaf"


def test_the_quick_run_limits_only_catch_hangs(tmp_path: Path) -> None:
    """``--quick`` judges no time, so no limit of it may turn a stage on a slow machine into a
    "timeout" (which the tests above would fail on): the worker's hard timeout and each stage's
    limits are the hour-long watchdog, never a few seconds."""
    import argparse

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import run  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "bench"))
    args = argparse.Namespace(quick=True, no_examples=True, zoo="none")
    ((_, _, cfg, hard),) = run._plan(tmp_path, [20], ["chain"], args)
    assert hard >= run.QUICK_WATCHDOG >= 3600
    assert cfg["stage_limit"] >= 3600 and cfg["run_limit"] >= 3600, cfg
