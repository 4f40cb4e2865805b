"""One fxgen stage against its reference, timed alternately: the steady ratio for small workloads.

    python bench/pair.py load model_specs/mlp.yaml model_specs/indexing.yaml
    python bench/pair.py export monai.resnet18 monai.BasicUNet
    python bench/pair.py generate model_specs/multi_io.yaml
    python bench/pair.py weights model_specs/resnet_block.yaml
    python bench/pair.py export --parts monai.resnet18 --rounds 9

``bench/run.py`` times a stage and then its reference, each as a median. On workloads of a few
milliseconds that ratio moves by up to ±25% between runs (docs/performance.md); alternating the
two calls in one loop (``measure.interleaved``) cancels the drift. ``bench/run.py`` does the same
for its targets table, with the pairs built by the same functions (``stages.load_pair`` and its
siblings); this script times one pair on demand, with more rounds. The ratio printed is the
median of the per-round ratios fxgen / reference. Each call follows a ``gc.collect()``, and
objects alive after the warm-up are frozen, as in ``bench/run.py``.

- ``load``: ``fxgen.load(path)`` against the direct torch.fx build (``stages.build_direct``);
- ``export``: ``fxgen.export(flat=True)`` of a zoo model against its ``symbolic_trace``
  (``stages._zoo_trace``); ``export_blocks``: the default export (the model's classes kept);
- ``generate``: ``fxgen.generate`` with every formatting cache cleared against ``Graph.python_code``;
- ``weights``: ``fxgen.load(spec, weights=path)`` against references (a) and (b) (``stages.weights_pairs``:
  the generated class on meta + ``load_state_dict(assign=True)``, and built + ``load_state_dict``),
  on the file ``fxgen.save_weights`` writes for the spec; one line per reference. The weight-heavy
  specs are timed in fresh processes instead: ``bench/heavy.py``;
- ``export --parts``, ``export_blocks --parts``: export's steps inside real exports, against
  ``symbolic_trace`` (``bench/export_parts.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # as bench/run.py's workers
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's fxgen first

import tempfile

import torch
from measure import interleaved
from stages import (
    TARGETS,
    Pair,
    _quiet_export,
    _zoo_trace,
    export_pair,
    generate_pair,
    import_generated,
    load_pair,
    weights_pairs,
    zoo_trace_kw,
)

import fxgen


def pairs(kind: str, workload: str, allow: tuple[str, ...] = (), tmp: Path | None = None) -> dict[str, Pair]:
    """fxgen's call, the reference and a setup for fxgen's call, for one workload: the same
    pairs ``bench/run.py`` times alternately (``stages.Runner.pair``), by reference name."""
    if kind in ("export", "export_blocks"):
        from zoo_models import ZOO

        zm = next(z for z in ZOO if z.name == workload)
        model = zm.build()
        pair = export_pair(model, zoo_trace_kw(zm), lambda: _zoo_trace(zm, model))
        if kind == "export_blocks":  # the default export, the model's classes kept
            pair = Pair(lambda: _quiet_export(model, zoo_trace_kw(zm)), pair.reference)
        return {"symbolic_trace": pair}
    path = Path(workload)
    spec = fxgen.load_spec(path, allow=allow)
    if kind == "load":
        return {"fx direct": load_pair(path, spec, allow)}
    if kind == "weights":
        assert tmp is not None
        weights = tmp / f"{path.stem}.safetensors"
        fxgen.save_weights(fxgen.load(spec, allow=allow), weights)
        cls = import_generated(fxgen.generate(spec, allow=allow), spec.name, tmp)
        both = weights_pairs(spec, weights, cls, allow)
        return {"(a) meta + assign": both["weights"], "(b) built + load": both["weights_init"]}
    return {"python_code": generate_pair(spec, fxgen.load(spec, allow=allow).graph, allow, label=path.name)}


def print_parts(kind: str, models: list[str], rounds: int) -> None:
    """Export's steps on each zoo model, as multiples of its ``symbolic_trace`` (``export_parts``);
    ``kind`` ``export_blocks``: the default export's."""
    from export_parts import BLOCK_LEAVES, LEAVES, breakdown  # type: ignore[import-not-found]

    for name in models:
        pair = pairs(kind, name)["symbolic_trace"]
        b = breakdown(pair.fxgen, pair.reference, rounds=rounds, blocks=kind == "export_blocks")
        print(f"{name}: export {b['export'] * 1e3:.2f} ms, symbolic_trace {b['reference'] * 1e3:.2f} ms, "
              f"ratio {b['ratio']:.2f}x; the largest step besides tracing: {b['dominant']}")  # fmt: skip
        for step in BLOCK_LEAVES if kind == "export_blocks" else LEAVES:
            sec = b["steps"][step]
            print(f"  {step:24s} {sec * 1e3:8.2f} ms  {sec / b['reference']:5.2f}x symbolic_trace")
        print("  calls: " + ", ".join(f"{k} {v}" for k, v in b["calls"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=[k for k in TARGETS if k != "weights_init"])
    parser.add_argument("workloads", nargs="+", help="spec paths (load, generate) or zoo model names (export)")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--allow", action="append", default=[], help="a target to allow (as fxgen --allow)")
    parser.add_argument("--parts", action="store_true", help="export, export_blocks: time the steps (export_parts.py)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.parts:
        if not args.kind.startswith("export"):
            parser.error("--parts times export's steps: kind export or export_blocks")
        print_parts(args.kind, args.workloads, args.rounds)
        return
    print(f"{'workload':40s} {'fxgen':>10s} {'reference':>10s}  {'quartiles':>9s}  ratio (median per round)")
    with tempfile.TemporaryDirectory(prefix="fxgen-pair-") as tmp:
        for workload in args.workloads:
            for reference, pair in pairs(args.kind, workload, tuple(args.allow), Path(tmp)).items():
                stats = interleaved(pair.reference, pair.fxgen, budget=0.0, min_rounds=args.rounds,
                                    max_rounds=args.rounds, setup_b=pair.setup, collect=True)  # fmt: skip
                ta, tb = stats["b_median"], stats["a_median"]
                label = workload if args.kind != "weights" else f"{workload} vs {reference}"
                spread = f"{stats['ratio_q1']:.2f}-{stats['ratio_q3']:.2f}"
                print(f"{label:40s} {ta * 1e3:8.2f} ms {tb * 1e3:8.2f} ms  {spread:>9s}  {stats['median_ratio']:.2f}x")


if __name__ == "__main__":
    main()
