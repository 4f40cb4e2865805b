"""``fxgen.export`` and ``fxgen.save_weights``: trace a module and turn its graph into a Spec, and
write the tensors its checkpoint carries.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Unpack

import torch
import torch.fx

from fxgen._errors import ExportError
from fxgen.capture.blocks import equal_classes, keep_blocks
from fxgen.capture.containers import compact_containers
from fxgen.capture.effects import NotRecorded
from fxgen.capture.frozen import none_defaults
from fxgen.capture.keywords import torch_keywords
from fxgen.capture.loops import write_loops
from fxgen.capture.modes import (
    MODE_FREE_KEY,
    MODES,
    ONE_MODE_KEY,
    Captures,
    modes_kept,
    proven,
    refuse_unproven,
    same_graph,
)
from fxgen.capture.options import CaptureKwargs, CaptureOptions
from fxgen.capture.trace import HIDDEN_PARAMETERS, LeafSpec, forward_signature, trace
from fxgen.describe.modes import ModesDiffer, merge_modes, refused_when
from fxgen.describe.to_spec import (
    avoid_reserved_names,
    graph_module_to_spec,
    input_checks,
    loadable_class_name,
    spec_state,
    tensor_dtype,
)
from fxgen.spec.model import InputSpec, Spec
from fxgen.spec.resolve import TRAINING

__all__ = ["capture_graph", "capture_modes", "capture_notes", "captured_spec", "dynamo_graph", "export", "modes_spec",
           "save_weights", "specialised_doc", "tied_notes", "traced_concrete_args", "traced_options"]  # fmt: skip


def export(
    module: torch.nn.Module, *, name: str | None = None, flat: bool = False, **options: Unpack[CaptureKwargs]
) -> Spec:
    """Capture ``module``'s graph and turn it into a Spec.

    ``options`` say how (``fxgen.capture.options.CaptureOptions``): ``capture`` is ``"trace"``
    (torch.fx's symbolic tracing, with ``concrete_args``, ``leaf_modules``,
    ``autowrap_functions``, ``tracer_class``), ``"dynamo"`` (TorchDynamo, on ``example_inputs``: a
    tensor, a tuple of tensors or a dict of them by ``forward`` parameter name; ``example_kwargs``
    are fixed while capturing, such as ``use_cache=False``) or ``"auto"``: trace, and when tracing
    fails capture with Dynamo if example inputs were given (a warning says so).

    By default the model's own classes are kept: each user-defined submodule class becomes a
    block of a format-2 spec, split from the one traced or captured graph by the module calls
    each node ran inside (``fxgen.capture.partition``, ``fxgen.capture.blocks``) and proven,
    expanded, to be that graph; the others are inlined, with a warning saying why.
    ``flat=True`` gives one graph (format 1).

    An already traced or transformed GraphModule is accepted as it is. Every call_module
    target becomes a verified constructor call (``fxgen.register_constructor`` covers classes
    fxgen does not know); parameters and buffers keep their paths, shapes and dtypes; the
    weights themselves go to ``save_weights``.
    """
    from fxgen.capture.dynamo import kept_state

    how = traced_options(module, CaptureOptions.of(options))
    notes: list[str] = []
    # Every run of the model on example inputs (a capture in train mode, auto's proof, the blocks'
    # proof in each mode) leaves its buffers (batch norm's statistics) and the random state as they were.
    with kept_state(module):
        captures = capture_modes(module, how, notify=notes.append)
        for message in dict.fromkeys(notes):
            warnings.warn(message, UserWarning, stacklevel=2)
        notes.clear()
        spec, gm = modes_spec(module, captures, name or _class_name(module), flat=flat, options=how, notify=notes.append)
    for message in (*capture_notes(gm), *tied_notes(gm), *dict.fromkeys(notes)):
        warnings.warn(message, UserWarning, stacklevel=2)
    return spec


def capture_modes(
    module: torch.nn.Module, options: CaptureOptions, *, notify: Callable[[str], None]
) -> Captures:
    """``module``'s graph in eval mode and in train mode (``capture_graph`` in each), every
    submodule's mode put back afterwards; one mode only for a GraphModule (its graph is what it
    is) or where the other cannot be captured (``notify``-ed). A symbolic trace that provably
    read no module's mode stands for both (``fxgen.capture.modes.ModeWatch``): it is made once.

    ``"auto"`` captures both modes the same way: with example inputs, if tracing fails in one
    mode, or a traced graph computes something else than the model on them (``proven``, each
    mode), both are captured with TorchDynamo; if that fails too, the difference is refused."""
    current = module.training
    if isinstance(module, torch.fx.GraphModule):
        return {current: capture_graph(module, options, notify=notify)}
    captures: Captures = {}
    failed: dict[bool, ExportError] = {}
    with modes_kept(module):
        for mode in (current, not current):  # the model's own mode first: its errors are the ones it always got
            if mode != current and _mode_free(captures[current]):
                captures[mode] = captures[current]  # (traced again, it would record the same graph)
                break
            module.train(mode)
            try:
                captures[mode] = capture_graph(module, options, notify=notify)
            except ExportError as exc:
                if mode == current:
                    raise
                failed[mode] = exc
        if options.capture == "auto" and options.example_inputs is not None:
            captures, failed = _proven_captures(module, captures, failed, options, notify)
    for mode, error in failed.items():
        why = f"{_MODE[mode]} mode cannot be captured ({_short(error.message)})"
        hint = ("pass example inputs to capture it with TorchDynamo" if options.example_inputs is None
                else "TorchDynamo could not capture it on the example inputs either")  # fmt: skip
        captures[not mode][0].meta[ONE_MODE_KEY] = (mode, why)
        notify(f"{why}: the spec computes what the model computes in {_MODE[not mode]} mode, and refuses "
               f"{_MODE[mode]} mode with an AssertionError; {hint}")  # fmt: skip
    return captures


_MODE = {False: "eval", True: "train"}


def _mode_free(capture: tuple[torch.fx.GraphModule, str | None]) -> bool:
    """Whether a symbolic trace provably read no module's mode (``fxgen.capture.modes.ModeWatch``):
    traced in the other mode it would be the same graph."""
    gm, doc = capture
    return doc is None and bool(gm.meta.get(MODE_FREE_KEY))


def _proven_captures(module: torch.nn.Module, captures: Captures, failed: dict[bool, ExportError],
                     options: CaptureOptions, notify: Callable[[str], None]) -> tuple[Captures, dict[bool, ExportError]]:  # fmt: skip
    """Auto capture's proof on the example inputs: the traced graphs of both modes, or both
    captured with TorchDynamo where one mode was not traced or a traced graph is not the model
    (refused if TorchDynamo fails and a traced graph is not the model)."""
    from fxgen.capture.dynamo import example_arguments

    inputs, kwargs = example_arguments(module, options.example_inputs, options.example_kwargs)
    traced = [mode for mode, (_, doc) in captures.items() if doc is None]
    difference = None
    if failed or len(traced) not in (0, len(captures)):
        mode = next(iter(failed)) if failed else next(m for m in MODES if m not in traced)
        why = f"symbolic tracing fails in {_MODE[mode]} mode"
    else:
        difference = _first_difference(module, captures, traced, inputs, kwargs)
        if difference is None:
            return captures, failed
        why = f"the traced graph is not the model: {difference}"
    dynamo = options.replace(capture="dynamo")
    again: Captures = {}
    try:
        for mode in MODES:
            module.train(mode)
            again[mode] = capture_graph(module, dynamo)
    except ExportError as exc:
        if difference is None:  # (tracing failed in one mode: the traced one must still be the model)
            difference = _first_difference(module, captures, traced, inputs, kwargs)
        if difference is not None:
            raise refuse_unproven(difference, exc) from None
        return captures, failed
    notify(f"{why}: captured with TorchDynamo on the example inputs in both modes instead")
    return again, {}


def _first_difference(module: torch.nn.Module, captures: Captures, traced: list[bool], inputs: dict[str, Any],
                      kwargs: dict[str, Any]) -> str | None:  # fmt: skip
    for mode in traced:
        module.train(mode)
        difference = proven(module, captures[mode][0], inputs, kwargs, _as_captured)
        if difference is not None:
            return difference
    return None


@contextlib.contextmanager
def _as_captured(module: torch.nn.Module) -> Iterator[None]:
    """Run ``module`` as the captures ran it (gradients enabled, none required by a parameter),
    leaving it as it was found (its attributes, buffers and the random state)."""
    from fxgen.capture.dynamo import kept_state, no_parameter_requires_grad
    from fxgen.capture.preserve import Snapshot

    snapshot = Snapshot(module)
    try:
        with kept_state(module), torch.enable_grad(), no_parameter_requires_grad(module):
            yield
    finally:
        snapshot.restore()


def modes_spec(
    module: torch.nn.Module,
    captures: Captures,
    name: str,
    *,
    flat: bool,
    options: CaptureOptions,
    notify: Callable[[str], None],
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[Spec, torch.fx.GraphModule]:
    """The spec of ``capture_modes``'s graphs (``captured_spec``), and the graph module whose
    state the weights are: where both modes' graphs are the same, the spec of one; else both
    described and written as one (``fxgen.describe.modes``), in one graph per mode if the
    model's classes differ between the modes (``notify``-ed). An optional argument the example
    gives is captured left out too, and the spec computes that call as well
    (``fxgen.capture.optional``). Unless ``flat``, a run of calls over a container's items is
    written as a loop (``fxgen.capture.loops``)."""
    from fxgen.capture.optional import with_optional

    spec, gm = _modes_spec(module, captures, name, flat=flat, options=options, notify=notify, progress=progress)

    def capture(other: CaptureOptions) -> Captures:
        return capture_modes(module, other, notify=notify)

    def describe(other: Captures, flat: bool) -> Spec:
        return _modes_spec(module, other, name, flat=flat, options=options, notify=notify, progress=progress)[0]

    def describe_modes(other: Captures, flat: bool) -> dict[bool, Spec]:
        return _mode_specs(module, other, name, flat=flat, options=options, notify=notify, progress=progress)

    spec = with_optional(module, captures, spec, options, flat=flat, capture=capture, describe=describe,
                         describe_modes=describe_modes, notify=notify)  # fmt: skip
    if not flat and not isinstance(module, torch.fx.GraphModule):
        spec = write_loops(spec, module)  # (last: the modes and calls are merged node for node first)
        spec = compact_containers(spec)
        if equal_classes(spec):
            raise ExportError(f"internal error: export wrote equal classes {equal_classes(spec)}; please report it")
    return spec, gm


def _modes_spec(module: torch.nn.Module, captures: Captures, name: str, *, flat: bool, options: CaptureOptions,
                notify: Callable[[str], None], progress: Callable[[int, int, str], None] | None,
                ) -> tuple[Spec, torch.fx.GraphModule]:  # fmt: skip
    """``modes_spec`` for the call the captures were made on."""
    for gm, _ in captures.values():
        avoid_reserved_names(gm.graph)
    primary = module.training if module.training in captures else next(iter(captures))
    gm, doc = captures[primary]
    if len(captures) == 1 or same_graph(captures[False][0], captures[True][0]):
        spec = captured_spec(module, gm, doc, name, flat=flat, options=options, notify=notify, progress=progress)
        if ONE_MODE_KEY in gm.meta:
            mode, why = gm.meta[ONE_MODE_KEY]
            spec = refused_when(spec, {TRAINING if mode else f"not {TRAINING}": (
                f"{name} was exported in {_MODE[not mode]} mode only: {why}; call .{_MODE[not mode]}() "
                f"first, or export it so that {_MODE[mode]} mode is captured")})  # fmt: skip
        return spec, gm
    try:
        return _merged(module, captures, name, flat=flat, options=options, notify=notify, progress=progress), gm
    except ModesDiffer as exc:
        differs = exc
    if not flat:
        notify(f"{differs}: the model is written as one graph per mode (its classes are not kept)")
        try:
            return _merged(module, captures, name, flat=True, options=options, notify=notify, progress=progress), gm
        except ModesDiffer as exc:  # (what one graph per mode cannot write either: an ExportError, as any refusal)
            differs = exc
    raise ExportError(f"the model's graphs in eval and train mode cannot be written as one spec: {differs}")


def _merged(module: torch.nn.Module, captures: Captures, name: str, *, flat: bool, options: CaptureOptions,
            notify: Callable[[str], None], progress: Callable[[int, int, str], None] | None) -> Spec:  # fmt: skip
    specs = _mode_specs(module, captures, name, flat=flat, options=options, notify=notify, progress=progress)
    return merge_modes(specs[False], specs[True])


def _mode_specs(module: torch.nn.Module, captures: Captures, name: str, *, flat: bool, options: CaptureOptions,
                notify: Callable[[str], None], progress: Callable[[int, int, str], None] | None) -> dict[bool, Spec]:  # fmt: skip
    """Each captured mode's spec (``captured_spec``), the model in that mode."""
    specs: dict[bool, Spec] = {}
    with modes_kept(module):
        for mode in MODES:
            if mode not in captures:
                continue
            module.train(mode)
            gm, doc = captures[mode]
            specs[mode] = captured_spec(module, gm, doc, name, flat=flat, options=options, notify=notify,
                                        progress=progress)  # fmt: skip
    return specs


