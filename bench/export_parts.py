"""Where ``fxgen.export`` spends its time: its steps, timed inside real exports, against ``symbolic_trace``.

    python bench/pair.py export --parts monai.FlexibleUNet[resnet10] pytorchcv.sharesnet18 [--rounds 9]

Target 4 (issue 21) is export, verification included, at most 2x torch.fx's ``symbolic_trace``;
where a model misses, the report says which step dominates. The steps are fxgen's own functions,
wrapped with timers for the measured calls only (:func:`timed_steps` patches the module globals
they are called through, and puts them back):

- ``snapshot`` and ``restore``: ``fxgen.capture.preserve.Snapshot`` recording the model's state
  before tracing and putting it back after;
- ``torch.fx tracing``: the tracer's own ``trace`` (what is left of ``capture.trace.trace``);
- ``GraphModule``: making the (lazy) GraphModule; ``lint + annotations``: ``_lint`` and
  ``resolve_annotations``; ``_fix_buffers`` and ``_declare_unread_state``;
- ``names + tied notes``: ``avoid_reserved_names`` and ``tied_notes``;
- in ``graph_module_to_spec``: ``recovery`` (``describe.recover._recover``), ``verification:
  rebuild`` (``describe.rebuild._build``, one per distinct constructor call) and ``verification:
  compare`` (the rest of ``check_rebuild``: every module against its rebuild, and the reprs),
  ``tensors`` (``to_spec._tensors``), and ``nodes and the rest``.

The default export (the model's classes kept as blocks, row 4b) is split with ``blocks=True``
into the steps the hierarchy adds, each timed exclusive of the others (:data:`BLOCK_LEAVES`):
``trace`` (all of the flat capture above, ``export.capture_graph``), ``block graphs`` (the
partition copying each block call's nodes into its own graph: ``_prepared``, ``_regions``,
``_fill``), ``block GraphModules`` (one per block instance, ``_graph_module``), ``names +
annotations``, ``proof`` (``hierarchy.verify``: the hierarchy expanded is the flat graph node
for node), ``constructors`` (each leaf module's call recovered and verified, as in the flat
export), ``block bodies`` (the rest of ``graph_module_to_spec`` per instance, ``_Writer._body``),
``classes`` (instances grouped into classes and their arguments, ``_Writer._name_classes``) and
``the rest``.

    python bench/pair.py export_blocks --parts pytorchcv.esnet_cityscapes

fxgen's export (with the timers) and the reference are called alternately, ``gc.collect()``
before each, objects alive after the warm-up frozen, as in ``bench/run.py``; each step's figure
is its median over the rounds. ``bench/run.py`` runs this for every model whose paired export
ratio misses the target.
"""

from __future__ import annotations

import functools
import gc
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's fxgen first
from measure import timed_functions

__all__ = ["BLOCK_LEAVES", "LEAVES", "breakdown", "timed_steps"]

# (label, module, attribute): the functions timed, each inclusive of what it calls
_PATCHES = (
    ("trace", "fxgen.capture.export", "trace"),
    ("snapshot", "fxgen.capture.preserve", "Snapshot.__init__"),
    ("restore", "fxgen.capture.preserve", "Snapshot.restore"),
    ("lint + annotations", "fxgen.capture.trace", "_lint"),
    ("lint + annotations", "fxgen.capture.trace", "resolve_annotations"),
    ("GraphModule", "fxgen.capture.trace", "TracedGraphModule"),
    ("_fix_buffers", "fxgen.capture.trace", "fix_buffers"),
    ("_declare_unread_state", "fxgen.capture.trace", "declare_unread_state"),
    ("names + tied notes", "fxgen.capture.export", "avoid_reserved_names"),
    ("names + tied notes", "fxgen.capture.export", "tied_notes"),
    ("graph_module_to_spec", "fxgen.capture.export", "graph_module_to_spec"),
    ("recovery", "fxgen.describe.recover", "_recover"),
    ("verification", "fxgen.describe.recover", "check_rebuild"),
    ("verification: rebuild", "fxgen.describe.rebuild", "_build"),
    ("tensors", "fxgen.describe.to_spec", "_tensors"),
)

# The steps that add up to the export (exclusive times), in the order they run.
LEAVES = ("snapshot", "torch.fx tracing", "GraphModule", "lint + annotations", "_fix_buffers",
          "_declare_unread_state", "restore", "names + tied notes", "recovery", "verification: rebuild",
          "verification: compare", "tensors", "nodes and the rest")  # fmt: skip


