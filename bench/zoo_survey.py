"""Survey the model zoo: does torch.fx trace each entry, and does the trace reproduce eager?

For every entry of ``bench/zoo/`` (or ``--only NAME ...`` / ``--library LIB ...``): build the
model twice (the two builds must agree: seeded factories), run it in eval mode on its
``inputs()``, trace it with the entry's tracer (``tracer_class``, ``leaf_modules``,
``autowrap_functions``, ``concrete_args``), build ``torch.fx.GraphModule(tracer.root, graph)``
and compare its outputs with the eager ones. It prints one row per entry and a summary per
library; ``traceable`` and ``note`` in the catalogue are what this finds.

    python bench/zoo_survey.py [--only NAME ...] [--library LIB ...] [--json OUT]
                               [--write-features] [--timeout S] [--threads N]

Verdicts: ``equal`` (every output ``torch.equal``), ``close`` (allclose at 1e-6 only: float
reduction order differs), ``DIFFERS`` (traces, but the GraphModule computes something else),
``no-trace`` (tracing or running the GraphModule raised), ``error`` (the eager model itself
failed), ``missing`` (a required package is not installed). ``MISMATCH`` flags a verdict that
disagrees with the catalogue's ``traceable``. ``--write-features`` stores the feature tags the
survey found (see ``zoo.FEATURES``) in ``bench/zoo/_features.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import keyword
import os
import signal
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch
import torch.fx
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from zoo import ZOO, ZooModel

FEATURES_FILE = Path(__file__).resolve().parent / "zoo" / "_features.py"
TOLERANCE = 1e-6
#: The tags the survey computes (the others are structural: see zoo._apply_features).
DETECTED = (
    "non_persistent_buffers",
    "tensor_constants",
    "plain_tensor_attributes",
    "non_identifier_keys",
    "unused_state",
)


@dataclass
class Row:
    name: str
    library: str
    recorded: bool
    verdict: str = ""
    params: int = 0
    build_s: float = 0.0
    forward_s: float = 0.0
    trace_s: float = 0.0
    nodes: int = 0
    max_diff: float = 0.0
    features: list[str] = field(default_factory=list)
    problem: str = ""

    @property
    def traceable(self) -> bool:
        return self.verdict in ("equal", "close")

    @property
    def mismatch(self) -> bool:
        return self.verdict not in ("missing", "error") and self.traceable != self.recorded


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`_Timeout` in the main thread after ``seconds`` (0: no limit)."""
    if seconds <= 0:
        yield
        return

    def _raise(signum: int, frame: Any) -> None:
        raise _Timeout(f"took longer than {seconds:g} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _where(exc: BaseException) -> str:
    """``file.py:line`` of the innermost traceback frame outside torch and this script."""
    where = ""
    for frame, line in traceback.walk_tb(exc.__traceback__):
        path = Path(frame.f_code.co_filename)
        if "torch" not in path.parts and path.name != "zoo_survey.py":
            where = f"{path.name}:{line}"
    return where


def _first_line(exc: BaseException) -> str:
    """A one-line description: type, first sentence of the message, where it was raised."""
    text = str(exc).strip().splitlines()
    message = text[0] if text else ""
    if isinstance(exc, torch.fx.proxy.TraceError) and ". " in message:
        message = message.split(". ")[0]
    where = _where(exc)
    return f"{type(exc).__name__}: {message[:200]}" + (f" ({where})" if where else "")


def flatten(out: Any) -> list[Any]:
    """The leaves of a nested output (tuples, lists, dicts, ``ModelOutput``s), in order.

    ``None`` values of mappings are skipped: a ``ModelOutput`` hides them, the plain ``dict`` a
    GraphModule returns for it may not.
    """
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [leaf for item in out for leaf in flatten(item)]
    if isinstance(out, dict):
        return [leaf for item in out.values() if item is not None for leaf in flatten(item)]
    return [out]


def compare(want: Any, got: Any) -> tuple[str, float]:
    """``("equal" | "close" | "DIFFERS", max abs difference)`` of two nested outputs."""
    a, b = flatten(want), flatten(got)
    if len(a) != len(b):
        return "DIFFERS", float("inf")
    verdict, worst = "equal", 0.0
    for x, y in zip(a, b, strict=True):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return "DIFFERS", float("inf")
        if not isinstance(x, torch.Tensor):
            if x != y:
                return "DIFFERS", float("inf")
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return "DIFFERS", float("inf")
        if torch.equal(x, y) or (
            x.is_floating_point() and torch.allclose(x, y, rtol=0, atol=0, equal_nan=True)
        ):
            continue
        diff = (x.double() - y.double()).abs().nan_to_num(nan=float("inf")).max().item()
        worst = max(worst, diff)
        if x.is_floating_point() and torch.allclose(x, y, rtol=TOLERANCE, atol=TOLERANCE):
            verdict = "close"
        else:
            return "DIFFERS", worst
    return verdict, worst


def _same_state(a: nn.Module, b: nn.Module) -> str:
    """ "" if two builds agree on every parameter and buffer (persistent or not)."""
    sa = dict(a.named_parameters(remove_duplicate=False))
    sa.update(a.named_buffers(remove_duplicate=False))
    sb = dict(b.named_parameters(remove_duplicate=False))
    sb.update(b.named_buffers(remove_duplicate=False))
    if sa.keys() != sb.keys():
        return "two builds have different state keys"
    for k, v in sa.items():
        w = sb[k]
        if (v is None) != (w is None) or (v is not None and not torch.equal(v, w)):
            return f"two builds differ in {k}: seed the factory"
    return ""


def _bad_segment(segment: str) -> bool:
    return (
        bool(segment)
        and not segment.isdigit()
        and (not segment.isidentifier() or keyword.iskeyword(segment))
    )


def detect_features(model: nn.Module, gm: torch.fx.GraphModule | None) -> set[str]:
    """The :data:`DETECTED` tags of a built model and (if it traced) its traced graph.

    ``model`` must be the tracer's root: torch.fx stores its ``_tensor_constantN`` there.
    """
    tags: set[str] = set()
    for m in model.modules():
        if any(m._buffers.get(n) is not None for n in m._non_persistent_buffers_set):
            tags.add("non_persistent_buffers")
    paths = [n for n, _ in model.named_modules(remove_duplicate=False)]
    paths += [n for n, _ in model.named_parameters(remove_duplicate=False)]
    paths += [n for n, _ in model.named_buffers(remove_duplicate=False)]
    if any(_bad_segment(s) for p in paths for s in p.split(".")):
        tags.add("non_identifier_keys")
    if gm is None:
        return tags
    prefixes: set[str] = set()
    read: set[int] = set()
    for node in gm.graph.nodes:
        if node.op not in ("get_attr", "call_module"):
            continue
        target = str(node.target)
        prefixes.add(target)
        owner_path, _, attr = target.rpartition(".")
        if node.op == "call_module":
            sub = model.get_submodule(target)
            read.update(id(t) for t in sub.state_dict(keep_vars=True).values())
            continue
        try:
            owner = model.get_submodule(owner_path)
        except AttributeError:
            continue
        value = getattr(owner, attr, None)
        if not isinstance(value, torch.Tensor):
            continue
        read.add(id(value))
        if attr in owner._parameters or attr in owner._buffers:
            continue
        tags.add(
            "tensor_constants" if attr.startswith("_tensor_constant") else "plain_tensor_attributes"
        )
    for key, value in model.state_dict(keep_vars=True).items():
        if id(value) in read or any(key.startswith(p + ".") for p in prefixes):
            continue
        tags.add("unused_state")
        break
    return tags


def _hf_concrete_args_problem(zm: ZooModel, model: nn.Module, n_inputs: int) -> str:
    """ "" if ``zm.concrete_args`` is what ``transformers.utils.fx.symbolic_trace`` would use."""
    import inspect

    from transformers.utils.fx import get_concrete_args

    names = [p for p in inspect.signature(model.forward).parameters][:n_inputs]
    if get_concrete_args(model, names) != zm.concrete_args:
        return f"concrete_args differ from get_concrete_args(model, {names})"
    return ""


def survey(zm: ZooModel, timeout: float = 120.0) -> Row:
    """Run the check on one entry; never raises (the problem is recorded instead)."""
    row = Row(zm.name, zm.library, zm.traceable)
    missing = [p for p in zm.requires if importlib.util.find_spec(p) is None]
    if missing:
        row.verdict, row.problem = "missing", f"not installed: {', '.join(missing)}"
        return row
    try:
        with _deadline(timeout):
            start = time.perf_counter()
            model = zm.factory().eval()
            row.build_s = time.perf_counter() - start
            row.params = sum(p.numel() for p in model.parameters())
            row.problem = _same_state(model, zm.factory().eval())
            inputs = zm.inputs()
            if zm.library == "transformers":
                row.problem = row.problem or _hf_concrete_args_problem(zm, model, len(inputs))
            start = time.perf_counter()
            torch.manual_seed(0)  # the same RNG state for both runs: some models sample in eval
            with torch.no_grad():
                want = model(*inputs)
            row.forward_s = time.perf_counter() - start
    except Exception as exc:
        row.verdict, row.problem = "error", _first_line(exc)
        return row
    gm: torch.fx.GraphModule | None = None
    try:
        with _deadline(timeout):
            start = time.perf_counter()
            gm = zm.trace(model)
            row.trace_s = time.perf_counter() - start
            row.nodes = len(gm.graph.nodes)
            torch.manual_seed(0)
            with torch.no_grad():
                got = gm(*zm.inputs())
        row.verdict, row.max_diff = compare(want, got)
    except Exception as exc:
        row.verdict = "no-trace"
        row.problem = row.problem or _first_line(exc)
    try:
        row.features = sorted(detect_features(model, gm if row.traceable else None))
    except Exception as exc:
        row.problem = row.problem or f"feature detection: {_first_line(exc)}"
    return row


def _table(rows: list[Row]) -> str:
    out = [
        f"{'model':52s} {'params':>9s} {'build':>6s} {'fwd':>6s} {'trace':>6s} {'nodes':>5s}  "
        f"{'verdict':9s} problem / features"
    ]
    for r in rows:
        flag = " MISMATCH" if r.mismatch else ""
        extra = r.problem or ",".join(r.features)
        if r.verdict in ("close", "DIFFERS"):
            extra = f"max diff {r.max_diff:.1e}; {extra}"
        out.append(
            f"{r.name[:52]:52s} {r.params:9d} {r.build_s:6.2f} {r.forward_s:6.3f} "
            f"{r.trace_s:6.2f} {r.nodes:5d}  {r.verdict:9s}{flag} {extra}"
        )
    return "\n".join(out)


def _summary(rows: list[Row]) -> str:
    libraries = sorted(
        {r.library for r in rows}, key=lambda lib: [r.library for r in rows].index(lib)
    )
    out = [f"{'library':22s} {'entries':>7s} {'traceable':>9s} {'recorded':>8s} {'mismatch':>8s}"]
    for lib in [*libraries, "TOTAL"]:
        sel = [r for r in rows if lib in (r.library, "TOTAL")]
        out.append(
            f"{lib:22s} {len(sel):7d} {sum(r.traceable for r in sel):9d} "
            f"{sum(r.recorded for r in sel):8d} {sum(r.mismatch for r in sel):8d}"
        )
    return "\n".join(out)


def write_features(rows: list[Row], path: Path = FEATURES_FILE) -> None:
    """Store the detected tags of ``rows`` in ``_features.py``, keeping the other entries'."""
    namespace: dict[str, Any] = {}
    if path.exists():
        exec(path.read_text(), namespace)
    found: dict[str, frozenset[str]] = dict(namespace.get("FOUND", {}))
    for r in rows:
        if r.verdict in ("missing", "error"):
            continue
        tags = frozenset(t for t in r.features if t in DETECTED)
        if tags:
            found[r.name] = tags
        else:
            found.pop(r.name, None)
    order = {zm.name: i for i, zm in enumerate(ZOO)}
    found = {name: tags for name, tags in found.items() if name in order}  # drop removed entries
    lines = [
        '"""Feature tags found by ``python bench/zoo_survey.py --write-features``.',
        "",
        "Generated: do not edit by hand (add hand-made tags to the entry's ``features``).",
        '"""',
        "",
        "# fmt: off",
        "FOUND: dict[str, frozenset[str]] = {",
    ]
    for name in sorted(found, key=lambda n: (order.get(n, len(order)), n)):
        tags = ", ".join(f'"{t}"' for t in sorted(found[name]))
        lines.append(f"    {json.dumps(name)}: frozenset({{{tags}}}),")
    lines += ["}", "# fmt: on"]
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="entry names to survey")
    parser.add_argument("--library", nargs="*", default=None, help="libraries to survey")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    parser.add_argument("--write-features", action="store_true", help="update zoo/_features.py")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per stage")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: on a 2-core machine shared with another job, "
        "OpenMP's spinning workers make a 2-thread forward up to 60x slower)",
    )
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    models = [
        z
        for z in ZOO
        if (not args.only or z.name in args.only)
        and (not args.library or z.library in args.library)
    ]
    if args.only and len(models) != len(set(args.only)):
        unknown = sorted(set(args.only) - {z.name for z in models})
        parser.error(f"unknown entries: {unknown}")
    rows = []
    start = time.perf_counter()
    for zm in models:
        t = time.perf_counter()
        row = survey(zm, args.timeout)
        rows.append(row)
        print(
            f"{row.name:52s} {row.verdict:9s}{' MISMATCH' if row.mismatch else ''} "
            f"{time.perf_counter() - t:6.2f}s {row.problem}",
            file=sys.stderr,
            flush=True,
        )
    elapsed = time.perf_counter() - start
    print(_table(rows))
    print()
    print(_summary(rows))
    print(f"\n{len(rows)} entries surveyed in {elapsed:.0f} s")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    if args.write_features:
        write_features(rows)
    return 1 if any(r.mismatch for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