def captured_spec(
    module: torch.nn.Module,
    gm: torch.fx.GraphModule,
    doc: str | None,
    name: str,
    *,
    flat: bool,
    options: CaptureOptions,
    notify: Callable[[str], None],
    progress: Callable[[int, int, str], None] | None = None,
) -> Spec:
    """The spec of a captured graph (``capture_graph``): the model's classes kept as blocks
    unless ``flat`` (each class inlined is ``notify``-ed, with why), else one graph. A class name
    ``load_spec`` would refuse (``F``, ``nn``, ``str``) is made one it takes, and ``notify``-ed."""
    spec = None
    if not flat and not isinstance(module, torch.fx.GraphModule):
        spec, notes = keep_blocks(module, gm, options, name, doc=doc)
        for message in notes:
            notify(message)
    if spec is None:
        torch_keywords(gm.graph)  # (after the blocks were tried: their graphs are compared with this one)
        spec = graph_module_to_spec(gm, name=name, doc=doc, progress=progress)
    checked = input_checks(gm, _example_dtypes(gm))
    if checked is not None:  # (the blocks' top class has them too; a flat spec has them already)
        spec = dataclasses.replace(spec, inputs=checked[0], checks=checked[1])
    loadable = loadable_class_name(spec)
    if loadable != spec.name:
        notify(f"class name {spec.name!r} would shadow a name the generated code uses or is no identifier: the "
               f"spec names the class {loadable!r} (pass name= / --name to choose another)")  # fmt: skip
        spec = dataclasses.replace(spec, name=loadable)
    return spec


