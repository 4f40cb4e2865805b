"""Render benchmark records as Markdown (``docs/benchmarks.md``)."""

from __future__ import annotations

import functools
import itertools
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

__all__ = ["render"]

FXGEN_STAGES = ("read_validate", "load", "generate", "render", "format", "export_trace", "export_spec", "export",
                "export_blocks", "load_weights", "forward", "forward_blocks")  # fmt: skip
REFERENCES = ("fx_direct", "python_code", "black_file", "symbolic_trace", "torch_export_unflatten", "ref_meta_assign",
              "ref_init_load", "safetensors", "ref_export_load")  # fmt: skip
STAGE_LABEL = {
    "read_validate": "read+validate (`load_spec`)",
    "load": "load (`load(spec)`)",
    "read_validate+load": "read+validate+load (`load(path)`)",
    "generate": "generate (`generate(spec)`)",
    "render": "  render (all but black)",
    "format": "  format (black calls)",
    "export_trace": "export: trace",
    "export_spec": "export: GraphModule→spec",
    "export": "export (trace+spec)",
    "export_blocks": "export keeping the model's classes (the default)",
    "load_weights": "load with weights",
    "forward": "forward (generated class)",
    "forward_blocks": "forward (class of the hierarchical export)",
    "fx_direct": "ref: torch.fx create_node + GraphModule",
    "fx_graph": "torch.fx Graph alone (create_node per node)",
    "python_code": "ref: `Graph.python_code`",
    "black_file": "ref: black on the generated file",
    "symbolic_trace": "ref: `symbolic_trace`",
    "ref_meta_assign": "ref (a): class on meta + `load_state_dict(assign=True)`",
    "ref_init_load": "ref (b): class built + `load_state_dict`",
    "safetensors": "`safetensors.load_file` alone (maps the file)",
    "torch_export_unflatten": "peer: `torch.export.export` + `torch.export.unflatten`",
    "ref_export_load": "peer: `torch.export.load(pt2).module()`",
}
ORDER = ("read_validate", "load", "read_validate+load", "fx_direct", "fx_graph", "generate", "render", "format", "python_code",
         "black_file", "export_trace", "export_spec", "export", "export_blocks", "symbolic_trace", "torch_export_unflatten", "load_weights",
         "ref_meta_assign", "ref_init_load", "safetensors", "ref_export_load", "forward", "forward_blocks")  # fmt: skip
EXPORT_TARGET = 2.0  # issue 21: export, verification included, <= 2x symbolic_trace
LINEAR_TARGET = 1.2  # issue 21: fxgen's per-node growth 1k -> 100k <= 1.2x torch.fx's own
WEIGHTS_A, WEIGHTS_B, MEMORY_TARGET = 1.3, 1.0, 1.1  # issue 21: load with weights vs (a), (b); peak / file


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms" if seconds < 0.1 else f"{seconds * 1e3:.0f} ms"
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"


def fmt_ratio(value: float | None, target: float | None = None) -> str:
    if value is None:
        return "-"
    text = f"{value:.2f}x" if value < 100 else f"{value:.0f}x"
    if target is not None and value > target:
        text = f"**{text}**"
    return text


