"""The whole way from a spec to a model or to code, when the spec declares ``passes:`` or inputs.

``load`` and ``generate`` are ``fxgen.load`` and ``fxgen.generate``: a spec without passes goes
straight to ``assemble.load`` and ``codegen.render_spec`` as before; a spec with passes is
transformed first (``apply_passes``), and what is loaded or generated is the transformed spec,
validated again. A spec with inputs has them propagated when its generated ``forward`` is to carry
shape comments (``shapes: true`` or ``fxgen generate --shapes``), which also checks that they
flow (a located error when they do not).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.fx

from fxgen._errors import Diagnostic, FxgenError, SpecError
from fxgen.check.validate import SpecLike, as_spec, validate_document
from fxgen.passes.run import Transformed, apply_passes, pass_names
from fxgen.policy.policy import Policy, policy_for
from fxgen.spec.model import Spec
from fxgen.write.outputs import Job

__all__ = ["generate", "load", "prepare", "render_job", "render_job_safely", "shape_comments", "transformed"]


def transformed(spec: Spec, policy: Policy, state: Mapping[str, torch.Tensor] | None = None) -> Transformed | None:
    """``spec``'s own passes applied (None when it has none)."""
    if not spec.passes:
        return None
    return apply_passes(spec, spec.passes, policy, state=state)


def prepare(spec: Spec, policy: Policy, *, shapes: bool = False) -> tuple[Spec, dict[int, str] | None, list[str]]:
    """What generating ``spec`` renders: the spec after its passes, the shape comments of its
    nodes (by index; with ``shapes`` or ``shapes: true``), and the names of the passes applied.
    Inputs are propagated only for the comments (which then also checks that they flow): that
    check is ``fxgen validate``'s and ``fxgen show``'s, and generating stays as fast as without."""
    result = transformed(spec, policy)
    final = result.spec if result is not None else spec
    comments = None
    if final.inputs and (shapes or spec.shapes):
        comments = shape_comments(final, policy, origin=spec if result is not None else None)
    elif shapes and not final.inputs:
        raise SpecError.at(spec.locate(()), "--shapes needs example inputs: declare them under `inputs:` "
                           "(`inputs: {x: {shape: [1, 3, 224, 224]}}`)")  # fmt: skip
    return final, comments, pass_names(spec.passes)


def shape_comments(spec: Spec, policy: Policy, origin: Spec | None = None) -> dict[int, str]:
    """Each node's output (``float32[batch, 8, 14, 14]``), by index in ``spec.nodes`` (``origin``:
    the spec it was transformed from, where a failure is reported)."""
    from fxgen.analysis.shapes import analyse

    return {info.index: info.value for info in analyse(spec, policy, origin=origin).nodes}


def generate(
    spec: Spec | str | Path,
    *,
    allow: Iterable[str] | Policy | None = None,
    label: str | None = None,
    shapes: bool = False,
) -> str:
    """The generated source for a spec (a Spec, or a path to a spec file): after its passes, with
    shape comments when ``shapes`` (or the spec's ``shapes: true``)."""
    from fxgen.codegen.generate import render_spec, spec_bytes, spec_label
    from fxgen.write.header import spec_digest

    policy = policy_for(allow)
    resolved = as_spec(spec, policy)
    final, comments, passes = prepare(resolved, policy, shapes=shapes)
    return render_spec(final, label=label if label is not None else spec_label(resolved),
                       digest=spec_digest(spec_bytes(resolved), shapes=shapes), shapes=comments,
                       passes=passes)  # fmt: skip


def render_job(job: Job, allow: tuple[str, ...], shapes: bool = False) -> str:
    """Validate, transform and render one spec file for ``fxgen generate``."""
    from fxgen.codegen.generate import render_spec
    from fxgen.read.reader import parse_text

    policy = policy_for(allow)
    doc = parse_text(job.raw, str(job.spec), json_syntax=job.spec.suffix == ".json")
    spec = validate_document(doc, policy)
    final, comments, passes = prepare(spec, policy, shapes=shapes)
    return render_spec(final, label=job.label, digest=job.digest, shapes=comments, passes=passes)


def render_job_safely(args: tuple[Job, tuple[str, ...], bool]) -> tuple[str | None, list[Diagnostic] | str]:
    """``render_job`` for a worker process: errors come back as values, never as exceptions."""
    job, allow, shapes = args
    try:
        return render_job(job, allow, shapes), []
    except SpecError as exc:
        return None, exc.diagnostics
    except FxgenError as exc:
        return None, str(exc)


def load(
    spec: SpecLike,
    *,
    weights: str | Path | None = None,
    allow: Iterable[str] | Policy | None = None,
    args: Mapping[str, Any] | None = None,
) -> torch.fx.GraphModule:
    """``fxgen.load`` (see ``fxgen.assemble.load.load``), applying the spec's ``passes:`` first:
    the model is that of the transformed spec, holding the untransformed model's tensors as the
    passes left them (with ``weights``, the file's)."""
    from fxgen.assemble.load import load as assemble_load

    policy = policy_for(allow)
    if not isinstance(spec, (Spec, dict)):  # read once: whether it has passes, then the load itself
        from fxgen.read.reader import read_document

        document = read_document(spec)
        if not (isinstance(document.data, dict) and document.data.get("passes")):
            return assemble_load(document, weights=weights, allow=policy, args=args)
        resolved = validate_document(document, policy)
    elif not spec.passes if isinstance(spec, Spec) else not spec.get("passes"):
        return assemble_load(spec, weights=weights, allow=policy, args=args)
    else:
        resolved = as_spec(spec, policy)
    state = None
    if weights is not None:
        from fxgen.assemble.weights import check_digest
        from fxgen.read.weights import read_weights

        check_digest(resolved, weights)  # the pair exported together, or a clear refusal
        state = read_weights(weights)
    result = transformed(resolved, policy, state)
    assert result is not None
    from fxgen.assemble.module import build_module
    from fxgen.construct.modules import same_random_state

    with same_random_state():  # the untransformed model drew what a load draws; this draws nothing more
        gm = build_module(result.spec, policy)
    gm.load_state_dict(result.tensors, strict=True)
    return gm

