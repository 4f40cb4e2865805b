"""Hierarchical against flat export on the zoo: how much code, and how fast its forward runs.

For each traceable zoo model: export it both ways (the default keeps the model's classes as
blocks; ``flat=True`` gives one graph), generate both files, and measure

* lines: the generated file's non-blank lines (its three header comments left out) against the
  non-blank lines of the original classes' source (``inspect.getsource`` of every class the
  model instantiates that is not torch's); and classes, generated against original;
* forward time: each generated class, holding the original's ``state_dict`` (loaded strictly),
  against the original on the entry's inputs, under ``torch.no_grad()``. The three run in turn,
  ``--rounds`` times; a ratio is the median of the per-round ratios, so drift in the machine's
  speed hits both sides of a pair alike. Outputs are checked equal first.

Usage: ``OMP_NUM_THREADS=1 python bench/zoo_blocks.py [--fast] [--dynamo] [--only NAME...] [--out docs/zoo.md]``:
``--out`` puts the table in that file's section between the ``sections.BLOCKS`` markers (added at
the end if missing); ``bench/zoo_report.py`` keeps the section when it rewrites the file.
``--dynamo`` measures the models torch.fx cannot trace instead, captured by TorchDynamo both ways
(blocks split from the one captured graph: ``fxgen.capture.partition``), in the
``sections.BLOCKS_DYNAMO`` section.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's fxgen first

from class_counts import is_own
from parity import import_file
from sections import BLOCKS, BLOCKS_DYNAMO, write_section
from zoo_models import ZOO, ZooModel
from zoo_report import dynamo_options, export_options

import fxgen


@dataclass
class Row:
    name: str
    source_lines: int = 0
    source_classes: int = 0
    flat_lines: int = 0
    blocks_lines: int = 0
    blocks_classes: int = 0
    flat_speed: float = float("nan")
    blocks_speed: float = float("nan")
    export_ratio: float = float("nan")  # export keeping blocks / flat export
    problem: str = ""


def original_source(model: torch.nn.Module) -> tuple[int, int]:
    """Non-blank source lines and the number of the classes ``model`` instantiates that are not torch's."""
    classes = {type(m) for m in model.modules() if is_own(type(m))}
    lines = 0
    for cls in classes:
        with contextlib.suppress(OSError, TypeError):  # a class made at run time has no source
            lines += sum(1 for line in inspect.getsource(cls).splitlines() if line.strip())
    return lines, len(classes)


def code_lines(source: str) -> int:
    return sum(1 for line in source.splitlines()[3:] if line.strip())


def _generated(spec: fxgen.Spec, workdir: Path, stem: str, model: torch.nn.Module) -> tuple[str, torch.nn.Module]:
    source = fxgen.generate(spec, allow=_allow(spec))
    path = workdir / f"{stem}.py"
    path.write_text(source)
    generated = getattr(import_file(path, f"zoo_blocks_{stem}_{id(spec)}"), spec.name)().eval()
    generated.load_state_dict(model.state_dict(), strict=True)
    return source, generated


def _allow(spec: fxgen.Spec) -> tuple[str, ...]:
    from fxgen.cli.export import outside_default_policy

    return tuple(outside_default_policy(spec))


def _same(a: Any, b: Any) -> bool:
    left, right = torch.utils._pytree.tree_leaves(a), torch.utils._pytree.tree_leaves(b)
    return len(left) == len(right) and all(
        torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(left, right, strict=True)
    )


def _time(model: Any, inputs: tuple[Any, ...]) -> float:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        start = time.perf_counter()
        model(*inputs)
        return time.perf_counter() - start


def speeds(original: torch.nn.Module, others: list[torch.nn.Module], inputs: tuple[Any, ...], rounds: int) -> list[float]:
    """Median over rounds of (other's time / original's time), the models run in turn each round."""
    ratios: list[list[float]] = [[] for _ in others]
    with torch.no_grad():
        for model in (original, *others):  # warm up
            _time(model, inputs)
        for _ in range(rounds):
            base = _time(original, inputs)
            for i, other in enumerate(others):
                ratios[i].append(_time(other, inputs) / base)
    return [statistics.median(r) for r in ratios]


def export_cost(model: torch.nn.Module, options: dict[str, Any], rounds: int = 5) -> float:
    """Median over rounds of (export keeping blocks) / (flat export), run in turn."""
    ratios = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(rounds):
            start = time.perf_counter()
            fxgen.export(model, **options)
            blocks = time.perf_counter() - start
            start = time.perf_counter()
            fxgen.export(model, flat=True, **options)
            ratios.append(blocks / (time.perf_counter() - start))
    return statistics.median(ratios)


def needs_dynamo(zm: ZooModel) -> bool:
    """Does ``capture="auto"`` take this entry with TorchDynamo (torch.fx fails, or traces it wrongly)?"""
    if not zm.traceable:
        return True
    from fxgen.capture.trace import trace

    try:
        trace(zm.build(), **export_options(zm))
    except fxgen.ExportError:
        return True
    return False


