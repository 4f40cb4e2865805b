"""Weight-heavy specs: load with weights as the file grows to 2 GiB, time and peak memory, each
measured in a fresh process.

    python bench/heavy.py [--sizes 16,128,512,2048] [--dtypes float32,bfloat16] [--rounds 3]
    python bench/heavy.py --sizes 512 --alt /tmp/proto   # A/B: fxgen from another tree too

The workloads are stacks of transformer blocks (``LayerNorm``, ``Linear(d, 3d)`` for q, k and v,
``scaled_dot_product_attention``, ``Linear(d, d)``, ``LayerNorm``, ``Linear(d, 4d)``, GELU,
``Linear(4d, d)``, two residual adds), in float32 and bfloat16, sized to at most the requested
MiB of weights (:func:`plan`). Each is written to a temporary directory as a spec, a safetensors
file laid out as ``fxgen.save_weights`` lays it out (same tensor order and table, checked against
``fxgen.write.weights.write_weights`` on every run; no digest) and the class ``fxgen.generate`` makes of the
spec, as a user would import it. Nothing is committed.

Methods, the stage names ``bench/report.py`` knows:

- ``load_weights``: ``fxgen.load(spec, weights=path)``, the Spec read beforehand (as the class
  is imported beforehand for the references);
- ``ref_meta_assign``, reference (a): the generated class built on the meta device, then
  ``load_state_dict(load_file(path), assign=True)``: the fastest way to load it by hand;
- ``ref_init_load``, reference (b): the class built normally, then
  ``load_state_dict(load_file(path))``: what most people write.

Every measurement is a fresh process (``--child``): it imports torch, fxgen and the generated
class, loads a tiny model of the family once with the same method (imports, first-call caches),
frees it, gives freed memory back to the OS, resets the kernel's high-water mark
(``/proc/self/clear_refs``) and reads the resident size. Then one timed call; the peak resident
size above the start is ``VmHWM`` after it minus ``VmRSS`` before it, which counts every page the
process maps: anonymous copies and the file's pages a memory map has touched alike. After it, the
resident size split into anonymous and file-backed pages, then the same after reading every tensor
once (what the first forward does to weights that are only mapped), and last a check that every
tensor equals the file's bytes and lies at a 64-byte boundary. Rounds alternate the methods' order;
time ratios are the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_SIZES = (16, 128, 512, 2048)  # MiB of weights, at most
QUICK_SIZES = (4,)
DTYPES = ("float32", "bfloat16")
METHODS = ("load_weights", "ref_meta_assign", "ref_init_load")
METHOD_LABEL = {
    "load_weights": "fxgen.load(spec, weights=path)",
    "ref_meta_assign": "(a) meta + load_state_dict(assign=True)",
    "ref_init_load": "(b) built + load_state_dict",
}
_ITEMSIZE = {"float32": 4, "bfloat16": 2}
_ST_DTYPE = {"float32": "F32", "bfloat16": "BF16"}
_METADATA = {"format": "pt", "producer": "fxgen"}  # what fxgen.write.weights puts in the header
_ALIGNMENT = 64

__all__ = ["DEFAULT_SIZES", "DTYPES", "METHODS", "Heavy", "affordable", "measure", "plan", "prepare", "records",
           "run"]


# -- the workloads -----------------------------------------------------------------------------
@dataclass
class Heavy:
    """One weight-heavy workload: its files and what it holds."""

    key: str  # "heavy/float32/512"
    name: str  # the spec's (and generated class's) name
    dtype: str
    target_mib: int
    width: int
    blocks: int
    spec: str  # paths
    weights: str
    module: str
    weights_bytes: int = 0
    parameters: int = 0
    tensors: int = 0
    nodes: int = 0
    data_start: int = 0  # file offset of the first tensor's bytes (8 + header length)
    misaligned: int = 0  # tensors a memory map hands out off a 64-byte boundary
    misaligned_bytes: int = 0


def _block_params(width: int) -> int:
    return 12 * width * width + 13 * width


def plan(target_mib: float, dtype: str) -> tuple[int, int]:
    """(width, blocks): the widest power of two (128 to 4096) with at least 4 blocks in
    ``target_mib``, and as many blocks as fit. float32 and bfloat16 give the same file sizes:
    16 -> 5x256 / 10x256, 128 -> 10x512 / 5x1024, 512 -> 10x1024 / 5x2048, 2048 -> 10x2048 / 5x4096."""
    budget = target_mib * 2**20 / _ITEMSIZE[dtype]
    width = 128
    while width < 4096 and budget // _block_params(width * 2) >= 4:
        width *= 2
    return width, max(1, int(budget // _block_params(width)))


def tensor_shapes(width: int, blocks: int) -> dict[str, list[int]]:
    """Name -> shape of every tensor in the state dict (and the file)."""
    d = width
    shapes: dict[str, list[int]] = {}
    for i in range(blocks):
        p = f"blocks.{i}."
        for ln in ("ln1", "ln2"):
            shapes[p + ln + ".weight"] = [d]
            shapes[p + ln + ".bias"] = [d]
        for name, (out, inp) in {"qkv": (3 * d, d), "proj": (d, d), "fc1": (4 * d, d), "fc2": (d, 4 * d)}.items():
            shapes[p + name + ".weight"] = [out, inp]
            shapes[p + name + ".bias"] = [out]
    shapes["ln_f.weight"] = [d]
    shapes["ln_f.bias"] = [d]
    return shapes


def spec_text(name: str, width: int, blocks: int, dtype: str) -> str:
    """The spec, as YAML: ``blocks`` pre-norm transformer blocks and a final LayerNorm."""
    kw = "" if dtype == "float32" else f", kwargs: {{dtype: {{dtype: {dtype}}}}}"
    d = width
    modules = []
    nodes = ["  - {op: placeholder, name: x, type: torch.Tensor}\n"]
    prev = "x"

    def node(op: str, name: str, target: str, args: str, kwargs: str = "") -> None:
        extra = f", kwargs: {{{kwargs}}}" if kwargs else ""
        nodes.append(f"  - {{op: {op}, name: {name}, target: {target}, args: [{args}]{extra}}}\n")

    for i in range(blocks):
        p = f"blocks.{i}."
        modules += [f"  {p}ln1: {{class: torch.nn.LayerNorm, args: [{d}]{kw}}}\n",
                    f"  {p}qkv: {{class: torch.nn.Linear, args: [{d}, {3 * d}]{kw}}}\n",
                    f"  {p}proj: {{class: torch.nn.Linear, args: [{d}, {d}]{kw}}}\n",
                    f"  {p}ln2: {{class: torch.nn.LayerNorm, args: [{d}]{kw}}}\n",
                    f"  {p}fc1: {{class: torch.nn.Linear, args: [{d}, {4 * d}]{kw}}}\n",
                    f"  {p}fc2: {{class: torch.nn.Linear, args: [{4 * d}, {d}]{kw}}}\n"]  # fmt: skip
        node("call_module", f"ln1_{i}", p + "ln1", f'"%{prev}"')
        node("call_module", f"qkv_{i}", p + "qkv", f'"%ln1_{i}"')
        node("call_method", f"parts_{i}", "chunk", f'"%qkv_{i}", 3', "dim: -1")
        for j, part in enumerate("qkv"):
            node("call_function", f"{part}_{i}", "operator.getitem", f'"%parts_{i}", {j}')
        node("call_function", f"att_{i}", "torch.nn.functional.scaled_dot_product_attention",
             f'"%q_{i}", "%k_{i}", "%v_{i}"')  # fmt: skip
        node("call_module", f"proj_{i}", p + "proj", f'"%att_{i}"')
        node("call_function", f"res1_{i}", "operator.add", f'"%{prev}", "%proj_{i}"')
        node("call_module", f"ln2_{i}", p + "ln2", f'"%res1_{i}"')
        node("call_module", f"fc1_{i}", p + "fc1", f'"%ln2_{i}"')
        node("call_function", f"gelu_{i}", "torch.nn.functional.gelu", f'"%fc1_{i}"')
        node("call_module", f"fc2_{i}", p + "fc2", f'"%gelu_{i}"')
        node("call_function", f"res2_{i}", "operator.add", f'"%res1_{i}", "%fc2_{i}"')
        prev = f"res2_{i}"
    modules.append(f"  ln_f: {{class: torch.nn.LayerNorm, args: [{d}]{kw}}}\n")
    node("call_module", "out", "ln_f", f'"%{prev}"')
    nodes.append('  - {op: output, args: ["%out"], type: torch.Tensor}\n')
    head = f"# input: x {dtype}[2, 16, {d}]\nfxgen: 1\nname: {name}\n"
    return head + "modules:\n" + "".join(modules) + "nodes:\n" + "".join(nodes)


def _layout(shapes: dict[str, list[int]], dtype: str) -> tuple[bytes, list[tuple[str, int, int]]]:
    """The safetensors header fxgen's writer makes (one dtype, every tensor's size a multiple of
    64 bytes: tensors in name order, the header JSON compact and padded with spaces to a multiple
    of 8) and each tensor's (name, start, end)."""
    header: dict[str, Any] = {"__metadata__": _METADATA}
    spans = []
    offset = 0
    for name in sorted(shapes):
        n = _ITEMSIZE[dtype]
        for dim in shapes[name]:
            n *= dim
        if n % _ALIGNMENT:
            raise ValueError(f"{name}: {n} bytes; fxgen's writer would move it after the others")
        header[name] = {"dtype": _ST_DTYPE[dtype], "shape": shapes[name], "data_offsets": [offset, offset + n]}
        spans.append((name, offset, offset + n))
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return text + b" " * (-(8 + len(text)) % _ALIGNMENT), spans  # the data at a 64-byte boundary, as fxgen writes it


