"""Which ``forward`` parameter each input of a captured block came in by.

A Dynamo graph says which values a block's nodes read from outside, not which of its forward's
parameters each one was: the arguments were bound in Python, which the graph does not record.
They are measured instead. The model runs once on the example inputs with a forward pre-hook on
each block instance, recording a fingerprint (dtype, shape and the bytes) of every tensor each
call was given, by parameter name (``position_embeddings_0`` for the first item of a tuple);
the captured graph runs once too, fingerprinting the values the blocks read. A block's inputs
take its parameters' names where a value matches exactly one parameter, when every call of every
instance of its class agrees; the others stay ``arg0``, ``arg1``… (by position). Only names are
decided here: what the spec computes never depends on them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import torch
import torch.fx

from fxgen.capture.trace import named_arguments

__all__ = ["EXAMPLE_KEY", "agreed_names", "parameter_names"]


EXAMPLE_KEY = "fxgen_example_arguments"  # GraphModule.meta: (inputs by name, fixed kwargs) of a capture

Fingerprint = tuple[str, tuple[int, ...], bytes]


def parameter_names(
    module: torch.nn.Module,
    flat: torch.fx.GraphModule,
    example: tuple[dict[str, torch.Tensor], dict[str, Any]] | None,
    calls: Mapping[int, list[list[torch.fx.Node]]],
    instances: Mapping[int, torch.nn.Module],
) -> dict[int, list[str]]:
    """For each block instance (by id) whose inputs could be named, their names. ``calls``: the
    ``flat`` nodes each call of each instance reads from outside, in order; ``example``: the
    capture's example inputs by name and fixed kwargs (``EXAMPLE_KEY`` of its meta)."""
    if example is None or not calls:
        return {}
    inputs, kwargs = example
    try:
        given = _recorded_calls(module, [instances[k] for k in calls], inputs, kwargs)
        wanted = {node for per_call in calls.values() for nodes in per_call for node in nodes}
        values = _fingerprints(flat, inputs, wanted)
    except Exception:  # names are a nicety: a model that will not run twice keeps arg0, arg1...
        return {}
    return agreed_names(calls, instances, given, values.get)


def agreed_names(
    calls: Mapping[int, list[list[torch.fx.Node]]],
    instances: Mapping[int, torch.nn.Module],
    given: Mapping[int, Sequence[Mapping[str, Hashable]]],
    value_of: Callable[[torch.fx.Node], Hashable | None],
) -> dict[int, list[str]]:
    """The names of each instance's inputs where every call of every instance of its class
    (with as many inputs) agrees. ``given``: for each call of each instance, what each parameter held, by name;
    ``value_of``: the same kind of value for a node the block reads (a fingerprint of its
    tensor, or for a traced graph the node itself)."""
    def kind(key: int) -> tuple[type, int]:  # (instances taking another number of inputs are another class)
        return type(instances[key]), len(calls[key][0]) if calls[key] else 0

    by_class: dict[tuple[type, int], list[list[str] | None]] = {}  # the names each call found, per instance
    for key, per_call in calls.items():
        recorded = given.get(key, [])
        found: list[list[str] | None] = [None]  # a call that was not seen: no agreement
        if len(recorded) == len(per_call):
            found = [_match([value_of(node) for node in nodes], params)
                     for nodes, params in zip(per_call, recorded, strict=True)]  # fmt: skip
        by_class.setdefault(kind(key), []).extend(found)
    agreed = {cls: names[0] for cls, names in by_class.items()
              if names[0] is not None and names.count(names[0]) == len(names)}  # fmt: skip
    return {key: agreed[kind(key)] for key in calls if kind(key) in agreed}


def _match(values: list[Hashable | None], params: Mapping[str, Hashable]) -> list[str]:
    """Each value's parameter when exactly one parameter holds it and no other value matches it
    too, else ``argN`` (N its position): a value computed differently under capture (a mask
    Hugging Face builds only while compiling) or given twice keeps a plain name."""
    holders = [[name for name, fingerprint in params.items() if value is not None and fingerprint == value]
               for value in values]  # fmt: skip
    counts: dict[str, int] = {}
    for found in holders:
        for name in found:
            counts[name] = counts.get(name, 0) + 1
    return [found[0] if len(found) == 1 and counts[found[0]] == 1 else f"arg{i}" for i, found in enumerate(holders)]


def _recorded_calls(module: torch.nn.Module, blocks: Iterable[torch.nn.Module], inputs: dict[str, torch.Tensor],
                    kwargs: dict[str, Any]) -> dict[int, list[dict[str, Fingerprint]]]:  # fmt: skip
    """Run ``module`` once (its state put back after), fingerprinting each block call's tensors."""
    from fxgen.capture.dynamo import kept_state

    calls: dict[int, list[dict[str, Fingerprint]]] = {}
    handles = []

    def hook(block: torch.nn.Module, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        params = {name: _fingerprint(item) for name, item in named_arguments(block, args, kw)
                  if isinstance(item, torch.Tensor)}  # fmt: skip
        calls.setdefault(id(block), []).append(params)

    for block in dict.fromkeys(blocks):
        handles.append(block.register_forward_pre_hook(hook, with_kwargs=True))
    try:
        with kept_state(module), torch.no_grad():
            module(**inputs, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return calls


def _fingerprints(flat: torch.fx.GraphModule, inputs: dict[str, torch.Tensor],
                  wanted: set[torch.fx.Node]) -> dict[torch.fx.Node, Fingerprint]:  # fmt: skip
    """The fingerprints of the ``wanted`` nodes' values, the graph run on the example inputs."""
    found: dict[torch.fx.Node, Fingerprint] = {}

    class _Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            result = super().run_node(n)
            if n in wanted and isinstance(result, torch.Tensor):
                found[n] = _fingerprint(result)
            return result

    placeholders = [n.target for n in flat.graph.nodes if n.op == "placeholder"]
    with torch.no_grad(), torch.random.fork_rng():
        _Recorder(flat).run(*(inputs[str(name)] for name in placeholders))
    return found


def _fingerprint(tensor: torch.Tensor) -> Fingerprint:
    data = tensor.detach().cpu().contiguous()
    raw = data.numpy().tobytes() if data.dtype == torch.bool else data.view(-1).view(torch.uint8).numpy().tobytes()
    return str(data.dtype), tuple(data.shape), hashlib.blake2b(raw, digest_size=16).digest()
