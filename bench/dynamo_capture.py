"""Capture time of fxgen's TorchDynamo frontend against torch.compile's own capture.

For each model (zoo entries; ``--only NAME ...``), in the same process, alternating, ``--repeat``
times each (median reported):

- ``torch.compile``: ``torch.compile(model, backend=<returns gm.forward>, fullgraph=True,
  dynamic=False)(*inputs)`` after ``torch.compiler.reset()``: Dynamo's capture with a backend
  that does nothing, and one run of the captured graph;
- ``capture``: fxgen's ``capture_graph(model, capture="dynamo", ...)``: the same compile and run,
  plus lifting the graph (real attribute paths, folded torch.nn calls, the output's structure)
  and the check that the lifted graph gives Dynamo's outputs bit for bit;
- ``export``: all of ``fxgen.export(model, capture="dynamo", ...)``: the capture, then recovering
  and verifying every module's constructor call and declaring every tensor.

    OMP_NUM_THREADS=1 python bench/dynamo_capture.py [--only NAME ...] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from zoo_models import ZOO
from zoo_report import dynamo_options

import fxgen
from fxgen.capture.export import capture_graph

DEFAULT = ("monai.SegResNetDS", "monai.HighResNet", "monai.DiffusionModelUNet", "monai.SwinUNETR",
           "hf_decoders.GPT2LMHeadModel", "hf_decoders.LlamaForCausalLM", "hf_decoders.Gemma2ForCausalLM")  # fmt: skip


def _compile_only(model: torch.nn.Module, inputs: tuple[Any, ...]) -> None:
    torch.compiler.reset()
    compiled = torch.compile(model, backend=lambda gm, example: gm.forward, fullgraph=True, dynamic=False)
    with torch.no_grad():
        compiled(*inputs)
    torch.compiler.reset()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=list(DEFAULT))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), median of {args.repeat}\n")
    print("| model | torch.compile, do-nothing backend (s) | fxgen capture (s) | ratio | fxgen.export (s) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for zm in [z for z in ZOO if z.name in args.only]:
        model = zm.build()
        options = dynamo_options(zm)
        times: dict[str, list[float]] = {"compile": [], "capture": [], "export": []}
        try:
            for _ in range(args.repeat):
                start = time.perf_counter()
                _compile_only(model, zm.inputs())
                times["compile"].append(time.perf_counter() - start)
                start = time.perf_counter()
                capture_graph(model, **options)
                times["capture"].append(time.perf_counter() - start)
                start = time.perf_counter()
                fxgen.export(model, **options)
                times["export"].append(time.perf_counter() - start)
        except Exception as exc:  # a model Dynamo cannot capture: say so, go on
            print(f"| {zm.name} | {type(exc).__name__} | - | - | - |")
            continue
        compile_s, capture_s, export_s = (statistics.median(times[k]) for k in ("compile", "capture", "export"))
        print(f"| {zm.name} | {compile_s:.2f} | {capture_s:.2f} | {capture_s / compile_s:.2f} | {export_s:.2f} |",
              flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
