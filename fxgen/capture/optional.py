"""Optional arguments the example gives a value: captured again left out, written as one spec.

A ``forward`` parameter whose default is None (Hugging Face's ``attention_mask``, ``scale=None``)
is traced with that default (``fxgen.capture.frozen.none_defaults``) unless the example gives it a
value; then the capture computes with it as a tensor, and a caller who leaves it out, as the
original is most often called, would get the branch for a tensor. So each such argument is
captured again without it (bound to None for a trace, left out of Dynamo's example inputs), and
the two specs become one whose top-level nodes say ``if: NAME is None`` where the graphs differ
(``fxgen.describe.modes.merge_presence``; the same construct as ``if: training``, decided by the
call). Where the model's classes differ between the two captures, both are written as one graph
(``flat``), as the modes are.

Where the capture without the argument fails, or the two cannot be written as one, the spec
keeps the graph for a given argument, and a call leaving it out raises an ``AssertionError``
naming the argument and why (``if: NAME is None`` around a ``torch._assert``): it never computes
the branch for a tensor with None. The conditions of one class test at most a few inputs, so
only the first argument that captures left out is written as a conditional; any other is refused
when left out, in the same way.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable

import torch
import torch.fx
from torch.fx._symbolic_trace import _assert_is_none

from fxgen._errors import ExportError
from fxgen.capture.modes import MODES, Captures, same_graph
from fxgen.capture.options import CaptureOptions
from fxgen.capture.trace import forward_signature
from fxgen.describe.modes import ModesDiffer, merge_modes, merge_presence, refused_when, renamed
from fxgen.spec.model import Node, Spec, walk_nodes

__all__ = ["given_optional", "left_out", "with_optional"]

Describe = Callable[[Captures, bool], Spec]  # captures, flat -> their spec


def given_optional(module: torch.nn.Module, captures: Captures, options: CaptureOptions) -> list[str]:
    """The ``forward`` parameters whose default is None that the capture takes as inputs (the
    example or the caller's concrete args gave them): neither fixed (``concrete_args``,
    ``example_kwargs``) nor bound to None."""
    if isinstance(module, torch.fx.GraphModule) or not captures:
        return []
    signature = forward_signature(module)
    if signature is None:
        return []
    fixed = {*(options.concrete_args or {}), *(options.example_kwargs or {})}
    gm = next(iter(captures.values()))[0]
    placeholders = {str(n.target).lstrip("*") for n in gm.graph.nodes if n.op == "placeholder"}
    asserted = {str(n.args[0]) for n in gm.graph.nodes if n.op == "call_function" and n.target is _assert_is_none}
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in signature.parameters.values()
            if p.default is None and p.kind in kinds and p.name in placeholders and p.name not in fixed | asserted]  # fmt: skip


def left_out(module: torch.nn.Module, captures: Captures, options: CaptureOptions, names: frozenset[str]) -> CaptureOptions:
    """How to capture ``module`` as the captures were made, with ``names`` left out: bound to None
    for a trace, not among a Dynamo capture's example inputs."""
    from fxgen.capture.dynamo import example_arguments

    if any(doc is not None for _, doc in captures.values()):  # (a Dynamo capture has a doc)
        inputs, _ = example_arguments(module, options.example_inputs, options.example_kwargs)
        return options.replace(capture="dynamo", example_inputs={k: v for k, v in inputs.items() if k not in names})
    return options.replace(capture="trace", concrete_args={**(options.concrete_args or {}), **dict.fromkeys(names)})


MAX_LEFT_OUT = 3  # optional arguments captured left out: every subset of them is a capture of its own


def with_optional(
    module: torch.nn.Module,
    captures: Captures,
    spec: Spec,
    options: CaptureOptions,
    *,
    flat: bool,
    capture: Callable[[CaptureOptions], Captures],
    describe: Describe,
    describe_modes: Callable[[Captures, bool], dict[bool, Spec]],
    notify: Callable[[str], None],
) -> Spec:
    """``spec`` (``describe(captures, flat)``) computing, for each optional argument the example
    gives, what the model computes when a call leaves it out too (module docstring); ``capture``
    captures both modes with other options, ``describe_modes`` gives each mode's spec."""
    names = given_optional(module, captures, options)
    if not names:
        return spec
    refused: dict[str, str] = {}
    calls: dict[frozenset[str], Captures] = {frozenset(): captures}  # the arguments left out -> captures
    for name in names:
        if len(calls) == 2**MAX_LEFT_OUT:
            refused[name] = f"at most {MAX_LEFT_OUT} optional arguments are captured left out"
            continue
        try:  # with it left out, and with each set of those left out before it
            more = {left | {name}: _captured(capture, module, captures, options, left | {name}) for left in calls}
        except ExportError as exc:
            refused[name] = f"the model cannot be captured without it ({_short(exc.message)})"
            continue
        calls.update(more)
    tested = [name for name in names if name not in refused]
    while tested:
        try:
            spec = _calls_spec(spec, calls, tested, flat, describe, describe_modes)
            break
        except ModesDiffer as exc:
            problem = str(exc)
        if not flat:  # the model's classes differ between the calls: one graph, as for the modes
            try:
                spec = _calls_spec(describe(captures, True), calls, tested, True, describe, describe_modes)
                notify(f"{problem}: the model is written as one graph (its classes are not kept)")
                break
            except ModesDiffer as exc:
                problem = str(exc)
        refused[tested[-1]] = problem
        tested = tested[:-1]
        calls = {left: c for left, c in calls.items() if left <= set(tested)}
    for name, why in refused.items():
        notify(f"{type(module).__name__}.forward's optional argument {name!r} is given by the example, and a call "
               f"leaving it out raises an error naming it: {why}")  # fmt: skip
    return _refusing(spec, refused) if refused else spec