def write_weights(path: Path, shapes: dict[str, list[int]], dtype: str, seed: int = 0) -> tuple[int, int, int]:
    """Write a safetensors file of random tensors one tensor at a time (never the whole state in
    memory); returns (data start, tensors off a 64-byte boundary when mapped, their bytes)."""
    import torch

    header, spans = _layout(shapes, dtype)
    start = 8 + len(header)
    gen = torch.Generator().manual_seed(seed)
    misaligned = misaligned_bytes = 0
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        for name, lo, hi in spans:
            t = torch.empty(shapes[name]).uniform_(-0.05, 0.05, generator=gen).to(getattr(torch, dtype))
            view = t.view(torch.int16) if dtype == "bfloat16" else t
            f.write(view.numpy().tobytes())
            if (start + lo) % _ALIGNMENT:
                misaligned += 1
                misaligned_bytes += hi - lo
        f.flush()
        os.fsync(f.fileno())  # written back now, not while a measurement reads it
    return start, misaligned, misaligned_bytes


def _check_writer(directory: Path) -> None:
    """The streamed writer lays the tensors out as fxgen's own (``fxgen.write.weights``) does,
    per dtype: the same tensor table, the same data, both at a 64-byte boundary (only the
    metadata differs: fxgen's records the digest)."""
    from safetensors.torch import load_file

    from fxgen.write.weights import write_weights as fxgen_write_weights

    def parts(data: bytes) -> tuple[int, dict[str, Any], bytes]:
        n = struct.unpack("<Q", data[:8])[0]
        table = json.loads(data[8 : 8 + n])
        table.pop("__metadata__")
        return (8 + n) % _ALIGNMENT, table, data[8 + n :]

    for dtype in DTYPES:
        shapes = tensor_shapes(64, 2)
        path = directory / f"_writer_check_{dtype}.safetensors"
        theirs_path = directory / f"_writer_check_{dtype}_fxgen.safetensors"
        write_weights(path, shapes, dtype)
        fxgen_write_weights(theirs_path, {k: v.clone() for k, v in load_file(str(path)).items()})
        theirs, ours = theirs_path.read_bytes(), path.read_bytes()
        theirs_path.unlink()
        if parts(theirs) != parts(ours):
            raise AssertionError(f"bench/heavy.py's writer differs from fxgen.write.weights for {dtype}")
        path.unlink()


