"""Both captures on the zoo models torch.fx traces: symbolic tracing and TorchDynamo, compared.

For each entry (``--only NAME ...`` / ``--library LIB ...``) that the catalogue marks traceable:
export it with ``capture="trace"`` (the entry's own tracer, leaves and concrete args) and with
``capture="dynamo"`` (on its example inputs), then report

- whether both specs declare the same modules (paths and constructor calls);
- whether ``fxgen.load`` of each, with the original ``state_dict()`` loaded strictly, gives
  outputs ``torch.equal`` to each other's;
- how far apart the node lists are: the edit distance between the two lists of
  ``(op, target)`` (insertions, deletions and substitutions), next to both lengths;
- the time of each capture.

    python bench/zoo_compare.py [--only NAME ...] [--library LIB ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parity import tensor_leaves
from zoo_models import ZOO, ZooModel
from zoo_report import ALLOW, dynamo_options, export_options

import fxgen


@dataclass
class Comparison:
    name: str
    same_modules: bool | None = None
    equal_outputs: bool | None = None
    trace_nodes: int = 0
    dynamo_nodes: int = 0
    distance: int = 0
    trace_s: float = 0.0
    dynamo_s: float = 0.0
    problem: str = ""


def edit_distance(a: list[Any], b: list[Any]) -> int:
    """Levenshtein distance between two sequences (one row at a time)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def _run(spec: fxgen.Spec, state: dict[str, torch.Tensor], inputs: tuple[Any, ...]) -> Any:
    model = fxgen.load(spec, allow=ALLOW).eval()
    model.load_state_dict(state, strict=True)
    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(0)
        return model(*inputs)


def compare(zm: ZooModel) -> Comparison:
    row = Comparison(zm.name)
    try:
        model = zm.build()
        state = model.state_dict()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            traced = fxgen.export(model, **export_options(zm))
            row.trace_s = time.perf_counter() - start
            start = time.perf_counter()
            captured = fxgen.export(model, **dynamo_options(zm))
            row.dynamo_s = time.perf_counter() - start
        row.same_modules = traced.modules == captured.modules
        a = tensor_leaves(_run(traced, state, zm.inputs()))
        b = tensor_leaves(_run(captured, state, zm.inputs()))
        row.equal_outputs = len(a) == len(b) and all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b, strict=True))
        key = [(n.op, n.target) for n in traced.nodes]
        other = [(n.op, n.target) for n in captured.nodes]
        row.trace_nodes, row.dynamo_nodes = len(key), len(other)
        row.distance = edit_distance(key, other)
    except Exception as exc:  # a report records every failure
        row.problem = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--library", nargs="*", default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    models = [z for z in ZOO if z.traceable and (not args.only or z.name in args.only)
              and (not args.library or z.library in args.library)]  # fmt: skip
    rows = []
    print("| model | same modules | equal outputs | nodes (trace / dynamo) | edit distance | trace s | dynamo s |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for zm in models:
        row = compare(zm)
        rows.append(row)
        if row.problem:
            print(f"| {row.name} | - | - | - | - | - | {row.problem.replace('|', '/')} |", flush=True)
            continue
        print(f"| {row.name} | {'yes' if row.same_modules else 'no'} | {'yes' if row.equal_outputs else '**no**'} | "
              f"{row.trace_nodes} / {row.dynamo_nodes} | {row.distance} | {row.trace_s:.2f} | {row.dynamo_s:.2f} |",
              flush=True)  # fmt: skip
    done = [r for r in rows if not r.problem]
    print(f"\n{len(rows)} models: {len(done)} captured both ways, same modules in {sum(bool(r.same_modules) for r in done)}, "
          f"equal outputs in {sum(bool(r.equal_outputs) for r in done)}, identical node lists in "
          f"{sum(r.distance == 0 for r in done)}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
