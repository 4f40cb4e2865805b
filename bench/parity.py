"""Checkpoint parity: the promises an export keeps, checked one after the other on one model.

``check_parity(factory, inputs, workdir)`` builds the model twice (one instance to export, one
that is never traced, for the reference outputs) and requires, raising ``ParityError`` naming
the first promise broken:

1. the export leaves the model as it found it: after ``fxgen.export(model)`` the model computes
   what it computed before, and exporting it again gives an equal spec;
2. export -> YAML -> ``load_spec`` gives an equal spec;
3. the generated class's ``state_dict()`` has the original's keys, shapes and dtypes, the
   original ``state_dict()`` loads into it strictly, and its outputs equal the reference's;
4. the same for ``fxgen.load(spec)`` followed by a strict ``load_state_dict``;
5. the same for ``fxgen.load(spec, weights=...)`` with the file ``fxgen.save_weights`` wrote.

Outputs are compared with ``torch.equal`` (NaNs equal where both have them): the generated code
runs the graph's own operations, so any difference is a bug. ``inexact`` (a reason) relaxes this
to ``allclose`` for a model whose traced graph computes differently from its eager forward.
``tests/test_exactness.py`` and ``bench/zoo_report.py`` both use it.

Beyond the example, ``export_checked(...)`` returns what ``check_parity`` proved (the spec, the
checkpoint, the generated class) for three more promises, each checked on both copies (the
generated class and ``fxgen.load``'s GraphModule, the original ``state_dict()`` loaded strictly)
against a fresh instance of the original:

6. ``check_train``: in train mode, seeded the same, the outputs are equal and so is the
   ``state_dict()`` after that one forward (BatchNorm's running statistics);
7. ``check_inputs`` on other inputs (another batch size, sequence length or resolution) the
   original accepts: the outputs are equal, in eval mode;
8. ``check_inputs`` on ``required_inputs(...)``: called with the arguments that have defaults
   left out, as the original is called most often.

Each raises ``ParityError`` (its ``error`` the largest difference when outputs differ) or, when
the original itself refuses the call, ``OriginalRefuses``: a check that does not apply.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import fxgen

__all__ = ["Exported", "OriginalRefuses", "ParityError", "check_inputs", "check_parity", "check_train", "export_checked",
           "import_file", "max_error", "required_inputs", "tensor_leaves"]  # fmt: skip


class ParityError(AssertionError):
    """A promise of export broken; ``stage`` says which, ``error`` by how much the outputs differ
    (None when a copy raised or differs otherwise)."""

    def __init__(self, stage: str, message: str, error: float | None = None) -> None:
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.error = error


class OriginalRefuses(Exception):
    """The original model itself raises on the call a check would compare: the check does not apply."""


def tensor_leaves(out: Any) -> list[torch.Tensor]:
    """The tensors in a model's output (nested tuples, lists, dicts, dataclass-like outputs)."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for item in out for t in tensor_leaves(item)]
    if isinstance(out, dict):
        return [t for item in out.values() for t in tensor_leaves(item)]
    return []


def max_error(want: Any, got: Any) -> float:
    """The largest absolute difference between two outputs' tensors (0.0 when all are equal)."""
    pairs = list(zip(tensor_leaves(want), tensor_leaves(got), strict=True))
    worst = 0.0
    for a, b in pairs:
        if a.shape != b.shape or a.dtype != b.dtype:
            return float("inf")
        if a.is_floating_point() or a.is_complex():
            diff = (a.double() - b.double()).abs() if not a.is_complex() else (a - b).abs().double()
            diff = diff.nan_to_num(0.0) if torch.equal(a.isnan(), b.isnan()) else diff.nan_to_num(float("inf"))
            worst = max(worst, float(diff.max()) if diff.numel() else 0.0)
        elif not torch.equal(a, b):
            worst = float("inf")
    return worst