def _write_one(directory: Path, target_mib: float, dtype: str, *, width: int | None = None, blocks: int | None = None,
               key: str | None = None) -> Heavy:  # fmt: skip
    import fxgen

    if width is None or blocks is None:
        width, blocks = plan(target_mib, dtype)
    tag = "f32" if dtype == "float32" else "bf16"
    name = f"Transformer{blocks}x{width}{tag.upper()}"
    stem = f"heavy_{tag}_{width}x{blocks}"
    spec_path = directory / f"{stem}.yaml"
    spec_path.write_text(spec_text(name, width, blocks, dtype), encoding="utf-8")
    spec = fxgen.load_spec(spec_path)
    module_path = directory / f"{stem}.py"
    module_path.write_text(fxgen.generate(spec), encoding="utf-8")
    shapes = tensor_shapes(width, blocks)
    weights = directory / f"{stem}.safetensors"
    start, misaligned, misaligned_bytes = write_weights(weights, shapes, dtype)
    params = sum(_numel(s) for s in shapes.values())
    return Heavy(key or f"heavy/{dtype}/{target_mib:g}", name, dtype, int(target_mib), width, blocks,
                 str(spec_path), str(weights), str(module_path), weights.stat().st_size, params, len(shapes),
                 len(spec.nodes), start, misaligned, misaligned_bytes)  # fmt: skip


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _prepare_main(directory: Path, sizes: list[float], dtypes: list[str]) -> None:
    """(In a subprocess) write the warm-up model and every workload; print them as JSON."""
    _check_writer(directory)
    out = {"warm": {dt: asdict(_write_one(directory, 0, dt, width=64, blocks=1, key=f"warm/{dt}")) for dt in dtypes},
           "workloads": [asdict(_write_one(directory, size, dt)) for dt in dtypes for size in sizes]}  # fmt: skip
    print(json.dumps(out))


