"""The classes a default export writes, per model (issue 42): kept, one per Python class, brief.

For each model, ``fxgen.export(model)`` (the default: the model's classes kept as blocks), then

* classes: the original's own classes (those of its submodules that are not torch's, its top
  class left out, and those the spec declares as themselves, leaf modules, listed apart), how many
  of them the spec keeps, the spec's classes (its top class left out) and spec classes per
  original class, also per original class (``bench/class_counts.py``);
* lines: the exported spec's (``len(spec.to_yaml().splitlines())``), and the generated Python's
  non-blank lines against the non-blank source lines of the original's classes
  (``bench/zoo_blocks.py``'s ratio);
* export time against the flat export (``flat=True``) of the same model: paired, the median of
  the per-round ratios (``measure.interleaved``);
* exactness: the original ``state_dict()`` loads strictly into ``fxgen.load(spec)``, whose
  outputs in eval mode are ``torch.equal`` to the original's at the example input.

The models are torchvision's ConvNeXt-T, DenseNet-121, EfficientNet-B0 and ViT-B/16 as
``tests/torchvision_models.py`` writes them and MobileNetV2 as ``tests/reference_models.py`` does,
every tensor random (``randomize``; no downloads), and with ``--zoo`` the zoo's entries that are
installed. ``--small`` builds the same classes at small widths and depths.

    OMP_NUM_THREADS=1 python bench/export_classes.py [--small] [--only NAME ...] [--zoo [NAME ...]]
        [--rounds 3] [--out docs/zoo.md]

``--out`` puts the table in that file between ``sections.EXPORT_CLASSES``' markers (added at the
end if missing); ``bench/zoo_report.py`` keeps the section when it rewrites the file.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's fxgen first
sys.path.insert(2, str(Path(__file__).resolve().parent.parent / "tests"))  # the reference models

import reference_models
import torchvision_models as tv
from class_counts import ClassCounts, class_counts
from measure import interleaved
from sections import EXPORT_CLASSES, write_section
from zoo_blocks import _same, code_lines, needs_dynamo, original_source
from zoo_models import ZOO
from zoo_report import ALLOW, dynamo_options, export_options

import fxgen
from fxgen.cli.export import outside_default_policy


@dataclass
class Entry:
    """A model to measure: how to build it and its example inputs, and how to export it."""

    name: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[], tuple[Any, ...]]
    options: dict[str, Any] = field(default_factory=dict)
    allow: tuple[str, ...] = ()


def _image(size: int, batch: int = 1) -> Callable[[], tuple[torch.Tensor]]:
    return lambda: (torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(0)),)


def _random(factory: Callable[[], torch.nn.Module]) -> Callable[[], torch.nn.Module]:
    return lambda: tv.randomize(factory())


def references(small: bool) -> list[Entry]:
    """The reference models, at torchvision's configurations or (``small``) small ones."""
    if small:
        built = [("ConvNeXt", tv.convnext_small_test), ("DenseNet", tv.densenet_small_test),
                 ("EfficientNet", tv.efficientnet_small_test), ("ViT", tv.vit_small_test),
                 ("MobileNetV2", lambda: reference_models.MobileNetV2(num_classes=10, width_mult=0.25))]  # fmt: skip
        return [Entry(f"{name} (small)", _random(factory), _image(32, 2)) for name, factory in built]
    built = [("ConvNeXt-T", tv.convnext_tiny), ("DenseNet-121", tv.densenet121), ("EfficientNet-B0", tv.efficientnet_b0),
             ("ViT-B/16", tv.vit_b_16), ("MobileNetV2", reference_models.MobileNetV2)]  # fmt: skip
    return [Entry(name, _random(factory), _image(224)) for name, factory in built]


def zoo_entries(names: list[str]) -> list[Entry]:
    """The zoo's entries named (all of them for none) whose libraries are installed, exported as
    ``bench/zoo_report.py`` exports them (TorchDynamo where torch.fx cannot trace one)."""
    kept = []
    for zm in ZOO:
        if (names and zm.name not in names) or any(importlib.util.find_spec(p) is None for p in zm.requires):
            continue
        options = dynamo_options(zm) if needs_dynamo(zm) else export_options(zm)
        kept.append(Entry(zm.name, zm.build, zm.inputs, options, ALLOW))
    return kept


@dataclass
class Row:
    name: str
    counts: ClassCounts = field(default_factory=ClassCounts)
    spec_lines: int = 0
    generated_lines: int = 0
    source_lines: int = 0
    export_ratio: float = float("nan")  # default export / flat export, paired median
    flat_seconds: float = float("nan")
    exact: bool = False
    problem: str = ""