def _same(want: Any, got: Any, inexact: str) -> bool:
    leaves_a, leaves_b = tensor_leaves(want), tensor_leaves(got)
    if len(leaves_a) != len(leaves_b):
        return False
    for a, b in zip(leaves_a, leaves_b, strict=True):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if inexact:
            if not torch.allclose(a, b, atol=1e-5, rtol=1e-4, equal_nan=True):
                return False
        elif not (torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                         and torch.equal(a.nan_to_num(), b.nan_to_num()))):  # fmt: skip
            return False
    return True


def import_file(path: Path, name: str) -> Any:
    """Import a generated file as a user would: from its path, without fxgen's help."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _layout(state: dict[str, torch.Tensor]) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    return {key: (tuple(t.shape), t.dtype) for key, t in state.items()}


def _run(model: Callable[..., Any], inputs: tuple[Any, ...]) -> Any:
    """One forward, from the same random state each time (a model may sample noise in eval mode:
    its copies must draw the same numbers in the same order)."""
    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(0)
        return model(*inputs)


@dataclass(frozen=True)
class Exported:
    """What ``check_parity`` proved on the example, kept for the checks beyond it."""

    spec: fxgen.Spec
    checkpoint: dict[str, torch.Tensor]
    generated: type[torch.nn.Module]
    allow: tuple[str, ...] = ()
    inexact: str = ""

    def copies(self) -> dict[str, torch.nn.Module]:
        """Fresh copies, the original ``state_dict()`` loaded strictly into each."""
        made = {"the generated class": self.generated(), "fxgen.load": fxgen.load(self.spec, allow=self.allow)}
        for model in made.values():
            model.load_state_dict(self.checkpoint, strict=True)
        return made


def _expect(stage: str, want: Any, got: Any, inexact: str) -> None:
    if not _same(want, got, inexact):
        wanted, gave = len(tensor_leaves(want)), len(tensor_leaves(got))
        if wanted != gave:
            raise ParityError(stage, f"outputs differ: {gave} tensors where the original gives {wanted}", float("inf"))
        error = max_error(want, got)
        raise ParityError(stage, f"outputs differ from the original's (max abs error {error:.3g})", error)


def _reference(factory: Callable[[], torch.nn.Module], inputs: tuple[Any, ...], train: bool) -> tuple[Any, Any]:
    """A fresh original in the mode asked, and its outputs; ``OriginalRefuses`` if it raises."""
    reference = factory().train(train)
    try:
        return reference, _run(reference, inputs)
    except Exception as exc:
        raise OriginalRefuses(_first_line(exc)) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _copies_run(
    exported: Exported, inputs: tuple[Any, ...], train: bool, what: str
) -> Iterator[tuple[str, torch.nn.Module, Any]]:
    """Each copy in the mode asked, run on ``inputs``: yields (stage, copy, outputs); a copy
    that raises is a ``ParityError`` naming the copy and the exception."""
    for name, copy in exported.copies().items():
        stage = f"{what}: {name}"
        try:
            got = _run(copy.train(train), inputs)
        except Exception as exc:
            raise ParityError(stage, _first_line(exc)) from exc
        yield stage, copy, got


def check_train(factory: Callable[[], torch.nn.Module], inputs: tuple[Any, ...], exported: Exported) -> None:
    """Train mode (6.): seeded the same, each copy's outputs and ``state_dict()`` after one
    forward equal a fresh original's."""
    reference, want = _reference(factory, inputs, train=True)
    state = reference.state_dict()
    for stage, copy, got in _copies_run(exported, inputs, True, "train mode"):
        _expect(stage, want, got, exported.inexact)
        for key, value in copy.state_dict().items():
            if not _same(state[key], value, exported.inexact):
                error = max_error(state[key], value)
                raise ParityError(stage, f"after one forward, {key} differs from the original's "
                                  f"(max abs error {error:.3g})", error)  # fmt: skip


