"""Smoke test of the benchmark suite: ``bench/run.py --quick`` runs and writes its report.

Benchmarks are not tests: nothing here asserts on a timing, only that the suite works.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quick_benchmark_writes_a_table(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    raw = tmp_path / "benchmarks.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--out", str(out), "--json", str(raw)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# fxgen benchmarks")
    assert "## Targets (issue 6)" in text
    # a Markdown table with a measured row for the synthetic chain
    assert "| stage |" in text and "| --- |" in text
    assert "| read+validate (`load_spec`) | " in text
    assert "## `fxgen generate --check` with nothing to do" in text
    assert raw.is_file()


def test_pair_times_a_stage_against_its_reference() -> None:
    """``bench/pair.py`` (alternate timing for small workloads) runs and prints one ratio per
    workload, for each kind of pair."""
    for kind, workload in (("load", "model_specs/mlp.yaml"), ("generate", "model_specs/mlp.yaml"),
                           ("export", "monai.FullyConnectedNet")):  # fmt: skip
        proc = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "pair.py"), kind, workload, "--rounds", "2"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        row = proc.stdout.splitlines()[-1].split()
        assert row[0] == workload and row[-1].endswith("x") and float(row[-1][:-1]) > 0, proc.stdout