def prepare(directory: Path, sizes: list[float], dtypes: list[str], log: Path | None = None) -> tuple[dict[str, Heavy], list[Heavy]]:
    """Write the workloads (in a subprocess, so this process never imports torch or holds the
    weights): the warm-up model per dtype, and one workload per size and dtype."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--prepare", str(directory),
           "--sizes", ",".join(f"{s:g}" for s in sizes), "--dtypes", ",".join(dtypes)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, env=_child_env())
    if log is not None:
        with open(log, "a", encoding="utf-8") as f:
            f.write(proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"bench/heavy.py --prepare failed: {proc.stderr[-2000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    warm = {dt: Heavy(**h) for dt, h in data["warm"].items()}
    return warm, [Heavy(**h) for h in data["workloads"]]


# -- one measurement, in a fresh process -------------------------------------------------------
def _status_kib(*keys: str) -> dict[str, int]:
    found: dict[str, int] = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            name = line.split(":", 1)[0]
            if name in keys:
                found[name] = int(line.split()[1])
    return found


def _trim() -> None:
    gc.collect()
    with suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")  # VmHWM := VmRSS


def loader(method: str, h: Heavy) -> Callable[[], Any]:
    """The call that is measured: ``method`` on ``h`` (its Spec read and its class imported now).
    The references are ``bench/stages.py``'s, the ones ``bench/run.py`` times on every model."""
    from stages import import_class, ref_init_load, ref_meta_assign  # type: ignore[import-not-found]

    import fxgen

    if method == "load_weights":
        spec = fxgen.load_spec(h.spec)
        return lambda: fxgen.load(spec, weights=h.weights)
    cls = import_class(Path(h.module), h.name)
    if method == "ref_meta_assign":
        return lambda: ref_meta_assign(cls, h.weights)
    if method == "ref_init_load":
        return lambda: ref_init_load(cls, h.weights)
    raise ValueError(method)


