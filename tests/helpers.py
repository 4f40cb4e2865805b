"""Helpers shared by tests: example inputs from specs' `# input:` lines, output and state comparison,
forged generated files."""

from __future__ import annotations

import importlib.util
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from hypothesis import settings

# A timeout in a test only ends a hang: no test judges the machine's speed. An hour is far beyond
# any single run on a loaded 2-core machine (the whole suite once took 75 minutes under load).
HANG_WATCHDOG = 3600.0

class OverBudget(BaseException):
    """Work past its budget (``steps``): a BaseException, so no ``except Exception`` swallows it."""


def steps(fn: Callable[[], Any], budget: int) -> int:
    """The Python steps (lines, calls, returns) ``fn()`` runs: work measured without a clock, the
    same on every machine and under any load. Past ``budget`` it stops ``fn`` (OverBudget), so a
    blow-up fails at once instead of hanging the test."""
    count = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1
        if count > budget:
            raise OverBudget(f"more than {budget} Python steps")
        return trace

    previous = sys.gettrace()  # a coverage tool's, say: it resumes afterwards
    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return count


# A property test's budget is written as the examples it runs under the "thorough" profile (CI's
# second step); the fast profiles ("dev", "ci": the README's test command) run a sixth of that.
THOROUGH_EXAMPLES = 60
FAST_EXAMPLES = 10


def property_budget(thorough: int) -> int:
    """Examples for a property test that runs ``thorough`` of them under the thorough profile:
    scaled down with the fast profiles, at least the long profile's own budget under it."""
    default = settings.default.max_examples
    if default > THOROUGH_EXAMPLES:  # the long profile
        return max(thorough, default)
    return max(1, thorough * default // THOROUGH_EXAMPLES)  # exactly ``thorough`` under thorough


_INPUT = re.compile(r"^# input: (?P<name>\w+) (?P<dtype>\w+)\[(?P<shape>[\d, ]*)\]\s*$")


def example_inputs(spec_path: Path, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random inputs for the required placeholders, from the spec's `# input: x float32[2, 16]` lines."""
    gen = torch.Generator().manual_seed(seed)
    inputs: dict[str, torch.Tensor] = {}
    for line in spec_path.read_text().splitlines():
        m = _INPUT.match(line)
        if not m:
            continue
        shape = [int(d) for d in m["shape"].split(",") if d.strip()]
        dtype = getattr(torch, m["dtype"])
        if dtype.is_floating_point:
            inputs[m["name"]] = torch.randn(shape, generator=gen, dtype=dtype)
        elif dtype == torch.bool:
            inputs[m["name"]] = torch.randint(0, 2, shape, generator=gen).bool()
        else:
            inputs[m["name"]] = torch.randint(0, 4, shape, generator=gen, dtype=dtype)
    return inputs


def example_graph(spec_path: Path) -> Any:
    """The example's spec as ``fxgen show`` and its pictures describe it: its graph at the default
    arguments, in eval mode where the graph depends on the mode (``default_instance``)."""
    import fxgen
    from fxgen.assemble.module import default_instance

    return default_instance(fxgen.load_spec(spec_path))[0]


def assert_same(a: Any, b: Any) -> None:
    """Outputs equal leaf by leaf: tensors with torch.equal (NaNs where the other has them)."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor)
        assert a.shape == b.shape and a.dtype == b.dtype
        assert torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                     and torch.equal(a.nan_to_num(), b.nan_to_num()))  # fmt: skip
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    else:
        assert a == b


def import_source(source: str, name: str, tmp_path: Path) -> types.ModuleType:
    """Import generated source from a real file (as a user would), without fxgen on the path."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def counting_rebuilds(monkeypatch: Any) -> list[tuple[str, bool]]:
    """Record ``(class name, on_meta)`` for every rebuild export makes (``monkeypatch``: pytest's)."""
    import fxgen.describe.rebuild

    built: list[tuple[str, bool]] = []
    original = fxgen.describe.rebuild._build

    def counting(cls: type, args: Any, kwargs: Any, where: Any, *, on_meta: bool) -> torch.nn.Module:
        built.append((cls.__name__, on_meta))
        return original(cls, args, kwargs, where, on_meta=on_meta)

    monkeypatch.setattr(fxgen.describe.rebuild, "_build", counting)
    return built


def assert_same_state(a: torch.nn.Module, b: torch.nn.Module, *, ordered: bool = True) -> None:
    """Bit-identical parameters and buffers (NaNs included), key by key; ``ordered`` also asks
    for the same key order."""
    expected = dict(b.named_parameters()) | dict(b.named_buffers())
    actual = dict(a.named_parameters()) | dict(a.named_buffers())
    assert (list(actual) == list(expected)) if ordered else (sorted(actual) == sorted(expected))
    for key, tensor in actual.items():
        other = expected[key]
        assert tensor.dtype == other.dtype and tensor.shape == other.shape, key
        assert torch.equal(tensor.reshape(-1).view(torch.uint8), other.reshape(-1).view(torch.uint8)), key


def generated_class(spec: Any, module: str = "fxgen_generated_test") -> tuple[str, type[torch.nn.Module]]:
    """``fxgen.generate(spec)`` and the class it defines, compiled in a namespace of its own."""
    import fxgen

    source = fxgen.generate(spec)
    namespace: dict[str, Any] = {"__name__": module}
    exec(compile(source, "<generated>", "exec"), namespace)
    return source, namespace[spec.name]


def loaded_and_generated(data: dict[str, Any], prefix: str) -> tuple[torch.nn.Module, torch.nn.Module]:
    """``fxgen.load(data)`` and an instance of the class ``fxgen.generate(data)`` writes, holding
    the same state (loaded strictly)."""
    import tempfile

    import fxgen

    gm = fxgen.load(data)
    with tempfile.TemporaryDirectory() as folder:
        module = import_source(fxgen.generate(data), f"{prefix}_{abs(hash(str(data)))}", Path(folder))
    generated = getattr(module, data["name"])()
    generated.load_state_dict(gm.state_dict(), strict=True)
    return gm, generated


def diagnostics(text: str) -> list[tuple[int, int, str]]:
    """(line, column, message) of each problem fxgen finds in spec ``text`` (none: it is valid)."""
    import fxgen
    from fxgen.check.validate import validate_document
    from fxgen.read.reader import parse_text

    try:
        validate_document(parse_text(text))
    except fxgen.SpecError as exc:
        return [(d.location.line, d.location.column, d.message) for d in exc.diagnostics]
    return []


def forge(path: Path, extra: str = "\nimport os\n\nos.system('echo forged')\n") -> None:
    """The generated file ``path`` with ``extra`` appended to its body and its header's body hash
    recomputed: what anyone can do to a file, since the header's hashes are unkeyed."""
    from dataclasses import replace

    from fxgen.write.header import body_digest, split

    header, body = split(path.read_text(encoding="utf-8"))
    assert header is not None, path
    body += extra
    path.write_text(replace(header, body_digest=body_digest(body)).render() + body, encoding="utf-8")
