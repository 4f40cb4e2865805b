"""fxgen's public functions: each is the whole way through the stages for one job.

``fxgen/__init__`` re-exports them (lazily, so ``import fxgen`` imports neither torch nor black);
the stages below do the work and never call back up here. This module decides the order: a spec
is read and validated once (``check``), transformed by its own ``passes:`` when it has them
(``passes``), then built (``assemble``) or rendered (``codegen``); a spec with ``inputs:`` is
analysed for shape comments (``analysis``). ``render_job_safely`` is the same way for one file of
``fxgen generate``, run in a worker process.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fxgen._errors import Diagnostic, FxgenError, Location, SpecError

if TYPE_CHECKING:
    import torch
    import torch.fx

    from fxgen.check.passes import PassArguments
    from fxgen.check.validate import SpecLike
    from fxgen.passes.run import Transformed
    from fxgen.policy.policy import Policy
    from fxgen.spec.choice import Choice
    from fxgen.spec.model import Spec
    from fxgen.write.outputs import Job

__all__ = [
    "generate",
    "load",
    "load_spec",
    "pass_arguments",
    "prepare",
    "render_job",
    "render_job_safely",
    "shape_comments",
    "to_spec",
    "transform",
    "transformed",
    "validate",
]


def load_spec(
    path: str | Path,
    *,
    allow: Iterable[str] | Policy | None = None,
    variant: str | None = None,
    args: Mapping[str, Any] | None = None,
) -> Spec:
    """Read and fully validate a spec file; raises SpecError listing every problem. ``variant``
    (one of the spec's ``variants:``) and ``args`` (values of the top class's arguments, after
    the variant's) become the Spec's argument defaults, and it is checked with them."""
    from fxgen.check.validate import validate_document
    from fxgen.policy.policy import policy_for
    from fxgen.read.imports import read_spec

    return validate_document(read_spec(path), policy_for(allow), _choice(variant, args), passes=pass_arguments)


def pass_arguments() -> Mapping[str, PassArguments]:
    """The built-in passes and what each takes: the catalogue validation checks a spec's
    ``passes:`` against (asked for only when a spec names a pass: it imports every pass)."""
    from fxgen.passes.registry import pass_arguments as catalogue

    return catalogue()


def validate(
    path: str | Path,
    *,
    allow: Iterable[str] | Policy | None = None,
    variant: str | None = None,
    args: Mapping[str, Any] | None = None,
) -> Spec:
    """Check a spec file; the same as ``load_spec`` (the name the CLI command uses)."""
    return load_spec(path, allow=allow, variant=variant, args=args)


def _choice(variant: str | None, args: Mapping[str, Any] | None, origin: str = "args=") -> Choice:
    from fxgen.spec.choice import Choice

    return Choice.of(variant, args, origin)


def load(
    spec: SpecLike,
    *,
    weights: str | Path | None = None,
    allow: Iterable[str] | Policy | None = None,
    args: Mapping[str, Any] | None = None,
    variant: str | None = None,
) -> torch.fx.GraphModule:
    """A spec (a path, a dict or a Spec) as a runnable ``torch.fx.GraphModule`` (see
    ``fxgen.assemble.load.load``), after the spec's own ``passes:``: the model is that of the
    transformed spec, holding the untransformed model's tensors as the passes left them (with
    ``weights``, the file's). ``args`` are the top class's constructor arguments (format 2),
    after those of ``variant`` (one of the spec's ``variants:``)."""
    from fxgen.assemble.load import load as assemble_load
    from fxgen.check.validate import as_spec, validate_document
    from fxgen.policy.policy import policy_for
    from fxgen.spec.model import Spec

    policy = policy_for(allow)
    if not isinstance(spec, (Spec, dict)):  # read once: whether it has passes, then the load itself
        from fxgen.read.imports import read_spec

        document = read_spec(spec)
        if not (isinstance(document.data, dict) and document.data.get("passes")):
            return assemble_load(document, weights=weights, allow=policy, args=args, variant=variant)
        resolved = validate_document(document, policy, _choice(variant, args, "load(args=...)"), passes=pass_arguments)
    elif not spec.passes if isinstance(spec, Spec) else not spec.get("passes"):
        return assemble_load(spec, weights=weights, allow=policy, args=args, variant=variant)
    else:
        resolved = as_spec(spec, policy, _choice(variant, args, "load(args=...)"), passes=pass_arguments)
    state = None
    if weights is not None:
        from fxgen.assemble.weights import read_paired_weights

        state = read_paired_weights(resolved, weights)
    result = transformed(resolved, policy, state)
    assert result is not None
    from fxgen.assemble.module import build_module
    from fxgen.construct.modules import same_random_state

    with same_random_state():  # the untransformed model drew what a load draws; this draws nothing more
        gm = build_module(result.spec, policy)
    gm.load_state_dict(result.tensors, strict=True)
    return gm


def generate(
    spec: Spec | str | Path,
    *,
    allow: Iterable[str] | Policy | None = None,
    label: str | None = None,
    shapes: bool = False,
    variant: str | None = None,
    args: Mapping[str, Any] | None = None,
) -> str:
    """The generated source for a spec (a Spec, or a path to a spec file): after its passes, with
    shape comments when ``shapes`` (or the spec's ``shapes: true``). ``variant`` and ``args``
    become the generated class's argument defaults (as ``fxgen generate --variant/--set``)."""
    from fxgen.check.validate import as_spec
    from fxgen.codegen.generate import render_spec, spec_bytes, spec_label
    from fxgen.policy.policy import policy_for
    from fxgen.write.header import spec_digest

    policy = policy_for(allow)
    choice = _choice(variant, args)
    resolved = as_spec(spec, policy, choice, passes=pass_arguments)
    final, comments, passes = prepare(resolved, policy, shapes=shapes)
    return render_spec(final, label=label if label is not None else spec_label(resolved),
                       digest=spec_digest(spec_bytes(resolved), shapes=shapes, choice=choice.key()),
                       shapes=comments, passes=passes)  # fmt: skip


def transform(
    spec: SpecLike,
    passes: Sequence[Any],
    *,
    weights: str | Path | Mapping[str, torch.Tensor] | None = None,
    allow: Iterable[str] | Policy | None = None,
    notes: list[str] | None = None,
) -> Spec | tuple[Spec, dict[str, torch.Tensor]]:
    """``spec`` (a path, dict or Spec; its own ``passes:`` first) transformed by ``passes``: each
    a built-in pass's name (``"eliminate_dead_code"``) or ``{name: {arguments}}``, or the name of a
    pass registered with ``fxgen.register_pass``. Returns the new spec, validated again; with
    ``weights`` (a safetensors file or a state dict), also the tensors after the passes (fused
    ones for ``fuse_conv_bn``). ``notes``, when given, receives what each pass reported."""
    from fxgen.check.validate import as_spec, parse_data
    from fxgen.passes.registry import registered
    from fxgen.passes.run import apply_passes, check_pass_list
    from fxgen.policy.policy import policy_for

    policy = policy_for(allow)
    resolved = as_spec(spec, policy, passes=pass_arguments)
    doc = parse_data({"passes": list(passes)}, "<passes>")
    check_pass_list(doc, ("passes",), policy, allowed=registered())
    state: dict[str, torch.Tensor] | None = None
    if isinstance(weights, (str, Path)):
        from fxgen.assemble.weights import read_paired_weights

        state = read_paired_weights(resolved, weights)
    elif weights is not None:
        state = dict(weights)
    every = [*resolved.passes, *doc.data["passes"]]
    own = len(resolved.passes)

    def locate(i: int) -> Location:
        return resolved.locate(("passes", i)) if i < own else doc.locate(("passes", i - own))

    result = apply_passes(resolved, every, policy, state=state, locate=locate)
    if notes is not None:
        notes.extend(result.notes)
    return (result.spec, result.tensors) if weights is not None else result.spec


def to_spec(graph_module: torch.fx.GraphModule, *, name: str | None = None) -> Spec:
    """The spec of a GraphModule (one built by ``fxgen.load`` gives back an equal spec)."""
    from fxgen.describe.to_spec import graph_module_to_spec

    return graph_module_to_spec(graph_module, name=name)


def transformed(
    spec: Spec, policy: Policy, state: Mapping[str, torch.Tensor] | None = None, *, meta: bool = False
) -> Transformed | None:
    """``spec``'s own passes applied (None when it has none); with ``meta``, on a model built on
    the meta device (validating, generating: only the resulting spec is wanted)."""
    if not spec.passes:
        return None
    from fxgen.passes.run import apply_passes

    return apply_passes(spec, spec.passes, policy, state=state, meta=meta)


def prepare(spec: Spec, policy: Policy, *, shapes: bool = False) -> tuple[Spec, dict[int, str] | None, list[str]]:
    """What generating ``spec`` renders: the spec after its passes, the shape comments of its
    nodes (by index; with ``shapes`` or ``shapes: true``), and the names of the passes applied.
    Inputs are propagated only for the comments (which then also checks that they flow): that
    check is ``fxgen validate``'s and ``fxgen show``'s, and generating stays as fast as without."""
    from fxgen.passes.run import pass_names

    result = transformed(spec, policy, meta=True)
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
    from fxgen.assemble.module import default_instance

    instance, positions = default_instance(spec)  # conditionals and repeats: at the default arguments
    infos = analyse(instance, policy, origin=origin).nodes
    return {at: info.value for info in infos if (at := positions[info.index]) is not None}


def render_job(job: Job, allow: tuple[str, ...], shapes: bool = False) -> str:
    """Validate, transform and render one spec file for ``fxgen generate`` (with the job's
    chosen arguments as the class's defaults)."""
    from fxgen.check.validate import validate_document
    from fxgen.codegen.generate import render_spec
    from fxgen.policy.policy import policy_for
    from fxgen.read.imports import with_imports
    from fxgen.read.reader import parse_text
    from fxgen.spec.choice import Choice

    policy = policy_for(allow)
    doc = with_imports(parse_text(job.raw, str(job.spec), json_syntax=job.spec.suffix == ".json"), job.spec)
    spec = validate_document(doc, policy, Choice.of(job.variant, dict(job.arguments)), passes=pass_arguments)
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
