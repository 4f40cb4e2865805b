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
from fxgen.capture.modes import Captures
from fxgen.capture.options import CaptureOptions
from fxgen.capture.trace import forward_signature
from fxgen.describe.modes import ModesDiffer, merge_modes, merge_presence, renamed
from fxgen.spec.model import IfNodes, Item, Node, Spec, walk_nodes

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


def left_out(module: torch.nn.Module, captures: Captures, options: CaptureOptions, name: str) -> CaptureOptions:
    """How to capture ``module`` as the captures were made, with ``name`` left out: bound to None
    for a trace, not among a Dynamo capture's example inputs."""
    from fxgen.capture.dynamo import example_arguments

    if any(doc is not None for _, doc in captures.values()):  # (a Dynamo capture has a doc)
        inputs, _ = example_arguments(module, options.example_inputs, options.example_kwargs)
        return options.replace(capture="dynamo", example_inputs={k: v for k, v in inputs.items() if k != name})
    return options.replace(capture="trace", concrete_args={**(options.concrete_args or {}), name: None})


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
    refused: dict[str, str] = {}
    for name in names:
        if refused.keys() != set(names[: names.index(name)]):  # one is written as a conditional already
            refused[name] = f"only {_written(names, refused)} is captured left out"
            continue
        try:
            absent = capture(left_out(module, captures, options, name))
        except ExportError as exc:
            refused[name] = f"the model cannot be captured without it ({_short(exc.message)})"
            continue
        for gm, _ in absent.values():
            _without_none_checks(gm, name)
        try:
            spec = _both(spec, captures, absent, name, flat, describe, describe_modes)
        except ModesDiffer as exc:
            if flat:
                refused[name] = str(exc)
                continue
            try:  # the model's classes differ between the calls: one graph, as for the modes
                spec = _both(describe(captures, True), captures, absent, name, True, describe, describe_modes)
            except ModesDiffer as again:
                refused[name] = str(again)
                continue
            notify(f"{exc}: the model is written as one graph (its classes are not kept)")
    for name, why in refused.items():
        notify(f"{type(module).__name__}.forward's optional argument {name!r} is given by the example, and a call "
               f"leaving it out raises an error naming it: {why}")  # fmt: skip
    return _refusing(spec, refused) if refused else spec


def _both(spec: Spec, captures: Captures, absent: Captures, name: str, flat: bool, describe: Describe,
          describe_modes: Callable[[Captures, bool], dict[bool, Spec]]) -> Spec:  # fmt: skip
    """``spec`` (``captures``') and the spec of ``absent`` as one: merged as they are, or where the
    mode makes conditionals of its own, the two calls merged in each mode, then the modes."""
    try:
        return _merged(spec, describe(absent, flat), name)
    except ModesDiffer:
        given_modes, absent_modes = describe_modes(captures, flat), describe_modes(absent, flat)
        if given_modes.keys() != absent_modes.keys() or len(given_modes) != 2:
            raise
        merged = {mode: _merged(given_modes[mode], absent_modes[mode], name) for mode in given_modes}
        return merge_modes(merged[False], merged[True])


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
    """``spec`` whose input ``name`` has its default, None, as ``forward`` has (a Dynamo capture
    writes none)."""
    nodes = [dataclasses.replace(n, default=None) if isinstance(n, Node) and n.op == "placeholder" and n.name == name
             else n for n in spec.nodes]  # fmt: skip
    return dataclasses.replace(spec, nodes=nodes)


def _without_none_checks(gm: torch.fx.GraphModule, name: str) -> None:
    """The trace's check that ``name`` is None (a concrete argument's): the conditional decides it."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is _assert_is_none and str(node.args[0]) == name:
            gm.graph.erase_node(node)
    gm.recompile()


def _refusing(spec: Spec, refused: dict[str, str]) -> Spec:
    """``spec`` whose forward, called without one of ``refused``, raises an AssertionError naming it
    (after the inputs, before anything is computed)."""
    guards: list[Item] = []
    for name, why in refused.items():
        spec = _optional_input(spec, name)
        message = (f"{spec.name}.forward was exported from a call giving {name!r} and cannot compute without it "
                   f"({why}): pass {name}")  # fmt: skip
        guards.append(IfNodes(f"{name} is None", [Node("call_function", None, "torch._assert", [False, message])]))
    first = next(k for k, n in enumerate(spec.nodes) if not (isinstance(n, Node) and n.op == "placeholder"))
    return dataclasses.replace(spec, fxgen=2, nodes=[*spec.nodes[:first], *guards, *spec.nodes[first:]])


def _written(names: list[str], refused: dict[str, str]) -> str:
    return next(repr(n) for n in names if n not in refused)


def _short(message: str) -> str:
    return message if len(message) <= 160 else message[:157] + "..."
