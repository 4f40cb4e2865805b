"""Render benchmark records as Markdown (``docs/benchmarks.md``)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

__all__ = ["render"]

FXGEN_STAGES = ("read_validate", "load", "generate", "render", "format", "export_trace", "export_spec", "export",
                "load_weights", "forward")  # fmt: skip
REFERENCES = ("fx_direct", "python_code", "black_file", "symbolic_trace", "safetensors", "torch_load")
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
    "load_weights": "load with weights",
    "forward": "forward (generated class)",
    "fx_direct": "ref: torch.fx create_node + GraphModule",
    "python_code": "ref: `Graph.python_code`",
    "black_file": "ref: black on the generated file",
    "symbolic_trace": "ref: `symbolic_trace`",
    "safetensors": "ref: `safetensors.load_file`",
    "torch_load": "ref: `torch.load`",
}
ORDER = ("read_validate", "load", "read_validate+load", "fx_direct", "generate", "render", "format", "python_code",
         "black_file", "export_trace", "export_spec", "export", "symbolic_trace", "load_weights", "safetensors",
         "torch_load", "forward")  # fmt: skip


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
                 if r.get("status") == "ok" and r.get("cpu") and r.get("median") and r["stage"] != "forward"]  # fmt: skip
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
        """The median per-round ratio of ``num`` to ``den`` timed alternately (stage ``paired:<num>``)."""
        rec = self.stages.get(key, {}).get(f"paired:{num}")
        if not rec or rec.get("status") != "ok" or rec.get("extra", {}).get("reference") != den:
            return None
        return float(rec["extra"]["median_ratio"])

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
    ("export / symbolic_trace", "export", "symbolic_trace", 1.5),
    ("load with weights / safetensors", "load_weights", "safetensors", 1.3),
)


def render(records: list[dict[str, Any]], check: dict[str, Any] | None, meta: dict[str, Any]) -> str:
    t = Table(records)
    synthetic = sorted({k for k in t.stages if k.startswith("synthetic/")},
                       key=lambda k: (k.split("/")[1], int(k.split("/")[2])))  # fmt: skip
    shapes = list(dict.fromkeys(k.split("/")[1] for k in synthetic))
    sizes = sorted({int(k.split("/")[2]) for k in synthetic})
    examples = sorted(k for k in t.stages if k.startswith("example/"))
    zoo = sorted(k for k in t.stages if k.startswith("zoo/"))
    weights = sorted((k for k in t.stages if k.startswith("weights/")), key=lambda k: t.info[k].get("parameters", 0))
    out: list[str] = []
    w = out.append
    w("# fxgen benchmarks\n")
    w("Generated by `bench/run.py` (issue 6); do not edit by hand — rerun "
      "`python bench/run.py` (about 15 minutes) or `python bench/run.py --quick` (seconds).\n")  # fmt: skip
    w("## Machine\n")
    v = meta["versions"]
    w(f"- CPU: {meta['cpu']}, {meta['cores']} cores, {meta.get('memory_gib')} GiB RAM; {meta['os']}; "
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
      "or \"(2 runs)\" — that keeps the default run near 15 minutes; `--thorough` makes 3 runs everywhere. "
      "A single run longer than its limit (60-90 s) is a \"timeout\". At 100,000 nodes the references "
      "`black on file` and `torch.load` are not run (`--thorough` runs them). Runs use "
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
      "of the loaded graph; `black on file` is `black.format_str` on the final generated source. Synthetic "
      "models are exported from an ordinary `nn.Module` carrying the loaded GraphModule's forward and "
      "state; zoo models from the eager model (their leaf modules and concrete args).\n")  # fmt: skip
    w("**Ratios to a reference are paired** where the workload is small enough for the sequential medians "
      "to drift (examples, zoo models and graphs up to 10,000 nodes): after the stages above, each target's "
      "fxgen call and its reference — `load(path)` and fx direct, `generate` (caches cleared) and "
      "`python_code`, `export` and `symbolic_trace`, load with weights and `safetensors.load_file` — are "
      "called alternately in one loop (`measure.interleaved`: one untimed round, then order flipped every "
      "round, `gc.collect()` before every call, 0.25 s per pair on models and 0.4 s on graphs, at least 7 "
      "rounds, 5 at 10,000 nodes; objects alive when the loop starts, the workload's own graphs among them, are frozen as after "
      "the warm-up), and the ratio is the **median of the per-round ratios**. A stage and its reference timed minutes apart see different machine states, so "
      "on 1-20 ms workloads the ratio of their sequential medians moved by up to ±25% between runs; the "
      "paired ratio does not. The targets table and the ratio columns use the paired ratio where there is "
      "one, with the sequential wall-time ratio after it as `(seq …)`; elsewhere (100,000 nodes, "
      "weight-heavy specs) they show the sequential wall-time ratio with the CPU-time ratio in parentheses. "
      "Absolute times and peak memory are always the sequential medians.\n")  # fmt: skip
    w(f"Peak memory (`· N MiB`) is the peak resident set size during the first run above the resident "
      f"size before it, measured with {meta['memory_method']}: the kernel's high-water mark, reset per "
      "stage, which counts every allocation (torch's C++ allocator and C extensions too, which "
      "tracemalloc misses) and costs nothing while the stage runs.\n")  # fmt: skip
    w(_targets(t, synthetic, examples, zoo, check, sizes, weights))
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
    if weights:
        w(_weights_table(t, weights))
    w(_check_section(check))
    w(_problems(t))
    return "\n".join(out).rstrip() + "\n"


def _targets(t: Table, synthetic: list[str], examples: list[str], zoo: list[str], check: dict[str, Any] | None,
             sizes: list[int], weights: list[str]) -> str:  # fmt: skip
    rows = ["## Targets (issue 6)\n", "| # | target | measured (worst case over the workloads) | met? |",
            "| --- | --- | --- | --- |"]  # fmt: skip
    everything = synthetic + examples + zoo

    def worst(num: str, den: str, keys: list[str]) -> tuple[float | None, str]:
        vals = [(t.ratio(k, num, den), k) for k in keys]
        vals = [(x, k) for x, k in vals if x is not None]
        return max(vals) if vals else (None, "")

    def cpu_of(num: str, den: str, key: str) -> str:
        c = t.ratio(key, num, den, cpu=True) if key else None
        worst_cpu = max((x for x in (t.ratio(k, num, den, cpu=True) for k in everything) if x is not None), default=None)
        text = f"; CPU time: {fmt_ratio(c)} there, worst {fmt_ratio(worst_cpu)}" if c is not None else ""
        if key and t.paired(key, num, den) is not None:
            n = sum(t.paired(k, num, den) is not None for k in everything)
            text = (f"; paired, on {n} workloads; sequential there: {fmt_ratio(t.ratio(key, num, den, paired=False))} "
                    f"wall, {fmt_ratio(c)} CPU")  # fmt: skip
        return text

    def verdict(ok: bool | None) -> str:
        return "-" if ok is None else ("yes" if ok else "**no**")

    r1, k1 = worst("read_validate+load", "fx_direct", everything)
    lin = _linearity(t, synthetic, "read_validate+load")
    lin_txt = ", ".join(f"{s} {g:.2f}x" for s, g in lin.items()) or "n/a (needs 1,000 and 100,000)"
    lin_ok = all(g <= 1.5 for g in lin.values()) if lin else None
    rows.append(f"| 1 | read+validate+load ≤ 2x direct torch.fx construction | {fmt_ratio(r1)} ({_short(k1)}{cpu_of('read_validate+load', 'fx_direct', k1)}) "
                f"| {verdict(r1 <= 2 if r1 is not None else None)} |")  # fmt: skip
    rows.append(f"| 1b | …and linear: per-node time at 100k ≤ 1.5x per-node at 1k | {lin_txt} | {verdict(lin_ok)} |")
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
    rows.append(f"| 4 | export ≤ 1.5x `symbolic_trace` | {fmt_ratio(r4)} ({_short(k4)}{cpu_of('export', 'symbolic_trace', k4)}) "
                f"| {verdict(r4 <= 1.5 if r4 is not None else None)} |")  # fmt: skip
    fw = [(t.stages[k]["forward"]["extra"]["median_ratio"], k) for k in examples + zoo
          if t.stages[k].get("forward", {}).get("status") == "ok"]  # fmt: skip
    if fw:
        lo, hi = min(fw), max(fw)
        mism = [k for k in examples + zoo if t.stages[k].get("forward", {}).get("extra", {}).get("outputs_match") is False]
        ok5 = lo[0] >= 0.97 and hi[0] <= 1.03
        txt = f"{lo[0]:.3f} ({_short(lo[1])}) … {hi[0]:.3f} ({_short(hi[1])}) over {len(fw)} models"
        if mism:
            txt += f"; outputs differ: {', '.join(_short(k) for k in mism)}"
        rows.append(f"| 5 | generated forward / original forward = 1.00 ± 0.03 | {txt} | {verdict(ok5)} |")
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
        rows.append("| 5b | `torch.compile` accepts a generated class | not run (--quick) | - |")
    r6, k6 = worst("load_weights", "safetensors", everything)
    rows.append(f"| 6 | load with weights ≤ 1.3x `safetensors.load_file` | {fmt_ratio(r6)} ({_short(k6)}{cpu_of('load_weights', 'safetensors', k6)}) "
                f"| {verdict(r6 <= 1.3 if r6 is not None else None)} |")  # fmt: skip
    heavy = [(t.ratio(k, "load_weights", "safetensors"), k) for k in weights]
    heavy = [(x, k) for x, k in heavy if x is not None]
    if heavy:
        big = max(heavy, key=lambda xk: t.info[xk[1]].get("weights_bytes", 0))
        mib = t.info[big[1]].get("weights_bytes", 0) / 2**20
        rows.append(f"| 6, by file size | …on weight-heavy specs (below) | {', '.join(fmt_ratio(x) for x, _ in heavy)}; "
                    f"{fmt_ratio(big[0])} at {mib:.0f} MiB | {verdict(big[0] <= 1.3)} at {mib:.0f} MiB |")  # fmt: skip
    return "\n".join(rows) + "\n"


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


def _forward_cell(t: Table, key: str) -> str:
    rec = t.stages.get(key, {}).get("forward")
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
    growth_head = "per-node 100k / 1k" if 1000 in sizes and 100000 in sizes else "per-node largest / smallest"
    rows = ["## How cost grows with size\n",
            "Time per node (µs) at each size, and the ratio of per-node time at 100,000 nodes to "
            "1,000 nodes (1.00 = linear; target 1b: ≤ 1.5 for read+validate+load). Bold: > 1.5.\n",
            "| shape | stage | " + " | ".join(f"{n:,}" for n in sizes) + f" | {growth_head} |",
            "| --- | --- |" + " ---: |" * (len(sizes) + 1)]  # fmt: skip
    for shape in shapes:
        for stage in stages:
            per = []
            for n in sizes:
                k = f"synthetic/{shape}/{n}"
                v, nodes = t.get(k, stage), t.nodes(k)
                per.append(v / nodes * 1e6 if v is not None and nodes else None)
            if all(p is None for p in per):
                continue
            if 1000 in sizes and 100000 in sizes:
                a, b = per[sizes.index(1000)], per[sizes.index(100000)]
            else:
                known = [p for p in per if p is not None]
                a, b = (known[0], known[-1]) if len(known) > 1 else (None, None)
            g = b / a if a and b else None
            status = [t.stages.get(f"synthetic/{shape}/{n}", {}).get(stage, {}).get("status") for n in sizes]
            cells = [f"{p:,.1f}" if p is not None else (s if s and s != "ok" else "-") for p, s in zip(per, status, strict=True)]
            rows.append(f"| {shape} | {STAGE_LABEL[stage].strip()} | " + " | ".join(cells) + f" | {fmt_ratio(g, 1.5)} |")
    return "\n".join(rows) + "\n"


def _model_table(t: Table, keys: list[str], title: str) -> str:
    cols = [("read_validate", None), ("load", None), ("fx_direct", None), ("R1", ("read_validate+load", "fx_direct", 2.0)),
            ("generate", None), ("python_code", None), ("R2", ("generate", "python_code", 2.0)),
            ("export", None), ("symbolic_trace", None), ("R4", ("export", "symbolic_trace", 1.5)),
            ("load_weights", None), ("safetensors", None), ("R6", ("load_weights", "safetensors", 1.3))]  # fmt: skip
    head = ["model", "nodes", "read+validate", "load", "fx direct", "R1 ≤2", "generate", "python_code", "R2 ≤2",
            "export", "symbolic_trace", "R4 ≤1.5", "load+weights", "safetensors", "R6 ≤1.3", "fwd gen/orig"]  # fmt: skip
    rows = [f"## {title}\n",
            "R1 = (read+validate+load) / fx direct, R2 = generate / python_code, R4 = export / symbolic_trace, "
            "R6 = load with weights / safetensors.load_file: paired ratios (alternating calls, see Method), the "
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
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


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


def _weights_table(t: Table, keys: list[str]) -> str:
    """Target 6 as the weights grow: fxgen's cost over the file read is the graph's, a constant."""
    rows = ["## Load with weights as the weights grow\n",
            "Specs of 8 `nn.Linear(width, width)` layers (17 nodes), loaded with `fxgen.load(spec, weights=...)` "
            "against reading the same safetensors file with `safetensors.torch.load_file`. The difference is "
            "the cost of building the GraphModule on the meta device and assigning the tensors, which does not "
            "grow with the file.\n",
            "| spec | parameters | file | load with weights | `safetensors.load_file` | R6 ≤1.3 | difference | `torch.load` |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for k in keys:
        info = t.info[k]
        a, b = t.get(k, "load_weights"), t.get(k, "safetensors")
        diff = fmt_time(a - b) if a is not None and b is not None else "-"
        rows.append(f"| {k.split('/', 1)[1]} | {info.get('parameters', 0):,} | {info.get('weights_bytes', 0) / 2**20:.1f} MiB "
                    f"| {t.cell(k, 'load_weights', memory=True)} | {t.cell(k, 'safetensors', memory=True)} "
                    f"| {t.both(k, 'load_weights', 'safetensors', 1.3)} | {diff} | {t.cell(k, 'torch_load')} |")  # fmt: skip
    return "\n".join(rows) + "\n"
