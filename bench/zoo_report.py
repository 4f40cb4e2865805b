"""Checkpoint parity on a zoo of real models: module -> export -> spec -> source -> module.

For each model in ``bench/zoo/`` (``bench/zoo_models.py`` re-exports it): trace it with its
own tracer, then check every promise of ``bench/parity.py`` -- export leaves the model as it
was, YAML -> ``load_spec`` gives the same spec, and the generated class, ``fxgen.load`` and
``fxgen.load(weights=...)`` all load the **original** model's ``state_dict()`` strictly and
give outputs equal (``torch.equal``) to those of a second instance that was never traced.
Beyond the example, three more columns: train mode (seeded, outputs and the state after one
forward), a second input shape (the entry's ``varies``: another batch size, plus another sequence
length or resolution where the model accepts one) and the call with the arguments that have
defaults left out; each exact, differs by X, error: message, or n/a with the reason.

    python bench/zoo_report.py [--only NAME ...] [--library LIB ...] [--fast] [--out docs/zoo.md]
    python bench/zoo_report.py --environment current --out docs/zoo.md

prints a table (model, nodes, traceable?, where it stopped, max abs error, the three columns) and
the pass rate per library. ``tests/test_zoo.py`` runs the ``fast`` subset through the same ``round_trip``.
``--environment`` writes only that environment's section of ``--out``: the figures per library
and installed version (``pinned``: ``bash bench/install_zoo.sh``'s versions; ``current``: the
newest releases, ``bash bench/install_zoo.sh --current DIR``), entries whose ``versions`` the
environment does not meet left out and counted.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's fxgen first

from class_counts import class_counts
from parity import (
    Exported,
    OriginalRefuses,
    ParityError,
    check_inputs,
    check_train,
    export_checked,
    required_inputs,
)
from sections import (
    BEYOND,
    BLOCKS,
    BLOCKS_DYNAMO,
    BY_HAND,
    COMPARED,
    ENVIRONMENTS,
    EXPORT_CLASSES,
    keep_sections,
    write_section,
)
from zoo import AXES, resized
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

# Models neither torch.fx nor TorchDynamo captures as one exact graph, and why (see docs/zoo.md).
_JIT_ISINSTANCE = ("TorchDynamo refuses torch.jit.isinstance (marked as skipped: it cannot be traced), which its "
                   "forward branches on; torch.fx runs it on Proxies")  # fmt: skip
DYNAMO_LIMITATIONS: dict[str, str] = {
    "monai.BasicUNet[no-leaf]": f"torch.fx traces it wrongly (see the catalogue) and {_JIT_ISINSTANCE}",
    "monai.NetAdapter[resnet10]": _JIT_ISINSTANCE,
    "monai.SwinUNETR": "TorchDynamo turns its numpy input-size check into tensors and cannot branch on the "
    "result (`if remainder.any():`, data-dependent control flow); torch.fx cannot hand the Proxy shape to numpy",
    "monai.SwinUNETR[v2]": "as monai.SwinUNETR: a data-dependent branch in _check_input_size",
    "kornia.XFeatModel": "its forward normalises the image under `torch.no_grad()` (`x.mean(...)` and an "
    "InstanceNorm2d), so the original gives the input no gradient there; a spec has no grad-mode regions, and export "
    "refuses one that would change a gradient (issue 34), naming the line",
    "pytorchcv.fractalnet_cifar10": "its forward draws with NumPy on every call, "
    "`np.random.randint(0, n, size=(int(x.size(0) * ratio),))`, which a capture with symbolic sizes records as a "
    "wrapped NumPy function no spec may name (torch.fx cannot take `int()` of a traced size); with "
    "`dynamic=False` TorchDynamo computes the draw once, as in the last full run (exact in eval mode, where the "
    "draw is unused, but a constant in train mode, where it chooses the columns to drop)",
    "monai.VoxelMorph": "TorchDynamo cannot test `'indexing' in torch.meshgrid.__kwdefaults__` (missing "
    "sq_contains) in MONAI's meshgrid_ij; torch.fx cannot branch on the shapes it compares",
}


# Failures beyond the example whose cause is known, by model: the column and why (see docs/zoo.md).
_EVAL_ONLY = ("export writes eval mode only, says so, and the spec refuses train mode with an AssertionError naming "
              "why (`... was exported in eval mode only: train mode cannot be captured (...)`), never a wrong result")  # fmt: skip
_LAYERDROP = ("LayerDrop: in train mode it skips a layer on `if torch.rand([]) < self.layerdrop:`, a branch "
              f"on a random draw that neither capture can record, so {_EVAL_ONLY}; "
              "transformers 5's OPT and XGLM test `self.layerdrop > 0.0` first, and are exact there in train mode")  # fmt: skip
_SIZE_FIXED = ("the capture fixed the size at the example's (the export's warning names the line), so the exported "
               "model refuses another with a ValueError naming the input and the dimension, never a wrong result")  # fmt: skip
_DROP_CONNECT = ("its drop_connect reads `len(inputs.shape)` in train mode only, which symbolic tracing cannot; "
                 f"{_EVAL_ONLY} (passing the example inputs, so that auto may "
                 "capture with TorchDynamo, gave the same result in one run: not investigated further)")  # fmt: skip
_HF_DECIDED = ("Hugging Face's HFTracer answers an `if` on a traced size from its own dummy inputs' sizes, so the "
               "trace holds one branch (DINOv2's `if num_patches == num_positions and height == width:` returns the "
               "position embeddings uninterpolated; Swin's `if width % self.window_size != 0:` pads or not); export "
               "keeps each such answer as a `torch._assert`, and an input taking the other branch gets its "
               "AssertionError naming the line (captured with TorchDynamo, `capture='dynamo'`, the sizes are "
               "symbolic, with the checks the capture needed)")  # fmt: skip
_REFUSED = "the model was exported for"  # the message of a spec's input checks (fxgen.spec.checks)
BEYOND_LIMITATIONS: dict[str, tuple[str, str]] = {
    "hf_decoders.OPTForCausalLM": ("train", _LAYERDROP),
    "hf_decoders.XGLMForCausalLM": ("train", _LAYERDROP),
    "transformers.MBartForConditionalGeneration": ("train", _LAYERDROP),
    "transformers.BartModel": ("train", _LAYERDROP),
    "transformers.OPTModel": ("train", _LAYERDROP),
    "transformers.OPTForCausalLM": ("train", _LAYERDROP),
    "transformers.XGLMModel": ("train", _LAYERDROP),
    "transformers.XGLMForCausalLM": ("train", _LAYERDROP),
    "vit_pytorch.ViT[decorr]": ("train", "its decorrelation loss, computed in train mode only, unpacks "
                                "`*tokens.shape[-3:]` and samples `int(seq_len * frac)` tokens, which symbolic "
                                f"tracing cannot; exported without example inputs, {_EVAL_ONLY}"),
    "vit_pytorch.ViT[patch-dropout]": ("train", "PatchDropout computes `int(n * (1 - self.prob))` from a traced size "
                                       "in train mode only, which symbolic tracing cannot; exported without example "
                                       f"inputs (as the zoo exports a model torch.fx traces), {_EVAL_ONLY}. With example inputs auto captures both modes "
                                       "with TorchDynamo: train mode is then exact, and einops fixes the batch"),
    "monai.EfficientNetBN[b0]": ("train", _DROP_CONNECT),
    "monai.EfficientNetBNFeatures[b0]": ("train", _DROP_CONNECT),
    "performer_pytorch.Performer": ("train", "its projection redraw counter branches on a buffer in train mode "
                                    "(`if self.calls_since_last_redraw >= self.feature_redraw_interval:`), which "
                                    f"TorchDynamo cannot capture; {_EVAL_ONLY}, and the "
                                    "counter the original increments stays as it was"),
    **dict.fromkeys([f"transformers.{name}" for name in ("Wav2Vec2Model", "Wav2Vec2ForCTC", "Wav2Vec2ForSequenceClassification",
                     "HubertModel")],
                    ("train", "SpecAugment's `_compute_mask_indices` draws its time masks with NumPy from the input's "
                     "sizes in train mode (`np.random.rand`, `int(...)` of a size), which symbolic tracing cannot and "
                     f"whose draws neither capture records; exported without example inputs, {_EVAL_ONLY}")),
    "monai.VQVAE": ("train", "its codebook's exponential moving average is updated under `torch.no_grad()` in train mode "
                    "(`dw = torch.mm(encodings.t(), flat_input)`), a grad-mode region no spec can write (issue 34), "
                    f"so {_EVAL_ONLY}"),
    "pytorchcv.resdropresnet20_cifar10": ("train", "ResDrop's stochastic depth draws `torch.bernoulli(...)` and scales "
                                          "by `float(b)` in train mode, a Python number of a draw that symbolic "
                                          "tracing cannot make and would freeze; exported without example inputs, "
                                          f"{_EVAL_ONLY}"),
    **dict.fromkeys(["vit_pytorch.CCT", "vit_pytorch.CCT[sine]"],
                    ("train", "its DropPath builds the mask's shape as `(batch, *((1,) * (x.ndim - 1)))` in train mode "
                     "only, unpacking a traced size, which symbolic tracing cannot; exported without example inputs, "
                     f"{_EVAL_ONLY}")),
    "kornia.CornerHarris": ("shape", f"{_SIZE_FIXED}: kornia's filter2d passes `groups=tmp_kernel.size(0)`, batch "
                            "times channels, to conv2d, which takes a number"),
    "kornia.KeyNet": ("shape", f"{_SIZE_FIXED}: its train-mode capture fixes every size, and the spec takes what "
                      "both modes assumed"),
    "monai.Quicknat": ("shape", f"{_SIZE_FIXED}: the batch, at its InstanceNorm's `F.instance_norm` call"),
}


@dataclass
class Result:
    name: str
    library: str = ""
    nodes: int | None = None
    traceable: bool = False
    exported: bool = False
    stage: str = ""  # where a parity check stopped ("" when all passed)
    capture: str = ""  # "trace" or "dynamo": how the exported graph was captured
    trace_problem: str = ""  # why torch.fx could not take it, when Dynamo captured it
    error: float | None = None
    seconds: float = 0.0
    problem: str = ""
    unmet: str = ""  # why the installed versions cannot run it (it was not run)
    # Beyond the example (see status()): train mode, a second input shape, optional arguments left out.
    train: str = ""
    shape: str = ""
    optional: str = ""
    # The classes of the default export (bench/class_counts.py), the top class left out: the
    # original's own (leaf modules left out), those the spec keeps, and the spec's.
    own_classes: int | None = None
    kept_classes: int | None = None
    spec_classes: int | None = None

    @property
    def passed(self) -> bool:
        return self.exported and not self.problem

    def beyond(self) -> dict[str, str]:
        """The three columns beyond the example, each a status (``NOT_CHECKED`` when the round
        trip on the example did not pass)."""
        return {column: getattr(self, column) or NOT_CHECKED for column in BEYOND_COLUMNS}


#: The columns beyond the example: the Result attribute and the heading.
BEYOND_COLUMNS = {"train": "train mode", "shape": "second shape", "optional": "optional args left out"}
NOT_CHECKED = "n/a: no exact round trip on the example"
KINDS = ("exact", "differs", "error", "n/a")


def kind(status: str) -> str:
    """Which of ``KINDS`` a status is: "exact", "differs by 0.3: ...", "error: ...", "n/a: ..."."""
    return next(k for k in KINDS if status.startswith(k))


def status(check: Callable[[], None], where: str = "") -> str:
    """What one check beyond the example found, as a column's text (``where``: what it changed)."""
    at = f" ({where})" if where else ""
    try:
        check()
    except OriginalRefuses as exc:
        return f"n/a{at}: the original raises {exc}"
    except ParityError as exc:
        return f"differs by {exc.error:.3g}{at}: {exc}" if exc.error is not None else f"error{at}: {exc}"
    except Exception as exc:  # a report records every failure
        return f"error{at}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return f"exact{at}"