def _child_main(method: str, heavy: Heavy, warm: Heavy) -> None:
    """One measurement (see the module docstring); prints a JSON record."""
    import torch
    from measure import timed_functions  # type: ignore[import-not-found]
    from safetensors.torch import load_file

    torch.set_num_threads(1)
    loader(method, warm)()  # imports and first-call caches, on a tiny model of the family
    call = loader(method, heavy)
    _trim()
    _reset_peak()
    start = _status_kib("VmRSS", "RssAnon", "RssFile")
    base = start["VmRSS"]
    spent: dict[str, float] = {}
    patches = [("read", "fxgen.assemble.load", "read_weights")] if method == "load_weights" else []
    with timed_functions(patches, spent, {}):
        c0 = time.process_time()
        t0 = time.perf_counter()
        loaded = call()
        seconds = time.perf_counter() - t0
        cpu = time.process_time() - c0
    after = _status_kib("VmHWM", "VmRSS", "RssAnon", "RssFile")
    tensors = [t for t in (*loaded.parameters(), *loaded.buffers()) if not t.is_meta]
    t0 = time.perf_counter()
    with torch.no_grad():
        for t in tensors:
            t.sum()
    touch = time.perf_counter() - t0
    touched = _status_kib("VmHWM", "VmRSS", "RssAnon", "RssFile")
    file = load_file(heavy.weights)
    state = loaded.state_dict()
    exact = state.keys() == file.keys() and all(
        not state[k].is_meta and torch.equal(state[k].contiguous().view(torch.uint8), file[k].view(torch.uint8))
        for k in file
    )
    del file
    mib = 1 / 1024
    print(json.dumps({
        "method": method, "seconds": seconds, "cpu": cpu, "read_seconds": spent.get("read"),
        "peak_mib": (after["VmHWM"] - base) * mib, "rss_mib": (after["VmRSS"] - base) * mib,
        "anon_mib": (after["RssAnon"] - start["RssAnon"]) * mib, "file_mib": (after["RssFile"] - start["RssFile"]) * mib,
        "touch_seconds": touch, "touched_peak_mib": (touched["VmHWM"] - base) * mib,
        "touched_rss_mib": (touched["VmRSS"] - base) * mib,
        "touched_anon_mib": (touched["RssAnon"] - start["RssAnon"]) * mib,
        "touched_file_mib": (touched["RssFile"] - start["RssFile"]) * mib,
        "base_mib": base * mib, "tensors": len(tensors),
        "meta_tensors": sum(t.is_meta for t in (*loaded.parameters(), *loaded.buffers())),
        "misaligned": sum(t.data_ptr() % _ALIGNMENT != 0 for t in tensors), "exact": exact,
    }))  # fmt: skip


def _child_env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _use_fxgen(root: str | None) -> None:
    """Put this directory (the bench's modules) and the fxgen tree ``root`` (default: this
    checkout) first on ``sys.path``, ahead of an installed fxgen."""
    sys.path[:0] = [str(HERE), root or str(ROOT)]


