"""What a model does when called that its captured graph does not record: refused by name, or noted.

A spec is the graph a capture records, and some of what a call of the model does is no node of it:

- **Hooks on the model itself and global module hooks.** Symbolic tracing calls ``forward``
  directly and TorchDynamo compiles a root module's hooks as graphs of their own, so the root's
  forward (pre-)hooks never reach the spec; global hooks (``register_module_forward_hook``) run
  on every module call, traced into some calls and not others. Hooks on other modules are the
  rebuild check's (``fxgen.describe.compare``: a leaf module's hooks by name) or are traced with
  the module's call, which runs them.
- **Hooks a forward registers while it runs**: the capture's snapshot (``fxgen.capture.preserve``)
  removes them again, and the graph keeps whatever part of them it happened to run.
- **Grad-mode regions** (``torch.no_grad()``, ``torch.set_grad_enabled(False)``,
  ``torch.inference_mode()``, as a block or a decorator): the spec has no such construct, so the
  exported model would compute gradients where the original computes none; training it would
  update what the original froze. A region is refused when something computed in it would need a
  gradient (it reads a parameter that requires one, or a model input); one that computes only
  from buffers and sizes (Hugging Face's rotary embeddings) changes nothing and is accepted.
- **Module-global state** the forward reads (a list, a dict, a set, a tensor, a number that is no
  constant by its ``UPPER_CASE`` name): the capture froze its value into the graph; a note names
  it. Flags and strings (``is_torch_greater_or_equal_than_2_2``) are configuration and are not.

Each refusal is one line naming the hook or the user's line and what to do.
"""

from __future__ import annotations

import builtins
import dis
import enum
import inspect
import operator
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx
from torch.utils.hooks import RemovableHandle

from fxgen._errors import ExportError, Location

__all__ = ["NOTES_KEY", "NotRecorded", "disabled_regions", "global_state_notes", "hook_mark", "in_autograd_function",
           "refuse_grad_regions", "refuse_new_hooks", "refuse_overridden_call", "refuse_root_hooks"]  # fmt: skip


NOTES_KEY = "fxgen_capture_notes"  # GraphModule.meta: what the user should know about the capture


class NotRecorded(ExportError):
    """What the model does is no part of any capture's graph: the other capture is no way out."""


# -- hooks -----------------------------------------------------------------------------------
# A module's hook tables that change what a call computes or how its gradients flow, and what
# each is called in a message.
_TABLES = (
    ("_forward_pre_hooks", "forward pre-hook"),
    ("_forward_hooks", "forward hook"),
    ("_backward_pre_hooks", "backward pre-hook"),
    ("_backward_hooks", "backward hook"),
)


def _global_tables() -> Iterator[tuple[dict[int, Any], str]]:
    """torch's global module hook tables and the function that registers into each."""
    module = torch.nn.modules.module
    for table, register in (("_global_forward_pre_hooks", "register_module_forward_pre_hook"),
                            ("_global_forward_hooks", "register_module_forward_hook"),
                            ("_global_backward_pre_hooks", "register_module_full_backward_pre_hook"),
                            ("_global_backward_hooks", "register_module_full_backward_hook")):  # fmt: skip
        hooks = getattr(module, table, None)
        if isinstance(hooks, dict):
            yield hooks, register


def refuse_root_hooks(module: torch.nn.Module) -> None:
    """A NotRecorded error naming the first hook on ``module`` itself or registered globally: the
    capture runs ``forward`` without it, so the spec would compute without it."""
    for table, kind in _TABLES:
        for key, hook in getattr(module, table, {}).items():
            if kind.startswith("forward") and key in getattr(module, table + "_with_kwargs", ()):
                kind += " (with_kwargs)"
            raise NotRecorded(f"the model ({type(module).__name__}) has the {kind} {_hook_name(hook)}, which "
                              "export drops: the capture runs forward without its own hooks; remove the hook "
                              "before export and register it again on the generated model", _hook_location(hook))  # fmt: skip
    for hooks, register in _global_tables():
        for hook in hooks.values():
            raise NotRecorded(f"the global module hook {_hook_name(hook)} (torch.nn.modules.module.{register}) "
                              "is registered: it runs on every module call, and the spec would run it inside some "
                              "calls and not others; remove it before export and register it again afterwards",
                              _hook_location(hook))  # fmt: skip


def hook_mark() -> int:
    """The id the next hook registered anywhere will get (``refuse_new_hooks``' starting point)."""
    return int(RemovableHandle.next_id)