def measure(entry: Entry, rounds: int) -> Row:
    """One model's row; never raises (a failure is the row's problem)."""
    row = Row(entry.name)
    try:
        torch.manual_seed(0)
        model = entry.build().eval()
        inputs = entry.inputs()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # notes on classes inlined: the counts say it
            spec = fxgen.export(model, **entry.options)
        allow = (*entry.allow, *outside_default_policy(spec))
        loaded = fxgen.load(spec, allow=allow)
        loaded.load_state_dict(model.state_dict(), strict=True)
        loaded.eval()
        with torch.no_grad():
            row.exact = _same(model(*inputs), loaded(*inputs))
        row.counts = class_counts(model, loaded, len(spec.classes))
        row.spec_lines = len(spec.to_yaml().splitlines())
        row.generated_lines = code_lines(fxgen.generate(spec, allow=allow))
        row.source_lines = original_source(model)[0]

        def export(flat: bool) -> Callable[[], Any]:
            def run() -> Any:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return fxgen.export(model, flat=flat, **entry.options)

            return run

        stats = interleaved(export(True), export(False), budget=0.0, min_rounds=rounds, max_rounds=rounds,
                            collect=True, warmup=1)  # fmt: skip
        row.export_ratio, row.flat_seconds = stats["median_ratio"], stats["a_median"]
    except Exception as exc:  # a report records every failure
        row.problem = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
    return row


HEADER = ("| model | original classes | kept | spec classes | spec classes per original class | spec lines | "
          "generated / original source lines | export time, default / flat | exact | spec classes by original class |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")  # fmt: skip


def table(rows: list[Row]) -> str:
    """The Markdown table, one row per model and the totals (ratios of the sums; export time:
    the median and the worst model)."""
    lines = [HEADER]
    for r in rows:
        c = r.counts
        if r.problem:
            lines.append(f"| {r.name} | {c.original or '-'} | | | | | | | **{r.problem.replace('|', '/')}** | |")
            continue
        lines.append(f"| {r.name} | {c.original} | {c.kept} ({100 * c.kept_share:.0f}%) | {c.spec} | "
                     f"{c.per_class:.2f} | {r.spec_lines} | {r.generated_lines} / {r.source_lines} = "
                     f"{r.generated_lines / max(r.source_lines, 1):.2f} | {r.export_ratio:.2f} "
                     f"(flat {r.flat_seconds:.2f} s) | {'yes' if r.exact else '**no**'} | {c.detail()} |")  # fmt: skip
    done = [r for r in rows if not r.problem]
    if done:
        original = sum(r.counts.original for r in done)
        kept, spec = sum(r.counts.kept for r in done), sum(r.counts.spec for r in done)
        generated, source = sum(r.generated_lines for r in done), sum(r.source_lines for r in done)
        ratios = [r.export_ratio for r in done]
        worst = max(done, key=lambda r: r.export_ratio)
        lines.append(f"| **total: {len(done)} models** | {original} | {kept} ({100 * kept / max(original, 1):.0f}%) | "
                     f"{spec} | {spec / max(original, 1):.2f} | {sum(r.spec_lines for r in done)} | "
                     f"{generated} / {source} = {generated / max(source, 1):.2f} | median "
                     f"{statistics.median(ratios):.2f}, worst {worst.export_ratio:.2f} ({worst.name}) | "
                     f"{sum(r.exact for r in done)} of {len(done)} | |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the reference models at small widths and depths")
    parser.add_argument("--only", nargs="*", default=None, help="reference model names to run (none: no references)")
    parser.add_argument("--zoo", nargs="*", default=None, help="also the zoo's entries named (none named: all installed)")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds timing export against flat (default 3)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    entries = [e for e in references(args.small) if args.only is None or e.name in args.only]
    if args.zoo is not None:
        entries += zoo_entries(args.zoo)
    rows = []
    for entry in entries:
        rows.append(measure(entry, args.rounds))
        print(f"{entry.name}: done", file=sys.stderr, flush=True)
    text = table(rows)
    print(text)
    if args.out:
        command = " ".join(["python bench/export_classes.py", *(sys.argv[1:] if argv is None else argv)])
        write_section(args.out, EXPORT_CLASSES, (
            "## The classes export writes (issue 42)\n\n"
            f"Generated by `OMP_NUM_THREADS=1 {command}` (torch {torch.__version__}). Default export of each model: "
            "the original's own classes (its top class and those declared as leaves left out), those the spec keeps, the spec's classes (its top "
            "class left out) and spec classes per original class; the spec's lines; the generated file's non-blank "
            "lines against the original classes' source; the export's time against the flat export's (paired "
            "median); exact: the original checkpoint loads strictly into `fxgen.load(spec)` and the outputs are "
            "`torch.equal` at the example in eval mode.\n\n" + text))  # fmt: skip
    return 1 if any(r.problem or not r.exact for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
