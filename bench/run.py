"""fxgen's benchmark suite: where the time goes, against torch.fx / black / safetensors references.

    python bench/run.py [--sizes 100,1000,10000,100000] [--quick] [--out docs/benchmarks.md]
    python bench/run.py --from-json run.json --out docs/benchmarks.md   # the report of an earlier run

Workloads: synthetic specs (``bench/workloads.py``: chain, fan, residual) of each size, the
example specs in ``model_specs/``, a sample of the traceable models of ``bench/zoo_models.py``
(``ZOO_SAMPLE`` per library) exported by ``fxgen.export``, and weight-heavy specs of up to 2 GiB
(``bench/heavy.py``: load with weights, time and peak memory, a fresh process per measurement;
``--heavy-sizes``), and weights files in and out (``bench/weights_io.py``: load of a file
``safetensors.torch.save_file`` wrote, GB/s and peak memory; ``save_weights``'s peak memory;
``--weights-sizes``). Every other workload runs in a worker subprocess (``--worker``) under a hard
timeout, with a soft per-stage limit inside it; a stage that runs out of time is reported as
"timeout" and the worker is restarted for the rest. ``fxgen generate --check`` is timed as a
CLI subprocess over 100 unchanged specs, with ``python -X importtime`` evidence of what it
imports. Results go to a Markdown report (``--out``) and, with ``--json``, as raw records.

The targets' ratios on the examples, the zoo and graphs up to 10,000 nodes come from the fxgen
call and its reference timed alternately (records ``paired:<stage>``, see ``stages.py``): the
ratio of two sequential medians drifts by up to ±25% there between runs (at 10,000 nodes, with
the heap the earlier stages leave behind: chain 10k read 1.92x and 2.53x in two runs of the
same code).

``--quick`` (CI smoke test): the smallest size, few repeats, examples, one small zoo model and
one 4 MiB weight-heavy spec and one 4 MiB weights file measured once per method, no torch.compile;
its limits are a one-hour watchdog against hangs (``QUICK_WATCHDOG``), so a slow machine never
turns a stage into a "timeout".
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))  # this checkout's fxgen first

import heavy  # noqa: E402
import weights_io  # noqa: E402
from sections import CLI_STARTUP, DYNAMO_CAPTURE, EXPORT_BLOCKS, keep_sections  # noqa: E402
from workloads import SHAPES, write_spec  # noqa: E402

QUICK_ZOO = ("rtdl.MLP",)
DEFAULT_SIZES = (100, 1000, 10000, 100000)
# ``--quick`` is a smoke run: nothing it measures is judged, so none of its limits may cut a stage
# short on a slow or loaded machine (a "timeout" there is a failed smoke test, not a measurement).
# Each limit is this watchdog instead, which exists only so that a hang ends.
QUICK_WATCHDOG = 3600.0
_DISTS = ("torch", "black", "fxgen", "pyyaml", "jsonschema", "jinja2", "safetensors", "monai")


# -- configuration per size ------------------------------------------------------------------
def config(size: int, quick: bool, *, thorough: bool = False, models: bool = False) -> dict[str, Any]:
    """Repeats and limits per group (seconds). Small graphs repeat until ``budget`` is spent;
    from 10,000 nodes every stage gets exactly 3 runs; at 100,000 nodes a stage stops after the
    run that would take it past ``stage_limit`` (fewer than 3 runs, flagged in the report;
    ``--thorough`` always makes 3) and a single run longer than ``run_limit`` is a "timeout"."""
    if quick:
        cfg = {"budget": 0.05, "max_reps": 5, "slow": 0.2, "stage_limit": QUICK_WATCHDOG,
               "run_limit": QUICK_WATCHDOG, "forward_budget": 0.1}  # fmt: skip
    elif models:  # examples and zoo: many small graphs
        cfg = {"budget": 0.2, "max_reps": 10, "slow": 0.5, "stage_limit": 30.0, "run_limit": 60.0,
               "forward_budget": 0.5}  # fmt: skip
    elif size <= 1000:
        cfg = {"budget": 1.0, "max_reps": 30, "slow": 1.0, "stage_limit": 60.0, "run_limit": 60.0,
               "forward_budget": 1.0}  # fmt: skip
    elif size <= 10_000:
        cfg = {"budget": 0.0, "max_reps": 3, "slow": 0.5, "stage_limit": 120.0, "run_limit": 90.0}
    else:
        # references (a) and (b) load the generated class with torch's load_state_dict, which is
        # quadratic in a container's width: over a minute each at 100,000 nodes
        cfg = {"budget": 0.0, "max_reps": 3, "slow": 0.5, "stage_limit": 40.0, "run_limit": 60.0,
               "omit": ["black_file", "ref_meta_assign", "ref_init_load"]}  # fmt: skip
    cfg.setdefault("forward_budget", 1.0)
    # Target pairs timed alternately (stages.Runner.pair): seconds per pair, and at least this
    # many rounds; where sequential medians drift (examples, zoo, graphs up to 10,000 nodes).
    if quick:
        cfg.update(pair_budget=0.02, pair_rounds=5)
    elif models:
        cfg.update(pair_budget=0.25, pair_rounds=7)
    elif size <= 1000:
        cfg.update(pair_budget=0.4, pair_rounds=7)
    elif size <= 10_000:  # about 1 s a round: the minimum of rounds is the budget
        cfg.update(pair_budget=1.0, pair_rounds=5)
    cfg["forward_max_nodes"] = 1000
    cfg["thorough"] = thorough
    if thorough:
        cfg["run_limit"] = max(cfg["run_limit"], 600.0)
        cfg.pop("omit", None)
    return cfg


# -- workers ---------------------------------------------------------------------------------
def run_worker(workloads: list[dict[str, Any]], cfg: dict[str, Any], hard_timeout: float, log: Path) -> list[dict[str, Any]]:
    """Run ``workloads`` in worker processes until each is done, restarting after a hard timeout."""
    records: list[dict[str, Any]] = []
    resume: dict[str, dict[str, list[str]]] = {}
    remaining = list(workloads)
    attempts = 0
    while remaining and attempts < 8:
        attempts += 1
        with tempfile.TemporaryDirectory(prefix="fxgen-bench-task-") as tmp:
            task = Path(tmp) / "task.json"
            out = Path(tmp) / "out.jsonl"
            task.write_text(json.dumps({"cfg": cfg, "workloads": remaining, "resume": resume}), encoding="utf-8")
            out.touch()
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(task), str(out)]
            with open(log, "a", encoding="utf-8") as err:
                env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
                proc = subprocess.Popen(cmd, stdout=err, stderr=err, cwd=ROOT, env=env, start_new_session=True)
                try:
                    proc.wait(timeout=hard_timeout)
                    hung = False
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    proc.wait()
                    hung = True
            lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
        finished = {r["workload"] for r in lines if r.get("event") == "done"}
        current = None
        for rec in lines:
            if rec.get("event") == "start":
                current = (rec["workload"], rec["stage"])
            elif rec.get("event") is None and current and rec.get("stage") == current[1]:
                current = None
            if rec.get("event") not in ("start", "done"):
                records.append(rec)
        done_stages: dict[str, list[str]] = {}
        for rec in records:
            if rec.get("event") is None and rec.get("status") == "ok":
                done_stages.setdefault(rec["workload"], []).append(rec["stage"])
        remaining = [w for w in remaining if _key(w) not in finished]
        if not remaining:
            break
        why = f"hard timeout {hard_timeout:.0f} s" if hung else f"worker exit {proc.returncode}"
        if current is not None:
            workload, stage = current
            records.append({"workload": workload, "stage": stage, "status": "timeout" if hung else "error",
                            "note": why, "median": None})  # fmt: skip
            state = resume.setdefault(workload, {"done": [], "dead": []})
            state["dead"].append(stage)
        elif remaining:
            # died between stages (e.g. out of memory while preparing): give up on that workload
            first = _key(remaining[0])
            records.append({"workload": first, "stage": "workload", "status": "error", "note": why, "median": None})
            remaining = remaining[1:]
        for workload, stages in done_stages.items():
            resume.setdefault(workload, {"done": [], "dead": []})["done"] = stages
    return records


def _key(w: dict[str, Any]) -> str:
    return f"{w['kind']}/{w['name']}" + (f"/{w['size']}" if w["kind"] == "synthetic" else "")


# -- fxgen generate --check over 100 unchanged specs -----------------------------------------
def bench_check(tmp: Path, quick: bool, log: Path) -> dict[str, Any]:
    specs = tmp / "check" / "specs"
    out = tmp / "check" / "generated"
    specs.mkdir(parents=True)
    examples = sorted((ROOT / "model_specs").glob("*.yaml"))
    for p in examples:
        shutil.copy(p, specs / p.name)
    sizes = (20,) if quick else (100, 1000)
    i = 0
    while len(list(specs.iterdir())) < 100:
        shape, size = SHAPES[i % 3], sizes[(i // 3) % len(sizes)]
        path = write_spec(specs, shape, size)
        path.rename(specs / f"{shape}_{size}_{i:03d}.yaml")
        i += 1
    fxgen_exe = _fxgen_executable()
    cwd = tmp / "check"
    watchdog = QUICK_WATCHDOG if quick else None  # None: each step's own limit below
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0", "PYTHONPATH": path}  # this checkout's fxgen
    t0 = time.perf_counter()
    first = subprocess.run([*fxgen_exe, "generate", "specs", "--out-dir", "generated", "-j", "1"], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=watchdog or 600)  # fmt: skip
    setup = time.perf_counter() - t0
    if first.returncode != 0:
        return {"status": "error", "note": first.stderr[-500:]}
    cmd = [*fxgen_exe, "generate", "--check", "specs", "--out-dir", "generated"]
    import resource

    times = []
    cpus = []
    rc = None
    for _ in range(3 if quick else 10):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=watchdog or 120)
        times.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        rc = proc.returncode
    baseline = []
    for _ in range(3 if quick else 10):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], cwd=cwd, capture_output=True, timeout=watchdog or 60)
        baseline.append(time.perf_counter() - t0)
    imp = subprocess.run([sys.executable, "-X", "importtime", "-m", "fxgen", "generate", "--check", "specs",
                          "--out-dir", "generated"], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=watchdog or 120)  # fmt: skip
    imported = _parse_importtime(imp.stderr)
    heavy = {m: imported[m] for m in ("torch", "black", "jinja2", "yaml", "jsonschema", "safetensors") if m in imported}
    top = sorted(((v, k) for k, v in imported.items() if "." not in k), reverse=True)[:6]
    del out
    return {
        "status": "ok" if rc == 0 else "error",
        "exit": rc,
        "specs": len(list(specs.iterdir())),
        "spec_mib": sum(p.stat().st_size for p in specs.iterdir()) / 2**20,
        "median": statistics.median(times),
        "cpu": statistics.median(cpus),
        "low": min(times),
        "high": max(times),
        "reps": len(times),
        "python_startup": statistics.median(baseline),
        "first_generate": setup,
        "command": " ".join(Path(cmd[0]).name if i == 0 else c for i, c in enumerate(cmd)),
        "heavy_imports": heavy,
        "top_imports_us": top,
        "torch_imported": "torch" in imported,
        "modules_imported": len(imported),
    }


def _fxgen_executable() -> list[str]:
    """The installed entry-point script next to this interpreter (not a pyenv shim)."""
    script = Path(sys.executable).parent / "fxgen"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "fxgen"]


def _parse_importtime(stderr: str) -> dict[str, int]:
    """``import time: self | cumulative | name`` lines -> {module: cumulative microseconds}."""
    out: dict[str, int] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = [p.strip() for p in line[len("import time:"):].split("|")]
        if len(parts) == 3 and parts[1].isdigit():
            out[parts[2]] = int(parts[1])
    return out


# -- the run ---------------------------------------------------------------------------------
def write_report(out: Path, text: str) -> None:
    """Write the report, keeping the sections ``bench/dynamo_capture.py`` and
    ``bench/cli_startup.py`` wrote into the old one (this suite does not measure them)."""
    keep_sections(out, text, DYNAMO_CAPTURE, CLI_STARTUP, EXPORT_BLOCKS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="node counts, comma-separated")
    parser.add_argument("--quick", action="store_true", help="smallest size, few repeats (CI smoke test)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md", help="Markdown report")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw records here")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="synthetic shapes, comma-separated")
    parser.add_argument("--zoo", default=None, help="zoo models (comma-separated names; 'none' to skip)")
    parser.add_argument("--no-examples", action="store_true", help="skip model_specs/")
    parser.add_argument("--no-check", action="store_true", help="skip the generate --check CLI benchmark")
    parser.add_argument("--thorough", action="store_true",
                        help="3 runs of every stage at every size, no stage omitted (about an hour)")
    parser.add_argument("--heavy-sizes", default=None,
                        help="MiB of weights of the weight-heavy specs, comma-separated ('none' to skip; default "
                             f"{','.join(map(str, HEAVY_SIZES))}, --quick {','.join(map(str, QUICK_HEAVY))})")
    parser.add_argument("--weights-sizes", default=None,
                        help="MiB of weights for the weights-file section (bench/weights_io.py), comma-separated ('none' "
                             f"to skip; default {','.join(map(str, weights_io.DEFAULT_SIZES))}, --quick "
                             f"{','.join(map(str, weights_io.QUICK_SIZES))})")  # fmt: skip
    parser.add_argument("--heavy-rounds", type=int, default=None,
                        help=f"fresh-process measurements per method and weight-heavy spec (default {HEAVY_ROUNDS}, --quick 1)")
    parser.add_argument("--from-json", type=Path, default=None, metavar="JSON",
                        help="measure nothing: write --out again from the raw records of an earlier run (--json)")
    parser.add_argument("--worker", nargs=2, metavar=("TASK", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        from stages import worker_main

        return worker_main(*args.worker)
    if args.from_json:
        from report import render  # type: ignore[import-not-found]

        run = json.loads(args.from_json.read_text(encoding="utf-8"))
        write_report(args.out, render(run["records"], run["check"], run["meta"]))
        return 0

    started = time.perf_counter()
    args.load_before = _loadavg()
    args.available_before = _mem_gib("MemAvailable:")
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if args.quick:
        sizes = sizes[:1]
    shapes = [s for s in args.shapes.split(",") if s]
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fxgen-bench-") as tmp_name:
        tmp = Path(tmp_name)
        log = tmp / "workers.log"
        groups = _plan(tmp, sizes, shapes, args)
        check = None
        for label, workloads, cfg, hard in groups:
            t0 = time.perf_counter()
            print(f"bench: {label} ({len(workloads)} workload(s)) ...", file=sys.stderr, flush=True)
            records += run_worker(workloads, cfg, hard, log)
            print(f"bench: {label} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            _write(args, records, check, sizes, started, partial=True)  # an interrupted run keeps its results
        heavy_sizes = _heavy_sizes(args)
        if heavy_sizes:
            t0 = time.perf_counter()
            rounds = args.heavy_rounds or (1 if args.quick else HEAVY_ROUNDS)
            dtypes = ["float32"] if args.quick else list(heavy.DTYPES)
            print(f"bench: weight-heavy specs {heavy_sizes} MiB, {', '.join(dtypes)}, {rounds} round(s) ...",
                  file=sys.stderr, flush=True)  # fmt: skip
            (tmp / "heavy").mkdir()
            try:
                records += heavy.run(tmp / "heavy", heavy_sizes, dtypes, rounds, log=log)
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                records.append({"workload": "heavy", "stage": "workload", "status": "error", "note": str(exc)[:300],
                                "median": None})  # fmt: skip
            shutil.rmtree(tmp / "heavy", ignore_errors=True)  # up to 4 GiB of weights
            print(f"bench: weight-heavy specs done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            _write(args, records, check, sizes, started, partial=True)
        weights_sizes = _weights_sizes(args)
        if weights_sizes:
            t0 = time.perf_counter()
            rounds = args.heavy_rounds or (1 if args.quick else HEAVY_ROUNDS)
            print(f"bench: weights files in and out {weights_sizes} MiB, {rounds} round(s) ...", file=sys.stderr,
                  flush=True)  # fmt: skip
            (tmp / "weights").mkdir()
            try:
                records += weights_io.run(tmp / "weights", weights_sizes, rounds)
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                records.append({"workload": "weights", "stage": "workload", "status": "error", "note": str(exc)[:300],
                                "median": None})  # fmt: skip
            shutil.rmtree(tmp / "weights", ignore_errors=True)
            print(f"bench: weights files done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            _write(args, records, check, sizes, started, partial=True)
        if not args.no_check:
            print("bench: generate --check over 100 specs ...", file=sys.stderr, flush=True)
            try:
                check = bench_check(tmp, args.quick, log)
            except (subprocess.TimeoutExpired, OSError) as exc:
                check = {"status": "timeout" if isinstance(exc, subprocess.TimeoutExpired) else "error",
                         "note": str(exc)[:300]}  # fmt: skip
        worker_log = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    elapsed = _write(args, records, check, sizes, started, partial=False)
    problems = [r for r in records if r.get("status") == "error"]
    for rec in problems:
        print(f"bench: error in {rec['workload']} {rec.get('stage')}: {rec.get('note')}", file=sys.stderr)
    if worker_log.strip() and (problems or os.environ.get("FXGEN_BENCH_VERBOSE")):
        print(worker_log[-3000:], file=sys.stderr)
    print(f"bench: wrote {args.out} in {elapsed:.1f} s", file=sys.stderr)
    return 0


def _write(args: argparse.Namespace, records: list[dict[str, Any]], check: dict[str, Any] | None, sizes: list[int],
           started: float, *, partial: bool) -> float:  # fmt: skip
    from report import render  # type: ignore[import-not-found]

    elapsed = time.perf_counter() - started
    meta = machine(args, sizes, elapsed)
    meta["partial"] = partial
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_report(args.out, render(records, check, meta))
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "check": check, "records": records}, indent=1), encoding="utf-8")
    return elapsed


def _plan(tmp: Path, sizes: list[int], shapes: list[str], args: argparse.Namespace) -> list[tuple[str, list[dict[str, Any]], dict[str, Any], float]]:
    """Worker groups: small sizes share a worker (one torch import), 100k gets one per shape."""
    groups: list[tuple[str, list[dict[str, Any]], dict[str, Any], float]] = []
    specs = tmp / "specs"
    specs.mkdir()

    def synthetic(size: int, shape: str) -> dict[str, Any]:
        path = write_spec(specs, shape, size)
        return {"kind": "synthetic", "name": shape, "size": size, "path": str(path)}

    if args.quick:  # one worker (one torch import) for everything
        work = [synthetic(n, shape) for n in sizes for shape in shapes]
        if not args.no_examples:
            work += [{"kind": "example", "name": p.stem, "path": str(p)} for p in sorted((ROOT / "model_specs").glob("*.yaml"))]
        work += [{"kind": "zoo", "name": name} for name in _zoo_names(args)]
        return [("quick: synthetic, examples, zoo", work, config(sizes[0], True), QUICK_WATCHDOG)]
    th = args.thorough
    small = [s for s in sizes if s <= 1000]
    if small:
        cfg = config(max(small), False, thorough=th)
        work = [synthetic(n, shape) for n in small for shape in shapes]
        groups.append((f"synthetic {','.join(map(str, small))}", work, cfg, 600.0))
    for n in (s for s in sizes if 1000 < s <= 10_000):
        groups.append((f"synthetic {n}", [synthetic(n, shape) for shape in shapes], config(n, False, thorough=th),
                       3600.0 if th else 900.0))
    for n in (s for s in sizes if s > 10_000):
        for shape in shapes:
            groups.append((f"synthetic {shape} {n}", [synthetic(n, shape)], config(n, False, thorough=th),
                           7200.0 if th else 900.0))
    if not args.no_examples:
        work = [{"kind": "example", "name": p.stem, "path": str(p)} for p in sorted((ROOT / "model_specs").glob("*.yaml"))]
        groups.append(("examples", work, config(100, False, thorough=th, models=True), 900.0))
    if not args.no_examples:
        mlp = ROOT / "model_specs" / "mlp.yaml"
        groups.append(("torch.compile check", [{"kind": "compile", "name": "mlp", "path": str(mlp)}],
                       config(100, False, thorough=th, models=True), 900.0))  # fmt: skip
    zoo = _zoo_names(args)
    if zoo:
        work = [{"kind": "zoo", "name": name} for name in zoo]
        groups.append((f"zoo ({len(zoo)} models)", work, config(100, False, thorough=th, models=True), 1800.0))
    return groups


HEAVY_SIZES = heavy.DEFAULT_SIZES  # MiB of weights
QUICK_HEAVY = heavy.QUICK_SIZES
HEAVY_ROUNDS = 3


def _weights_sizes(args: argparse.Namespace) -> list[float]:
    """The weights-file section's sizes in MiB: ``--weights-sizes``, else the defaults."""
    if args.weights_sizes == "none":
        return []
    if args.weights_sizes:
        return [float(s) for s in args.weights_sizes.split(",") if s.strip()]
    return [float(s) for s in (weights_io.QUICK_SIZES if args.quick else weights_io.DEFAULT_SIZES)]