class Table:
    """Records of one run, indexed by workload key and stage."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.stages: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        self.info: dict[str, dict[str, Any]] = defaultdict(dict)
        for rec in records:
            key = rec["workload"]
            if rec.get("event") == "info":
                self.info[key].update({k: v for k, v in rec.items() if k not in ("workload", "event")})
            elif rec.get("event") is None and "stage" in rec:
                prev = self.stages[key].get(rec["stage"])
                if prev is None or prev.get("status") != "ok":
                    self.stages[key][rec["stage"]] = rec
        for stages in self.stages.values():
            a, b = stages.get("read_validate"), stages.get("load")
            # Older records had no measured load(path): fall back to the sum of its two halves.
            if "read_validate+load" not in stages and a and b and a.get("status") == b.get("status") == "ok":
                stages["read_validate+load"] = {"stage": "read_validate+load", "status": "ok",
                                                "median": a["median"] + b["median"],
                                                "cpu": (a.get("cpu") or 0) + (b.get("cpu") or 0) or None,
                                                "reps": min(a.get("reps") or 3, b.get("reps") or 3),
                                                "peak_mib": max(a.get("peak_mib") or 0, b.get("peak_mib") or 0)}  # fmt: skip

    def get(self, key: str, stage: str, *, cpu: bool = False) -> float | None:
        rec = self.stages.get(key, {}).get(stage)
        if not rec or rec.get("status") != "ok":
            return None
        return rec.get("cpu") if cpu else rec["median"]

    def cpu_share(self) -> float | None:
        """CPU time / wall time over every measured stage: 1.0 on an idle machine."""
        pairs = [(r["median"], r["cpu"]) for st in self.stages.values() for r in st.values()
                 if r.get("status") == "ok" and r.get("cpu") and r.get("median") and not r["stage"].startswith("forward")]  # fmt: skip
        wall = sum(w for w, _ in pairs)
        return sum(c for _, c in pairs) / wall if wall else None

    def cell(self, key: str, stage: str, *, memory: bool = False) -> str:
        rec = self.stages.get(key, {}).get(stage)
        if rec is None:
            return "-"
        if rec.get("status") != "ok":
            return rec.get("status", "?")
        text = fmt_time(rec["median"])
        if rec.get("reps") and rec["reps"] < 3:
            text += f" ({rec['reps']} run{'s' if rec['reps'] > 1 else ''})"
        if memory and rec.get("peak_mib") is not None:
            text += f" · {rec['peak_mib']:.0f} MiB"
        return text

    def paired(self, key: str, num: str, den: str) -> float | None:
        """The median per-round ratio of ``num`` to ``den`` timed alternately (stage ``paired:<num>``,
        or ``paired:<num>@<den>`` for a second reference of the same stage)."""
        for name in (f"paired:{num}", f"paired:{num}@{den}"):
            rec = self.stages.get(key, {}).get(name)
            if rec and rec.get("status") == "ok" and rec.get("extra", {}).get("reference") == den:
                return float(rec["extra"]["median_ratio"])
        return None

    def ratio(self, key: str, num: str, den: str, *, cpu: bool = False, paired: bool = True) -> float | None:
        """``num`` / ``den``: the paired (alternating) ratio where measured, unless ``paired`` is
        false or ``cpu`` asks for the ratio of the sequential CPU-time medians; else the ratio of
        the sequential wall-time medians."""
        if paired and not cpu:
            alternating = self.paired(key, num, den)
            if alternating is not None:
                return alternating
        a, b = self.get(key, num, cpu=cpu), self.get(key, den, cpu=cpu)
        return a / b if a is not None and b else None

    def both(self, key: str, num: str, den: str, target: float | None = None) -> str:
        """``paired ratio (seq sequential wall ratio)`` where the pair was timed alternately, else
        ``wall ratio (CPU ratio)``; bold when the first figure misses the target."""
        wall = self.ratio(key, num, den, paired=False)
        alternating = self.paired(key, num, den)
        if alternating is not None:
            return fmt_ratio(alternating, target) + (f" (seq {fmt_ratio(wall)})" if wall is not None else "")
        cpu = self.ratio(key, num, den, cpu=True)
        if wall is None:
            return "-"
        return fmt_ratio(wall, target) + (f" ({fmt_ratio(cpu)})" if cpu is not None else "")

    def nodes(self, key: str) -> int | None:
        n = self.info.get(key, {}).get("nodes")
        return int(n) if n is not None else None


RATIOS = (
    # label, numerator, denominator, target
    ("(read+validate+load) / fx direct", "read_validate+load", "fx_direct", 2.0),
    ("generate / python_code", "generate", "python_code", 2.0),
    ("render / black on file", "render", "black_file", 0.25),
    ("export / symbolic_trace", "export", "symbolic_trace", EXPORT_TARGET),
    ("load with weights / (a) meta + assign", "load_weights", "ref_meta_assign", WEIGHTS_A),
    ("load with weights / (b) built + load", "load_weights", "ref_init_load", WEIGHTS_B),
)


def render(records: list[dict[str, Any]], check: dict[str, Any] | None, meta: dict[str, Any]) -> str:
    t = Table(records)
    synthetic = sorted({k for k in t.stages if k.startswith("synthetic/")},
                       key=lambda k: (k.split("/")[1], int(k.split("/")[2])))  # fmt: skip
    shapes = list(dict.fromkeys(k.split("/")[1] for k in synthetic))
    sizes = sorted({int(k.split("/")[2]) for k in synthetic})
    examples = sorted(k for k in t.stages if k.startswith("example/"))
    zoo = sorted(k for k in t.stages if k.startswith("zoo/"))
    heavy = sorted((k for k in t.info if k.startswith("heavy/")), key=_heavy_order)
    weights = sorted((k for k in t.info if k.startswith("weights/")), key=lambda k: float(k.split("/")[1]))
    out: list[str] = []
    w = out.append
    w("# fxgen benchmarks\n")
    w("Generated by `bench/run.py` (issue 6); do not edit by hand — rerun "
      "`python bench/run.py` (about 20 minutes) or `python bench/run.py --quick` (seconds).\n")  # fmt: skip
    w("## Machine\n")
    v = meta["versions"]
    w(f"- CPU: {meta['cpu']}, {meta['cores']} cores, {meta.get('memory_gib')} GiB RAM "
      f"({meta.get('available_gib')} GiB available at the start); {meta['os']}; "
      f"load average (1/5/15 min) {meta.get('load_before')} at the start, {meta.get('load_after')} at the end "
      "(other work on the machine slows every stage and its reference alike; ratios are the robust figures)")
    w(f"- Python {meta['python']}, torch {v['torch']}, black {v['black']}, fxgen {v['fxgen']} "
      f"(git {meta['git']}); PyYAML {v['pyyaml']}, jsonschema {v['jsonschema']}, jinja2 {v['jinja2']}, "
      f"safetensors {v['safetensors']}, monai {v['monai']}")  # fmt: skip
    share = t.cpu_share()
    if share is not None:
        w(f"- CPU share: the measured stages got {share:.0%} of a core on average (CPU time / wall time; "
          "100% on an idle machine). Below ~90% other processes were competing, and wall times are inflated "
          "accordingly — the CPU-time ratios, shown in parentheses, are then the steadier comparison.")
    if meta.get("partial"):
        w("- **Partial results**: the run was still going (or was interrupted) when this was written.")
    w(f"- Run: `{meta['command']}` on {meta['date']}, {meta['elapsed']:.0f} s in all"
      + (" (**--quick**: smallest size, few repeats — numbers are indicative only)" if meta["quick"] else ""))
    w("")
    w("## Method\n")
    w("Each stage runs in a worker subprocess (a hard timeout per worker, a soft limit per stage: "
      "\"timeout\" in a table means the stage did not finish within it). A cell is the **median** of "
      "repeated runs timed with `time.perf_counter`: at least 3 (graphs up to 1,000 nodes repeat until "
      "about 1 s is spent, up to 30 runs; examples and zoo models until 0.2 s; 10,000 nodes exactly 3). At "
      "100,000 nodes a stage stops after the run that takes it past 40 s, so slow stages show \"(1 run)\" "
      "or \"(2 runs)\" — that keeps the default run under 30 minutes; `--thorough` makes 3 runs everywhere. "
      "A single run longer than its limit (60-90 s) is a \"timeout\". At 100,000 nodes `black on file` and the "
      "load-with-weights references (a) and (b), whose `load_state_dict` is quadratic in a container's width, "
      "are not run (`--thorough` runs them). Runs use "
      "`gc.collect()` before every run and the collector enabled during "
      "it (as for users); objects alive after the worker's warm-up (torch, fxgen, black) are moved to the "
      "permanent generation with `gc.freeze()`, so these collections cost microseconds instead of ~0.2 s. "
      "Workers run torch with one intra-op thread (`OMP_NUM_THREADS=1`): the graphs' tensors are tiny, and "
      "with two threads on a 2-core machine shared with other work, OpenMP spin-waiting turned a 6 µs "
      "LayerNorm into 16 ms. `generate` runs with every formatting cache cleared (black's results and the split port's statements and plans), as in a fresh "
      "`fxgen generate` process; `render` and `format` split the same runs into time outside and inside "
      "`black.format_str`. References run in the same worker on the same graph: `fx direct` builds the "
      "graph with `Graph.create_node` per node (arguments decoded beforehand) and a `GraphModule` with the "
      "same modules and initialised parameters; `python_code` is `Graph.python_code(root_module=\"self\")` "
      "of the loaded graph; `black on file` is `black.format_str` on the final generated source. Load with "
      "weights, `fxgen.load(spec, weights=path)` on the file `fxgen.save_weights` wrote, has two references "
      "on the same file, both loading the class `fxgen.generate` made of the spec, imported from a file as a "
      "user would: (a) the class built on the meta device, then `load_state_dict(load_file(path), "
      "assign=True)`, the fastest way to load the model by hand; (b) the class built normally, then "
      "`load_state_dict(load_file(path))`, what most people write. `safetensors.load_file` alone is shown for "
      "scale: it maps the file and builds no model. Synthetic "
      "models are exported from an ordinary `nn.Module` carrying the loaded GraphModule's forward and "
      "state; zoo models from the eager model (their tracer, leaf modules, wrapped functions and concrete "
      "args), a sample of at most 8 models per library.\n")  # fmt: skip
    w("**Ratios to a reference are paired** where the workload is small enough for the sequential medians "
      "to drift (examples, zoo models and graphs up to 10,000 nodes): after the stages above, each target's "
      "fxgen call and its reference — `load(path)` and fx direct, `generate` (caches cleared) and "
      "`python_code`, `export` and `symbolic_trace`, load with weights and each of its references (a) and (b) — are "
      "called alternately in one loop (`measure.interleaved`: one untimed round, then order flipped every "
      "round, `gc.collect()` before every call, 0.25 s per pair on models and 0.4 s on graphs, at least 7 "
      "rounds, 5 at 10,000 nodes; objects alive when the loop starts, the workload's own graphs among them, are frozen as after "
      "the warm-up), and the ratio is the **median of the per-round ratios**. A stage and its reference timed minutes apart see different machine states, so "
      "on 1-20 ms workloads the ratio of their sequential medians moved by up to ±25% between runs; the "
      "paired ratio does not. The targets table and the ratio columns use the paired ratio where there is "
      "one, with the sequential wall-time ratio after it as `(seq …)`; elsewhere (100,000 nodes) they show "
      "the sequential wall-time ratio with the CPU-time ratio in parentheses. "
      "Absolute times and peak memory are always the sequential medians. The weight-heavy specs are "
      "measured differently, a fresh process per measurement (their section says how).\n")  # fmt: skip
    w(f"Peak memory (`· N MiB`) is the peak resident set size during the first run above the resident "
      f"size before it, measured with {meta['memory_method']}: the kernel's high-water mark, reset per "
      "stage, which counts every allocation (torch's C++ allocator and C extensions too, which "
      "tracemalloc misses) and costs nothing while the stage runs.\n")  # fmt: skip
    w(_targets(t, synthetic, examples, zoo, check, heavy))
    for shape in shapes:
        keys = [f"synthetic/{shape}/{n}" for n in sizes if f"synthetic/{shape}/{n}" in t.stages]
        w(_shape_table(t, shape, keys))
    if synthetic:
        w(_ratio_table(t, synthetic, "Ratios, synthetic workloads"))
        w(_growth_table(t, shapes, sizes))
    if examples:
        w(_model_table(t, examples, "Example specs (`model_specs/`)"))
    if zoo:
        w(_model_table(t, zoo, "Zoo models exported by fxgen (`bench/zoo_models.py`)"))
    elif not meta["quick"]:
        w("## Zoo models\n\nSkipped: no zoo model could be exported (fxgen.export missing or zoo packages not installed).\n")
    parts = _export_parts_table(t, examples + zoo + synthetic)
    if parts:
        w(parts)
    parts = _blocks_parts_table(t, zoo)
    if parts:
        w(parts)
    peers = _peers_table(t, examples + zoo)
    if peers:
        w(peers)
    if heavy:
        w(heavy_tables(t, heavy))
    if weights:
        w(weights_io_table(t, weights))
    w(_check_section(check))
    w(_problems(t))
    return "\n".join(out).rstrip() + "\n"


def _targets(t: Table, synthetic: list[str], examples: list[str], zoo: list[str], check: dict[str, Any] | None,
             heavy: list[str]) -> str:  # fmt: skip
    rows = ["## Targets (issue 6)\n",
            "As decided in issue 21: load with weights against references (a) and (b) instead of "
            "`safetensors.load_file` alone, its peak memory on weight-heavy specs, export at 2x with "
            "verification included, linearity judged against torch.fx's own growth.\n",
            "| # | target | measured (worst case over the workloads) | met? |",
            "| --- | --- | --- | --- |"]  # fmt: skip
    everything = synthetic + examples + zoo

    def worst(num: str, den: str, keys: list[str]) -> tuple[float | None, str]:
        vals = [(t.ratio(k, num, den), k) for k in keys]
        vals = [(x, k) for x, k in vals if x is not None]
        return max(vals) if vals else (None, "")

    def met(num: str, den: str, keys: list[str], target: float) -> str:
        vals = [x for x in (t.ratio(k, num, den) for k in keys) if x is not None]
        return f"; met on {sum(x <= target for x in vals)} of {len(vals)}" if vals else ""

    def cpu_of(num: str, den: str, key: str, keys: list[str] = everything) -> str:
        c = t.ratio(key, num, den, cpu=True) if key else None
        worst_cpu = max((x for x in (t.ratio(k, num, den, cpu=True) for k in keys) if x is not None), default=None)
        text = f"; CPU time: {fmt_ratio(c)} there, worst {fmt_ratio(worst_cpu)}" if c is not None else ""
        if key and t.paired(key, num, den) is not None:
            n = sum(t.paired(k, num, den) is not None for k in keys)
            seq = t.ratio(key, num, den, paired=False)
            text = f"; paired, on {n} workloads" + (f"; sequential there: {fmt_ratio(seq)} wall, {fmt_ratio(c)} CPU"
                                                    if seq is not None else "")  # fmt: skip
        return text

    def verdict(ok: bool | None) -> str:
        return "-" if ok is None else ("yes" if ok else "**no**")

    r1, k1 = worst("read_validate+load", "fx_direct", everything)
    rows.append(f"| 1 | read+validate+load ≤ 2x direct torch.fx construction (reported; no more tuning asked) "
                f"| {fmt_ratio(r1)} ({_short(k1)}{cpu_of('read_validate+load', 'fx_direct', k1)}"
                f"{met('read_validate+load', 'fx_direct', everything, 2.0)}) "
                f"| {verdict(r1 <= 2 if r1 is not None else None)} |")  # fmt: skip
    ours, theirs = _linearity(t, synthetic, "read_validate+load"), _linearity(t, synthetic, "fx_direct")
    lin = {s: (ours[s], theirs[s]) for s in ours if s in theirs}
    lin_txt = ", ".join(f"{s} {a:.2f}x / {b:.2f}x = {a / b:.2f}" for s, (a, b) in lin.items()) or "n/a (needs 1,000 and 100,000)"
    lin_ok = all(a / b <= LINEAR_TARGET for a, b in lin.values()) if lin else None
    rows.append(f"| 1b | …and linear: read+validate+load's per-node growth from 1k to 100k nodes ≤ {LINEAR_TARGET}x "
                f"torch.fx's own (fx direct, same run) | {lin_txt} | {verdict(lin_ok)} |")  # fmt: skip
    r2, k2 = worst("generate", "python_code", everything)
    rows.append(f"| 2 | generate ≤ 2x `Graph.python_code` | {fmt_ratio(r2)} ({_short(k2)}{cpu_of('generate', 'python_code', k2)}) "
                f"| {verdict(r2 <= 2 if r2 is not None else None)} |")  # fmt: skip
    f2, kf = worst("render", "black_file", everything)
    rows.append(f"| 2b | floor: everything but black ≤ 25% of black's time on the file | {fmt_ratio(f2)} "
                f"({_short(kf)}{cpu_of('render', 'black_file', kf)}) | {verdict(f2 <= 0.25 if f2 is not None else None)} |")  # fmt: skip
    if check and check.get("status") == "ok":
        ok = check["median"] < 0.5 and not check["torch_imported"]
        rows.append(f"| 3 | `generate --check`, 100 unchanged specs < 0.5 s, no torch import | "
                    f"{check['median'] * 1e3:.0f} ms wall ({check.get('cpu', 0) * 1e3:.0f} ms CPU); torch imported: "
                    f"{'yes' if check['torch_imported'] else 'no'} "
                    f"| {verdict(ok)} |")  # fmt: skip
    else:
        rows.append(f"| 3 | `generate --check` < 0.5 s | {check.get('status') if check else 'not run'} | - |")
    r4, k4 = worst("export", "symbolic_trace", everything)
    misses = [k for k in everything if (t.ratio(k, "export", "symbolic_trace") or 0) > EXPORT_TARGET]
    dominant = [f"{_short(k)}: {_dominant(t, k)}" for k in misses if _dominant(t, k)]
    rows.append(f"| 4 | export, verification included, ≤ {EXPORT_TARGET:g}x `symbolic_trace` (flat) | {fmt_ratio(r4)} "
                f"({_short(k4)}{cpu_of('export', 'symbolic_trace', k4)}{met('export', 'symbolic_trace', everything, EXPORT_TARGET)})"
                + (f"; largest step besides tracing: {'; '.join(dominant)} (below)" if dominant else "")
                + f" | {verdict(r4 <= EXPORT_TARGET if r4 is not None else None)} |")  # fmt: skip
    b4, kb4 = worst("export_blocks", "symbolic_trace", everything)
    if b4 is not None:
        per = sorted(x for x in (t.ratio(k, "export_blocks", "symbolic_trace") for k in everything) if x is not None)
        steps = Counter(_dominant(t, k, "export_blocks_parts").rpartition(" ")[0] for k in everything
                        if (t.ratio(k, "export_blocks", "symbolic_trace") or 0) > EXPORT_TARGET)  # fmt: skip
        steps.pop("", None)
        largest = ", ".join(f"{step} on {n}" for step, n in steps.most_common())
        rows.append(f"| 4b | the same for the default export (the model's classes kept as blocks) | {fmt_ratio(b4)} "
                    f"({_short(kb4)}{met('export_blocks', 'symbolic_trace', everything, EXPORT_TARGET)}; "
                    f"median {fmt_ratio(per[len(per) // 2])})"
                    + (f"; largest step besides tracing: {largest} (below)" if largest else "")
                    + f" | {verdict(b4 <= EXPORT_TARGET)} |")  # fmt: skip
    fw = _forward_ratios(t, examples + zoo, "forward")
    if fw:
        lo, hi = min(fw), max(fw)
        ok5 = lo[0] >= 0.97 and hi[0] <= 1.03
        blocks = _forward_ratios(t, zoo, "forward_blocks")
        flat_zoo = [(x, k) for x, k in fw if k in zoo]
        txt = _forward_summary(t, fw, examples + zoo, "forward")
        if blocks:
            txt += (f"; zoo, flat export: {_forward_summary(t, flat_zoo, zoo, 'forward')}; "
                    f"zoo, hierarchical export (format 2, the default): {_forward_summary(t, blocks, zoo, 'forward_blocks')}")  # fmt: skip
        rows.append(f"| 5 | generated forward / original forward = 1.00 ± 0.03 (flat export; the hierarchical "
                    f"export beside it on the zoo) | {txt} | {verdict(ok5)} |")  # fmt: skip
    else:
        rows.append("| 5 | generated forward / original forward = 1.00 ± 0.03 | not measured | - |")
    comp = [t.stages[k]["torch_compile"] for k in t.stages if "torch_compile" in t.stages[k]]
    if comp:
        c = comp[0]
        ok = c.get("status") == "ok" and c.get("extra", {}).get("outputs_match", False)
        rows.append(f"| 5b | `torch.compile` accepts a generated class | {c.get('status')}"
                    f"{', ' + fmt_time(c['median']) + ' first call, outputs match' if ok else ' ' + c.get('note', '')} "
                    f"| {verdict(ok)} |")  # fmt: skip
    else:
        rows.append("| 5b | `torch.compile` accepts a generated class | not run (--quick or --no-examples) | - |")
    for n, den, target, label in (("6a", "ref_meta_assign", WEIGHTS_A, "(a) the generated class on meta + "
                                   "`load_state_dict(load_file(path), assign=True)`"),
                                  ("6b", "ref_init_load", WEIGHTS_B, "(b) the generated class built + "
                                   "`load_state_dict(load_file(path))`")):  # fmt: skip
        r6, k6 = worst("load_weights", den, everything)
        h6, hk = worst("load_weights", den, heavy)
        cells = []
        if r6 is not None:
            cells.append(f"{fmt_ratio(r6)} ({_short(k6)}{cpu_of('load_weights', den, k6)}"
                         f"{met('load_weights', den, everything, target)})")  # fmt: skip
        if h6 is not None:
            cells.append(f"weight-heavy specs: {fmt_ratio(h6)} ({_short(hk)}, fresh processes"
                         f"{met('load_weights', den, heavy, target)})")  # fmt: skip
        floor = _graph_floor(t, everything, den, target) if den == "ref_meta_assign" else ""
        if floor:
            cells.append(floor)
        worst6 = max((x for x in (r6, h6) if x is not None), default=None)
        rows.append(f"| {n} | `fxgen.load(spec, weights=path)` ≤ {target:g}x {label}, on the zoo, the examples and "
                    f"the weight-heavy specs | {'; '.join(cells) or 'not measured'} "
                    f"| {verdict(worst6 <= target if worst6 is not None else None)} |")  # fmt: skip
    rows.append(_memory_row(t, heavy))
    return "\n".join(rows) + "\n"


def _graph_floor(t: Table, keys: list[str], den: str, target: float) -> str:
    """How many of the misses are below torch.fx's own floor: the spec's Graph alone (``fx_graph``,
    create_node per node) costs more than the target leaves above the reference, so no load that
    returns a torch.fx GraphModule and builds the modules as the reference does could meet it."""
    misses = [k for k in keys if (x := t.ratio(k, "load_weights", den)) is not None and x > target]
    floors = [(f, k) for k in misses if (f := t.ratio(k, "fx_graph", den, paired=False)) is not None]
    if not floors:
        return ""
    over = [(f, k) for f, k in floors if f > target - 1]
    return (f"the torch.fx Graph alone costs more than {target - 1:.2g}x the reference on {len(over)} of the "
            f"{len(floors)} misses measured (largest {max(floors)[0]:.2f}x, {_short(max(floors)[1])})")  # fmt: skip


def _memory_row(t: Table, heavy: list[str]) -> str:
    """Target 6c: peak resident memory above the start / the weights file's size, worst case."""
    label = (f"| 6c | peak resident memory above the start ≤ {MEMORY_TARGET:g}x the weights file, "
             "`fxgen.load(spec, weights=path)` on the weight-heavy specs (no second copy) |")  # fmt: skip
    per = {stage: [(x, k) for k in heavy if (x := _peak_ratio(t, k, stage)) is not None]
           for stage in ("load_weights", "ref_meta_assign", "ref_init_load")}  # fmt: skip
    if not per["load_weights"]:
        return label + " not measured | - |"
    x, k = max(per["load_weights"])
    n = sum(v <= MEMORY_TARGET for v, _ in per["load_weights"])
    refs = "; ".join(f"{name}: worst {max(per[s])[0]:.2f}x" for s, name in (("ref_meta_assign", "(a)"),
                                                                           ("ref_init_load", "(b)")) if per[s])  # fmt: skip
    return label + (f" {x:.2f}x ({_short(k)}; met on {n} of {len(per['load_weights'])}); {refs} "
                    f"| {'yes' if x <= MEMORY_TARGET else '**no**'} |")  # fmt: skip


