"""One fxgen stage against its reference, timed alternately: the steady ratio for small workloads.

    python bench/pair.py load model_specs/mlp.yaml model_specs/indexing.yaml
    python bench/pair.py export monai.resnet18 monai.BasicUNet
    python bench/pair.py generate model_specs/multi_io.yaml

``bench/run.py`` times a stage and then its reference, each as a median. On workloads of a few
milliseconds that ratio moves by up to ±25% between runs (docs/performance.md); alternating the
two calls in one loop (``measure.interleaved``) cancels the drift. Each call follows a
``gc.collect()``, and objects alive after the warm-up are frozen, as in ``bench/run.py``.

- ``load``: ``fxgen.load(path)`` against the direct torch.fx build (``stages.build_direct``);
- ``export``: ``fxgen.export`` of a zoo model against its ``symbolic_trace`` (``stages._zoo_trace``);
- ``generate``: ``fxgen.generate`` with every formatting cache cleared against ``Graph.python_code``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # as bench/run.py's workers
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from measure import interleaved

import fxgen
from fxgen import _format


def pairs(kind: str, workload: str, allow: tuple[str, ...] = ()) -> tuple[Callable[[], Any], Callable[[], Any], Callable[[], Any] | None]:
    """(fxgen's call, the reference, a setup for fxgen's call) for one workload."""
    from stages import _zoo_trace, build_direct, prepare_direct

    if kind == "export":
        from zoo_models import ZOO

        zm = next(z for z in ZOO if z.name == workload)
        model = zm.build()
        leaves = zm.leaf_module_types()
        return (
            (lambda: fxgen.export(model, concrete_args=zm.concrete_args, leaf_modules=leaves)),
            (lambda: _zoo_trace(zm, model)),
            None,
        )
    path = Path(workload)
    spec = fxgen.load_spec(path, allow=allow)
    if kind == "load":
        prepared = prepare_direct(spec, fxgen._api.policy_for(allow))
        return (lambda: fxgen.load(path, allow=allow)), (lambda: build_direct(prepared)), None
    graph = fxgen.load(spec, allow=allow).graph
    return (lambda: fxgen.generate(spec, allow=allow)), (lambda: graph.python_code(root_module="self")), _format.clear_caches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["load", "export", "generate"])
    parser.add_argument("workloads", nargs="+", help="spec paths (load, generate) or zoo model names (export)")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--allow", action="append", default=[], help="a target to allow (as fxgen --allow)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{'workload':40s} {'fxgen':>10s} {'reference':>10s}  ratio")
    for workload in args.workloads:
        a, b, setup = pairs(args.kind, workload, tuple(args.allow))
        stats = interleaved(a, b, budget=0.0, min_rounds=args.rounds, max_rounds=args.rounds, setup_a=setup, collect=True)
        ta, tb = stats["a_median"], stats["b_median"]
        print(f"{workload:40s} {ta * 1e3:8.2f} ms {tb * 1e3:8.2f} ms  {ta / tb:.2f}x")


if __name__ == "__main__":
    main()