def refuse_new_hooks(module: torch.nn.Module, mark: int) -> None:
    """A NotRecorded error naming a hook registered since ``hook_mark()`` returned ``mark`` on any
    module of ``module``, or globally: the forward registered it while it was captured."""
    for path, sub in module.named_modules():
        for table, kind in _TABLES:
            hooks = getattr(sub, table, None)
            if hooks and max(hooks) >= mark:
                hook = hooks[max(hooks)]
                where = f"module {path!r}" if path else f"the model ({type(module).__name__})"
                raise NotRecorded(f"the forward registers the {kind} {_hook_name(hook)} on {where} while it runs, "
                                  "which export drops (the capture leaves the model as it found it); move the "
                                  "registration out of forward and register the hook on the generated model",
                                  _hook_location(hook))  # fmt: skip
    for hooks, register in _global_tables():
        if hooks and max(hooks) >= mark:
            hook = hooks[max(hooks)]
            raise NotRecorded(f"the forward registers the global module hook {_hook_name(hook)} "
                              f"(torch.nn.modules.module.{register}) while it runs, which export drops; "
                              "move the registration out of forward and register it after export", _hook_location(hook))  # fmt: skip


def _function(hook: Any) -> Any:
    """The function behind a hook: torch wraps some in a _WrappedHook; a partial, a bound method."""
    inner = getattr(hook, "hook", hook)
    inner = getattr(inner, "func", inner)
    return getattr(inner, "__func__", inner)


def _hook_name(hook: Any) -> str:
    inner = _function(hook)
    return repr(getattr(inner, "__qualname__", type(inner).__qualname__))


def _hook_location(hook: Any) -> Location | None:
    """Where the hook's function is defined."""
    code = getattr(_function(hook), "__code__", None)
    return Location(code.co_filename, code.co_firstlineno, 1) if isinstance(code, types.CodeType) else None


# -- grad-mode regions -----------------------------------------------------------------------
# Calls whose result needs no gradient whatever their inputs need: sizes, comparisons, indices,
# detached or fresh tensors of the same shape.
_NO_GRAD_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "stride", "element_size", "is_contiguous",
    "is_floating_point", "is_complex", "get_device", "detach", "item", "tolist", "argmax", "argmin",
    "argsort", "nonzero", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "long", "int",
    "bool", "short", "byte", "char", "__len__",
})  # fmt: skip
_NO_GRAD_FUNCTIONS = frozenset({
    operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge, builtins.len, torch.argmax,
    torch.argmin, torch.argsort, torch.nonzero, torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge,
    torch.isnan, torch.isinf, torch.isfinite, torch.zeros_like, torch.ones_like, torch.empty_like,
    torch.full_like, torch.rand_like, torch.randn_like, torch.randint_like, torch.Tensor.detach,
})  # fmt: skip
_TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag"})  # (dtype, shape, device: no gradient)


_APPLY = getattr(getattr(torch.autograd.Function.apply, "__func__", None), "__code__", None)