def _example_dtypes(gm: torch.fx.GraphModule) -> dict[str, InputSpec]:
    """The dtype of each example input of a Dynamo capture, as the spec's ``inputs:`` write it."""
    from fxgen.capture.arguments import EXAMPLE_KEY

    inputs, _ = gm.meta.get(EXAMPLE_KEY, ({}, {}))
    return {name: InputSpec([], tensor_dtype(name, t)) for name, t in inputs.items()}


def capture_graph(
    module: torch.nn.Module, options: CaptureOptions, *, notify: Callable[[str], None] | None = None
) -> tuple[torch.fx.GraphModule, str | None]:
    """``module``'s GraphModule in ``to_spec``'s form, and the spec's doc (for a Dynamo capture,
    the shapes it was specialised on). ``notify`` is told when ``"auto"`` falls back to Dynamo
    (by default a warning)."""
    capture, example_inputs, example_kwargs = options.capture, options.example_inputs, options.example_kwargs
    leaves = options.leaf_modules
    if capture != "dynamo":
        concrete_args = traced_concrete_args(module, options.concrete_args, example_inputs, example_kwargs)
        try:
            return trace(module, concrete_args=concrete_args, leaf_modules=leaves,
                         autowrap_functions=options.autowrap_functions, tracer_class=options.tracer_class), None  # fmt: skip
        except ExportError as exc:
            if capture == "trace" or isinstance(exc, NotRecorded):
                raise
            if example_inputs is None:
                if HIDDEN_PARAMETERS in exc.message:  # (Dynamo needs the parameter names too)
                    raise
                raise ExportError(f"{exc.message}; or pass example_inputs (--example-input) to capture it with "
                                  "TorchDynamo", exc.location) from None  # fmt: skip
            traced = exc
            note = (f"symbolic tracing failed ({_short(exc.message)}): captured with TorchDynamo on the example "
                    "inputs instead")  # fmt: skip
            try:
                captured = dynamo_graph(module, example_inputs, example_kwargs, leaves, options.dynamic)
            except ExportError as failed:
                raise _both_failed(failed, traced) from None
            if notify is not None:
                notify(note)
            else:
                warnings.warn(note, UserWarning, stacklevel=3)
            return captured
    return dynamo_graph(module, example_inputs, example_kwargs, leaves, options.dynamic)