def measure(zm: ZooModel, workdir: Path, rounds: int, dynamo: bool = False) -> Row:
    row = Row(zm.name)
    try:
        torch.manual_seed(0)
        model = zm.build().eval()
        inputs = zm.inputs()
        row.source_lines, row.source_classes = original_source(model)
        options = dynamo_options(zm) if dynamo else export_options(zm)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            blocks = fxgen.export(model, **options)
            flat = fxgen.export(model, flat=True, **options)
        stem = "".join(ch if ch.isalnum() else "_" for ch in zm.name).lower()
        blocks_source, blocks_model = _generated(blocks, workdir, stem + "_blocks", model)
        flat_source, flat_model = _generated(flat, workdir, stem + "_flat", model)
        row.blocks_lines, row.flat_lines = code_lines(blocks_source), code_lines(flat_source)
        row.blocks_classes = 1 + len(blocks.classes)
        with torch.no_grad(), torch.random.fork_rng():
            torch.manual_seed(0)
            want = model(*inputs)
            for label, other in (("blocks", blocks_model), ("flat", flat_model)):
                torch.manual_seed(0)
                if not _same(want, other(*inputs)):
                    row.problem = f"the {label} export's outputs differ"
                    return row
        row.blocks_speed, row.flat_speed = speeds(model, [blocks_model, flat_model], inputs, rounds)
        row.export_ratio = export_cost(model, options)
    except Exception as exc:  # a report records every failure
        row.problem = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:160]
    return row


def table(rows: list[Row], dynamo: bool = False) -> str:
    done = [r for r in rows if not r.problem and r.source_lines]
    lines = [
        "| model | original lines (classes) | blocks: lines (classes), ratio | flat: lines, ratio | forward, blocks | forward, flat | export time, blocks / flat |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        if r.problem:
            lines.append(f"| {r.name} | {r.source_lines} ({r.source_classes}) | {r.problem} | | | | |")
            continue
        lines.append(f"| {r.name} | {r.source_lines} ({r.source_classes}) | {r.blocks_lines} ({r.blocks_classes}), "
                     f"{r.blocks_lines / max(r.source_lines, 1):.2f} | {r.flat_lines}, {r.flat_lines / max(r.source_lines, 1):.2f} "
                     f"| {r.blocks_speed:.3f} | {r.flat_speed:.3f} | {r.export_ratio:.2f} |")  # fmt: skip
    if done:
        med = statistics.median
        summary = (
            f"\n{len(done)} models measured. Median lines ratio (generated / original source): blocks "
            f"**{med(r.blocks_lines / r.source_lines for r in done):.2f}**, flat "
            f"{med(r.flat_lines / r.source_lines for r in done):.2f}. Median forward time against the original: "
            f"blocks **{med(r.blocks_speed for r in done):.3f}**, flat {med(r.flat_speed for r in done):.3f}; "
            f"within 1.00 ± 0.03: blocks {sum(abs(r.blocks_speed - 1) <= 0.03 for r in done)} of {len(done)}, "
            f"flat {sum(abs(r.flat_speed - 1) <= 0.03 for r in done)} of {len(done)}. Keeping blocks makes "
            f"export take {med(r.export_ratio for r in done):.2f} times as long as a flat export (median)"
            + ": the one traced or captured graph is split by module calls, and each block instance's declarations "
            "are recovered and verified.\n"
        )
    else:
        summary = ""
    return "\n".join(lines) + "\n" + summary


def sample(models: list[ZooModel], per_library: int) -> list[ZooModel]:
    """The first ``per_library`` models of each library, in the zoo's order."""
    kept: list[ZooModel] = []
    counts: dict[str, int] = {}
    for zm in models:
        if counts.get(zm.library, 0) < per_library:
            counts[zm.library] = counts.get(zm.library, 0) + 1
            kept.append(zm)
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="model names to run")
    parser.add_argument("--fast", action="store_true", help="only the CI subset of the zoo")
    parser.add_argument("--rounds", type=int, default=30, help="timed rounds per model (default 30)")
    parser.add_argument("--sample", type=int, default=0, help="only the first N traceable models of each library")
    parser.add_argument("--dynamo", action="store_true", help="the models torch.fx cannot trace, captured by TorchDynamo")
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    models = [z for z in ZOO if (not args.fast or z.fast) and (not args.only or z.name in args.only)
              and all(importlib.util.find_spec(p) is not None for p in z.requires)]  # fmt: skip
    models = [z for z in models if needs_dynamo(z)] if args.dynamo else [z for z in models if z.traceable]
    if args.sample:
        models = sample(models, args.sample)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for zm in models:
            rows.append(measure(zm, Path(tmp), args.rounds, args.dynamo))
            print(f"{zm.name}: done", file=sys.stderr)
    text = table(rows, args.dynamo)
    print(text)
    if args.out and args.dynamo:
        header = (
            "## Blocks against flat, TorchDynamo captures\n\n"
            f"Generated by `OMP_NUM_THREADS=1 python bench/zoo_blocks.py --dynamo --rounds {args.rounds}"
            f"{f' --sample {args.sample}' if args.sample else ''} --out {args.out}` "
            f"(torch {torch.__version__}). The models torch.fx cannot trace (or traces wrongly), captured by "
            "TorchDynamo on their example inputs and exported both ways: blocks split from the one captured graph "
            "by the module calls each node ran inside (the default), and flat. Columns as in the section above.\n\n"
        )
        write_section(args.out, BLOCKS_DYNAMO, header + text)
    elif args.out:
        header = (
            "## Blocks against flat: lines and forward speed\n\n"
            f"Generated by `OMP_NUM_THREADS=1 python bench/zoo_blocks.py --rounds {args.rounds}"
            f"{f' --sample {args.sample}' if args.sample else ''} --out {args.out}` "
            f"(torch {torch.__version__}). Every model torch.fx traces is exported both ways: kept as blocks "
            "(the default) and flat (`--flat`). Lines: the generated file's non-blank lines against the non-blank "
            "source lines of every class the original instantiates that is not torch's (in parentheses: classes). "
            "Forward: the generated class holding the original's weights, against the original, median over "
            "rounds of per-round ratios (the three run in turn); outputs are checked equal first. Hugging Face "
            "models keep their classes too (read off HFTracer's trace) and run faster than the original, which "
            "checks its inputs in Python on every call.\n\n"
        )
        write_section(args.out, BLOCKS, header + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