def in_autograd_function() -> bool:
    """Is a custom ``torch.autograd.Function``'s ``apply`` running (its ``forward`` always runs with
    gradients disabled: no region of the user's, and the captured graph computes it as ops)?"""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _APPLY:
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def disabled_regions(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """The nodes of a TorchDynamo graph that ran with gradients disabled, between the markers
    Dynamo records (``torch._C._set_grad_enabled(False)`` ... ``(True)``, ``_enter_inference_mode``
    ... ``_exit_inference_mode``); the markers are erased (what they did is judged by
    ``refuse_grad_regions``)."""
    from torch.autograd import grad_mode

    set_enabled = torch._C._set_grad_enabled
    enter = getattr(grad_mode, "_enter_inference_mode", None)
    exit_ = getattr(grad_mode, "_exit_inference_mode", None)
    disabled: set[torch.fx.Node] = set()
    grad, inference = True, 0
    markers = []
    for node in graph.nodes:
        if node.op == "call_function" and node.target is set_enabled and len(node.args) == 1:
            grad = bool(node.args[0])
            markers.append(node)
        elif node.op == "call_function" and enter is not None and node.target is enter:
            inference += 1 if node.args and node.args[0] else 0
            markers.append(node)
        elif node.op == "call_function" and exit_ is not None and node.target is exit_:
            inference = max(inference - 1, 0)  # (an exit of a region that did not enable it: no-op)
            markers.append(node)
        elif node.op not in ("placeholder", "output") and (not grad or inference):
            disabled.add(node)
    for node in reversed(markers):  # (an exit first: it uses its enter)
        if not node.users:
            graph.erase_node(node)
    return disabled


def refuse_grad_regions(
    graph: torch.fx.Graph,
    root: torch.nn.Module,
    disabled: set[torch.fx.Node],
    where: Callable[[torch.fx.Node], tuple[Location | None, str]],
) -> None:
    """A NotRecorded error for the first node of ``disabled`` (run with gradients disabled) whose
    value would need a gradient with them enabled: the spec computes it with gradients, so
    training the exported model would change what the original leaves frozen. ``where`` names
    a node's line in the user's code."""
    if not disabled:
        return
    needs: dict[torch.fx.Node, str | None] = {}  # node -> what it needs a gradient for, first found
    for node in graph.nodes:
        needs[node] = source = _needs_grad(node, root, needs)
        if source is not None and node in disabled:
            location, detail = where(node)
            raise NotRecorded(f"node {node.name!r}{detail} runs with gradients disabled (torch.no_grad(), "
                              f"set_grad_enabled(False) or inference_mode()) on {source}, which the exported model "
                              "would differentiate: a spec has no grad-mode regions; remove the region and freeze "
                              "its parameters with requires_grad_(False), or .detach() what it computes, then export "
                              "again", location)  # fmt: skip


def _needs_grad(node: torch.fx.Node, root: torch.nn.Module, needs: dict[torch.fx.Node, str | None]) -> str | None:
    """What ``node``'s value would need a gradient for with gradients enabled (a parameter that
    requires one, a model input), or None."""
    value = node.meta.get("example_value")  # (TorchDynamo's: an integer tensor has no gradient)
    if isinstance(value, torch.Tensor) and not (value.is_floating_point() or value.is_complex()):
        return None
    if node.op == "placeholder":
        return f"the input {node.target!r}"
    if node.op == "get_attr":
        value = _attribute(root, str(node.target))
        grad = isinstance(value, torch.Tensor) and value.requires_grad
        return f"{'parameter' if isinstance(value, torch.nn.Parameter) else 'tensor'} {node.target!r}" if grad else None
    if node.op == "call_method" and node.target in _NO_GRAD_METHODS:
        return None
    if node.op == "call_function":
        if node.target in _NO_GRAD_FUNCTIONS:
            return None
        if node.target is builtins.getattr and (len(node.args) < 2 or node.args[1] not in _TENSOR_ATTRIBUTES):
            return None
    if node.op == "call_module":
        sub = _attribute(root, str(node.target))
        trained = sub.named_parameters() if isinstance(sub, torch.nn.Module) else ()
        trained_path = next((f"{node.target}.{name}" for name, p in trained if p.requires_grad), None)
        if trained_path is not None:
            return f"parameter {trained_path!r}"
    found = [source for source in map(needs.get, node.all_input_nodes) if source is not None]
    return next((source for source in found if source.startswith("parameter")), found[0] if found else None)


def _attribute(root: torch.nn.Module, path: str) -> Any:
    value: Any = root
    for part in path.split("."):
        value = getattr(value, part, None)
    return value


# -- module-global state ---------------------------------------------------------------------
def global_state_notes(module: torch.nn.Module) -> list[str]:
    """One note per module-global value a ``forward`` of the model's own classes reads that may
    change (a list, dict, set or tensor; a number not named as a constant): the
    capture froze the value it had, so the spec computes with that value for good."""
    notes: list[str] = []
    seen: set[tuple[str, str]] = set()
    for cls in dict.fromkeys(type(sub) for sub in module.modules()):
        forward = getattr(cls, "forward", None)
        code = getattr(forward, "__code__", None)
        if not isinstance(code, types.CodeType) or cls.__module__.startswith("torch."):
            continue
        namespace = getattr(forward, "__globals__", {})
        for name in _global_names(code):
            if name not in namespace or (code.co_filename, name) in seen:
                continue
            value = namespace[name]
            if _may_change(name, value):
                seen.add((code.co_filename, name))
                notes.append(f"{cls.__qualname__}.forward reads the module-global {name!r} of "
                             f"{code.co_filename}, a {type(value).__name__}: the capture froze its current "
                             "value into the spec, which no later change of it reaches")  # fmt: skip
    return notes


def _global_names(code: types.CodeType) -> Iterator[str]:
    """The names ``code`` (and the functions and comprehensions defined in it) loads as globals."""
    for instruction in dis.get_instructions(code):
        if instruction.opname == "LOAD_GLOBAL":
            yield str(instruction.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


def _may_change(name: str, value: Any) -> bool:
    if isinstance(value, (list, dict, set, bytearray, torch.Tensor)):
        return True
    if isinstance(value, (bool, str, enum.Enum)):
        return False  # a flag or name decided on import (`is_torch_greater_or_equal_than_2_2`): configuration
    if isinstance(value, (int, float, complex)):
        return not (name.isupper() or name.startswith("__"))  # (UPPER_CASE: a constant by convention)
    return False


def refuse_overridden_call(module: torch.nn.Module) -> None:
    """The model's class overrides ``__call__``: symbolic tracing runs the model's ``forward``
    alone, so what ``__call__`` does around it (a flag its forward reads, a changed argument)
    would be lost. Refused, naming the class and where it overrides ``__call__``. (A submodule's
    override runs while tracing, its tensor operations recorded, as any code of the forward.)"""
    cls = type(module)
    if isinstance(module, torch.fx.GraphModule) or cls.__call__ is torch.nn.Module.__call__:
        return
    owner = next(c for c in cls.__mro__ if "__call__" in vars(c))
    where = _defined_at(vars(owner)["__call__"])
    raise ExportError(f"the model ({cls.__qualname__}) overrides __call__{where}: symbolic tracing runs only its "
                      "forward, so what __call__ does around it would be lost; move that work into forward, wrap "
                      "the model in a module whose forward calls it, or capture with TorchDynamo on example "
                      "inputs (--example-input)")  # fmt: skip


def _defined_at(function: Any) -> str:
    code = getattr(inspect.unwrap(function), "__code__", None)
    return f" (at {code.co_filename}:{code.co_firstlineno})" if code is not None else ""
