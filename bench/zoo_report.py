"""Round trip 2 on a zoo of real models: module -> export -> spec -> source -> module.

For each model in ``bench/zoo_models.py``: trace and export it, write the spec as YAML and the
weights as safetensors, read the spec back (``load_spec``), generate the source, import it as a
user would, ``load_state_dict`` (strict) the exported weights and compare outputs with the
original module in eval mode.

    python bench/zoo_report.py [--only NAME ...] [--fast] [--out docs/zoo.md]

prints a table (model, nodes, traceable?, exported?, generated?, max abs error) and the pass
rate. ``tests/test_zoo.py`` runs the ``fast`` subset through the same ``round_trip``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from zoo_models import ZOO, ZooModel

import fxgen

# The zoo's packages are trusted here: the report allows them explicitly, as a user would.
ALLOW = ("monai", "einops", "efficientnet_pytorch", "rtdl_revisiting_models", "mlp_mixer_pytorch")
TOLERANCE = 1e-5

# Models torch.fx traces but fxgen cannot express, and why (see docs/zoo.md).
LIMITATIONS = {
    "monai.BasicUNet[no-leaf]": "torch.fx traces it without an error but wrongly: UpCat's "
    "torch.jit.isinstance check is False on a Proxy, so the skip connections vanish from the graph; "
    "with UpCat as a leaf module (monai.BasicUNet above) it round-trips exactly",
    "monai.AHNet": "its leaf block Bottleneck3x3x1 takes an nn.Sequential constructor argument; "
    "spec values cannot hold modules",
    "monai.DiNTS": "its ModuleDict keys are strings like '(0, 0)', which are not spec attribute paths",
}


@dataclass
class Result:
    name: str
    nodes: int | None = None
    traceable: bool = False
    exported: bool = False
    generated: bool = False
    error: float | None = None
    seconds: float = 0.0
    problem: str = ""

    @property
    def passed(self) -> bool:
        return self.error is not None and self.error <= TOLERANCE


def _leaves(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for item in out for t in _leaves(item)]
    if isinstance(out, dict):
        return [t for item in out.values() for t in _leaves(item)]
    return []


def _import(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def round_trip(zm: ZooModel, workdir: Path) -> Result:
    """Run round trip 2 for one model; never raises (the problem is recorded instead)."""
    result = Result(zm.name)
    start = time.perf_counter()
    try:
        model = zm.build()
        options: dict[str, Any] = {"concrete_args": zm.concrete_args, "leaf_modules": zm.leaf_module_types()}
        from fxgen._export import trace

        try:
            gm = trace(model, **options)
        except fxgen.ExportError as exc:
            result.problem = f"not traceable: {exc.message}"
            return result
        result.traceable = True
        spec = fxgen.export(gm, name=type(model).__name__)
        result.exported = True
        result.nodes = len(spec.nodes)
        stem = "".join(ch if ch.isalnum() else "_" for ch in zm.name).lower()
        spec_path, weights_path = workdir / f"{stem}.yaml", workdir / f"{stem}.safetensors"
        spec.to_file(spec_path)
        fxgen.save_weights(gm, weights_path)
        reloaded = fxgen.load_spec(spec_path, allow=ALLOW)
        if reloaded != spec:
            raise AssertionError("export -> YAML -> load_spec changed the spec")
        source_path = workdir / f"{stem}.py"
        source_path.write_text(fxgen.generate(reloaded, allow=ALLOW))
        result.generated = True
        generated = getattr(_import(source_path, f"zoo_{stem}"), spec.name)().eval()
        from safetensors.torch import load_file

        generated.load_state_dict(load_file(str(weights_path)), strict=True)
        inputs = zm.inputs()
        with torch.no_grad():
            want, got = model(*inputs), generated(*inputs)
        pairs = list(zip(_leaves(want), _leaves(got), strict=True))
        result.error = max(((a.double() - b.double()).abs().max().item() for a, b in pairs), default=0.0)
    except Exception as exc:  # a report records every failure; tests assert on the result
        result.problem = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finally:
        result.seconds = time.perf_counter() - start
    return result


def _mark(flag: bool) -> str:
    return "yes" if flag else "no"


def table(results: list[Result]) -> str:
    rows = ["| model | nodes | traceable? | exported? | generated? | max abs error | note |",
            "| --- | ---: | --- | --- | --- | ---: | --- |"]  # fmt: skip
    for r in results:
        error = f"{r.error:.1e}" if r.error is not None else "-"
        note = LIMITATIONS.get(r.name, "") if not r.passed and r.traceable else r.problem
        if r.traceable and not r.passed and r.name not in LIMITATIONS:
            note = f"**FAIL** {r.problem}"
        rows.append(f"| {r.name} | {r.nodes if r.nodes is not None else '-'} | {_mark(r.traceable)} | "
                    f"{_mark(r.exported)} | {_mark(r.generated)} | {error} | {note.replace('|', '/')} |")  # fmt: skip
    traceable = [r for r in results if r.traceable]
    passed = [r for r in traceable if r.passed]
    rows.append("")
    rows.append(f"Round trip 2 passes for {len(passed)} of {len(traceable)} traceable models "
                f"({100 * len(passed) / max(len(traceable), 1):.0f}%); {len(results)} models in all.")  # fmt: skip
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="model names to run")
    parser.add_argument("--fast", action="store_true", help="only the CI subset")
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    models = [z for z in ZOO if (not args.fast or z.fast) and (not args.only or z.name in args.only)]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for zm in models:
            missing = [p for p in zm.requires if importlib.util.find_spec(p) is None]
            if missing:
                results.append(Result(zm.name, problem=f"not installed: {', '.join(missing)}"))
                continue
            r = round_trip(zm, Path(tmp))
            results.append(r)
            print(f"{r.name:45s} {'ok  ' if r.passed else 'FAIL' if r.traceable else '--  '} "
                  f"{r.seconds:6.2f}s {r.problem}", file=sys.stderr, flush=True)  # fmt: skip
    text = table(results)
    print(text)
    if args.out:
        header = (f"# Model zoo round trip\n\nGenerated by `python bench/zoo_report.py --out {args.out}` "
                  f"(torch {torch.__version__}). {__doc__.split(chr(10))[2].strip()}\n\n")  # fmt: skip
        args.out.write_text(header + text)
    unexplained = [r for r in results if r.traceable and not r.passed and r.name not in LIMITATIONS]
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
