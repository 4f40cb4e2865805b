"""Timing and peak-memory primitives for the benchmark suite.

Timing: wall-clock ``time.perf_counter`` around one call; ``gc.collect()`` before every run
(garbage from the previous run is not charged to the next) but the collector stays *enabled*
during the run, as it is for users -- at 100,000 nodes the cyclic GC's generation-2 passes are
part of the real cost. Repeats are adaptive: at least ``min_reps`` (3); more for fast stages,
until ``budget`` seconds have been spent (capped at ``max_reps``); the reported figure is the
median.

Memory: the *peak resident set size* reached during one run, above the resident size just
before it. On Linux the kernel's high-water mark (``VmHWM``) can be reset in-process by
writing ``5`` to ``/proc/self/clear_refs``, so each stage gets its own peak without a fresh
process and without slowing the run down. This is the maxrss of ``getrusage`` made resettable:
unlike tracemalloc it sees every allocation (tensors from torch's C++ allocator, black's and
PyYAML's C extensions) and costs nothing while the stage runs, so the measured run can double
as a timing sample. Before the baseline is read, freed memory is given back to the OS
(``gc.collect`` + glibc ``malloc_trim``) so the previous stage's garbage does not hide this
stage's peak. Where ``clear_refs`` is not available, tracemalloc's peak (Python allocations
only) is used instead and the report says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import signal
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["MEMORY_METHOD", "Result", "StageTimeout", "interleaved", "measure", "peak_memory", "time_limit",
           "timed_functions"]


class StageTimeout(BaseException):
    """A run took longer than its limit (BaseException: fxgen's ``except Exception`` cannot swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (SIGALRM; Python code only, so the parent process
    also enforces a hard timeout on the whole worker)."""
    if not seconds:
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise StageTimeout

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _libc_trim() -> Callable[[], None]:
    try:
        libc = ctypes.CDLL("libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    return lambda: trim(0)


_trim = _libc_trim()


def _status_kib(key: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    raise KeyError(key)


def _hwm_resettable() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        _status_kib("VmHWM:")
        return True
    except OSError:
        return False


MEMORY_METHOD = "VmHWM (reset via /proc/self/clear_refs)" if _hwm_resettable() else "tracemalloc peak"


_LAST_CPU = [0.0]  # CPU seconds of the last peak_memory run


def peak_memory(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Run ``fn`` once: (seconds, peak MiB above the starting resident size, its result)."""
    gc.collect()
    _trim()
    if MEMORY_METHOD.startswith("VmHWM"):
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        base = _status_kib("VmRSS:")
        cpu0 = time.process_time()
        start = time.perf_counter()
        value = fn()
        elapsed = time.perf_counter() - start
        _LAST_CPU[0] = time.process_time() - cpu0
        peak = _status_kib("VmHWM:") - base
        return elapsed, max(peak, 0) / 1024, value
    tracemalloc.start()
    try:
        cpu0 = time.process_time()
        start = time.perf_counter()
        value = fn()
        elapsed = time.perf_counter() - start
        _LAST_CPU[0] = time.process_time() - cpu0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return elapsed, peak / 2**20, value


@dataclass
class Result:
    """One stage on one workload: the median of ``reps`` runs, and its spread."""

    stage: str
    median: float | None = None
    reps: int = 0
    low: float | None = None
    high: float | None = None
    peak_mib: float | None = None
    cpu: float | None = None  # median process CPU time of the same runs (robust to other load)
    status: str = "ok"  # ok | timeout | error | skipped | n/a
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure(
    stage: str,
    fn: Callable[[], Any],
    *,
    setup: Callable[[], Any] | None = None,
    min_reps: int = 3,
    max_reps: int = 30,
    budget: float = 1.0,
    slow: float = 1.0,
    memory: bool = True,
    limit: float | None = None,
    run_limit: float | None = None,
) -> tuple[Result, Any]:
    """Time ``fn``; ``setup`` runs (untimed) before every run, e.g. to clear caches.

    The first run measures peak memory. It is a warm-up for fast stages; when it takes longer
    than ``slow`` seconds it counts as the first sample (caches are cleared by ``setup`` and
    imports were done by the worker's warm-up, so it is not a cold outlier), which keeps the
    100,000-node workloads affordable. ``limit``: seconds the stage may take in all; runs stop
    early (fewer than ``min_reps``, at least one) when the next run would overrun it.
    """
    started = time.perf_counter()
    if setup is not None:
        setup()
    with time_limit(run_limit):  # raises StageTimeout: the caller reports "timeout"
        if memory:
            first, peak, value = peak_memory(fn)
            first_cpu = _LAST_CPU[0]
        else:
            gc.collect()
            cpu0 = time.process_time()
            start = time.perf_counter()
            value = fn()
            first, peak = time.perf_counter() - start, None
            first_cpu = time.process_time() - cpu0
    samples = [first] if first >= slow else []
    cpus = [first_cpu] if first >= slow else []
    reps = max(min_reps, min(max_reps, int(budget / max(first, 1e-9))))
    while len(samples) < reps:
        spent = time.perf_counter() - started
        if samples and limit is not None and spent + max(samples) > limit:
            break  # the report flags results with fewer than min_reps runs
        if setup is not None:
            setup()
        gc.collect()
        try:
            with time_limit(run_limit):
                cpu0 = time.process_time()
                start = time.perf_counter()
                fn()
                elapsed = time.perf_counter() - start
                cpus.append(time.process_time() - cpu0)
                samples.append(elapsed)
        except StageTimeout:
            break  # keep the runs that finished
    result = Result(
        stage,
        median=statistics.median(samples),
        reps=len(samples),
        low=min(samples),
        high=max(samples),
        peak_mib=peak,
        cpu=statistics.median(cpus[: len(samples)]),
    )
    return result, value