# What Dynamo's refusals suggest (fxgen.capture.lift, .fold, .dynamo): "; export it with capture='trace'",
# ", or export with capture='trace'".
_TRACE_INSTEAD = re.compile(r"(; |,? or )export (it )?with capture='trace'")


def _both_failed(failed: ExportError, traced: ExportError) -> ExportError:
    """Auto capture's error when TorchDynamo fails after symbolic tracing did: Dynamo's reason, its
    advice to trace instead dropped (that failed), and why tracing failed, with its fix."""
    message = _TRACE_INSTEAD.sub("", failed.message)
    return ExportError(f"{message}; symbolic tracing failed first: {traced.message}", failed.location or traced.location)


def traced_options(module: torch.nn.Module, options: CaptureOptions) -> CaptureOptions:
    """``options`` with the concrete args a trace uses (``traced_concrete_args``): what the
    capture and the blocks' proof both trace with."""
    if options.capture == "dynamo":
        return options
    concrete = traced_concrete_args(module, options.concrete_args, options.example_inputs, options.example_kwargs)
    return options.replace(concrete_args=concrete)


def traced_concrete_args(module: torch.nn.Module, concrete_args: dict[str, Any] | None, example_inputs: Any,
                         example_kwargs: dict[str, Any] | None) -> dict[str, Any] | None:  # fmt: skip
    """The concrete args ``module`` is traced with: the caller's, or without them every optional
    argument (default None) the example inputs do not give, bound to None
    (``fxgen.capture.frozen.none_defaults``)."""
    given = set(example_kwargs or ())
    if isinstance(example_inputs, Mapping):
        given.update(example_inputs)
    elif example_inputs is not None and not isinstance(module, torch.fx.GraphModule):
        count = 1 if isinstance(example_inputs, torch.Tensor) else len(example_inputs)
        signature = forward_signature(module)
        names = [p.name for p in signature.parameters.values()] if signature is not None else []
        given.update(names[:count])
    return none_defaults(module, concrete_args, given)