# The default export's steps, each exclusive of the others (``timed_functions(exclusive=True)``).
_BLOCK_PATCHES = (
    ("trace", "fxgen.capture.export", "capture_graph"),
    ("block graphs", "fxgen.capture.partition", "_Partition._prepared"),
    ("block graphs", "fxgen.capture.partition", "_Partition._regions"),
    ("block graphs", "fxgen.capture.partition", "_Partition._fill"),
    ("block GraphModules", "fxgen.capture.partition", "_Partition._graph_module"),
    ("names + annotations", "fxgen.capture.partition", "_Partition._name_inputs"),
    ("names + annotations", "fxgen.capture.partition", "_annotate"),
    ("names + annotations", "fxgen.capture.partition", "declare_reads"),
    ("proof", "fxgen.capture.partition", "verify"),
    ("constructors", "fxgen.describe.to_spec", "_recover"),
    ("constructors", "fxgen.capture.blocks", "recover_declaration"),
    ("block bodies", "fxgen.capture.blocks", "_Writer._body"),
    ("classes", "fxgen.capture.blocks", "_Writer._name_classes"),
)
BLOCK_LEAVES = ("trace", "block graphs", "block GraphModules", "names + annotations", "proof", "constructors",
                "block bodies", "classes", "the rest")  # fmt: skip


@contextmanager
def timed_steps(spent: dict[str, float], calls: dict[str, int]) -> Iterator[None]:
    """Within the block, add each export step's inclusive seconds to ``spent`` and its calls to
    ``calls`` (``measure.timed_functions`` on :data:`_PATCHES`)."""
    with timed_functions(_PATCHES, spent, calls):
        yield


def _leaves(spent: dict[str, float], total: float) -> dict[str, float]:
    """Exclusive seconds per step (:data:`LEAVES`) from the inclusive ones of one export."""
    s = spent.get
    inner_trace = sum(s(k, 0.0) for k in ("snapshot", "restore", "lint + annotations", "GraphModule", "_fix_buffers",
                                            "_declare_unread_state"))  # fmt: skip
    verification = s("verification", 0.0)
    to_spec = s("graph_module_to_spec", 0.0)
    return {
        "snapshot": s("snapshot", 0.0),
        "torch.fx tracing": s("trace", 0.0) - inner_trace,
        "GraphModule": s("GraphModule", 0.0),
        "lint + annotations": s("lint + annotations", 0.0),
        "_fix_buffers": s("_fix_buffers", 0.0),
        "_declare_unread_state": s("_declare_unread_state", 0.0),
        "restore": s("restore", 0.0),
        "names + tied notes": s("names + tied notes", 0.0) + max(0.0, total - s("trace", 0.0) - to_spec
                                                                 - s("names + tied notes", 0.0)),
        "recovery": s("recovery", 0.0),
        "verification: rebuild": s("verification: rebuild", 0.0),
        "verification: compare": verification - s("verification: rebuild", 0.0),
        "tensors": s("tensors", 0.0),
        "nodes and the rest": to_spec - s("recovery", 0.0) - verification - s("tensors", 0.0),
    }  # fmt: skip


def _block_leaves(spent: dict[str, float], total: float) -> dict[str, float]:
    """Seconds per step of the default export (:data:`BLOCK_LEAVES`), already exclusive."""
    steps = {k: spent.get(k, 0.0) for k in BLOCK_LEAVES if k != "the rest"}
    return {**steps, "the rest": max(0.0, total - sum(steps.values()))}


def breakdown(export: Callable[[], Any], reference: Callable[[], Any], *, rounds: int = 7,
              blocks: bool = False) -> dict[str, Any]:  # fmt: skip
    """Time ``export`` (with its steps) and ``reference`` alternately for ``rounds`` rounds;
    ``blocks``: ``export`` is the default export, split into :data:`BLOCK_LEAVES`.

    Returns the medians: ``export``, ``reference``, their ``ratio`` (median per round), each
    step's seconds (``steps``), the calls of each timed function in one export (``calls``), and
    the longest of the steps export adds to tracing (``dominant``)."""
    leaves, split = (BLOCK_LEAVES, _block_leaves) if blocks else (LEAVES, _leaves)
    timers = functools.partial(timed_functions, _BLOCK_PATCHES, exclusive=True) if blocks else timed_steps
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export()  # warm-up: imports, memos
    reference()
    gc.collect()
    gc.freeze()
    totals: list[float] = []
    refs: list[float] = []
    steps: dict[str, list[float]] = {k: [] for k in leaves}
    calls: dict[str, int] = {}
    try:
        for i in range(rounds):
            for which in ("export", "reference") if i % 2 == 0 else ("reference", "export"):
                gc.collect()
                if which == "reference":
                    t0 = time.perf_counter()
                    reference()
                    refs.append(time.perf_counter() - t0)
                    continue
                spent: dict[str, float] = {}
                calls = {}
                with timers(spent, calls), warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # tied-weight notes: printed once is enough
                    t0 = time.perf_counter()
                    export()
                    total = time.perf_counter() - t0
                totals.append(total)
                for key, value in split(spent, total).items():
                    steps[key].append(value)
    finally:
        gc.unfreeze()
    medians = {k: statistics.median(v) for k, v in steps.items()}
    added = {k: v for k, v in medians.items() if k not in ("torch.fx tracing", "trace")}
    return {
        "export": statistics.median(totals),
        "reference": statistics.median(refs),
        "ratio": statistics.median(t / r for t, r in zip(totals, refs, strict=True)),
        "steps": medians,
        "calls": calls,
        "dominant": max(added, key=lambda k: added[k]),  # of what export adds to torch.fx's tracing
        "rounds": rounds,
    }

