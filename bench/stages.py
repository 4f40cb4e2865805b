"""The stages and references benchmarked on one workload, run inside a worker process.

A workload is a spec file (synthetic, an example from ``model_specs/``, or a zoo model exported
by fxgen). Each stage is timed with :func:`measure.measure` and reported as one JSON line the
moment it finishes, so a worker killed by the parent's timeout loses only the stage it was in.

fxgen stages                     reference on the same graph
-------------------------------  ------------------------------------------------------------
read_validate  fxgen.load_spec   fx_direct       Graph.create_node per node + GraphModule
load           fxgen.load(spec)                  (same modules/parameters constructed)
read_validate+load  fxgen.load(path)             (the target-1 figure: one call, as users make it)
                                 fx_graph        the torch.fx Graph alone (create_node per node):
                                                 what any load returning a GraphModule must do
generate       fxgen.generate    python_code     Graph.python_code(root_module="self")
  render         all but black   black_file      black.format_str(whole generated file)
  format         black calls
export_trace   fxgen trace       symbolic_trace  torch.fx symbolic tracing (+ GraphModule)
export_spec    GraphModule->Spec
export         both
export_blocks  fxgen.export      symbolic_trace  the default export: the model's classes kept as blocks
                                 torch_export_unflatten  its peer (zoo): ``torch.export.export`` on
                                                 the example inputs + ``torch.export.unflatten``
load_weights   fxgen.load(spec,  ref_meta_assign (a) the generated class built on meta,
               weights=path)                     load_state_dict(load_file(path), assign=True)
                                 ref_init_load   (b) the generated class built normally,
                                                 load_state_dict(load_file(path))
                                 safetensors     safetensors.torch.load_file alone (maps the file)
                                 ref_export_load torch.export.load(pt2).module(): the peer that
                                                 loads a graph and its weights from a file
forward        generated class   (original)      interleaved, eval mode, no_grad

The six target pairs (``TARGETS``: load, generate, export flat and with blocks, and weights
against (a) and (b))
are also timed *alternately* (``measure.interleaved``) at the end of a workload, when the
configuration gives them a ``pair_budget``: one record per pair, stage ``paired:<fxgen stage>``
(``paired:<fxgen stage>@<reference>`` for a second reference of the same stage, see
:func:`paired_stage`), whose ``extra["median_ratio"]`` (the median of per-round fxgen / reference
ratios) survives a noisy machine better than the ratio of the two sequential medians. Where the
export pair misses its target, ``bench/export_parts.py`` then splits the export into its steps
(stage ``export_parts``). ``bench/pair.py`` builds the same pairs (:func:`load_pair` and its
siblings) for one workload at a time. The references (a) and (b) load the class
``fxgen.generate`` makes of the spec, imported from a file as a user would.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import json
import os
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import torch
import torch.fx
from measure import Result, StageTimeout, interleaved, measure, time_limit  # type: ignore[import-not-found]

import fxgen
from fxgen.construct.modules import set_attr_path
from fxgen.policy.policy import policy_for
from fxgen.spec.model import NO_DEFAULT

__all__ = ["EXPORT_TARGET", "TARGETS", "Pair", "Workload", "export_pair", "generate_pair", "import_class",
           "import_generated", "load_pair", "paired_stage", "ref_init_load", "ref_meta_assign", "run_workload",
           "weights_pairs"]

_INPUT = re.compile(r"^# input: (?P<name>\w+) (?P<dtype>\w+)\[(?P<shape>[\d, ]*)\]\s*$", re.M)


@dataclass
class Workload:
    kind: str  # synthetic | example | zoo | compile
    name: str  # "chain", "mlp", "monai.UNet"
    size: int = 0  # requested node count (synthetic)
    path: str = ""  # the spec file (synthetic/example); written by the worker for zoo
    allow: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.name}" + (f"/{self.size}" if self.kind == "synthetic" else "")


_STARTED = time.perf_counter()


class Runner:
    """Runs stages of one workload, emitting one JSON line per stage to ``out``."""

    def __init__(self, workload: Workload, cfg: dict[str, Any], out: Any) -> None:
        self.w = workload
        self.cfg = cfg
        self.out = out
        self.done: set[str] = set(cfg.get("done", ()))  # measured by an earlier attempt
        self.failed: set[str] = set(cfg.get("dead", ()))  # timed out / hung in an earlier attempt
        self.limit: float = cfg["stage_limit"]
        self.last: dict[str, Result] = {}
        self.ratios: dict[str, float] = {}  # target kind -> the paired ratio timed in this attempt

    def emit(self, record: dict[str, Any]) -> None:
        record = {"workload": self.w.key, **record, "at": round(time.perf_counter() - _STARTED, 3)}
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def stage(
        self,
        name: str,
        fn: Callable[[], Any],
        *,
        needs: tuple[str, ...] = (),
        setup: Callable[[], Any] | None = None,
        budget: float | None = None,
        value_only: bool = False,
    ) -> Any:
        """Measure ``fn`` as stage ``name``; returns its value (None if it did not run).

        ``value_only``: the stage was done by an earlier worker attempt; compute the value
        without timing it (later stages need it).
        """
        if name in self.failed:
            return None
        missing = [n for n in needs if n in self.failed]
        if missing:
            self.failed.add(name)
            if name not in self.done:
                self.emit(Result(name, status="skipped", note=f"needs {missing[0]}").as_dict())
            return None
        if name in self.done:
            if not value_only:
                return None
            with time_limit(self.limit):
                if setup:
                    setup()
                return fn()
        if name in self.cfg.get("omit", ()):
            return None
        self.emit({"event": "start", "stage": name})
        try:
            # Each run must end within run_limit (else "timeout"); runs after the first are
            # made only while they fit in stage_limit, unless --thorough.
            result, value = measure(
                name, fn, setup=setup, budget=budget if budget is not None else self.cfg["budget"],
                min_reps=3, max_reps=self.cfg["max_reps"], slow=self.cfg["slow"],
                limit=None if self.cfg.get("thorough") else self.limit,
                run_limit=self.cfg["run_limit"],
            )
        except StageTimeout:
            self.failed.add(name)
            self.emit(Result(name, status="timeout", note=f"one run > {self.cfg['run_limit']:.0f} s").as_dict())
            return None
        except Exception as exc:
            self.failed.add(name)
            self.emit(Result(name, status="error", note=f"{type(exc).__name__}: {str(exc)[:300]}").as_dict())
            return None
        self.last[name] = result
        self.emit(result.as_dict())
        return value

    def info(self, **fields: Any) -> None:
        self.emit({"event": "info", **fields})


    def pair(self, kind: str, pair: Pair) -> None:
        """Time target ``kind``'s fxgen call and its reference alternately (``measure.interleaved``)
        as stage ``paired:<fxgen stage>``, once both were measured by :meth:`stage`."""
        num, den = TARGETS[kind]
        name = paired_stage(kind)
        budget = self.cfg.get("pair_budget")
        if not budget or name in self.done or name in self.failed or num in self.failed or den in self.failed:
            return
        if den not in self.last and den not in self.done:
            return
        self.emit({"event": "start", "stage": name})
        try:
            with time_limit(self.limit):
                # a = the reference, b = fxgen: median_ratio is fxgen / reference per round
                stats = interleaved(pair.reference, pair.fxgen, budget=budget, min_rounds=self.cfg["pair_rounds"],
                                    max_rounds=1000, setup_b=pair.setup, collect=True, warmup=1)  # fmt: skip
        except StageTimeout:
            self.failed.add(name)
            self.emit(Result(name, status="timeout", note=f"> {self.limit:.0f} s").as_dict())
            return
        except Exception as exc:
            self.failed.add(name)
            self.emit(Result(name, status="error", note=f"{type(exc).__name__}: {str(exc)[:300]}").as_dict())
            return
        self.ratios[kind] = stats["median_ratio"]
        self.emit(Result(name, median=stats["b_median"], reps=int(stats["rounds"]),
                         extra={"reference": den, "median_ratio": stats["median_ratio"],
                                "ratio_of_medians": stats["ratio_of_medians"], "fxgen_median": stats["b_median"],
                                "reference_median": stats["a_median"], "ratio_q1": stats["ratio_q1"],
                                "ratio_q3": stats["ratio_q3"], "rounds": int(stats["rounds"])}).as_dict())  # fmt: skip


# -- the target pairs --------------------------------------------------------------------------
# target -> (fxgen stage, reference stage); the keys are bench/pair.py's kinds
TARGETS = {
    "load": ("read_validate+load", "fx_direct"),  # target 1
    "generate": ("generate", "python_code"),  # target 2
    "export": ("export", "symbolic_trace"),  # target 4, flat export
    "export_blocks": ("export_blocks", "symbolic_trace"),  # target 4, the default export (the model's classes kept)
    "weights": ("load_weights", "ref_meta_assign"),  # target 6, reference (a)
    "weights_init": ("load_weights", "ref_init_load"),  # target 6, reference (b)
}
EXPORT_TARGET = 2.0  # export / symbolic_trace (issue 21); misses get a breakdown (export_parts)


def paired_stage(kind: str) -> str:
    """The record name of target ``kind``'s alternating timing: ``paired:<fxgen stage>``, or
    ``paired:<fxgen stage>@<reference>`` when an earlier target already times that stage."""
    num, den = TARGETS[kind]
    first = next(k for k, (n, _) in TARGETS.items() if n == num)
    return f"paired:{num}" if first == kind else f"paired:{num}@{den}"


class Pair(NamedTuple):
    """One target's fxgen call and its reference on the same graph; ``setup`` runs, untimed,
    before each fxgen call."""

    fxgen: Callable[[], Any]
    reference: Callable[[], Any]
    setup: Callable[[], Any] | None = None


def load_pair(path: Path, spec: Any, allow: tuple[str, ...]) -> Pair:
    """``fxgen.load(path)`` against the direct torch.fx build (its inputs decoded here, untimed)."""
    prepared = prepare_direct(spec, policy_for(allow))
    return Pair(lambda: fxgen.load(path, allow=allow), lambda: build_direct(prepared))


def generate_pair(spec: Any, graph: torch.fx.Graph, allow: tuple[str, ...], label: str | None = None) -> Pair:
    """``fxgen.generate`` with every formatting cache cleared against ``Graph.python_code``."""
    return Pair(lambda: fxgen.generate(spec, allow=allow, label=label), lambda: graph.python_code(root_module="self"),
                clear_format_caches)  # fmt: skip


def export_pair(module: torch.nn.Module, trace_kw: dict[str, Any], tracer: Callable[[], Any]) -> Pair:
    """``fxgen.export(flat=True)`` (trace + GraphModule→spec) against torch.fx's own tracing of
    ``module``: target 4's row. The default export, the model's classes kept as blocks (format
    2), is row 4b (``export_blocks``, the same reference)."""
    return Pair(lambda: fxgen.export(module, flat=True, **trace_kw), tracer)


def ref_meta_assign(cls: type, weights: Path | str) -> torch.nn.Module:
    """Reference (a): the generated class built on the meta device, the file's tensors assigned:
    the fastest way to load the same model by hand."""
    from safetensors.torch import load_file

    with torch.device("meta"):
        model: torch.nn.Module = cls()
    model.load_state_dict(load_file(str(weights)), assign=True)
    return model


def ref_init_load(cls: type, weights: Path | str) -> torch.nn.Module:
    """Reference (b): the generated class built normally, then the file loaded into it: what most
    people write."""
    from safetensors.torch import load_file

    model: torch.nn.Module = cls()
    model.load_state_dict(load_file(str(weights)))
    return model


def weights_pairs(spec: Any, weights: Path, cls: type, allow: tuple[str, ...]) -> dict[str, Pair]:
    """``fxgen.load`` with weights against references (a) and (b) on the same file, ``cls``
    being the class ``fxgen.generate`` made of ``spec``, imported from a file."""

    def load() -> torch.fx.GraphModule:
        return fxgen.load(spec, weights=weights, allow=allow)

    return {"weights": Pair(load, lambda: ref_meta_assign(cls, weights)),
            "weights_init": Pair(load, lambda: ref_init_load(cls, weights))}  # fmt: skip


def torch_export_unflatten(module: torch.nn.Module, inputs: tuple[Any, ...]) -> torch.nn.Module:
    """The default export's peer in torch: ``torch.export.export`` on the example inputs, then
    ``torch.export.unflatten`` (the model's module hierarchy back, as fxgen's blocks keep it)."""
    return torch.export.unflatten(torch.export.export(module, inputs, strict=False))


def save_exported(module: torch.nn.Module, inputs: tuple[Any, ...], path: Path) -> Path:
    """``module`` exported by ``torch.export`` on ``inputs`` and saved with its weights (a .pt2)."""
    torch.export.save(torch.export.export(module, inputs, strict=False), str(path))
    return path


def ref_export_load(path: Path) -> torch.nn.Module:
    """The peer of ``fxgen.load(spec, weights=path)``: ``torch.export.load(pt2).module()``, a
    graph and its weights read from a file, ready to run."""
    return torch.export.load(str(path)).module()


def zoo_trace_kw(zm: Any) -> dict[str, Any]:
    """How fxgen traces a zoo model: its concrete args, leaf modules, and its tracer class and
    wrapped functions where the catalogue names them (Hugging Face's HFTracer, einops)."""
    options: dict[str, Any] = {"concrete_args": zm.concrete_args, "leaf_modules": zm.leaf_module_types()}
    if zm.tracer_class is not None:
        options["tracer_class"] = zm.tracer_type()
    if zm.autowrap_functions:
        options["autowrap_functions"] = zm.autowrap_function_objects()
    return options


def clear_format_caches() -> None:
    """Cold formatting caches, as in a fresh ``fxgen generate`` process: every memo in _format
    and the split port's (statements and per-skeleton plans), which a bench that only cleared
    _format's own would carry warm from one run to the next."""
    from fxgen.blackstyle import formatter

    formatter.clear_caches()
    for obj in list(vars(formatter).values()):
        if callable(getattr(obj, "cache_clear", None)):
            obj.cache_clear()


# -- helpers ---------------------------------------------------------------------------------
class _Ref:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def prepare_direct(spec: Any, policy: Any) -> dict[str, Any]:
    """Everything the direct torch.fx build needs, decoded ahead of time (untimed)."""
    from fxgen.spec.values import DTYPES, decode, decode_kwargs

    def ref(name: str) -> _Ref:
        return _Ref(name)

    nodes = []
    for node in spec.nodes:
        args = tuple(decode(node.args, ref))
        kwargs = decode_kwargs(node.kwargs, ref)
        type_expr = policy.resolve_type(node.type)[0] if node.type is not None else None
        if node.op == "placeholder":
            target: Any = node.name
            if node.default is not NO_DEFAULT:
                args = (decode(node.default, ref),)
        elif node.op == "output":
            target = "output"
        elif node.op == "call_function":
            target = policy.resolve_function(node.target)
        else:
            target = node.target
        nodes.append((node.op, target, args, kwargs, node.name, type_expr))
    modules = [
        (path, policy.resolve_module_class(m.cls), decode(m.args, ref), decode_kwargs(m.kwargs, ref))
        for path, m in spec.modules.items()
    ]

    def tensor(t: Any) -> tuple[Any, ...]:
        init = t.init if isinstance(t.init, str) else next(iter(t.init))
        kw = {} if isinstance(t.init, str) else dict(next(iter(t.init.values())) or {})
        return (t.shape, DTYPES[t.dtype], getattr(torch.nn.init, init + "_"), kw, getattr(t, "value", None))

    params = [(p, *tensor(t), t.requires_grad) for p, t in spec.parameters.items()]
    buffers = [(p, *tensor(t), t.persistent) for p, t in spec.buffers.items()]
    return {"name": spec.name, "nodes": nodes, "modules": modules, "params": params, "buffers": buffers}


def _resolve(value: Any, env: dict[str, torch.fx.Node]) -> Any:
    if isinstance(value, _Ref):
        return env[value.name]
    if isinstance(value, tuple):
        return tuple(_resolve(v, env) for v in value)
    if isinstance(value, list):
        return [_resolve(v, env) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, env) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(_resolve(value.start, env), _resolve(value.stop, env), _resolve(value.step, env))
    return value


# The reference builds the same module tree fxgen does; attaching attributes at dotted paths is
# not what is being compared, so it uses fxgen's helper rather than a copy.
_set_path = set_attr_path


def _make(shape: Any, dtype: Any, init: Any, kw: dict[str, Any], value: Any) -> torch.Tensor:
    if value is not None:
        return torch.tensor(value, dtype=dtype)
    t = torch.empty(shape, dtype=dtype)
    with torch.no_grad():
        init(t, **kw)
    return t


def build_graph_direct(p: dict[str, Any]) -> torch.fx.Graph:
    """The spec's torch.fx Graph alone, made with ``Graph.create_node`` from decoded nodes: what
    any load that returns a torch.fx GraphModule must do and references (a) and (b), which
    instantiate a class, never do (``fx_graph``, issue 21's floor for target 6)."""
    graph = torch.fx.Graph()
    env: dict[str, torch.fx.Node] = {}
    for op, target, args, kwargs, name, type_expr in p["nodes"]:
        node = graph.create_node(op, target, _resolve(args, env), _resolve(kwargs, env), name=name, type_expr=type_expr)
        env[node.name] = node
    return graph


def build_direct(p: dict[str, Any]) -> torch.fx.GraphModule:
    """The reference: the same GraphModule built with torch.fx's API and nothing else."""
    graph = build_graph_direct(p)
    root = torch.nn.Module()
    for path, cls, args, kwargs in p["modules"]:
        _set_path(root, path, cls(*args, **kwargs))
    for path, shape, dtype, init, kw, value, requires_grad in p["params"]:
        _set_path(root, path, torch.nn.Parameter(_make(shape, dtype, init, kw, value), requires_grad=requires_grad))
    for path, shape, dtype, init, kw, value, persistent in p["buffers"]:
        _set_path(root, path, _make(shape, dtype, init, kw, value), persistent=persistent)
    return torch.fx.GraphModule(root, graph, class_name=p["name"])


def plain_module(gm: torch.fx.GraphModule, name: str) -> torch.nn.Module:
    """An ordinary nn.Module (not a GraphModule) with ``gm``'s forward and state, to trace."""
    gm.code  # noqa: B018 - a lazy GraphModule generates its forward on first use
    cls = type(name, (torch.nn.Module,), {"forward": type(gm).forward, "__module__": __name__})
    module = cls()
    module._modules.update(gm._modules)
    module._parameters.update(gm._parameters)
    module._buffers.update(gm._buffers)
    module._non_persistent_buffers_set |= gm._non_persistent_buffers_set
    return module.eval()


def import_generated(source: str, class_name: str, tmp: Path) -> type:
    """The class ``class_name`` of generated ``source``, written to a file in ``tmp`` and imported."""
    stem = f"_fxgen_bench_{class_name}_{os.getpid()}_{time.monotonic_ns()}"
    path = tmp / f"{stem}.py"
    path.write_text(source, encoding="utf-8")
    return import_class(path, class_name)


def import_class(path: Path, class_name: str) -> type:
    """The class ``class_name`` of the Python file ``path``, imported as a module named after it."""
    stem = path.stem
    spec = importlib.util.spec_from_file_location(stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module
    spec.loader.exec_module(module)
    cls: type = getattr(module, class_name)
    return cls


def example_inputs(path: Path) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(0)
    out = []
    for m in _INPUT.finditer(path.read_text(encoding="utf-8")):
        shape = [int(d) for d in m["shape"].split(",") if d.strip()]
        dtype = getattr(torch, m["dtype"])
        out.append(torch.randn(shape, generator=gen, dtype=dtype) if dtype.is_floating_point
                   else torch.randint(0, 4, shape, generator=gen, dtype=dtype))  # fmt: skip
    return tuple(out)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.allclose(
            a.double() if not a.is_complex() else a, b.double() if not b.is_complex() else b,
            rtol=1e-4, atol=1e-5, equal_nan=True,
        )  # fmt: skip
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


class _BlackClock:
    """Wraps ``black.format_str`` to add up the time fxgen spends inside black."""

    def __init__(self) -> None:
        import black

        self.black = black
        self.original = black.format_str
        self.spent = 0.0
        self.cpu = 0.0
        self.calls = 0

    def __enter__(self) -> _BlackClock:
        original = self.original

        def timed(*args: Any, **kwargs: Any) -> str:
            c0 = time.process_time()
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.spent += time.perf_counter() - t0
                self.cpu += time.process_time() - c0
                self.calls += 1

        self.black.format_str = timed
        return self

    def __exit__(self, *exc: Any) -> None:
        self.black.format_str = self.original


# -- the workload ----------------------------------------------------------------------------
def run_workload(w: Workload, cfg: dict[str, Any], out: Any, tmp: Path) -> None:
    """Every stage of one workload, then its target pairs timed alternately. The pairs come last
    because ``interleaved`` freezes the objects alive (the workload's graphs among them), which
    would make the sequential stages' collections cheaper than before."""
    r = Runner(w, cfg, out)
    pairs: dict[str, Pair] = {}
    _run_stages(r, w, cfg, tmp, pairs)
    for kind, pair in pairs.items():
        r.pair(kind, pair)
    for kind in ("export", "export_blocks"):
        ratio = r.ratios.get(kind)
        if ratio is not None and ratio > EXPORT_TARGET:
            _export_parts(r, pairs[kind], blocks=kind == "export_blocks")


def _export_parts(r: Runner, pair: Pair, *, blocks: bool) -> None:
    """Which step of the export dominates, on a model that misses target 4 (stage ``export_parts``;
    ``export_blocks_parts`` for the default export's row 4b)."""
    from export_parts import breakdown  # type: ignore[import-not-found]

    stage = "export_blocks_parts" if blocks else "export_parts"
    r.emit({"event": "start", "stage": stage})
    try:
        with time_limit(r.limit):
            parts = breakdown(pair.fxgen, pair.reference, rounds=r.cfg.get("parts_rounds", 7), blocks=blocks)
    except StageTimeout:
        r.emit(Result(stage, status="timeout", note=f"> {r.limit:.0f} s").as_dict())
        return
    except Exception as exc:
        r.emit(Result(stage, status="error", note=f"{type(exc).__name__}: {str(exc)[:300]}").as_dict())
        return
    r.emit(Result(stage, median=parts["export"], reps=parts["rounds"], extra=parts).as_dict())


def _run_stages(r: Runner, w: Workload, cfg: dict[str, Any], tmp: Path, pairs: dict[str, Pair]) -> None:
    from fxgen.blackstyle import formatter

    allow = tuple(w.allow)
    original: torch.nn.Module | None = None
    inputs: tuple[Any, ...] = ()
    trace_kw: dict[str, Any] = {}

    # Zoo: the module is the starting point; export it first and write its spec to a file.
    blocks_spec = None
    if w.kind == "zoo":
        from zoo_models import ZOO  # type: ignore[import-not-found]

        zm = next(z for z in ZOO if z.name == w.name)
        # build() records leaf modules' constructor calls where the catalogue supports it
        original = zm.build() if hasattr(zm, "build") else zm.factory().eval()
        inputs = zm.inputs()
        trace_kw = zoo_trace_kw(zm)
        model = original
        pairs["export"] = _export_stages(r, original, trace_kw, tracer=lambda: _zoo_trace(zm, model))
        if "export_trace" in r.failed or "export_spec" in r.failed:
            return
        pairs["export_blocks"] = Pair(lambda: _quiet_export(model, trace_kw), pairs["export"].reference)
        r.stage("export_blocks", pairs["export_blocks"].fxgen)
        r.stage("torch_export_unflatten", lambda: torch_export_unflatten(model, inputs))
        spec0 = fxgen.export(original, flat=True, **trace_kw)  # the same specs as the runs before format 2
        blocks_spec = _blocks_export(r, original, trace_kw)  # target 5: its forward beside the flat one's
        path = tmp / f"{re.sub(r'[^A-Za-z0-9_]', '_', w.name)}.yaml"
        spec0.to_file(path)
        w.path = str(path)
        from fxgen.cli.export import outside_default_policy

        allow = tuple(outside_default_policy(spec0))
        r.info(allow=list(allow))

    path = Path(w.path)
    spec = r.stage("read_validate", lambda: fxgen.load_spec(path, allow=allow), value_only=True)
    if spec is None:
        return
    r.info(nodes=len(spec.nodes), modules=len(spec.modules), parameters=len(spec.parameters),
           buffers=len(spec.buffers), spec_bytes=path.stat().st_size)  # fmt: skip
    gm = r.stage("load", lambda: fxgen.load(spec, allow=allow), needs=("read_validate",), value_only=True)
    # Format 2 declares classes of its own and constructor arguments: the references build one flat
    # graph from format 1's declarations, so they have nothing to compare there (yet).
    flat = spec.fxgen < 2
    if not flat:
        for ref in ("fx_direct", "python_code"):
            r.emit(Result(ref, status="skipped", note="format 2 (classes, constructor arguments): the "
                          "reference builds one flat format-1 graph").as_dict())  # fmt: skip
    prepared = None
    try:
        if flat:
            prepared = prepare_direct(spec, policy_for(allow))
            pairs["load"] = load_pair(path, spec, allow)
    except Exception as exc:
        r.emit(Result("fx_direct", status="error", note=f"prepare: {type(exc).__name__}: {exc}"[:300]).as_dict())
    # What a user calls: one load(path), which may share work between validating and building.
    lp = pairs.get("load") or Pair(lambda: fxgen.load(path, allow=allow), lambda: None)
    r.stage("read_validate+load", lp.fxgen, needs=("load",))
    if "load" in pairs:
        r.stage("fx_direct", lp.reference)
        r.stage("fx_graph", lambda: build_graph_direct(prepared))

    # generate = render (everything but black) + format (black)
    clock_runs: list[tuple[float, float, int, float, float]] = []
    gen = generate_pair(spec, gm.graph if gm is not None else torch.fx.Graph(), allow, label=path.name)
    if gm is not None and flat:
        pairs["generate"] = gen

    def generate() -> str:
        with _BlackClock() as clock:
            c0 = time.process_time()
            t0 = time.perf_counter()
            src = gen.fxgen()
            total = time.perf_counter() - t0
            cpu = time.process_time() - c0
        clock_runs.append((total, clock.spent, clock.calls, cpu, clock.cpu))
        return src

    src = r.stage("generate", generate, needs=("read_validate",), setup=gen.setup, value_only=True)
    if src is not None and "generate" in r.last:
        _split_generate(r, clock_runs, src)
    if gm is not None and flat:
        r.stage("python_code", gen.reference)
    if src is not None:
        mode = formatter.MODE
        r.stage("black_file", lambda: formatter.black.format_str(src, mode=mode))

    # export (synthetic and examples: from an ordinary nn.Module with the same forward)
    if w.kind != "zoo":
        if gm is None:
            r.failed.update({"export_trace", "export_spec", "export", "symbolic_trace"})
        elif not hasattr(fxgen, "export") and not _has_export():
            r.emit(Result("export", status="n/a", note="fxgen.export does not exist yet").as_dict())
        else:
            original = module = plain_module(gm, spec.name)
            pairs["export"] = _export_stages(r, module, {}, tracer=lambda: torch.fx.symbolic_trace(module))

    # weights: the file fxgen.save_weights writes; the references load the generated class
    if gm is not None and (spec.parameters or spec.buffers or spec.modules):
        wpath = tmp / f"{path.stem}.safetensors"
        source = original if (w.kind == "zoo" and original is not None) else gm
        state = _write_weights(source, trace_kw, wpath)
        r.info(weights_bytes=wpath.stat().st_size, tensors=len(state))
        pairs.update(_weights_stages(r, spec, wpath, src, tmp, allow))
        _export_load_stage(r, source, inputs if w.kind == "zoo" else _spec_inputs(path), tmp / f"{path.stem}.pt2")
    else:
        state = None

    # forward: the original module vs the generated class
    if src is not None and spec is not None and len(spec.nodes) <= cfg["forward_max_nodes"]:
        if original is None or w.kind != "zoo":
            original = gm
            inputs = example_inputs(path)
        _forward_stage(r, w, spec, src, original, inputs, state, tmp, cfg)
        if blocks_spec is not None:
            try:
                blocks_src = fxgen.generate(blocks_spec, allow=allow)
            except Exception as exc:
                r.emit(Result("forward_blocks", status="error", note=f"generate: {type(exc).__name__}: {str(exc)[:300]}").as_dict())
            else:
                _forward_stage(r, w, blocks_spec, blocks_src, original, inputs, state, tmp, cfg, stage="forward_blocks")


def _weights_stages(r: Runner, spec: Any, wpath: Path, src: str | None, tmp: Path,
                    allow: tuple[str, ...] = ()) -> dict[str, Pair]:  # fmt: skip
    """Load with weights, references (a) and (b) (which need the generated source ``src``), and
    ``safetensors.load_file`` alone, for scale: it maps the file and builds no model."""
    from safetensors.torch import load_file

    def load() -> torch.fx.GraphModule:
        return fxgen.load(spec, weights=wpath, allow=allow)

    r.stage("load_weights", load)
    if src is None:
        r.failed.update({"ref_meta_assign", "ref_init_load"})
        return {}
    try:
        cls = import_generated(src, spec.name, tmp)
    except Exception as exc:
        r.failed.update({"ref_meta_assign", "ref_init_load"})
        r.emit(Result("ref_meta_assign", status="error", note=f"import: {type(exc).__name__}: {exc}"[:300]).as_dict())
        return {}
    pairs = weights_pairs(spec, wpath, cls, allow)
    r.stage("ref_meta_assign", pairs["weights"].reference)
    r.stage("ref_init_load", pairs["weights_init"].reference)
    r.stage("safetensors", lambda: load_file(str(wpath)))
    return pairs


def _spec_inputs(path: Path) -> tuple[Any, ...] | None:
    try:
        return example_inputs(path)
    except Exception:  # no inputs: declared
        return None


def _export_load_stage(r: Runner, source: torch.nn.Module, inputs: tuple[Any, ...] | None, pt2: Path) -> None:
    """``ref_export_load``: the same model exported by ``torch.export`` with its weights (saved
    untimed), loaded by ``torch.export.load(pt2).module()``; load with weights' peer."""
    if not inputs:
        r.emit(Result("ref_export_load", status="skipped", note="no example inputs to export with").as_dict())
        return
    try:
        save_exported(source, inputs, pt2)
    except Exception as exc:
        r.emit(Result("ref_export_load", status="error", note=f"torch.export: {type(exc).__name__}: {exc}"[:300]).as_dict())
        return
    r.stage("ref_export_load", lambda: ref_export_load(pt2))


def _has_export() -> bool:
    return importlib.util.find_spec("fxgen.capture") is not None


def _zoo_trace(zm: Any, model: torch.nn.Module) -> torch.fx.GraphModule:
    tracer = zm.tracer()
    graph = tracer.trace(model, concrete_args=zm.concrete_args)
    return torch.fx.GraphModule(tracer.root, graph)


def _export_stages(r: Runner, module: torch.nn.Module, trace_kw: dict[str, Any], tracer: Callable[[], Any]) -> Pair:
    pair = export_pair(module, trace_kw, tracer)
    if not _has_export():
        r.emit(Result("export", status="n/a", note="fxgen.export does not exist yet").as_dict())
        r.failed.add("export")
        return pair
    from fxgen.capture.trace import trace

    traced = r.stage("export_trace", lambda: trace(module, **trace_kw), value_only=True)
    if traced is not None:
        r.stage("export_spec", lambda: fxgen.export(traced))
    else:
        r.failed.add("export_spec")
    a, b = r.last.get("export_trace"), r.last.get("export_spec")
    if a is not None and b is not None:  # fxgen.export(module) is exactly trace + to-spec
        r.emit(Result("export", median=a.median + b.median if a.median and b.median else None, reps=min(a.reps, b.reps),
                      cpu=(a.cpu or 0) + (b.cpu or 0), note="export_trace + export_spec").as_dict())  # fmt: skip
    elif "export_trace" in r.failed or "export_spec" in r.failed:
        r.failed.add("export")
    r.stage("symbolic_trace", pair.reference)
    return pair


def _split_generate(r: Runner, runs: list[tuple[float, float, int, float, float]], src: str) -> None:
    """``render`` and ``format`` from the same runs as ``generate`` (its timed samples)."""
    import statistics

    timed = runs[-r.last["generate"].reps :]  # the runs measure() kept as samples
    render = [t - b for t, b, *_ in timed]
    fmt = [b for _, b, *_ in timed]
    render_cpu = statistics.median(c - bc for *_, c, bc in timed)
    fmt_cpu = statistics.median(bc for *_, bc in timed)
    r.emit(Result("render", median=statistics.median(render), reps=len(render), low=min(render),
                  high=max(render), cpu=render_cpu).as_dict())  # fmt: skip
    r.emit(Result("format", median=statistics.median(fmt), reps=len(fmt), low=min(fmt), high=max(fmt),
                  cpu=fmt_cpu, extra={"black_calls": timed[0][2]}).as_dict())  # fmt: skip
    r.info(source_lines=src.count("\n"), source_bytes=len(src.encode()))


def _write_weights(source: torch.nn.Module, trace_kw: dict[str, Any], path: Path) -> dict[str, torch.Tensor]:
    if _has_export():
        from safetensors.torch import load_file

        fxgen.save_weights(source, path, **trace_kw)
        return load_file(str(path))
    from fxgen.write.weights import write_weights

    state = {k: v.detach() for k, v in source.state_dict().items()}
    write_weights(path, state)
    return state


def _quiet_export(module: torch.nn.Module, trace_kw: dict[str, Any]) -> Any:
    """``fxgen.export``'s default (the model's classes kept), its notes on classes inlined silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fxgen.export(module, **trace_kw)


def _blocks_export(r: Runner, original: torch.nn.Module, trace_kw: dict[str, Any]) -> Any:
    """The zoo model's hierarchical export (``fxgen.export``'s default: its classes kept as
    format-2 blocks), or None, with the reason as a failed ``forward_blocks`` stage."""
    try:
        return _quiet_export(original, trace_kw)  # (classes inlined into their parents are reported elsewhere)
    except Exception as exc:
        r.emit(Result("forward_blocks", status="error", note=f"export: {type(exc).__name__}: {str(exc)[:300]}").as_dict())
        return None


def _forward_stage(
    r: Runner, w: Workload, spec: Any, src: str, original: Any, inputs: tuple[Any, ...],
    state: dict[str, torch.Tensor] | None, tmp: Path, cfg: dict[str, Any], stage: str = "forward",
) -> None:  # fmt: skip
    """``stage``: the class generated from ``src`` against ``original``, timed alternately
    (``forward``: the flat export's class; ``forward_blocks``: the hierarchical export's)."""
    r.emit({"event": "start", "stage": stage})
    try:
        with time_limit(r.limit):
            cls = import_generated(src, spec.name, tmp)
            torch.manual_seed(0)
            generated = cls().eval()
            if state is not None:
                _missing, unexpected = generated.load_state_dict(state, strict=False)
                if unexpected:
                    raise RuntimeError(f"generated class lacks {unexpected[:3]}")
            # non-persistent buffers are not in the weights: copy them from the original
            own = dict(generated.named_buffers())
            for name, buf in original.named_buffers():
                if name in own and name not in (state or {}):
                    own[name].copy_(buf)
            original.eval()
            with torch.no_grad():
                want = original(*inputs)
                got = generated(*inputs)
                match = _same(want, got)
                stats = interleaved(lambda: original(*inputs), lambda: generated(*inputs), budget=cfg["forward_budget"])
    except StageTimeout:
        r.emit(Result(stage, status="timeout", note=f"> {r.limit:.0f} s").as_dict())
        return
    except Exception as exc:
        r.emit(Result(stage, status="error", note=f"{type(exc).__name__}: {str(exc)[:300]}").as_dict())
        return
    r.emit(Result(stage, median=stats["b_median"], reps=int(stats["rounds"]),
                  extra={**stats, "outputs_match": match}).as_dict())  # fmt: skip


def _compile_workload(w: Workload, cfg: dict[str, Any], out: Any, tmp: Path) -> None:
    """``torch.compile`` of the class generated from one example, run once (in a worker of its own:
    dynamo and inductor import millions of objects, which would slow every later gc.collect)."""
    r = Runner(w, cfg, out)
    path = Path(w.path)
    spec = fxgen.load_spec(path)
    original = fxgen.load(spec).eval()
    generated = import_generated(fxgen.generate(spec), spec.name, tmp)().eval()
    generated.load_state_dict(original.state_dict())
    _compile_check(r, generated, example_inputs(path), original)
    out.write(json.dumps({"workload": w.key, "event": "done"}) + "\n")
    out.flush()


def _compile_check(r: Runner, model: torch.nn.Module, inputs: tuple[Any, ...], original: Any) -> None:
    r.emit({"event": "start", "stage": "torch_compile"})
    try:
        with time_limit(max(r.limit, 300)):
            t0 = time.perf_counter()
            compiled = torch.compile(model)
            with torch.no_grad():
                out = compiled(*inputs)
                want = original(*inputs)
            elapsed = time.perf_counter() - t0
    except StageTimeout:
        r.emit(Result("torch_compile", status="timeout").as_dict())
        return
    except Exception as exc:
        r.emit(Result("torch_compile", status="error", note=f"{type(exc).__name__}: {str(exc)[:300]}").as_dict())
        return
    r.emit(Result("torch_compile", median=elapsed, reps=1, extra={"outputs_match": _same(want, out)}).as_dict())


def worker_main(task_file: str, out_file: str) -> int:
    """Entry point of a worker process: run the workloads listed in ``task_file``."""
    task = json.loads(Path(task_file).read_text(encoding="utf-8"))
    cfg = task["cfg"]
    # One intra-op thread: the graphs' tensors are tiny, and on a small machine shared with other
    # work OpenMP's spin-waiting made a [4, 8] LayerNorm take 16 ms instead of 6 us.
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="fxgen-bench-") as tmp_name, open(out_file, "a", encoding="utf-8") as out:
        tmp = Path(tmp_name)
        _warm_up(tmp, zoo=any(item["kind"] == "zoo" for item in task["workloads"]))
        for item in task["workloads"]:
            w = Workload(**item)
            # Everything alive now (torch, fxgen, black, earlier workloads: ~10^6 objects) goes
            # to the permanent generation: a full gc.collect() between runs then costs
            # microseconds instead of ~0.2 s. Stages and references run under the same condition.
            gc.collect()
            gc.freeze()
            if w.kind == "compile":
                _compile_workload(w, cfg, out, tmp)
                continue
            wcfg = {**cfg, **task.get("resume", {}).get(w.key, {})}
            try:
                run_workload(w, wcfg, out, tmp)
            except Exception as exc:  # a broken workload must not stop the others
                out.write(json.dumps({"workload": w.key, **Result("workload", status="error",
                          note=f"{type(exc).__name__}: {str(exc)[:300]}").as_dict()}) + "\n")  # fmt: skip
                out.flush()
            out.write(json.dumps({"workload": w.key, "event": "done"}) + "\n")
            out.flush()
    return 0


def _warm_up(tmp: Path, *, zoo: bool = False) -> None:
    """Import and cache everything once, on a tiny spec, so no stage pays for imports."""
    import black  # noqa: F401
    import safetensors.torch  # noqa: F401

    if zoo:  # the zoo's packages (MONAI is large) are imported before the heap is frozen
        from zoo_models import ZOO  # type: ignore[import-not-found]

        for name in sorted({r for z in ZOO for r in z.requires}):
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
    from workloads import write_spec  # type: ignore[import-not-found]

    for shape in ("chain", "fan", "residual"):
        path = write_spec(tmp, shape, 20)
        spec = fxgen.load_spec(path)
        gm = fxgen.load(spec)
        fxgen.generate(spec)
        gm.graph.python_code(root_module="self")
        if _has_export():
            fxgen.export(plain_module(gm, spec.name))
        path.unlink()