def check_beyond(zm: ZooModel, proved: Exported, result: Result) -> None:
    """The three checks beyond the example, recorded on ``result``. The second shape is the first
    of ``zm.other_inputs()`` the original accepts (every declared axis, else the batch alone); train
    mode runs on the example, or with one more sample where the original refuses it (BatchNorm
    needs more than one value per channel in train mode: a batch of one image often has one)."""
    inputs = zm.inputs()
    result.train = status(lambda: check_train(zm.build, inputs, proved))
    if kind(result.train) == "n/a" and "batch" in zm.varies:
        result.train = status(lambda: check_train(zm.build, resized(inputs, ("batch",)), proved), "batch")
    result.shape = "n/a: the entry declares no axis that may vary"
    for axes, other in zm.other_inputs():
        result.shape = status(lambda: check_inputs(zm.build, other, proved, "second shape"), axes)  # noqa: B023
        if kind(result.shape) != "n/a":
            break
    fewer = required_inputs(zm.build(), inputs)
    result.optional = ("n/a: the example passes no argument that has a default" if fewer is None else
                       status(lambda: check_inputs(zm.build, fewer, proved, "optional arguments left out")))  # fmt: skip


def export_options(zm: ZooModel) -> dict[str, Any]:
    """How ``fxgen.export`` traces the entry: its tracer, leaves, wrapped functions, concrete args."""
    options: dict[str, Any] = {"concrete_args": zm.concrete_args, "leaf_modules": zm.leaf_module_types()}
    if zm.tracer_class is not None:
        options["tracer_class"] = zm.tracer_type()
    if zm.autowrap_functions:
        options["autowrap_functions"] = zm.autowrap_function_objects()
    return options