def _captured(capture: Callable[[CaptureOptions], Captures], module: torch.nn.Module, captures: Captures,
              options: CaptureOptions, names: frozenset[str]) -> Captures:  # fmt: skip
    """The captures of the call leaving out ``names``, without the checks that they are None (a
    trace's; the conditional decides them) nor those on inputs the call giving them has not (a
    TorchDynamo capture records each optional argument after its example inputs: leaving one out
    records those before it too)."""
    absent = capture(left_out(module, captures, options, names))
    had = {str(n.target) for n in next(iter(captures.values()))[0].graph.nodes if n.op == "placeholder"}
    for gm, _ in absent.values():
        extra = {str(n.target) for n in gm.graph.nodes if n.op == "placeholder"} - had
        for name in sorted(names | extra):
            _without_none_checks(gm, name)
    return absent


def _calls_spec(spec: Spec, calls: dict[frozenset[str], Captures], names: list[str], flat: bool, describe: Describe,
                describe_modes: Callable[[Captures, bool], dict[bool, Spec]]) -> Spec:  # fmt: skip
    """One spec of every call's captures (``calls``: by the arguments it leaves out, ``spec`` the
    one leaving out none): where no capture depends on the mode, their specs merged as they are;
    else each mode's specs merged, then the modes."""
    if all(len(c) == 1 or same_graph(c[False][0], c[True][0]) for c in calls.values()):
        specs = {left: spec if not left else describe(c, flat) for left, c in calls.items()}
        return _either_order(specs, names)
    by_mode = {left: describe_modes(c, flat) for left, c in calls.items()}
    if any(len(specs) != 2 for specs in by_mode.values()):
        raise ModesDiffer("a call is captured in one mode only")
    merged = {mode: _either_order({left: specs[mode] for left, specs in by_mode.items()}, names) for mode in MODES}
    return merge_modes(merged[False], merged[True])


def _either_order(specs: dict[frozenset[str], Spec], names: list[str]) -> Spec:
    """``_tree`` with the first argument's conditional outermost, or where the graphs inside it
    differ otherwise (the names torch.fx gives shift with the nodes before them), the last's."""
    try:
        return _tree(specs, names, frozenset())
    except ModesDiffer:
        if len(names) < 2:
            raise
        return _tree(specs, names[::-1], frozenset())


def _tree(specs: dict[frozenset[str], Spec], names: list[str], left: frozenset[str]) -> Spec:
    """The spec of the calls leaving out ``left`` and any of ``names``: ``if: NAME is None`` on the
    first, around the specs of the rest with it given and left out."""
    if not names:
        return specs[left]
    first, rest = names[0], names[1:]
    return _merged(_tree(specs, rest, left), _tree(specs, rest, left | {first}), first)


def _merged(given: Spec, absent: Spec, name: str) -> Spec:
    """``merge_presence`` of the two specs, ``absent``'s placeholders, inputs and checks made
    ``given``'s (Dynamo captures no input for an argument left out)."""
    given = _optional_input(given, name)
    placeholders = [n for n in given.nodes if isinstance(n, Node) and n.op == "placeholder"]
    rest = [n for n in absent.nodes if not (isinstance(n, Node) and n.op == "placeholder")]
    taken = {str(n.name) for n in walk_nodes([*given.nodes, *absent.nodes])}
    for node in placeholders:  # (Dynamo names a value after the local variable: `mask = torch.ones(...)`)
        if any(n.name == node.name for n in walk_nodes(rest)):
            fresh = next(f"{node.name}_{k}" for k in range(1, len(taken) + 2) if f"{node.name}_{k}" not in taken)
            taken.add(fresh)
            rest = renamed(rest, str(node.name), fresh)
    absent = dataclasses.replace(absent, nodes=[*placeholders, *rest], inputs=given.inputs, checks=given.checks)
    return merge_presence(given, absent, name)


def _optional_input(spec: Spec, name: str) -> Spec:
    """``spec`` whose input ``name`` has its default, None, as ``forward`` has, and a type that
    holds it (a Dynamo capture writes ``torch.Tensor`` and no default)."""
    nodes = [_optional(n) if isinstance(n, Node) and n.op == "placeholder" and n.name == name else n for n in spec.nodes]
    return dataclasses.replace(spec, nodes=nodes)


def _optional(node: Node) -> Node:
    plain = node.type is not None and "Optional" not in node.type and "None" not in node.type
    return dataclasses.replace(node, default=None, type=f"typing.Optional[{node.type}]" if plain else node.type)


def _without_none_checks(gm: torch.fx.GraphModule, name: str) -> None:
    """The trace's check that ``name`` is None (a concrete argument's): the conditional decides it."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is _assert_is_none and str(node.args[0]) == name:
            gm.graph.erase_node(node)
    gm.recompile()


def _refusing(spec: Spec, refused: dict[str, str]) -> Spec:
    """``spec`` whose forward, called without one of ``refused``, raises an AssertionError naming it."""
    guards = {}
    for name, why in refused.items():
        spec = _optional_input(spec, name)
        guards[f"{name} is None"] = (f"{spec.name}.forward was exported from a call giving {name!r} and cannot "
                                     f"compute without it ({why}): pass {name}")  # fmt: skip
    return refused_when(spec, guards)


def _short(message: str) -> str:
    return message if len(message) <= 160 else message[:157] + "..."
