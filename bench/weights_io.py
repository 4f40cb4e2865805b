"""Weights files in and out (issue 34): ``fxgen.load`` of a file ``safetensors.torch.save_file``
wrote, ``fxgen.load`` of fxgen's own file, and ``fxgen.save_weights``; time and peak memory,
each one call in a fresh process.

    python bench/weights_io.py [--sizes 1024] [--rounds 3] [--alt DIR]   # DIR: another fxgen tree (A/B)

The workload is ``bench/heavy.py``'s float32 stack of transformer blocks of the given MiB: its
spec, its generated class and its weights twice, as fxgen writes them (tensors at 64-byte offsets)
and as ``safetensors.torch.save_file`` (and Hugging Face's ``save_pretrained``) writes them (the
data at an 8-byte offset: here every tensor is off a 64-byte boundary, the worst case).

Methods (the stage names of ``bench/run.py``'s records):

- ``load_save_file``: ``fxgen.load(spec, weights=<save_file's file>)``; the file is read once
  before (a warm page cache), so the speed is the copy's (target: at least 2 GB/s; peak memory
  above the start at most 1.1x the file);
- ``ref_one_read``, the bound for any loader that copies: one fresh allocation of the file's size
  and one read of the whole file into it (``readinto``), from the same warm page cache; what is
  left of fxgen's time above it is fxgen's own. (On a virtual machine, fresh memory's page faults
  can cost more than the copy itself: there, this bound is far below memory speed);
- ``load_fxgen_file``: ``fxgen.load(spec, weights=<fxgen's file>)``, the mapped fast path;
- ``save_weights``: ``fxgen.save_weights(model, path)`` of the generated class's model (its tensors
  in memory, made before the measurement); peak memory above the model, as a multiple of the
  weights (target: at most 1.2x).

Each measurement is a fresh process that first runs the same method on a tiny model (imports,
first-call caches), then resets the kernel's high-water mark (``/proc/self/clear_refs``) and
makes the one measured call: peak memory is ``VmHWM`` after it minus ``VmRSS`` before it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import heavy  # noqa: E402

DEFAULT_SIZES = (1024,)  # MiB of weights
QUICK_SIZES = (4,)
METHODS = ("load_save_file", "ref_one_read", "load_fxgen_file", "save_weights")
_CHUNK = 16 * 2**20

__all__ = ["DEFAULT_SIZES", "METHODS", "QUICK_SIZES", "records", "run"]


def _save_file_copy(h: heavy.Heavy) -> str:
    """The same tensors written by ``safetensors.torch.save_file``, next to fxgen's file, with the
    data off a 64-byte boundary (save_file pads the header to 8 bytes: one file in eight would
    start its data at 64, and these tensors' sizes are multiples of 64; a note in the metadata
    moves it)."""
    from safetensors.torch import load_file, save_file

    path = h.weights.removesuffix(".safetensors") + ".save_file.safetensors"
    state = {k: v.clone() for k, v in load_file(h.weights).items()}
    for pad in range(64):
        save_file(state, path, metadata={"note": "x" * pad} if pad else None)
        with open(path, "rb") as f:
            if (8 + int.from_bytes(f.read(8), "little")) % 64:
                return path
    raise AssertionError("no misaligned layout found")


def _prepare_main(directory: Path, sizes: list[float]) -> None:
    """(In a subprocess) write the warm-up model and one workload per size; print them as JSON."""
    out = []
    for key, size, shape in [("weights/warm", 0, {"width": 64, "blocks": 1}), *((f"weights/{s:g}", s, {}) for s in sizes)]:
        h = heavy._write_one(directory, size, "float32", key=key, **shape)
        out.append({"heavy": asdict(h), "save_file": _save_file_copy(h)})
    print(json.dumps(out))


def _warm_cache(path: str) -> None:
    """Read the file once, so that the measured call reads it from the page cache."""
    buffer = bytearray(_CHUNK)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buffer):
            pass


def _call(method: str, work: dict[str, Any], out: Path) -> tuple[Any, Any]:
    """(the call measured, what it works on) for ``method`` on ``work``; all preparation done."""
    from stages import import_class  # type: ignore[import-not-found]

    import fxgen

    h = heavy.Heavy(**work["heavy"])
    if method == "save_weights":
        model = import_class(Path(h.module), h.name)()  # the model's tensors in memory, not mapped
        return (lambda: fxgen.save_weights(model, out)), model
    path = work["save_file"] if method in ("load_save_file", "ref_one_read") else h.weights
    _warm_cache(path)
    if method == "ref_one_read":
        return (lambda: _one_read(path)), path
    spec = fxgen.load_spec(h.spec)
    return (lambda: fxgen.load(spec, weights=path)), path


def _one_read(path: str) -> Any:
    import torch

    with open(path, "rb", buffering=0) as f:
        data = torch.empty(Path(path).stat().st_size, dtype=torch.uint8)
        view, done = data.numpy().data, 0
        while done < len(view):
            done += f.readinto(view[done:]) or len(view)
    return data


def _child_main(method: str, work: dict[str, Any], warm: dict[str, Any], out: Path) -> None:
    import torch
    from safetensors.torch import load_file

    torch.set_num_threads(1)
    call, _ = _call(method, warm, out)
    call()  # imports and first-call caches, on a tiny model
    call, subject = _call(method, work, out)
    heavy._trim()
    heavy._reset_peak()
    start = heavy._status_kib("VmRSS", "RssAnon", "RssFile")
    base = start["VmRSS"]
    t0 = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - t0
    after = heavy._status_kib("VmHWM", "RssAnon", "RssFile")
    peak = (after["VmHWM"] - base) * 1024
    h = heavy.Heavy(**work["heavy"])
    if method == "save_weights":
        state, file = subject.state_dict(), load_file(str(out))
        size = sum(t.nbytes for t in state.values())
    elif method == "ref_one_read":
        size = Path(subject).stat().st_size
        state = file = {"file": result}
    else:
        state, file = result.state_dict(), load_file(subject)
        size = Path(subject).stat().st_size
    exact = state.keys() == file.keys() and all(torch.equal(state[k].view(torch.uint8), file[k].view(torch.uint8))
                                                for k in file)  # fmt: skip
    misaligned = sum(t.data_ptr() % 64 != 0 for t in state.values()) if method.startswith("load") else 0
    print(json.dumps({"method": method, "seconds": seconds, "peak_bytes": peak, "bytes": size, "exact": exact,
                      "misaligned": misaligned, "tensors": h.tensors,
                      "anon_bytes": (after["RssAnon"] - start["RssAnon"]) * 1024,
                      "file_bytes": (after["RssFile"] - start["RssFile"]) * 1024}))  # fmt: skip


def run_child(method: str, work: dict[str, Any], warm: dict[str, Any], directory: Path, *,
              root: str | None = None) -> dict[str, Any]:  # fmt: skip
    payload = json.dumps({"method": method, "work": work, "warm": warm, "root": root, "out": str(directory / "out.st")})
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", payload]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=heavy._child_env())
    except subprocess.TimeoutExpired:
        return {"method": method, "error": "timeout after 1800 s"}
    (directory / "out.st").unlink(missing_ok=True)
    if proc.returncode != 0:
        return {"method": method, "error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:300]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def records(key: str, samples: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """``bench/run.py`` records: per method the median time, speed (file bytes per second) and
    peak memory above the start as a multiple of the weights."""
    out: list[dict[str, Any]] = []
    for method, recs in samples.items():
        ok = [r for r in recs if "error" not in r]
        if not ok:
            out.append({"workload": key, "stage": method, "status": "error", "median": None,
                        "note": recs[0].get("error", "no sample") if recs else "not run"})  # fmt: skip
            continue
        seconds = statistics.median(r["seconds"] for r in ok)
        size = ok[0]["bytes"]
        out.append({"workload": key, "stage": method, "status": "ok", "median": seconds, "reps": len(ok),
                    "low": min(r["seconds"] for r in ok), "high": max(r["seconds"] for r in ok),
                    "peak_mib": statistics.median(r["peak_bytes"] for r in ok) / 2**20, "note": "fresh process per run",
                    "extra": {"bytes": size, "gb_per_s": size / seconds / 1e9,
                              "peak_ratio": max(r["peak_bytes"] for r in ok) / size,
                              "exact": all(r["exact"] for r in ok), "misaligned": max(r["misaligned"] for r in ok),
                              "fresh_process": True}})  # fmt: skip
    return out


def run(directory: Path, sizes: list[float], rounds: int, *, alt: str | None = None,
        methods: tuple[str, ...] = METHODS, progress: Any = None) -> list[dict[str, Any]]:  # fmt: skip
    """Write the workloads to ``directory``, measure each method ``rounds`` times (with ``alt``,
    fxgen from that tree too: stages ``METHOD:alt``), the order reversed every other round;
    ``bench/run.py`` records."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--prepare", str(directory),
           "--sizes", ",".join(f"{s:g}" for s in sizes)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, env=heavy._child_env())
    if proc.returncode != 0:
        raise RuntimeError(f"bench/weights_io.py --prepare failed: {proc.stderr[-2000:]}")
    warm, *works = json.loads(proc.stdout.strip().splitlines()[-1])
    runs = [(m, None) for m in methods] + ([(m, alt) for m in methods] if alt else [])
    out: list[dict[str, Any]] = []
    for work in works:
        key = work["heavy"]["key"]
        samples: dict[str, list[dict[str, Any]]] = {}
        for r in range(rounds):
            for method, root in runs[::-1] if r % 2 else runs:
                rec = run_child(method, work, warm, directory, root=root)
                name = method + (":alt" if root else "")
                samples.setdefault(name, []).append(rec)
                if progress is not None:
                    progress(f"{key} {name} round {r + 1}: " + (rec.get("error") or
                             f"{rec['seconds'] * 1e3:.1f} ms, peak {rec['peak_bytes'] / rec['bytes']:.2f}x, resident after: anonymous "
                             f"{rec['anon_bytes'] / rec['bytes']:.2f}x, file {rec['file_bytes'] / rec['bytes']:.2f}x"))  # fmt: skip
        out.append({"workload": key, "event": "info", "weights_bytes": work["heavy"]["weights_bytes"],
                    "save_file_bytes": Path(work["save_file"]).stat().st_size, "tensors": work["heavy"]["tensors"],
                    "width": work["heavy"]["width"], "blocks": work["heavy"]["blocks"]})  # fmt: skip
        out += records(key, samples)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="MiB of weights, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--alt", default=None, metavar="DIR", help="also measure fxgen imported from DIR (an A/B)")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated, of " + ", ".join(METHODS))
    parser.add_argument("--json", type=Path, default=None, help="write the records here")
    parser.add_argument("--prepare", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",") if s]
    if args.prepare:
        heavy._use_fxgen(None)
        _prepare_main(args.prepare, sizes)
        return 0
    if args.child:
        task = json.loads(args.child)
        heavy._use_fxgen(task.get("root"))
        _child_main(task["method"], task["work"], task["warm"], Path(task["out"]))
        return 0
    with tempfile.TemporaryDirectory(prefix="fxgen-weights-") as tmp:
        recs = run(Path(tmp), sizes, args.rounds, alt=args.alt, methods=tuple(args.methods.split(",")),
                   progress=lambda line: print("weights: " + line, file=sys.stderr, flush=True))  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(recs, indent=1), encoding="utf-8")
    from report import Table, weights_io_table  # type: ignore[import-not-found]

    print(weights_io_table(Table(recs), [r["workload"] for r in recs if r.get("event") == "info"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
