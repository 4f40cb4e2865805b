"""Where ``fxgen.load(path)`` spends its time: read, validate and build, with the collector on and off.

    python bench/load_parts.py /tmp/specs/fan_10000.yaml model_specs/mlp.yaml
    python bench/load_parts.py --synthetic fan:10000 --synthetic chain:1000
    python bench/load_parts.py --weights model_specs/resnet_block.yaml --runs 50

Target 1 compares ``load(path)`` with the direct torch.fx build (``stages.build_direct``). This
splits the load into its three steps — ``read_document``, ``validate_for_load`` (which builds the
declared modules the way the load keeps them) and ``build_module`` — and times each, the whole
call and the reference, as the median of ``--runs`` runs after a ``gc.collect()``, once with the
collector enabled (as users run) and once with it disabled. The difference between the two
columns is what garbage collection costs each step; docs/performance.md uses it to show that at
10,000 nodes the build after a fresh read pays for collections the reference does not.
Objects alive after the warm-up are frozen, as in ``bench/run.py``.

``--weights`` splits ``fxgen.load(spec, weights=path)`` instead (target 6, issue 21), on the file
``fxgen.save_weights`` writes for the spec: reading the file (``read_weights``), the modules built
on the meta device, the graph (``build_graph``), the GraphModule with its generated code
(``_graph_module``), assigning the tensors (``assign_weights``) and the rest, timed inside real
loads (``measure.timed_functions``), alternating with references (a) and (b) and with
``safetensors.load_file`` alone; medians of ``--runs`` rounds, collector on.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # as bench/run.py's workers
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's fxgen first

import torch
from measure import timed_functions
from stages import build_direct, prepare_direct
from workloads import write_spec

import fxgen
from fxgen.assemble.load import _construct_for_real, _tensor_for_real
from fxgen.assemble.module import build_module
from fxgen.check.validate import validate_for_load
from fxgen.policy.policy import policy_for
from fxgen.read.reader import read_document


def _median(fn: Callable[[Any], Any], runs: int, collector: bool, setup: Callable[[], Any] = lambda: None) -> float:
    """Median seconds of ``fn(setup())``; ``setup`` runs untimed, after the ``gc.collect()`` and
    with the collector as ``fn`` has it, so that what it allocates ages as it would in a load."""
    times = []
    for _ in range(runs):
        gc.collect()
        if not collector:
            gc.disable()
        try:
            arg = setup()
            t0 = time.perf_counter()
            fn(arg)
            times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return statistics.median(times)


def parts(path: Path, runs: int) -> dict[str, tuple[float, float]]:
    """Median seconds per step, ``(collector on, collector off)``."""
    policy = policy_for(None)
    prepared = prepare_direct(fxgen.load_spec(path), policy)
    fxgen.load(path)  # warm-up: imports, the policy's memos
    build_direct(prepared)
    gc.collect()
    gc.freeze()

    def validated() -> Any:
        return validate_for_load(read_document(path), policy, _construct_for_real, _tensor_for_real)

    old = validated()
    # (setup, timed step): "build after read+validate" is the build inside one load(path), whose
    # spec was just allocated; "build, older spec" builds one that has been alive a while.
    steps: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
        "read": (lambda: None, lambda _: read_document(path)),
        "validate": (lambda: read_document(path),
                     lambda doc: validate_for_load(doc, policy, _construct_for_real, _tensor_for_real)),
        "build after read+validate": (validated, lambda v: build_module(v[0], policy, made=v[1])),
        "build, older spec": (lambda: old, lambda v: build_module(v[0], policy)),
        "load(path)": (lambda: None, lambda _: fxgen.load(path)),
        "fx direct": (lambda: None, lambda _: build_direct(prepared)),
    }
    out = {}
    for name, (setup, fn) in steps.items():
        on, off = (_median(fn, runs, collector, setup) for collector in (True, False))
        out[name] = (on, off)
    gc.unfreeze()
    return out


_WEIGHT_STEPS = (  # (label, module, function), timed exclusive of each other
    ("read the file", "fxgen.assemble.load", "read_weights"),
    ("modules on meta", "fxgen.assemble.module", "Builder.construct_validated"),
    ("modules on meta", "fxgen.assemble.module", "Builder.module"),
    ("graph", "fxgen.assemble.module", "build_graph"),
    ("GraphModule + code", "fxgen.assemble.module", "_graph_module"),
    ("assign", "fxgen.assemble.load", "assign_weights"),
)
WEIGHT_STEPS = tuple(dict.fromkeys(label for label, *_ in _WEIGHT_STEPS))


def weight_parts(path: Path, runs: int, tmp: Path) -> dict[str, float]:
    """Median seconds of each step of ``fxgen.load(spec, weights=...)`` and of the references."""
    from safetensors.torch import load_file
    from stages import import_generated, ref_init_load, ref_meta_assign

    spec = fxgen.load_spec(path)
    weights = tmp / f"{path.stem}.safetensors"
    fxgen.save_weights(fxgen.load(spec), weights)
    cls = import_generated(fxgen.generate(spec), spec.name, tmp)
    calls: dict[str, Callable[[], Any]] = {
        "(a) meta + assign": lambda: ref_meta_assign(cls, weights),
        "(b) built + load_state_dict": lambda: ref_init_load(cls, weights),
        "safetensors.load_file alone": lambda: load_file(str(weights)),
    }
    for call in (lambda: fxgen.load(spec, weights=weights), *calls.values()):
        call()  # warm-up
    gc.collect()
    gc.freeze()
    samples: dict[str, list[float]] = {}
    for i in range(runs):
        order = ["fxgen", *calls]
        for name in order if i % 2 == 0 else order[::-1]:
            gc.collect()
            if name != "fxgen":
                t0 = time.perf_counter()
                calls[name]()
                samples.setdefault(name, []).append(time.perf_counter() - t0)
                continue
            spent: dict[str, float] = {}
            with timed_functions(_WEIGHT_STEPS, spent, {}, exclusive=True):
                t0 = time.perf_counter()
                fxgen.load(spec, weights=weights)
                total = time.perf_counter() - t0
            samples.setdefault("load(spec, weights=...)", []).append(total)
            for label in WEIGHT_STEPS:
                samples.setdefault("  " + label, []).append(spent.get(label, 0.0))
            samples.setdefault("  rest", []).append(total - sum(spent.values()))
    gc.unfreeze()
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="*", type=Path, help="spec files")
    parser.add_argument("--synthetic", action="append", default=[], metavar="SHAPE:N",
                        help="a bench synthetic spec, e.g. fan:10000 (written to a temporary directory)")  # fmt: skip
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--weights", action="store_true", help="split fxgen.load(spec, weights=...) instead")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        paths = list(args.specs)
        for item in args.synthetic:
            shape, _, n = item.partition(":")
            paths.append(write_spec(Path(tmp), shape, int(n)))
        for path in paths:
            if args.weights:
                print(f"{path.name}: load with weights, median of {args.runs} rounds")
                for name, seconds in weight_parts(path, args.runs, Path(tmp)).items():
                    print(f"  {name:30s} {seconds * 1e3:9.3f} ms")
                continue
            print(f"{path.name}: median of {args.runs} runs, collector on / off")
            for name, (on, off) in parts(path, args.runs).items():
                print(f"  {name:28s} {on * 1e3:9.2f} ms {off * 1e3:9.2f} ms")


if __name__ == "__main__":
    main()