def _heavy_sizes(args: argparse.Namespace) -> list[float]:
    """The weight-heavy specs' sizes in MiB: ``--heavy-sizes``, else the defaults."""
    if args.heavy_sizes == "none":
        return []
    if args.heavy_sizes:
        return [float(s) for s in args.heavy_sizes.split(",") if s.strip()]
    return list(QUICK_HEAVY if args.quick else HEAVY_SIZES)


def _zoo_names(args: argparse.Namespace) -> list[str]:
    if args.zoo == "none":
        return []
    try:
        from zoo_models import ZOO
    except ImportError:
        return []
    import importlib.util

    def available(z: Any) -> bool:
        return all(importlib.util.find_spec(r) is not None for r in z.requires)

    if args.zoo:
        wanted = set(args.zoo.split(","))
        return [z.name for z in ZOO if z.name in wanted]
    chosen = [z for z in ZOO if z.traceable and available(z)]
    if args.quick:
        chosen = [z for z in chosen if z.name in QUICK_ZOO]
    elif not args.zoo:
        chosen = _sample(chosen)
    return [z.name for z in chosen]


ZOO_SAMPLE = 8  # models of each library in a full run: the zoo has hundreds (bench/zoo_report.py runs them all)


def _sample(models: list[Any]) -> list[Any]:
    """At most ``ZOO_SAMPLE`` models of each library, spread over its catalogue (deterministic)."""
    by_library: dict[str, list[Any]] = {}
    for z in models:
        by_library.setdefault(z.library, []).append(z)
    chosen = []
    for group in by_library.values():
        step = max(1, len(group) // ZOO_SAMPLE)
        chosen += group[::step][:ZOO_SAMPLE]
    return chosen


def machine(args: argparse.Namespace, sizes: list[int], elapsed: float) -> dict[str, Any]:
    import importlib.metadata as md

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def version(dist: str) -> str:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return "not installed"

    from measure import MEMORY_METHOD

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": _mem_gib(),
        "available_gib": getattr(args, "available_before", None),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": {d: version(d) for d in _DISTS},
        "git": _git_head(),
        "sizes": sizes,
        "quick": args.quick,
        "elapsed": elapsed,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "memory_method": MEMORY_METHOD,
        "load_before": getattr(args, "load_before", None),
        "load_after": _loadavg(),
        "command": "python bench/run.py " + " ".join(a for a in sys.argv[1:]),
    }


def _loadavg() -> str | None:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return None


def _mem_gib(field: str = "MemTotal:") -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _git_head() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "fxgen"], cwd=ROOT, capture_output=True,
                               text=True, timeout=10).stdout.strip()  # fmt: skip
        return head + (" + uncommitted changes in fxgen/" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