def dynamo_options(zm: ZooModel) -> dict[str, Any]:
    """How ``fxgen.export`` captures the entry with TorchDynamo: on its inputs, with its leaves."""
    return {"capture": "dynamo", "example_inputs": zm.inputs(), "leaf_modules": zm.leaf_module_types()}


def round_trip(zm: ZooModel, workdir: Path, *, dynamo: bool = True, beyond: bool = True) -> Result:
    """Check checkpoint parity for one model; never raises (the problem is recorded instead).
    ``beyond``: also the three checks beyond the example (``check_beyond``).

    As ``capture="auto"`` does, a model torch.fx cannot trace is captured with TorchDynamo on
    its example inputs (unless ``dynamo`` is False); so is one the survey found torch.fx traces
    wrongly (without an error, which ``auto`` cannot notice: the catalogue knows)."""
    result = Result(zm.name, zm.library)
    start = time.perf_counter()
    stem = "".join(ch if ch.isalnum() else "_" for ch in zm.name).lower()
    try:
        options = export_options(zm)
        from fxgen.capture.trace import trace

        try:
            gm = trace(zm.build(), **options)
        except fxgen.ExportError as exc:
            result.problem = f"not traceable: {exc.message}"
            return _with_dynamo(zm, workdir, stem, result, beyond) if dynamo else result
        if not zm.traceable:  # the survey found the traced graph computes something else
            result.problem = f"torch.fx traces it wrongly: {zm.note}"
            return _with_dynamo(zm, workdir, stem, result, beyond) if dynamo else result
        result.traceable = True
        result.capture = "trace"
        result.nodes = len(gm.graph.nodes)
        try:
            proved = export_checked(zm.build, zm.inputs(), workdir, allow=ALLOW, stem=stem, export_options=options)
        except ParityError as exc:
            result.exported = True
            result.stage = exc.stage
            result.problem = str(exc)
            return result
        result.exported = True
        result.error = 0.0
        count_classes(zm, proved, result)
        if beyond:
            check_beyond(zm, proved, result)
    except Exception as exc:  # a report records every failure; tests assert on the result
        result.problem = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finally:
        result.seconds = time.perf_counter() - start
    return result


