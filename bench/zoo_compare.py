"""Both captures on the zoo models torch.fx traces: symbolic tracing and TorchDynamo, compared.

For each entry (``--only NAME ...`` / ``--library LIB ...``) that the catalogue marks traceable:
export it with ``capture="trace"`` (the entry's own tracer, leaves and concrete args) and with
``capture="dynamo"`` (on its example inputs), then report

- whether both specs declare the same modules (paths and constructor calls); an ``nn.Identity``
  leaves no node in Dynamo's graph, so only the traced spec declares those (counted apart);
- whether ``fxgen.load`` of each, with the original ``state_dict()`` loaded strictly, gives
  outputs ``torch.equal`` to each other's;
- how far apart the node lists are: the edit distance between the two lists of
  ``(op, target)`` (insertions, deletions and substitutions), next to both lengths;
- the time of each capture.

    python bench/zoo_compare.py [--only NAME ...] [--library LIB ...] [--json OUT] [--out docs/zoo.md]
                                [--from-json RUN.json]
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
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's fxgen first

from parity import tensor_leaves
from sections import COMPARED, write_section
from zoo_models import ZOO, ZooModel
from zoo_report import ALLOW, dynamo_options, export_options

import fxgen


@dataclass
class Comparison:
    name: str
    same_modules: bool | None = None
    identities: int = 0  # nn.Identity modules only the traced spec declares (Dynamo records no node for them)
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
            traced = fxgen.export(model, **export_options(zm), flat=True)  # one graph, as Dynamo gives
            row.trace_s = time.perf_counter() - start
            start = time.perf_counter()
            captured = fxgen.export(model, **dynamo_options(zm))
            row.dynamo_s = time.perf_counter() - start
        row.same_modules = traced.modules == captured.modules
        if not row.same_modules:
            only = {k: v for k, v in traced.modules.items() if k not in captured.modules}
            rest = {k: v for k, v in traced.modules.items() if k not in only}
            if rest == captured.modules and all(v.cls == "torch.nn.Identity" for v in only.values()):
                row.identities = len(only)
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
    parser.add_argument("--out", type=Path, default=None, help="also write the table as a section of docs/zoo.md")
    parser.add_argument("--from-json", type=Path, default=None, help="report an earlier run's --json instead")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    models = [z for z in ZOO if z.traceable and (not args.only or z.name in args.only)
              and (not args.library or z.library in args.library)]  # fmt: skip
    rows = []
    lines = ["| model | same modules | equal outputs | nodes (trace / dynamo) | edit distance | trace s | dynamo s |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    print("\n".join(lines))
    earlier = json.loads(args.from_json.read_text()) if args.from_json else None
    for zm in models if earlier is None else []:
        rows.append(compare(zm))
    rows.extend(Comparison(**row) for row in earlier or ())
    for row in rows:
        if row.problem:
            lines.append(f"| {row.name} | - | - | - | - | - | {row.problem.replace('|', '/')} |")
        else:
            same = "yes" if row.same_modules else f"yes, less {row.identities} nn.Identity" if row.identities else "**no**"
            lines.append(f"| {row.name} | {same} | {'yes' if row.equal_outputs else '**no**'} | "
                         f"{row.trace_nodes} / {row.dynamo_nodes} | {row.distance} | {row.trace_s:.2f} | "
                         f"{row.dynamo_s:.2f} |")  # fmt: skip
        print(lines[-1], flush=True)
    done = [r for r in rows if not r.problem]
    distances = sorted(r.distance for r in done)
    summary = (f"{len(rows)} models torch.fx traces: {len(done)} captured both ways; the same modules declared in "
               f"{sum(bool(r.same_modules) for r in done)}, and in {sum(bool(r.identities) for r in done)} more but "
               "for the nn.Identity modules only tracing declares; equal outputs in "
               f"{sum(bool(r.equal_outputs) for r in done)}; identical node lists in "
               f"{sum(r.distance == 0 for r in done)}, median edit distance "
               f"{distances[len(distances) // 2] if distances else 0} (largest {distances[-1] if distances else 0}).")  # fmt: skip
    print("\n" + summary)
    if args.out is not None:
        command = " ".join(["python bench/zoo_compare.py", *(argv if argv is not None else sys.argv[1:])])
        section = (f"## Both captures on the models torch.fx traces\n\nGenerated by `{command}` "
                   f"(torch {torch.__version__}; `bench/zoo_report.py` keeps this section). Each model is exported "
                   "with `capture=\"trace\"` and `capture=\"dynamo\"`; both specs are loaded with the original "
                   "state dict (strict) and run on the model's inputs. The edit distance counts the insertions, "
                   "deletions and substitutions between the two lists of `(op, target)`.\n\n" + summary + "\n\n"
                   + "\n".join(lines))  # fmt: skip
        write_section(args.out, COMPARED, section)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