def _peak_ratio(t: Table, key: str, stage: str) -> float | None:
    rec = t.stages.get(key, {}).get(stage)
    size = t.info.get(key, {}).get("weights_bytes")
    if not rec or rec.get("status") != "ok" or rec.get("peak_mib") is None or not size:
        return None
    return float(rec["peak_mib"]) * 2**20 / size


def _dominant(t: Table, key: str, stage: str = "export_parts") -> str:
    rec = t.stages.get(key, {}).get(stage)
    if not rec or rec.get("status") != "ok":
        return ""
    x = rec["extra"]
    return f"{x['dominant']} {x['steps'][x['dominant']] / x['reference']:.2f}x"


def _short(key: str) -> str:
    parts = key.split("/")
    if parts[0] == "synthetic":
        return f"{parts[1]} {int(parts[2]):,}"
    return "/".join(parts[1:])


def _linearity(t: Table, synthetic: list[str], stage: str) -> dict[str, float]:
    out = {}
    for shape in dict.fromkeys(k.split("/")[1] for k in synthetic):
        a, b = f"synthetic/{shape}/1000", f"synthetic/{shape}/100000"
        ta, tb, na, nb = t.get(a, stage), t.get(b, stage), t.nodes(a), t.nodes(b)
        if ta and tb and na and nb:
            out[shape] = (tb / nb) / (ta / na)
    return out