def dynamo_graph(
    module: torch.nn.Module,
    example_inputs: Any,
    example_kwargs: dict[str, Any] | None,
    leaf_modules: Iterable[LeafSpec],
    dynamic: Any = True,
) -> tuple[torch.fx.GraphModule, str]:
    """Capture with TorchDynamo and lift the graph (``fxgen.capture.dynamo``, ``fxgen.capture.lift``);
    the doc names the example inputs it was captured on."""
    from fxgen.capture.arguments import EXAMPLE_KEY
    from fxgen.capture.dynamo import capture_dynamo, example_arguments, kept_state
    from fxgen.capture.effects import NOTES_KEY
    from fxgen.capture.lift import lift
    from fxgen.capture.trace import leaf_predicate

    if example_inputs is None:
        raise ExportError("capture='dynamo' needs example inputs: pass example_inputs (--example-input NAME=DTYPE[SHAPE])")
    inputs, kwargs = example_arguments(module, example_inputs, example_kwargs)
    with kept_state(module):
        captured = capture_dynamo(module, inputs, kwargs, dynamic)
        gm = lift(captured, module, is_leaf=leaf_predicate(leaf_modules))
    gm.meta[EXAMPLE_KEY] = (inputs, kwargs)  # for naming the blocks' inputs (fxgen.capture.arguments)
    for note in captured.facts.notes if captured.facts is not None else ():
        gm.meta.setdefault(NOTES_KEY, []).append(note)
    return gm, specialised_doc(inputs, kwargs)