def run_child(method: str, h: Heavy, warm: Heavy, *, root: str | None = None, timeout: float = 900.0) -> dict[str, Any]:
    """Measure ``method`` on ``h`` in a fresh process, with the fxgen of the tree ``root``
    (default: this checkout); the record, or one with an ``error``."""
    payload = json.dumps({"method": method, "heavy": asdict(h), "warm": asdict(warm), "root": root})
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", payload]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_child_env())
    except subprocess.TimeoutExpired:
        return {"method": method, "error": f"timeout after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"method": method, "error": (proc.stderr.strip().splitlines() or ["exit " + str(proc.returncode)])[-1][:300]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


# -- rounds and records ------------------------------------------------------------------------
def measure(workloads: list[Heavy], warm: dict[str, Heavy], *, rounds: int = 3, methods: tuple[str, ...] = METHODS,
            alt: str | None = None, progress: Callable[[str], None] | None = None) -> dict[str, dict[str, list[dict[str, Any]]]]:  # fmt: skip
    """``rounds`` fresh-process measurements of every method on every workload, the methods'
    order rotated and reversed from round to round; ``alt``: also measure fxgen imported from
    that directory (method ``load_weights@alt``). Returns key -> method -> samples."""
    methods = tuple(methods) + (("load_weights@alt",) if alt else ())
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for h in workloads:
        samples: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
        for r in range(rounds):
            order = methods[r % len(methods):] + methods[: r % len(methods)]
            for method in order[::-1] if r % 2 else order:
                root = alt if method.endswith("@alt") else None
                rec = run_child(method.removesuffix("@alt"), h, warm[h.dtype], root=root)
                samples[method].append(rec)
                if progress is not None:
                    progress(f"{h.key} {method} round {r + 1}: " + (rec.get("error") or
                             f"{rec['seconds'] * 1e3:.1f} ms, peak {rec['peak_mib']:.0f} MiB"))  # fmt: skip
        out[h.key] = samples
    return out


_MEDIANS = ("seconds", "cpu", "peak_mib", "rss_mib", "anon_mib", "file_mib", "touch_seconds", "touched_peak_mib",
            "touched_rss_mib", "touched_anon_mib", "touched_file_mib")  # fmt: skip


def records(workloads: list[Heavy], measured: dict[str, dict[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """``bench/run.py`` records: an info record per workload, a stage record per method (median
    time, median peak, the samples in ``extra``) and ``paired:`` records for fxgen's ratio to each
    reference (the median of the per-round ratios)."""
    out: list[dict[str, Any]] = []
    for h in workloads:
        samples = measured.get(h.key, {})
        out.append({"workload": h.key, "event": "info", "nodes": h.nodes, "parameters": h.parameters,
                    "tensors": h.tensors, "weights_bytes": h.weights_bytes, "width": h.width, "blocks": h.blocks,
                    "dtype": h.dtype, "target_mib": h.target_mib, "data_start": h.data_start,
                    "file_misaligned": h.misaligned, "file_misaligned_bytes": h.misaligned_bytes})  # fmt: skip
        for method, recs in samples.items():
            ok = [r for r in recs if "error" not in r]
            stage = method.replace("@alt", ":alt")
            if not ok:
                out.append({"workload": h.key, "stage": stage, "status": "error", "median": None,
                            "note": recs[0].get("error", "no sample") if recs else "not run"})  # fmt: skip
                continue
            med = {f: statistics.median(r[f] for r in ok) for f in _MEDIANS}
            reads = [r["read_seconds"] for r in ok if r.get("read_seconds") is not None]
            out.append({"workload": h.key, "stage": stage, "status": "ok", "median": med["seconds"], "cpu": med["cpu"],
                        "reps": len(ok), "low": min(r["seconds"] for r in ok), "high": max(r["seconds"] for r in ok),
                        "peak_mib": med["peak_mib"], "note": "fresh process per run",
                        "extra": {**med, "max_peak_mib": max(r["peak_mib"] for r in ok),
                                  "read_seconds": statistics.median(reads) if reads else None,
                                  "misaligned": max(r["misaligned"] for r in ok),
                                  "meta_tensors": max(r["meta_tensors"] for r in ok),
                                  "exact": all(r["exact"] for r in ok), "fresh_process": True}})  # fmt: skip
        for num in ("load_weights", "load_weights@alt"):
            for den in ("ref_meta_assign", "ref_init_load"):
                a, b = samples.get(num, []), samples.get(den, [])
                ratios = [x["seconds"] / y["seconds"] for x, y in zip(a, b, strict=False)
                          if "error" not in x and "error" not in y and y["seconds"] > 0]  # fmt: skip
                if not ratios:
                    continue
                stage = num.replace("@alt", ":alt")
                name = f"paired:{stage}" if den == "ref_meta_assign" else f"paired:{stage}@{den}"
                out.append({"workload": h.key, "stage": name, "status": "ok", "median": None, "reps": len(ratios),
                            "extra": {"reference": den, "median_ratio": statistics.median(ratios),
                                      "ratios": ratios, "rounds": len(ratios), "fresh_process": True}})  # fmt: skip
    return out


def affordable(sizes: list[float], dtypes: list[str]) -> tuple[list[float], list[dict[str, Any]]]:
    """The sizes (MiB) that fit in the memory available now, and a "skipped" record for each other
    one. The largest need is reference (b)'s: the model built, then the file's pages while it is
    copied in, about twice the file; a size runs if 2.5 times it and 1 GiB more are available."""
    available = None
    with suppress(OSError, ValueError), open("/proc/meminfo", encoding="ascii") as f:
        available = next(int(line.split()[1]) / 1024 for line in f if line.startswith("MemAvailable:"))
    if available is None:
        return sizes, []
    fits = [s for s in sizes if 2.5 * s + 1024 <= available]
    skipped = [{"workload": f"heavy/{dtype}/{s:g}", "stage": "workload", "status": "skipped", "median": None,
                "note": f"needs about {2.5 * s + 1024:.0f} MiB of memory, {available:.0f} MiB available"}
               for dtype in dtypes for s in sizes if s not in fits]  # fmt: skip
    return fits, skipped


def run(directory: Path, sizes: list[float], dtypes: list[str], rounds: int, *, alt: str | None = None,
        log: Path | None = None, progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Write the workloads that fit in memory (:func:`affordable`) to ``directory``, measure them,
    and return ``bench/run.py`` records."""
    sizes, skipped = affordable(sizes, dtypes)
    if not sizes:
        return skipped
    warm, workloads = prepare(directory, sizes, dtypes, log)
    measured = measure(workloads, warm, rounds=rounds, alt=alt, progress=progress)
    return skipped + records(workloads, measured)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="MiB of weights, comma-separated")
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--alt", default=None, metavar="DIR", help="also measure fxgen imported from DIR (an A/B)")
    parser.add_argument("--json", type=Path, default=None, help="write the records here")
    parser.add_argument("--keep", type=Path, default=None, help="write the workloads here (default: a temporary directory)")
    parser.add_argument("--prepare", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",") if s]
    dtypes = [d for d in args.dtypes.split(",") if d]
    if args.prepare:
        _use_fxgen(None)
        _prepare_main(args.prepare, sizes, dtypes)
        return 0
    if args.child:
        task = json.loads(args.child)
        _use_fxgen(task.get("root"))
        _child_main(task["method"], Heavy(**task["heavy"]), Heavy(**task["warm"]))
        return 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fxgen-heavy-") as tmp:
        directory = args.keep or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        recs = run(directory, sizes, dtypes, args.rounds, alt=args.alt,
                   progress=lambda line: print("heavy: " + line, file=sys.stderr, flush=True))  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(recs, indent=1), encoding="utf-8")
    sys.path.insert(0, str(HERE))
    from report import Table, heavy_tables

    keys = sorted({r["workload"] for r in recs if r.get("event") == "info"}, key=_order)
    print(heavy_tables(Table(recs), keys))
    print(f"heavy: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0


def _order(key: str) -> tuple[str, float]:
    _, dtype, size = key.split("/")
    return dtype != "float32", float(size)


if __name__ == "__main__":
    sys.exit(main())