def interleaved(
    a: Callable[[], Any],
    b: Callable[[], Any],
    *,
    budget: float = 1.0,
    min_rounds: int = 20,
    max_rounds: int = 5000,
    setup_a: Callable[[], Any] | None = None,
    setup_b: Callable[[], Any] | None = None,
    collect: bool = False,
    warmup: int = 3,
) -> dict[str, float]:
    """Time ``a`` and ``b`` alternately (order flipped every round) to cancel drift.

    Runs ``warmup`` untimed rounds, at least ``min_rounds`` timed ones and then more until
    ``budget`` seconds have passed. Returns the medians of each and the median and quartiles of
    the per-round ratios b/a. ``setup_a`` and ``setup_b`` run, untimed, before each call of ``a`` and ``b``;
    ``collect`` freezes the objects alive after the warm-up and runs ``gc.collect()`` before
    every call, as :func:`measure` does for a stage.
    """
    ta: list[float] = []
    tb: list[float] = []
    calls = ((a, setup_a, ta), (b, setup_b, tb))
    for _ in range(warmup):
        for fn, setup, _out in calls:
            if setup is not None:
                setup()
            fn()
    gc.collect()
    if collect:
        gc.freeze()
    start = time.perf_counter()
    i = 0
    while i < max_rounds and (i < min_rounds or time.perf_counter() - start < budget):
        for fn, setup, out in calls if i % 2 == 0 else calls[::-1]:
            if setup is not None:
                setup()
            if collect:
                gc.collect()
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        i += 1
    ratios = [y / x for x, y in zip(ta, tb, strict=True) if x > 0]
    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
    return {
        "a_median": statistics.median(ta),
        "b_median": statistics.median(tb),
        "ratio_of_medians": statistics.median(tb) / statistics.median(ta),
        "median_ratio": statistics.median(ratios),
        "ratio_q1": q1,  # the spread of the per-round ratios: their quartiles
        "ratio_q3": q3,
        "rounds": i,
    }


@contextlib.contextmanager
def timed_functions(patches: Iterable[tuple[str, str, str]], spent: dict[str, float],
                    calls: dict[str, int], *, exclusive: bool = False) -> Iterator[None]:  # fmt: skip
    """Within the block, time the functions ``patches`` names, ``(label, module, attribute)``
    (``"Class.method"`` for a method): add each label's inclusive seconds to ``spent`` and its
    calls to ``calls``, a function that calls itself timed once, at its outermost call. With
    ``exclusive``, a timed call's seconds leave out those of the timed calls inside it, so the
    labels add up to the time spent in all of them (for code that nests, like format-2 blocks).
    The module global (or class attribute) is replaced by a timing wrapper, so calls through it
    are timed; everything is put back on exit."""
    import importlib

    depth: dict[str, int] = {}
    inner: list[float] = []  # per timed call in progress: the seconds of the timed calls inside it
    undo: list[tuple[Any, str, Any]] = []

    def wrap(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            outer = depth.get(label, 0) == 0
            depth[label] = depth.get(label, 0) + 1
            inner.append(0.0)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - t0
                depth[label] -= 1
                nested = inner.pop()
                if inner:
                    inner[-1] += elapsed
                if exclusive or outer:
                    spent[label] = spent.get(label, 0.0) + (elapsed - nested if exclusive else elapsed)
                if outer:
                    calls[label] = calls.get(label, 0) + 1

        return timed

    try:
        for label, module_name, attr in patches:
            owner: Any = importlib.import_module(module_name)
            *path, name = attr.split(".")
            for part in path:
                owner = getattr(owner, part)
            original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            undo.append((owner, name, original))
            setattr(owner, name, wrap(label, original))
        yield
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)