def _shape_table(t: Table, shape: str, keys: list[str]) -> str:
    nodes = [t.nodes(k) for k in keys]
    head = " | ".join(f"{n:,} nodes" if n else "?" for n in nodes)
    rows = [f"## Synthetic: {shape}\n", _SHAPE_DOC.get(shape, ""), "",
            "Median time · peak memory above the starting RSS.\n",
            f"| stage | {head} |", "| --- |" + " ---: |" * len(keys)]  # fmt: skip
    for stage in ORDER:
        if not any(stage in t.stages[k] for k in keys):
            continue
        rows.append(f"| {STAGE_LABEL[stage]} | " + " | ".join(t.cell(k, stage, memory=True) for k in keys) + " |")
    extra = []
    for k in keys:
        info = t.info.get(k, {})
        if "source_lines" in info:
            calls = t.stages[k].get("format", {}).get("extra", {}).get("black_calls")
            extra.append(f"{info.get('nodes', 0):,} nodes: spec {info.get('spec_bytes', 0) / 1024:,.0f} KiB, "
                         f"generated {info['source_lines']:,} lines, {calls} black calls")  # fmt: skip
    if extra:
        rows.append("\n" + "; ".join(extra) + ".")
    return "\n".join(rows) + "\n"


_SHAPE_DOC = {
    "chain": "One long chain of elementwise ops (`torch.relu`, `+ 1.0`, `.mul(0.5)`, `torch.tanh`): short lines.",
    "fan": "A fan-out of the input into N branches, gathered by `torch.cat` of 8 (lines longer than 88 "
           "columns, so black runs on them) and summed by a balanced tree of adds.",
    "residual": "Residual blocks `h + relu(blocks.N.fc(blocks.N.ln(h))) * blocks.N.scale`: `call_module` "
                "on Linear(8, 8) and LayerNorm(8), `get_attr` of a parameter; weights for load-with-weights.",
}


