"""Build stage: a validated Spec -> a ``torch.fx.Graph`` and a runnable ``GraphModule``.

Everything is done with torch.fx's own API: ``Graph.create_node`` for the nodes, a
``GraphModule`` whose attributes live at the spec's dotted paths (so ``state_dict()`` keys are
exactly those paths). The GraphModule remembers the declarations it was built from in
``gm.meta["fxgen"]`` so ``to_spec`` can give back constructor calls and initialisers unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.fx

from fxgen._errors import SpecError
from fxgen._policy import DEFAULT_POLICY, Policy
from fxgen._spec import NO_DEFAULT, BufferSpec, ModuleSpec, ParameterSpec, Spec
from fxgen._tensors import make_tensor
from fxgen._values import decode, decode_kwargs

__all__ = ["META_KEY", "TARGET_KEY", "build_graph", "build_module", "set_attr_path"]

META_KEY = "fxgen"
TARGET_KEY = "fxgen_target"


def build_graph(spec: Spec, policy: Policy = DEFAULT_POLICY) -> torch.fx.Graph:
    """The spec's nodes as a torch.fx Graph (no module attached)."""
    graph = torch.fx.Graph()
    env: dict[str, torch.fx.Node] = {}
    for index, node in enumerate(spec.nodes):
        kwargs = decode_kwargs(node.kwargs, env.__getitem__)
        args: tuple[Any, ...] = tuple(decode(node.args, env.__getitem__))
        type_expr = policy.resolve_type(node.type)[0] if node.type is not None else None
        if node.op == "placeholder":
            target: Any = node.name
            if node.default is not NO_DEFAULT:
                args = (decode(node.default, env.__getitem__),)
        elif node.op == "output":
            target = "output"
        elif node.op == "call_function":
            assert node.target is not None
            target = policy.resolve_function(node.target)
        else:
            target = node.target
        created = graph.create_node(node.op, target, args, kwargs, name=node.name, type_expr=type_expr)
        if node.name is not None and created.name != node.name:
            raise SpecError.at(
                spec.document.locate(("nodes", index, "name")) if spec.document else _nowhere(spec),
                f"node name {node.name!r} was already taken by an earlier unnamed node; "
                "give that node an explicit name",
            )
        if node.op == "call_function":
            created.meta[TARGET_KEY] = node.target  # the spelling, for to_spec (F.conv2d is torch.conv2d)
        env[created.name] = created
    return graph


def build_module(
    spec: Spec, policy: Policy = DEFAULT_POLICY, *, device: torch.device | str | None = None
) -> torch.fx.GraphModule:
    """The runnable GraphModule of a validated spec; ``device="meta"`` skips initialisation."""
    graph = build_graph(spec, policy)
    gm = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph(), class_name=spec.name)
    for path, entry in spec.modules.items():
        with _located(spec, "modules", path, "cannot build module"):
            module = _construct(entry, policy, device)
        set_attr_path(gm, path, module)
    for path, param in spec.parameters.items():
        with _located(spec, "parameters", path, "cannot create parameter"):
            tensor = make_tensor(param, device=device)
        set_attr_path(gm, path, torch.nn.Parameter(tensor, requires_grad=param.requires_grad))
    for path, buffer in spec.buffers.items():
        with _located(spec, "buffers", path, "cannot create buffer"):
            tensor = make_tensor(buffer, device=device)
        set_attr_path(gm, path, tensor, persistent=buffer.persistent)
    with _located(spec, "nodes", None, "torch.fx cannot compile the graph"):
        gm.graph = graph  # setting the graph recompiles forward()
    if spec.doc is not None:
        type(gm).__doc__ = spec.doc
    gm.meta[META_KEY] = _Declarations(dict(spec.modules), dict(spec.parameters), dict(spec.buffers))
    return gm


class _Declarations:
    """What ``to_spec`` needs to give back a spec's declarations verbatim."""

    def __init__(
        self,
        modules: dict[str, ModuleSpec],
        parameters: dict[str, ParameterSpec],
        buffers: dict[str, BufferSpec],
    ) -> None:
        self.modules = modules
        self.parameters = parameters
        self.buffers = buffers

    def __deepcopy__(self, memo: dict[int, Any]) -> _Declarations:
        return self  # immutable in practice; GraphModule deep-copies its meta


def _construct(entry: ModuleSpec, policy: Policy, device: torch.device | str | None) -> torch.nn.Module:
    cls = policy.resolve_module_class(entry.cls)
    args = decode(entry.args, _no_ref)
    kwargs = decode_kwargs(entry.kwargs, _no_ref)
    if device is None:
        module: torch.nn.Module = cls(*args, **kwargs)
        return module
    with torch.device(device):
        module = cls(*args, **kwargs)
    return module


def set_attr_path(root: torch.nn.Module, path: str, value: Any, *, persistent: bool = True) -> None:
    """Put ``value`` at dotted ``path`` under ``root``, creating plain container modules."""
    *parents, leaf = path.split(".")
    owner = root
    for part in parents:
        child = owner._modules.get(part)
        if child is None:
            child = torch.nn.Module()
            owner.add_module(part, child)
        owner = child
    if isinstance(value, torch.nn.Module):
        owner.add_module(leaf, value)
    elif isinstance(value, torch.nn.Parameter):
        owner.register_parameter(leaf, value)
    else:
        owner.register_buffer(leaf, value, persistent=persistent)


@contextlib.contextmanager
def _located(spec: Spec, table: str, path: str | None, what: str) -> Iterator[None]:
    """Constructors and allocations fail on what validation cannot see (memory, devices): report
    them as a SpecError at the declaration instead of letting torch's exception escape."""
    try:
        yield
    except Exception as exc:
        key = (table,) if path is None else (table, path)
        where = spec.document.locate(key) if spec.document else _nowhere(spec)
        text = str(exc).strip().splitlines()
        subject = "" if path is None else f" {path!r}"
        raise SpecError.at(where, f"{what}{subject}: {type(exc).__name__}: {text[0] if text else ''}"[:400]) from exc


def _no_ref(name: str) -> Any:
    raise AssertionError(f"unexpected reference %{name}")


def _nowhere(spec: Spec) -> Any:
    from fxgen._errors import Location

    return Location(f"<spec {spec.name}>")