def _with_dynamo(zm: ZooModel, workdir: Path, stem: str, result: Result, beyond: bool) -> Result:
    """The parity checks on the TorchDynamo capture of a model torch.fx cannot take."""
    result.trace_problem = result.problem
    try:
        proved = export_checked(zm.build, zm.inputs(), workdir, allow=ALLOW, stem=stem,
                                export_options=dynamo_options(zm))  # fmt: skip
    except ParityError as exc:
        result.capture, result.exported, result.stage = "dynamo", True, exc.stage
        result.problem = f"dynamo: {exc}"
        return result
    except fxgen.ExportError as exc:
        result.problem = f"not capturable: {exc.message}"
        return result
    except Exception as exc:
        result.problem = f"dynamo: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return result
    result.capture, result.exported, result.error, result.problem = "dynamo", True, 0.0, ""
    result.nodes = flat_nodes(fxgen.load(proved.spec, allow=ALLOW))
    count_classes(zm, proved, result)
    if beyond:
        check_beyond(zm, proved, result)
    return result


def count_classes(zm: ZooModel, proved: Exported, result: Result) -> None:
    """Record on ``result`` the original's own classes, those its export kept and the spec's classes."""
    counts = class_counts(zm.build(), fxgen.load(proved.spec, allow=proved.allow), len(proved.spec.classes))
    result.own_classes, result.kept_classes, result.spec_classes = counts.original, counts.kept, counts.spec


def _classes_cells(own: int | None, kept: int | None, spec: int | None) -> str:
    """The two class columns: classes kept / the original's own classes, spec classes per original class."""
    if own is None or kept is None or spec is None:
        return "- | -"
    if not own:
        return f"0 / 0 | {spec} / 0"
    return f"{kept} / {own} ({100 * kept / own:.0f}%) | {spec / own:.2f}"


def flat_nodes(gm: torch.fx.GraphModule) -> int:
    """The nodes of the one graph a hierarchical export stands for, as the flat capture counts
    them: each block call counted as its graph's nodes (placeholders and output left out)."""
    return sum(_called(gm.get_submodule(str(n.target))) if n.op == "call_module" else 1 for n in gm.graph.nodes)


def _called(sub: torch.nn.Module) -> int:
    if isinstance(sub, torch.fx.GraphModule):
        return flat_nodes(sub) - sum(n.op in ("placeholder", "output") for n in sub.graph.nodes)
    if type(sub) is torch.nn.Sequential:  # kept whole: its items in turn
        return sum(_called(item) for item in sub.children())
    return 1


def _mark(flag: bool) -> str:
    return "yes" if flag else "no"


def _short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def table(results: list[Result]) -> str:
    rows = ["| model | nodes | captured by | exact round trip? | classes kept / own | spec classes per own class | note |",
            "| --- | ---: | --- | --- | ---: | ---: | --- |"]  # fmt: skip
    for r in results:
        limitation = LIMITATIONS.get(r.name) or DYNAMO_LIMITATIONS.get(r.name)
        if r.passed:
            exact = "yes"
            note = f"torch.fx: {_short(r.trace_problem)}" if r.capture == "dynamo" else ""
        elif not r.capture:
            exact = "limitation" if limitation else "-"
            note = f"{limitation} ({_short(r.problem)})" if limitation else _short(r.problem, 600)
        elif limitation:
            exact, note = "limitation", limitation
        else:
            exact, note = "**no**", f"**FAIL** {r.problem}"
        rows.append(f"| {r.name} | {r.nodes if r.nodes is not None else '-'} | {r.capture or 'neither'} | {exact} | "
                    f"{_classes_cells(r.own_classes, r.kept_classes, r.spec_classes)} | "
                    f"{note.replace('|', '/').replace(chr(10), ' ')} |")  # fmt: skip
    return "\n".join(rows) + "\n"