def _ratio_table(t: Table, keys: list[str], title: str) -> str:
    head = " | ".join(f"{label} (≤ {target:g}x)" if target >= 1 else f"{label} (≤ {target:g})"
                      for label, _, _, target in RATIOS)  # fmt: skip
    rows = [f"## {title}\n", "Paired ratio (alternating calls, see Method) with the sequential wall-time ratio as `(seq …)`; where "
            "no pair was timed, the sequential wall-time ratio with the CPU-time ratio in parentheses. Bold: the "
            "first figure misses the target.\n", f"| workload | {head} | forward gen/orig |",
            "| --- |" + " ---: |" * (len(RATIOS) + 1)]  # fmt: skip
    for k in keys:
        cells = [t.both(k, num, den, target) for _, num, den, target in RATIOS]
        rows.append(f"| {_short(k)} | " + " | ".join(cells) + f" | {_forward_cell(t, k)} |")
    return "\n".join(rows) + "\n"


def _forward_ratios(t: Table, keys: list[str], stage: str) -> list[tuple[float, str]]:
    return [(t.stages[k][stage]["extra"]["median_ratio"], k) for k in keys
            if t.stages[k].get(stage, {}).get("status") == "ok"]  # fmt: skip


def _forward_summary(t: Table, ratios: list[tuple[float, str]], keys: list[str], stage: str) -> str:
    """Range, median and how many inside the band, of ``stage``'s ratios; outputs that differ."""
    if not ratios:
        return "not measured"
    lo, hi = min(ratios), max(ratios)
    inside = sum(0.97 <= x <= 1.03 for x, _ in ratios)
    median = sorted(x for x, _ in ratios)[len(ratios) // 2]
    txt = (f"{lo[0]:.3f} ({_short(lo[1])}) … {hi[0]:.3f} ({_short(hi[1])}), median {median:.3f}, "
           f"{inside} of {len(ratios)} inside")  # fmt: skip
    mism = [k for k in keys if t.stages[k].get(stage, {}).get("extra", {}).get("outputs_match") is False]
    if mism:
        txt += f"; outputs differ: {', '.join(_short(k) for k in mism)}"
    return txt


def _forward_cell(t: Table, key: str, stage: str = "forward") -> str:
    rec = t.stages.get(key, {}).get(stage)
    if rec is None:
        return "-"
    if rec.get("status") != "ok":
        return rec.get("status", "?")
    x = rec["extra"]
    text = f"{x['median_ratio']:.3f}"
    if abs(x["median_ratio"] - 1) > 0.03:
        text = f"**{text}**"
    if x.get("outputs_match") is False:
        text += " (outputs differ!)"
    return text


def _growth_table(t: Table, shapes: list[str], sizes: list[int]) -> str:
    stages = ("read_validate", "load", "read_validate+load", "fx_direct", "generate", "render", "format",
              "python_code", "black_file", "export", "symbolic_trace", "load_weights")  # fmt: skip
    span = 1000 in sizes and 100000 in sizes
    growth_head = "per-node 100k / 1k" if span else "per-node largest / smallest"
    rows = ["## How cost grows with size\n",
            "Time per node (µs) at each size, the ratio of per-node time at 100,000 nodes to 1,000 nodes "
            "(1.00 = linear), and for the load stages that growth divided by the growth of the direct torch.fx "
            f"build in the same run (target 1b: ≤ {LINEAR_TARGET} for read+validate+load; torch.fx's own build "
            "slows per node as its graph outgrows the caches). Bold: growth > 1.5, or > "
            f"{LINEAR_TARGET}x torch.fx's.\n",
            "| shape | stage | " + " | ".join(f"{n:,}" for n in sizes) + f" | {growth_head} | ÷ fx direct's |",
            "| --- | --- |" + " ---: |" * (len(sizes) + 2)]  # fmt: skip

    def growth(shape: str, stage: str) -> tuple[list[float | None], float | None]:
        per: list[float | None] = []
        for n in sizes:
            k = f"synthetic/{shape}/{n}"
            v, nodes = t.get(k, stage), t.nodes(k)
            per.append(v / nodes * 1e6 if v is not None and nodes else None)
        if span:
            a, b = per[sizes.index(1000)], per[sizes.index(100000)]
        else:
            known = [p for p in per if p is not None]
            a, b = (known[0], known[-1]) if len(known) > 1 else (None, None)
        return per, (b / a if a and b else None)

    for shape in shapes:
        fx = growth(shape, "fx_direct")[1]
        for stage in stages:
            per, g = growth(shape, stage)
            if all(p is None for p in per):
                continue
            status = [t.stages.get(f"synthetic/{shape}/{n}", {}).get(stage, {}).get("status") for n in sizes]
            cells = [f"{p:,.1f}" if p is not None else (s if s and s != "ok" else "-") for p, s in zip(per, status, strict=True)]
            rel = "-"
            if stage in ("read_validate", "load", "read_validate+load") and g and fx:
                rel = f"{g / fx:.2f}"
                if stage == "read_validate+load" and g / fx > LINEAR_TARGET:
                    rel = f"**{rel}**"
            rows.append(f"| {shape} | {STAGE_LABEL[stage].strip()} | " + " | ".join(cells) + f" | {fmt_ratio(g, 1.5)} | {rel} |")
    return "\n".join(rows) + "\n"


def _model_table(t: Table, keys: list[str], title: str) -> str:
    cols = [("read_validate", None), ("load", None), ("fx_direct", None), ("R1", ("read_validate+load", "fx_direct", 2.0)),
            ("generate", None), ("python_code", None), ("R2", ("generate", "python_code", 2.0)),
            ("export", None), ("symbolic_trace", None), ("R4", ("export", "symbolic_trace", EXPORT_TARGET)),
            ("load_weights", None), ("ref_meta_assign", None), ("R6a", ("load_weights", "ref_meta_assign", WEIGHTS_A)),
            ("ref_init_load", None), ("R6b", ("load_weights", "ref_init_load", WEIGHTS_B))]  # fmt: skip
    head = ["model", "nodes", "read+validate", "load", "fx direct", "R1 ≤2", "generate", "python_code", "R2 ≤2",
            "export", "symbolic_trace", f"R4 ≤{EXPORT_TARGET:g}", "load+weights", "(a) meta+assign",
            f"R6a ≤{WEIGHTS_A:g}", "(b) built+load", f"R6b ≤{WEIGHTS_B:g}", "fwd gen/orig"]  # fmt: skip
    blocks = any("forward_blocks" in t.stages.get(k, {}) for k in keys)
    if blocks:  # the zoo: the class of the hierarchical export beside the flat one's
        head[-1] = "fwd flat/orig"
        head.append("fwd blocks/orig")
    rows = [f"## {title}\n",
            "R1 = (read+validate+load) / fx direct, R2 = generate / python_code, R4 = export / symbolic_trace, "
            "R6a and R6b = load with weights / reference (a) (the generated class on meta, tensors assigned) and "
            "(b) (the class built, `load_state_dict`): paired ratios (alternating calls, see Method), the "
            "sequential wall-time ratio as `(seq …)`; bold misses the target.\n",
            "| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]  # fmt: skip
    for k in keys:
        cells = [_short(k), f"{t.nodes(k):,}" if t.nodes(k) else "-"]
        for name, spec in cols:
            if spec is None:
                cells.append(t.cell(k, name))
            else:
                cells.append(t.both(k, spec[0], spec[1], spec[2]))
        cells.append(_forward_cell(t, k))
        if blocks:
            cells.append(_forward_cell(t, k, "forward_blocks"))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def _peers_table(t: Table, keys: list[str]) -> str:
    """The comparisons a user makes (issue 30's decisions): the default export against
    ``symbolic_trace`` and against torch's own way to keep the hierarchy (``torch.export`` +
    ``unflatten``), and load with weights against ``torch.export.load(pt2).module()``."""
    rows = [k for k in keys if any(s in t.stages.get(k, {}) for s in ("torch_export_unflatten", "ref_export_load"))]
    if not rows:
        return ""
    out = ["## Against torch's own peers (issue 30)\n",
           "Sequential medians (wall), each ratio of the two cells before it. The default export keeps the "
           "model's classes; its peer in torch is `torch.export.export(model, inputs, strict=False)` then "
           "`torch.export.unflatten` (zoo models, on their example inputs). Load with weights' peer is "
           "`torch.export.load(pt2).module()` on a .pt2 that `torch.export.save` wrote of the same model (its "
           "graph and weights); both build a runnable model from files.\n",
           "| model | default export | `symbolic_trace` | export / trace | torch.export + unflatten | peer / trace "
           "| default export / peer | load with weights | `torch.export.load(pt2).module()` | load / peer |",
           "| --- |" + " ---: |" * 9]  # fmt: skip
    for k in rows:
        cells = [_short(k), t.cell(k, "export_blocks"), t.cell(k, "symbolic_trace"),
                 fmt_ratio(t.ratio(k, "export_blocks", "symbolic_trace")), t.cell(k, "torch_export_unflatten"),
                 fmt_ratio(t.ratio(k, "torch_export_unflatten", "symbolic_trace", paired=False)),
                 fmt_ratio(t.ratio(k, "export_blocks", "torch_export_unflatten", paired=False)),
                 t.cell(k, "load_weights"), t.cell(k, "ref_export_load"),
                 fmt_ratio(t.ratio(k, "load_weights", "ref_export_load", paired=False))]  # fmt: skip
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _export_parts_table(t: Table, keys: list[str]) -> str:
    """Target 4's misses, split into export's steps (``bench/export_parts.py``), as multiples of
    ``symbolic_trace`` timed in the same rounds."""
    from export_parts import LEAVES  # type: ignore[import-not-found]

    recs = [(k, t.stages[k]["export_parts"]) for k in keys if t.stages.get(k, {}).get("export_parts", {}).get("status") == "ok"]
    if not recs:
        return ""
    rows = ["## Export misses: where the time goes\n",
            f"For every workload whose paired export ratio misses {EXPORT_TARGET:g}x, `bench/export_parts.py` times "
            "export's steps inside real exports (timers around fxgen's functions, alternating with "
            "`symbolic_trace`, medians of the rounds): each step as a multiple of `symbolic_trace`. `torch.fx "
            "tracing` is the tracer's own work; snapshot and restore are `fxgen/capture/preserve.py` around it; "
            "recovery is `describe.recover._recover`; verification is rebuilding each distinct constructor call "
            "and comparing every module with its rebuild (`check_rebuild`). Bold: the largest step besides "
            "tracing. `python bench/pair.py export --parts MODEL...` prints the same for any zoo model.\n",
            "| model | export / symbolic_trace | " + " | ".join(LEAVES) + " | modules, rebuilds |",
            "| --- | ---: |" + " ---: |" * (len(LEAVES) + 1)]  # fmt: skip
    for k, rec in recs:
        x = rec["extra"]
        calls = x.get("calls", {})
        rows.append(f"| {_short(k)} | {x['ratio']:.2f}x | " + " | ".join(_step_cells(x, LEAVES))
                    + f" | {calls.get('verification', 0)}, {calls.get('verification: rebuild', 0)} |")  # fmt: skip
    return "\n".join(rows) + "\n"


def _blocks_parts_table(t: Table, keys: list[str]) -> str:
    """Row 4b's misses, split into the steps of the default export (``bench/export_parts.py``,
    ``blocks=True``), as multiples of ``symbolic_trace`` timed in the same rounds."""
    from export_parts import BLOCK_LEAVES  # type: ignore[import-not-found]

    recs = [(k, t.stages[k]["export_blocks_parts"]) for k in keys
            if t.stages.get(k, {}).get("export_blocks_parts", {}).get("status") == "ok"]  # fmt: skip
    if not recs:
        return ""
    rows = ["## Default export misses: where the time goes\n",
            f"For every zoo model whose default export (the model's classes kept as blocks) misses "
            f"{EXPORT_TARGET:g}x `symbolic_trace`, the steps it takes, each exclusive of the others, as multiples "
            "of `symbolic_trace` timed in the same rounds: `trace` is the whole flat capture (snapshot, torch.fx's "
            "tracing with the module calls recorded, the GraphModule); `block graphs` copies each block call's "
            "nodes into its own graph; `block GraphModules` is one GraphModule per block instance; `proof` checks "
            "that the hierarchy expanded is the flat graph node for node; `constructors` recovers and verifies "
            "every leaf module's constructor call (the flat export does the same); `block bodies` writes each "
            "instance's spec body; `classes` groups the instances into classes with arguments. Bold: the "
            "largest step besides `trace`. `python bench/pair.py export_blocks --parts MODEL...` prints the "
            "same for any zoo model.\n",
            "| model | export / symbolic_trace | " + " | ".join(BLOCK_LEAVES) + " |",
            "| --- | ---: |" + " ---: |" * len(BLOCK_LEAVES)]  # fmt: skip
    for k, rec in recs:
        x = rec["extra"]
        rows.append(f"| {_short(k)} | {x['ratio']:.2f}x | " + " | ".join(_step_cells(x, BLOCK_LEAVES)) + " |")
    return "\n".join(rows) + "\n"


def _step_cells(parts: dict[str, Any], steps: tuple[str, ...]) -> list[str]:
    """Each step as a multiple of the reference, the largest step besides tracing in bold."""
    cells = []
    for step in steps:
        text = f"{parts['steps'][step] / parts['reference']:.2f}"
        cells.append(f"**{text}**" if step == parts["dominant"] else text)
    return cells


def _check_section(check: dict[str, Any] | None) -> str:
    rows = ["## `fxgen generate --check` with nothing to do\n"]
    if not check:
        return rows[0] + "Not run.\n"
    if check.get("status") != "ok":
        return rows[0] + f"{check.get('status')}: {check.get('note', '')}\n"
    rows.append(f"`{check['command']}` over {check['specs']} unchanged specs ({check['spec_mib']:.1f} MiB; the six "
                "examples plus synthetic specs), all current: wall time of the CLI subprocess, median of "
                f"{check['reps']} runs: **{check['median'] * 1e3:.0f} ms** (min {check['low'] * 1e3:.0f}, max "
                f"{check['high'] * 1e3:.0f}), of which CPU time (user + system) {check.get('cpu', 0) * 1e3:.0f} ms; "
                f"`python -c pass` takes {check['python_startup'] * 1e3:.0f} ms here. "
                f"Exit status {check['exit']}.\n")  # fmt: skip
    heavy = check["heavy_imports"]
    rows.append(f"`python -X importtime -m fxgen generate --check …`: {check['modules_imported']} modules imported; "
                + ("**torch imported**" if check["torch_imported"] else "torch **not** imported")
                + "; of the heavy dependencies: "
                + (", ".join(f"{m} ({us / 1e3:.0f} ms)" for m, us in heavy.items()) if heavy else "none (no torch, black, jinja2, "
                   "PyYAML, jsonschema or safetensors)")
                + ". Largest top-level imports (cumulative): "
                + ", ".join(f"{name} {us / 1e3:.1f} ms" for us, name in check["top_imports_us"]) + ".\n")  # fmt: skip
    return "\n".join(rows)


def _problems(t: Table) -> str:
    bad = [(k, s, r) for k, stages in t.stages.items() for s, r in stages.items()
           if r.get("status") in ("error", "timeout", "skipped") and s != "read_validate+load"]  # fmt: skip
    if not bad:
        return ""
    rows = ["## Stages that did not complete\n", "| workload | stage | status | note |", "| --- | --- | --- | --- |"]
    for k, s, r in sorted(bad):
        note = str(r.get("note", "")).replace("|", "/").replace("\n", " ")[:200]
        rows.append(f"| {_short(k)} | {s} | {r.get('status')} | {note} |")
    return "\n".join(rows) + "\n"


def _heavy_order(key: str) -> tuple[bool, float]:
    _, dtype, size = key.split("/")
    return dtype != "float32", float(size)


_HEAVY = (("load_weights", "fxgen.load"), ("load_weights:alt", "fxgen.load (--alt)"), ("ref_meta_assign", "(a)"),
          ("ref_init_load", "(b)"))  # fmt: skip


def heavy_tables(t: Table, keys: list[str]) -> str:
    """Load with weights on the weight-heavy specs (``bench/heavy.py``): time, memory, growth."""
    methods = [(s, label) for s, label in _HEAVY if any(s in t.stages.get(k, {}) for k in keys)]
    alt = any(s == "load_weights:alt" for s, _ in methods)
    rounds = max((r.get("reps") or 0 for k in keys for r in t.stages.get(k, {}).values()), default=0)
    rows = ["## Load with weights: weight-heavy specs\n",
            "Stacks of transformer blocks (`bench/heavy.py`: LayerNorm, Linear(d, 3d), attention, Linear(d, d), "
            "LayerNorm, Linear(d, 4d), GELU, Linear(4d, d)) sized to at most 16 MiB to 2 GiB of weights, in "
            "float32 and bfloat16, written at bench time to a temporary directory; the safetensors file is what "
            "`fxgen.save_weights` writes, just written (in the page cache). 2 GiB is the largest size, and a size "
            "is measured only if 2.5 times its file and 1 GiB more are available (`heavy.affordable`; skipped "
            "sizes are listed at the end): reference (b) peaks at twice the file, and the machine is shared. "
            "`fxgen.load(spec, weights=path)` gets the Spec read beforehand, as the references get "
            "the generated class imported beforehand: (a) the class built on the meta device, then "
            "`load_state_dict(load_file(path), assign=True)`; (b) the class built normally, then "
            "`load_state_dict(load_file(path))`. **Every figure is one call in a fresh process** (after the "
            "imports and a warm-up load of a tiny model of the family), the median of "
            f"{rounds} round(s) with the methods' order changing from round to round; ratios are medians of "
            "the per-round ratios. Peak memory is the resident set size's high-water mark above the resident "
            "size before the call (`VmHWM` reset through `/proc/self/clear_refs`, minus `VmRSS`): anonymous "
            "copies and the file's pages a memory map has touched count alike. 'After use' is the resident size "
            "above the start after reading every tensor once, as a first forward does: weights that are only "
            "mapped become resident then. 'Off 64 B' counts the loaded tensors not at a 64-byte boundary.\n",
            "| spec | file | " + " | ".join(label for _, label in methods)
            + f" | fxgen / (a) ≤ {WEIGHTS_A:g} | fxgen / (b) ≤ {WEIGHTS_B:g} | "
            + (f"--alt / (a) ≤ {WEIGHTS_A:g} | --alt / (b) ≤ {WEIGHTS_B:g} | " if alt else "")
            + "fxgen: reading the file | tensors off 64 B in the file |",
            "| --- | ---: |" + " ---: |" * (len(methods) + 4 + 2 * alt)]  # fmt: skip
    for k in keys:
        info = t.info[k]
        cells = [t.cell(k, s) for s, _ in methods]
        ratios = []
        for num in ("load_weights", "load_weights:alt") if alt else ("load_weights",):
            a, b = (t.paired(k, num, den) for den in ("ref_meta_assign", "ref_init_load"))
            ratios.append(f"{fmt_ratio(a, WEIGHTS_A)} | {fmt_ratio(b, WEIGHTS_B)}")
        rec = t.stages.get(k, {}).get("load_weights", {})
        read = rec.get("extra", {}).get("read_seconds") if rec.get("status") == "ok" else None
        rows.append(f"| {_heavy_name(info)} | {_mib(info['weights_bytes'])} | " + " | ".join(cells)
                    + f" | {' | '.join(ratios)} | {fmt_time(read)} "
                    f"| {info.get('file_misaligned', 0)} of {info.get('tensors', 0)} |")  # fmt: skip
    rows += ["", "Memory above the start, as a multiple of the file's size (peak during the load; resident after "
             f"it; resident after use) and tensors off 64 B; target 6c: fxgen's peak ≤ {MEMORY_TARGET:g}x.\n",
             "| spec | file | " + " | ".join(f"{label}: peak, after, after use, off 64 B" for _, label in methods) + " |",
             "| --- | ---: |" + " ---: |" * len(methods)]  # fmt: skip
    for k in keys:
        info = t.info[k]
        memory = functools.partial(_memory_cell, size=info["weights_bytes"] / 2**20)
        rows.append(f"| {_heavy_name(info)} | {_mib(info['weights_bytes'])} | "
                    + " | ".join(_cells(t, k, methods, memory)) + " |")  # fmt: skip
    if not any(sum(k.split("/")[1] == dt for k in keys) > 1 for dt in {k.split("/")[1] for k in keys}):
        return "\n".join(rows) + "\n"
    rows += ["", "Growth from one size to the next: the file's size, then each method's time and peak memory, as "
             "the factor from the smaller spec to the larger (equal to the file's factor: proportional to it).\n",
             "| dtype | from → to | file | " + " | ".join(f"{label} time" for _, label in methods) + " | "
             + " | ".join(f"{label} peak" for _, label in methods) + " |",
             "| --- | --- | ---: |" + " ---: |" * (2 * len(methods))]  # fmt: skip
    for dtype in dict.fromkeys(k.split("/")[1] for k in keys):
        same = [k for k in keys if k.split("/")[1] == dtype]
        for lo, hi in itertools.pairwise(same):
            file = t.info[hi]["weights_bytes"] / t.info[lo]["weights_bytes"]
            times = [_factor(t.get(hi, s), t.get(lo, s)) for s, _ in methods]
            peaks = [_factor(_peak(t, hi, s), _peak(t, lo, s)) for s, _ in methods]
            rows.append(f"| {dtype} | {_mib(t.info[lo]['weights_bytes'])} → {_mib(t.info[hi]['weights_bytes'])} "
                        f"| {file:.1f}x | " + " | ".join(times + peaks) + " |")  # fmt: skip
    return "\n".join(rows) + "\n"


WEIGHTS_SPEED = 2.0  # GB/s: fxgen.load of a file safetensors.torch.save_file wrote, from a warm page cache
WEIGHTS_LOAD_PEAK = 1.1  # its peak memory above the start, as a multiple of the file
WEIGHTS_SAVE_PEAK = 1.2  # save_weights's peak memory above the model, as a multiple of the weights
_WEIGHTS_IO = (("load_save_file", "fxgen.load, save_file's file"), ("ref_one_read", "bound: one allocation, one read"),
               ("load_fxgen_file", "fxgen.load, fxgen's file"), ("save_weights", "fxgen.save_weights"))  # fmt: skip


def weights_io_table(t: Table, keys: list[str]) -> str:
    """Weights files in and out (``bench/weights_io.py``): speed and peak memory."""
    methods = [(s + alt, label + (" (--alt)" if alt else "")) for s, label in _WEIGHTS_IO for alt in ("", ":alt")
               if any(s + alt in t.stages.get(k, {}) for k in keys)]  # fmt: skip
    rounds = max((r.get("reps") or 0 for k in keys for r in t.stages.get(k, {}).values()), default=0)
    rows = ["## Weights files in and out (issue 34)\n",
            "`bench/weights_io.py`: the float32 transformer stack of `bench/heavy.py`, its weights written by fxgen "
            "(tensors at 64-byte offsets) and by `safetensors.torch.save_file` (as Hugging Face's `save_pretrained`: "
            "the data at an 8-byte offset, so here every tensor is off a 64-byte boundary). Loads are "
            "`fxgen.load(spec, weights=path)` from a warm page cache; `fxgen.save_weights(model, path)` writes the "
            "generated class's model, whose tensors are in memory. Each figure is one call in a fresh process after a "
            f"warm-up on a tiny model, the median of {rounds} round(s); speed is the file's bytes over the time; peak "
            "is the resident set's high-water mark above the start (above the model for save_weights) as a multiple "
            f"of the weights. Targets: a save_file file loads at ≥ {WEIGHTS_SPEED:g} GB/s with a peak ≤ "
            f"{WEIGHTS_LOAD_PEAK:g}x; save_weights peaks ≤ {WEIGHTS_SAVE_PEAK:g}x.\n",
            "| spec | weights | " + " | ".join(f"{label}: time, speed, peak" for _, label in methods) + " |",
            "| --- | ---: |" + " ---: |" * len(methods)]  # fmt: skip
    for k in keys:
        info = t.info[k]
        rows.append(f"| {info.get('blocks')} blocks, d={info.get('width')}, float32 | {_mib(info['weights_bytes'])} | "
                    + " | ".join(_cells(t, k, methods, _speed_cell)) + " |")  # fmt: skip
    return "\n".join(rows) + "\n"


def _memory_cell(s: str, rec: dict[str, Any], size: float) -> str:
    """A heavy_tables memory cell: peak, after, after use (multiples of the file's MiB ``size``), off 64 B."""
    x = rec["extra"]
    peak = f"{x['peak_mib'] / size:.2f}x"
    if s.startswith("load_weights") and x["peak_mib"] / size > MEMORY_TARGET:
        peak = f"**{peak}**"
    return (f"{peak}, {x['rss_mib'] / size:.2f}x, {x['touched_rss_mib'] / size:.2f}x, {x['misaligned']}"
            + ("" if x.get("exact", True) else " (**not exact**)"))  # fmt: skip


def _speed_cell(s: str, rec: dict[str, Any]) -> str:
    """A weights_io_table cell: time, speed and peak of one method's record, beyond a target in bold."""
    x = rec["extra"]
    speed, peak = f"{x['gb_per_s']:.2f} GB/s", f"{x['peak_ratio']:.2f}x"
    if s.startswith("load_save_file") and x["gb_per_s"] < WEIGHTS_SPEED:
        speed = f"**{speed}**"
    limit = WEIGHTS_SAVE_PEAK if s.startswith("save_weights") else WEIGHTS_LOAD_PEAK
    if x["peak_ratio"] > limit:
        peak = f"**{peak}**"
    return (f"{fmt_time(rec['median'])}, {speed}, {peak}" + ("" if x.get("exact", True) else " (**not exact**)")
            + (f", {x['misaligned']} off 64 B" if x.get("misaligned") else ""))  # fmt: skip


def _cells(t: Table, key: str, methods: list[tuple[str, str]], cell: Callable[[str, dict[str, Any]], str]) -> list[str]:
    """One row's cells, a method each: ``cell(stage, record)`` for a record that ran, else its status or "-"."""
    cells = []
    for s, _ in methods:
        rec = t.stages.get(key, {}).get(s)
        cells.append(cell(s, rec) if rec and rec.get("status") == "ok" else rec.get("status", "-") if rec else "-")
    return cells


def _heavy_name(info: dict[str, Any]) -> str:
    return f"{info.get('blocks')} blocks, d={info.get('width')}, {info.get('dtype')}"


def _mib(size: float) -> str:
    return f"{size / 2**30:.2f} GiB" if size >= 2**30 else f"{size / 2**20:.1f} MiB"


def _peak(t: Table, key: str, stage: str) -> float | None:
    rec = t.stages.get(key, {}).get(stage)
    return rec.get("peak_mib") if rec and rec.get("status") == "ok" else None


def _factor(a: float | None, b: float | None) -> str:
    return f"{a / b:.1f}x" if a is not None and b else "-"