def specialised_doc(inputs: dict[str, torch.Tensor], kwargs: dict[str, Any]) -> str:
    """The spec's doc for a Dynamo capture: the example inputs it was captured on (its
    ``inputs:`` and ``checks:`` say which shapes it takes)."""
    shapes = ", ".join(f"{name}: {str(t.dtype).removeprefix('torch.')}[{', '.join(map(str, t.shape))}]"
                       for name, t in inputs.items())  # fmt: skip
    fixed = f", with {', '.join(f'{k}={v!r}' for k, v in kwargs.items())}" if kwargs else ""
    return (f"Captured by TorchDynamo on {shapes}{fixed}. It takes the shapes its inputs and checks declare "
            "and refuses others with a ValueError.")


def _short(message: str) -> str:
    return message if len(message) <= 160 else message[:157] + "..."


def capture_notes(gm: torch.fx.GraphModule) -> list[str]:
    """What a Dynamo capture changed that the user should know (``fxgen.capture.lift``)."""
    from fxgen.capture.lift import NOTES_KEY

    return list(gm.meta.get(NOTES_KEY, ()))


def tied_notes(module: torch.nn.Module) -> list[str]:
    """One note per tensor that is the same tensor as an earlier one (tied weights): the spec
    format declares each path's tensor on its own, so the tie is not kept."""
    first: dict[int, str] = {}
    notes = []
    named = (*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False))
    for path, tensor in named:
        earlier = first.setdefault(id(tensor), path)
        if earlier != path:
            notes.append(f"{path} is the same tensor as {earlier} (tied weights); a spec declares each "
                         "tensor on its own, so what is loaded or generated from it holds two equal copies: "
                         "tie them again after loading if the model is trained")  # fmt: skip
    return notes


def save_weights(
    module: torch.nn.Module,
    path: str | Path,
    *,
    name: str | None = None,
    flat: bool = False,
    **options: Unpack[CaptureKwargs],
) -> str:
    """Write the tensors of ``module``'s spec as safetensors, keys equal to the spec's paths
    (``options`` as for ``export``: the same capture gives the same paths; ``name`` and ``flat``
    change neither), streamed from the module's tensors. Returns the file's digest: set it as the
    spec's ``weights_digest`` (before writing the spec) and the spec loads only with this file."""
    from fxgen.write.weights import write_weights

    del name, flat  # blocks or one graph: the same tensors at the same paths
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # export said which capture it used
        gm, _ = capture_graph(module, traced_options(module, CaptureOptions.of(options)))
    return write_weights(path, spec_state(gm))


def _class_name(module: torch.nn.Module) -> str:
    if isinstance(module, torch.fx.GraphModule):
        return type(module).__name__.removesuffix("GraphModuleImpl") or "GraphModule"
    return type(module).__name__