def summary(results: list[Result]) -> str:
    """The figures at the top of docs/zoo.md: models, traceable, captured by Dynamo, exact, per library."""
    libraries = list(dict.fromkeys(r.library for r in results))
    rows = ["| library | models | traceable by torch.fx | captured by Dynamo instead | exact round trip | "
            "limitations | failures | classes kept / own | spec classes per own class |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    totals: Counter[str] = Counter()
    for library in [*libraries, None]:
        mine = [r for r in results if library is None or r.library == library]
        explained = {**LIMITATIONS, **DYNAMO_LIMITATIONS}
        counts = Counter(
            models=len(mine),
            traceable=sum(r.traceable for r in mine),
            dynamo=sum(r.capture == "dynamo" for r in mine),
            exact=sum(r.passed for r in mine),
            limitations=sum(not r.passed and r.name in explained for r in mine),
            failures=sum(bool(r.capture) and not r.passed and r.name not in explained for r in mine),
            counted=sum(r.own_classes is not None for r in mine),
            own=sum(r.own_classes or 0 for r in mine),
            kept=sum(r.kept_classes or 0 for r in mine),
            spec=sum(r.spec_classes or 0 for r in mine),
        )
        if library is None:
            counts = totals
        else:
            totals.update(counts)
        name = f"**all {len(libraries)} libraries**" if library is None else library
        rate = f" ({100 * counts['exact'] / max(counts['models'], 1):.0f}%)"
        classes = _classes_cells(counts["own"], counts["kept"], counts["spec"]) if counts["counted"] else "- | -"
        rows.append(f"| {name} | {counts['models']} | {counts['traceable']} | {counts['dynamo']} | "
                    f"{counts['exact']}{rate} | {counts['limitations']} | {counts['failures']} | {classes} |")  # fmt: skip
    return "\n".join(rows) + "\n"


_ONE_SAMPLE = ("the original cannot run train mode on its example (BatchNorm needs more than one value per channel, "
               "and a batch of one image has one after a global pooling), so neither capture can record train mode "
               f"on it: {_EVAL_ONLY}; exported on a batch of two, both modes are captured")  # fmt: skip


_RANDOM_BRANCH = ("in train mode its forward branches on a random draw (LayerDrop's `if torch.rand([]) < "
                  "self.layerdrop:`), which tracing would decide once and freeze, and TorchDynamo cannot capture: "
                  f"{_EVAL_ONLY}")  # fmt: skip


def _explained(name: str, column: str, text: str) -> str | None:
    """Why a check beyond the example failed with this error, where it is an explained limitation."""
    if BEYOND_LIMITATIONS.get(name, ("",))[0] == column:
        return BEYOND_LIMITATIONS[name][1]
    if _REFUSED in text:
        return f"{_SIZE_FIXED} (the checks at the top of its forward refused the input)"
    if "was traced with a branch at" in text:
        return _HF_DECIDED
    if column == "train" and "turns a random draw of" in text and "exported in eval mode only" in text:
        return _RANDOM_BRANCH
    if column == "train" and text.startswith("error (batch)") and "train mode cannot be captured" in text:
        return _ONE_SAMPLE
    return None


def beyond(results: list[Result], command: str) -> str:
    """The section on the three checks beyond the example: counts per library, the failures
    grouped, then each model; ``command`` is the run's."""
    libraries = list(dict.fromkeys(r.library for r in results))
    heads = " | ".join(f"{title}: exact / differs / error / n/a" for title in BEYOND_COLUMNS.values())
    rows = [f"| library | models (of the zoo's, where not all ran) | exact round trip | {heads} |", "| --- | ---: | ---: |" + " --- |" * len(BEYOND_COLUMNS)]
    for library in [*libraries, None]:
        mine = [r for r in results if library is None or r.library == library]
        cells = []
        for column in BEYOND_COLUMNS:
            counts = Counter(kind(r.beyond()[column]) for r in mine)
            cells.append(" / ".join(str(counts[k]) for k in KINDS))
        name = f"**all {len(libraries)} libraries**" if library is None else library
        entries = sum(library is None or z.library == library for z in ZOO)
        run = f"{len(mine)}" if len(mine) == entries else f"{len(mine)} of {entries}"
        rows.append(f"| {name} | {run} | {sum(r.passed for r in mine)} | {' | '.join(cells)} |")
    models = ["| model | captured by | " + " | ".join(BEYOND_COLUMNS.values()) + " |",
              "| --- | --- |" + " --- |" * len(BEYOND_COLUMNS)]  # fmt: skip
    for r in results:
        cells = [_short(text, 200).replace("|", "/").replace("\n", " ") for text in r.beyond().values()]
        models.append(f"| {r.name} | {r.capture or 'neither'} | " + " | ".join(cells) + " |")
    # A limitation is a clear error; a model that computes something else is never explained away.
    known = [(r, column, why) for r in results for column, text in r.beyond().items()
             if kind(text) == "error" and (why := _explained(r.name, column, text)) is not None]  # fmt: skip
    explained = ("Explained limitations (`BEYOND_LIMITATIONS` in `bench/zoo_report.py`, and the errors that "
                 "explain themselves):\n\n" + "".join(f"- {r.name}, {BEYOND_COLUMNS[column]}: {why}.\n"
                                                       for r, column, why in known) + "\n" if known else "")  # fmt: skip
    explained_cells = {(r.name, column) for r, column, _ in known}
    unexplained = [f"{r.name} ({BEYOND_COLUMNS[column]})" for r in results for column, text in r.beyond().items()
                   if kind(text) in ("differs", "error") and (r.name, column) not in explained_cells]  # fmt: skip
    explained += (f"**Not explained: {len(unexplained)}**" + (f" ({', '.join(unexplained)})" if unexplained else "")
                  + ": a model that differs, or fails other than with an explained limitation's error.\n\n")  # fmt: skip
    return (
        "## Beyond the example: train mode, a second input shape, optional arguments left out\n\n"
        "Each model that round-trips exactly on its example is checked three more ways, on both copies "
        "(the generated class and `fxgen.load`, the original `state_dict()` loaded strictly) against a fresh "
        "original (`bench/parity.py`'s `check_train` and `check_inputs`):\n\n"
        "- **train mode**: `.train()`, one forward seeded the same (`torch.manual_seed(0)`): the outputs are "
        "`torch.equal` and so is the `state_dict()` after it (BatchNorm's running statistics); where the original "
        "refuses train mode on its example (BatchNorm needs more than one value per channel, and a batch of one image "
        "often has one), with one more sample: `(batch)`;\n"
        "- **second shape**: in eval mode, the inputs changed along the axes the zoo entry declares (`varies`: "
        + "; ".join(f"{axis}: {rule}" for axis, rule in AXES.items())
        + "); if the original refuses that, the batch alone; the axes are in parentheses;\n"
        "- **optional args left out**: the example called without the inputs bound to parameters that have a "
        "default (the first input always stays).\n\n"
        "Each is exact, differs by the largest absolute difference, an error (the first copy that raised and "
        "its message), or n/a with the reason (no exact round trip on the example; the original itself raises; "
        "nothing to leave out). The last row counts every model.\n\n"
        f"Generated by `{command}` (torch {torch.__version__}): {len(results)} "
        + (f"of the zoo's {len(ZOO)} models (a partial run).\n\n" if len(results) < len(ZOO) else "models.\n\n")
        + "\n".join(rows) + "\n\n" + causes(results) + "\n" + explained + "\n".join(models) + "\n"
    )


def causes(results: list[Result]) -> str:
    """The failures beyond the example grouped by their message (numbers, shapes and names in quotes
    left out, and which copy failed): the most common first, with the models' count and examples."""
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        for column, text in r.beyond().items():
            if kind(text) in ("differs", "error"):
                message = text.split(": ", 1)[1]  # after "differs by 0.3 (axes)" or "error (axes)"
                message = re.sub(r"^[^:]+: (the generated class|fxgen\.load): ", "", message)
                message = re.sub(r"'[^']*'|\[[^\]]*\]|\b\d+(\.\d+)?(e-?\d+)?\b", "…", message)
                for pattern, same in ((r"\b[\w.]+\.forward\(\)", "forward()"), (r"arguments?:( … and)* …", "argument(s): …"),
                                      (r"after one forward, \S+ differs", "after one forward, a buffer differs")):  # fmt: skip
                    message = re.sub(pattern, same, message)
                groups.setdefault((BEYOND_COLUMNS[column], _short(message, 160)), []).append(r)
    rows = ["| check | failure (numbers and quoted names left out) | models | captured by trace / dynamo | for example |",
            "| --- | --- | ---: | ---: | --- |"]  # fmt: skip
    for (column, message), failed in sorted(groups.items(), key=lambda item: -len(item[1])):
        by = Counter(r.capture for r in failed)
        rows.append(f"| {column} | {message.replace('|', '/')} | {len(failed)} | {by['trace']} / {by['dynamo']} | "
                    f"{', '.join(r.name for r in failed[:3])} |")  # fmt: skip
    return "The failures grouped by message:\n\n" + "\n".join(rows) + "\n" if groups else ""


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
    parser.add_argument("--only", nargs="*", default=None, help="model names to run, in this order")
    parser.add_argument("--library", nargs="*", default=None, help="libraries to run")
    parser.add_argument("--fast", action="store_true", help="only the CI subset")
    parser.add_argument("--type-check", action="store_true",
                        help="also run mypy and ruff (default settings) over every generated file")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this Markdown file")
    parser.add_argument("--environment", choices=sorted(ENVIRONMENTS), default=None,
                        help="write only this environment's figures per library and version to --out")  # fmt: skip
    parser.add_argument("--example-only", action="store_true",
                        help="skip the checks beyond the example (train mode, second shape, optional args)")  # fmt: skip
    parser.add_argument("--json", type=Path, default=None, help="also write every result to this JSON file")
    parser.add_argument("--beyond-only", action="store_true",
                        help="with --out: write only the section beyond the example; the rest of the file stays")  # fmt: skip
    parser.add_argument("--from-json", type=Path, nargs="+", default=None,
                        help="report the results earlier runs wrote with --json (in the zoo's order) instead")  # fmt: skip
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    models = [z for z in ZOO if (not args.fast or z.fast) and (not args.only or z.name in args.only)
              and (not args.library or z.library in args.library)]  # fmt: skip
    if args.only:  # in the order given: a run split in parts can spread each part over the libraries
        models.sort(key=lambda z: args.only.index(z.name))
    results = []
    started = time.perf_counter()
    earlier = {row["name"]: Result(**row) for path in args.from_json or () for row in json.loads(path.read_text())}
    if args.from_json:
        models, results = [], [earlier[z.name] for z in ZOO if z.name in earlier]
    with tempfile.TemporaryDirectory() as tmp, Progress("checking", len(models)) as progress:
        for done, zm in enumerate(models, 1):
            progress.step(done, zm.name)  # on a terminal only: a log gets the table alone
            missing = [p for p in zm.requires if importlib.util.find_spec(p) is None]
            if missing:
                results.append(Result(zm.name, zm.library, problem=f"not installed: {', '.join(missing)}"))
                continue
            unmet = zm.unmet()
            if unmet:
                results.append(Result(zm.name, zm.library, problem=f"not run: {unmet}", unmet=unmet))
                continue
            results.append(round_trip(zm, Path(tmp), beyond=not args.example_only))
            if args.json:  # after each model: a long run stopped early keeps what it found
                args.json.write_text(json.dumps([asdict(r) for r in results], indent=1), encoding="utf-8")
        checked = type_check(Path(tmp)) if args.type_check else ""
    elapsed = sum(r.seconds for r in results) if args.from_json else time.perf_counter() - started
    if args.environment:
        command = " ".join(sys.argv[1:] if argv is None else argv)
        text = environment_section(results, args.environment, elapsed, command)
        print(text)
        if args.out:
            write_section(args.out, ENVIRONMENTS[args.environment], text)
        return 1 if unexplained(results) else 0
    given = argv if argv is not None else sys.argv[1:]  # the JSON files of earlier runs by their names alone
    command = " ".join(["python bench/zoo_report.py", *(Path(a).name if a.endswith(".json") else a for a in given)])
    section = f"{BEYOND[0]}\n{beyond(results, command)}{BEYOND[1]}\n" if any(r.train for r in results) else ""
    text = summary(results) + "\n" + checked + exercised(results) + "\n" + table(results) + "\n" + section
    print(text)
    if args.out and args.beyond_only:
        write_section(args.out, BEYOND, beyond(results, command))
    elif args.out:
        header = (
            f"# Model zoo: checkpoint parity on models written by others\n\n"
            f"Generated by `{command}` "
            f"(torch {torch.__version__}, "
            f"{len(results)} models, {elapsed / 60:.0f} minutes"
            f"{f' in {len(args.from_json)} runs with `--json`, joined with `--from-json`' if args.from_json else ''}"
            "; `bash bench/install_zoo.sh` installs the "
            "libraries). For each model: trace it (a model torch.fx cannot trace, or traces wrongly, is captured "
            "with TorchDynamo on its example inputs instead, as `capture=\"auto\"` does), export it, and check every "
            "promise of `bench/parity.py`: "
            "the model is left as it was, the YAML reads back to the same spec, and the generated class, "
            "`fxgen.load` and `fxgen.load(weights=...)` each load the **original** model's `state_dict()` "
            "strictly and give outputs `torch.equal` to a second instance that was never traced. A model "
            "neither capture takes is listed with the reason; docs/export.md says what export promises and "
            "what a capture by TorchDynamo means for other input shapes.\n\n"
        )
        # what zoo_blocks.py, zoo_compare.py, the --environment runs (and --beyond-only) wrote
        kept = (BLOCKS, BLOCKS_DYNAMO, COMPARED, EXPORT_CLASSES, *(() if section else (BEYOND,)), BY_HAND)
        keep_sections(args.out, header + text, *kept, *ENVIRONMENTS.values())
    return 1 if unexplained(results) else 0


def unexplained(results: list[Result]) -> list[Result]:
    """The models a capture took whose round trip failed for no reason the zoo lists."""
    return [r for r in results if r.capture and not r.passed and r.name not in LIMITATIONS
            and r.name not in DYNAMO_LIMITATIONS]  # fmt: skip


def installed(zm: ZooModel) -> str:
    """``distribution version`` of the library an entry is built from (its first import)."""
    from importlib.metadata import packages_distributions, version

    names = packages_distributions().get(zm.requires[0], [zm.requires[0]]) if zm.requires else []
    return " ".join(f"{name} {version(name)}" for name in dict.fromkeys(names))


#: Each environment ``--environment`` names: its title in docs/zoo.md and how it is made.
ENVIRONMENT_TITLES = {
    "pinned": ("the pinned versions", "the environment `bash bench/install_zoo.sh` installs"),
    "current": ("the current releases", "the environment `bash bench/install_zoo.sh --current DIR` makes (the newest "
                "release of each library that installs with torch 2.13.0)"),
    "last-4.x": ("transformers 4.57.6, the last 4.x", "the pinned environment with transformers 4.57.6 first on the "
                 "path (`pip install --target DIR -c constraints.txt transformers==4.57.6`, `PYTHONPATH=DIR`)"),
}  # fmt: skip


def _beyond_cells(results: list[Result]) -> str:
    """Per check beyond the example: how many were exact of those checked (not n/a), or "-" for a
    run without them (``--example-only``)."""
    cells = []
    for column in BEYOND_COLUMNS:
        kinds = [kind(r.beyond()[column]) for r in results if getattr(r, column)]
        checked = [k for k in kinds if k != "n/a"]
        cells.append(f"{checked.count('exact')} of {len(checked)}" if kinds else "-")
    return " | ".join(cells)


def environment_section(results: list[Result], environment: str, elapsed: float, command: str) -> str:
    """docs/zoo.md's section for one environment: per library, the version installed and how
    many of its models round-trip exactly; the entries it does not run, and every failure."""
    by_name = {z.name: z for z in ZOO}
    run = [r for r in results if not r.unmet]
    explained = {**LIMITATIONS, **DYNAMO_LIMITATIONS}
    title, where = ENVIRONMENT_TITLES[environment]
    rows = [f"## Libraries and versions: {title} (torch {torch.__version__})\n",
            f"`python bench/zoo_report.py {command}` ({len(run)} models run, {elapsed / 60:.0f} min), in {where}.\n",
            "| library | installed | models | captured by Dynamo | exact round trip | limitations | failures | "
            + " | ".join(f"{title}: exact of checked" for title in BEYOND_COLUMNS.values()) + " |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |" + " ---: |" * len(BEYOND_COLUMNS)]  # fmt: skip
    for library in dict.fromkeys(r.library for r in run):
        mine = [r for r in run if r.library == library]
        exact = sum(r.passed for r in mine)
        rows.append(f"| {library} | {installed(by_name[mine[0].name]) or '-'} | {len(mine)} | "
                    f"{sum(r.capture == 'dynamo' for r in mine)} | {exact} ({100 * exact / len(mine):.0f}%) | "
                    f"{sum(not r.passed and r.name in explained for r in mine)} | "
                    f"{sum(not r.passed and r.name not in explained for r in mine)} | {_beyond_cells(mine)} |")  # fmt: skip
    exact = sum(r.passed for r in run)
    rows.append(f"| **all** | | {len(run)} | {sum(r.capture == 'dynamo' for r in run)} | {exact} "
                f"({100 * exact / max(len(run), 1):.0f}%) | {sum(not r.passed and r.name in explained for r in run)} | "
                f"{sum(not r.passed and r.name not in explained for r in run)} | {_beyond_cells(run)} |")  # fmt: skip
    skipped = Counter(r.unmet.split(" (")[0] for r in results if r.unmet)
    text = "\n".join(rows) + "\n"
    if skipped:
        text += "\nNot run here: " + "; ".join(f"{n} entries ({why})" for why, n in skipped.items()) + ".\n"
    failed = [r for r in run if not r.passed]
    if failed:
        text += "\n" + "".join(f"- {r.name}: {'limitation: ' + explained[r.name] if r.name in explained else ''}"
                                f"{_short(r.problem, 300) if r.name not in explained else ''}\n"
                                for r in failed)  # fmt: skip
    return text


if __name__ == "__main__":
    sys.exit(main())
