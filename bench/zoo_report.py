"""Checkpoint parity on a zoo of real models: module -> export -> spec -> source -> module.

For each model in ``bench/zoo/`` (``bench/zoo_models.py`` re-exports it): trace it with its
own tracer, then check every promise of ``bench/parity.py`` -- export leaves the model as it
was, YAML -> ``load_spec`` gives the same spec, and the generated class, ``fxgen.load`` and
``fxgen.load(weights=...)`` all load the **original** model's ``state_dict()`` strictly and
give outputs equal (``torch.equal``) to those of a second instance that was never traced.

    python bench/zoo_report.py [--only NAME ...] [--library LIB ...] [--fast] [--out docs/zoo.md]

prints a table (model, nodes, traceable?, where it stopped, max abs error) and the pass rate per
library. ``tests/test_zoo.py`` runs the ``fast`` subset through the same ``round_trip``.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parity import ParityError, check_parity
from zoo_models import FEATURES, ZOO, ZooModel

import fxgen
from fxgen.cli.progress import Progress

# The zoo's packages are trusted here: the report allows them explicitly, as a user would.
ALLOW = ("monai", "einops", "efficientnet_pytorch", "rtdl_revisiting_models", "mlp_mixer_pytorch", "transformers",
         "pytorchcv", "vit_pytorch", "x_transformers", "kornia", "perceiver_pytorch", "linformer",
         "performer_pytorch", "g_mlp_pytorch", "res_mlp_pytorch", "nystrom_attention", "conformer",
         "lambda_networks", "hyper_connections")  # fmt: skip

# Models torch.fx traces but fxgen cannot express, and why (see docs/zoo.md). None left: monai.AHNet
# and vit_pytorch.SimpleViT[specialized-cls], whose leaf blocks take modules as constructor
# arguments, export with format 2's module values.
LIMITATIONS: dict[str, str] = {}


@dataclass
class Result:
    name: str
    library: str = ""
    nodes: int | None = None
    traceable: bool = False
    exported: bool = False
    stage: str = ""  # where a parity check stopped ("" when all passed)
    error: float | None = None
    seconds: float = 0.0
    problem: str = ""

    @property
    def passed(self) -> bool:
        return self.exported and not self.problem


def export_options(zm: ZooModel) -> dict[str, Any]:
    """How ``fxgen.export`` traces the entry: its tracer, leaves, wrapped functions, concrete args."""
    options: dict[str, Any] = {"concrete_args": zm.concrete_args, "leaf_modules": zm.leaf_module_types()}
    if zm.tracer_class is not None:
        options["tracer_class"] = zm.tracer_type()
    if zm.autowrap_functions:
        options["autowrap_functions"] = zm.autowrap_function_objects()
    return options


def round_trip(zm: ZooModel, workdir: Path) -> Result:
    """Check checkpoint parity for one model; never raises (the problem is recorded instead)."""
    result = Result(zm.name, zm.library)
    start = time.perf_counter()
    try:
        options = export_options(zm)
        from fxgen.capture.trace import trace

        try:
            gm = trace(zm.build(), **options)
        except fxgen.ExportError as exc:
            result.problem = f"not traceable: {exc.message}"
            return result
        if not zm.traceable:  # the survey found the traced graph computes something else
            result.problem = f"torch.fx traces it wrongly: {zm.note}"
            return result
        result.traceable = True
        result.nodes = len(gm.graph.nodes)
        stem = "".join(ch if ch.isalnum() else "_" for ch in zm.name).lower()
        try:
            check_parity(zm.build, zm.inputs(), workdir, allow=ALLOW, stem=stem, export_options=options)
        except ParityError as exc:
            result.exported = True
            result.stage = exc.stage
            result.problem = str(exc)
            return result
        result.exported = True
        result.error = 0.0
    except Exception as exc:  # a report records every failure; tests assert on the result
        result.problem = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finally:
        result.seconds = time.perf_counter() - start
    return result


def _mark(flag: bool) -> str:
    return "yes" if flag else "no"


def table(results: list[Result]) -> str:
    rows = ["| model | nodes | traceable? | exact round trip? | note |",
            "| --- | ---: | --- | --- | --- |"]  # fmt: skip
    for r in results:
        if r.passed:
            exact, note = "yes", ""
        elif not r.traceable:
            exact, note = "-", r.problem
        elif r.name in LIMITATIONS:
            exact, note = "limitation", LIMITATIONS[r.name]
        else:
            exact, note = "**no**", f"**FAIL** {r.problem}"
        rows.append(f"| {r.name} | {r.nodes if r.nodes is not None else '-'} | {_mark(r.traceable)} | {exact} | "
                    f"{note.replace('|', '/').replace(chr(10), ' ')} |")  # fmt: skip
    return "\n".join(rows) + "\n"


def summary(results: list[Result]) -> str:
    """The figures at the top of docs/zoo.md: models, traceable, exact, per library."""
    libraries = list(dict.fromkeys(r.library for r in results))
    rows = ["| library | models | traceable by torch.fx | exact round trip | limitations | failures |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    totals: Counter[str] = Counter()
    for library in [*libraries, None]:
        mine = [r for r in results if library is None or r.library == library]
        counts = Counter(
            models=len(mine),
            traceable=sum(r.traceable for r in mine),
            exact=sum(r.passed for r in mine),
            limitations=sum(r.traceable and not r.passed and r.name in LIMITATIONS for r in mine),
            failures=sum(r.traceable and not r.passed and r.name not in LIMITATIONS for r in mine),
        )
        if library is None:
            counts = totals
        else:
            totals.update(counts)
        name = f"**all {len(libraries)} libraries**" if library is None else library
        rate = f" ({100 * counts['exact'] / max(counts['traceable'], 1):.0f}%)"
        rows.append(f"| {name} | {counts['models']} | {counts['traceable']} | {counts['exact']}{rate} | "
                    f"{counts['limitations']} | {counts['failures']} |")  # fmt: skip
    return "\n".join(rows) + "\n"


def exercised(results: list[Result]) -> str:
    """How many exactly round-tripping models exercise each class of model export once got wrong."""
    by_name = {z.name: z for z in ZOO}
    rows = ["| what a model has | exact round trips among them |", "| --- | ---: |"]
    for tag in ("non_persistent_buffers", "tensor_constants", "plain_tensor_attributes", "non_identifier_keys",
                "unused_state", "huggingface"):  # fmt: skip
        having = [r for r in results if r.traceable and tag in by_name[r.name].features]
        rows.append(f"| {FEATURES[tag]} | {sum(r.passed for r in having)} of {len(having)} |")
    return "\n".join(rows) + "\n"


def type_check(workdir: Path) -> str:
    """mypy and ``ruff check`` with their default settings over the generated files in
    ``workdir``, as a person reading them would run the tools: a paragraph for the report."""
    files = sorted(str(p) for p in workdir.glob("*.py"))
    if not files:
        return ""
    ruff = subprocess.run(["ruff", "check", "--isolated", "--output-format", "concise", *files],
                          capture_output=True, text=True)  # fmt: skip
    mypy = subprocess.run([sys.executable, "-m", "mypy", "--config-file=", "--no-incremental", *files],
                          capture_output=True, text=True)  # fmt: skip
    problems = [line for line in (ruff.stdout + mypy.stdout).splitlines()
                if line.startswith(str(workdir)) and ": note: " not in line]  # fmt: skip
    shown = "".join(f"    {line.removeprefix(str(workdir) + '/')}\n" for line in problems[:40])
    return (f"Type check of the {len(files)} generated files (`--type-check`: `mypy` and `ruff check`, "
            f"default settings): {len(problems)} problems.\n\n" + (f"```\n{shown}```\n\n" if shown else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="model names to run")
    parser.add_argument("--library", nargs="*", default=None, help="libraries to run")
    parser.add_argument("--fast", action="store_true", help="only the CI subset")
    parser.add_argument("--type-check", action="store_true",
                        help="also run mypy and ruff (default settings) over every generated file")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    models = [z for z in ZOO if (not args.fast or z.fast) and (not args.only or z.name in args.only)
              and (not args.library or z.library in args.library)]  # fmt: skip
    results = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, Progress("checking", len(models)) as progress:
        for done, zm in enumerate(models, 1):
            progress.step(done, zm.name)  # on a terminal only: a log gets the table alone
            missing = [p for p in zm.requires if importlib.util.find_spec(p) is None]
            if missing:
                results.append(Result(zm.name, zm.library, problem=f"not installed: {', '.join(missing)}"))
                continue
            results.append(round_trip(zm, Path(tmp)))
        checked = type_check(Path(tmp)) if args.type_check else ""
    elapsed = time.perf_counter() - started
    text = summary(results) + "\n" + checked + exercised(results) + "\n" + table(results)
    print(text)
    if args.out:
        header = (
            f"# Model zoo: checkpoint parity on models written by others\n\n"
            f"Generated by `python bench/zoo_report.py --out {args.out}` (torch {torch.__version__}, "
            f"{len(results)} models, {elapsed / 60:.0f} minutes; `bash bench/install_zoo.sh` installs the "
            "libraries). For each model: trace it, export it, and check every promise of `bench/parity.py`: "
            "the model is left as it was, the YAML reads back to the same spec, and the generated class, "
            "`fxgen.load` and `fxgen.load(weights=...)` each load the **original** model's `state_dict()` "
            "strictly and give outputs `torch.equal` to a second instance that was never traced. A model "
            "torch.fx cannot trace, or traces wrongly, is listed with the reason; docs/export.md says what "
            "export promises.\n\n"
        )
        kept = ""  # the section bench/zoo_blocks.py writes into the same file stays
        if args.out.exists():
            from zoo_blocks import SECTION_END, SECTION_START

            old = args.out.read_text()
            start, end = old.find(SECTION_START), old.find(SECTION_END)
            if 0 <= start < end:
                kept = "\n" + old[start : end + len(SECTION_END)] + "\n"
        args.out.write_text(header + text + kept)
    unexplained = [r for r in results if r.traceable and not r.passed and r.name not in LIMITATIONS]
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