def check_inputs(
    factory: Callable[[], torch.nn.Module], inputs: tuple[Any, ...], exported: Exported, what: str
) -> None:
    """Other inputs than the example's (7., 8.): in eval mode each copy's outputs equal a
    fresh original's; ``what`` names the inputs in the error."""
    _, want = _reference(factory, inputs, train=False)
    for stage, _, got in _copies_run(exported, inputs, False, what):
        _expect(stage, want, got, exported.inexact)


def required_inputs(model: torch.nn.Module, inputs: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """``inputs`` without those bound to a parameter of ``model.forward`` that has a default, or
    None when none is (nothing to leave out; a ``*args`` parameter keeps what it takes). The first
    input always stays: a forward whose every parameter has a default (as Hugging Face's) still
    needs its main input."""
    parameters = list(inspect.signature(model.forward).parameters.values())
    kept = list(inputs[:1])
    for i, value in enumerate(inputs[1:], 1):
        parameter = parameters[i] if i < len(parameters) else None
        if parameter is None or parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            kept.extend(inputs[i:])
            break
        if parameter.default is inspect.Parameter.empty:
            kept.append(value)
    return tuple(kept) if len(kept) < len(inputs) else None


def check_parity(
    factory: Callable[[], torch.nn.Module], inputs: tuple[Any, ...], workdir: Path, **options: Any
) -> fxgen.Spec:
    """Export ``factory()`` and check every promise on the example (module docstring); returns the
    spec. ``options`` are ``export_checked``'s."""
    return export_checked(factory, inputs, workdir, **options).spec


def export_checked(
    factory: Callable[[], torch.nn.Module],
    inputs: tuple[Any, ...],
    workdir: Path,
    *,
    allow: Iterable[str] = (),
    inexact: str = "",
    stem: str = "model",
    export_options: dict[str, Any] | None = None,
) -> Exported:
    """Export ``factory()`` and check every promise on the example (module docstring); returns what
    it proved, for ``check_train`` and ``check_inputs``."""
    options = dict(export_options or {})
    allow = tuple(allow)
    original = factory().eval()
    reference = factory().eval()  # never traced: the outputs every copy must give
    want = _run(reference, inputs)

    def expect(stage: str, got: Any) -> None:
        _expect(stage, want, got, inexact)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tied-weight notes and the like: the checks below decide
        spec = fxgen.export(original, **options)
        if fxgen.export(original, **options) != spec:
            raise ParityError("a second export", "exporting the same instance again gave a different spec")
        expect("the model after export", _run(original, inputs))  # (after: running may fill its caches)
    spec_path = workdir / f"{stem}.yaml"
    spec.to_file(spec_path)
    reloaded = fxgen.load_spec(spec_path, allow=allow)
    if reloaded != spec:
        raise ParityError("YAML", "export -> YAML -> load_spec changed the spec")
    checkpoint = original.state_dict()

    source_path = workdir / f"{stem}.py"
    source_path.write_text(fxgen.generate(reloaded, allow=allow))
    cls = getattr(import_file(source_path, f"parity_{stem}_{id(spec)}"), spec.name)
    generated = cls().eval()
    if _layout(generated.state_dict()) != _layout(checkpoint):
        missing = sorted(checkpoint.keys() - generated.state_dict().keys())
        extra = sorted(generated.state_dict().keys() - checkpoint.keys())
        raise ParityError("the generated class", f"state_dict layout differs: missing {missing[:5]}, extra {extra[:5]}")
    generated.load_state_dict(checkpoint, strict=True)
    expect("the generated class", _run(generated, inputs))

    loaded = fxgen.load(reloaded, allow=allow).eval()
    loaded.load_state_dict(checkpoint, strict=True)
    expect("fxgen.load + load_state_dict", _run(loaded, inputs))

    weights = workdir / f"{stem}.safetensors"
    fxgen.save_weights(original, weights, **options)
    with_weights = fxgen.load(reloaded, weights=weights, allow=allow).eval()
    expect("fxgen.load(weights=...)", _run(with_weights, inputs))
    return Exported(reloaded, checkpoint, cls, allow, inexact)
