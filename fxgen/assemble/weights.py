"""Weights into a built model: checked to belong to the spec (its recorded digest), strictly
checked against its declarations, assigned without copies.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn

from fxgen._errors import Location, WeightsError, printable_path
from fxgen.construct.modules import NO_TENSORS, tensors_in
from fxgen.spec.model import Spec

__all__ = ["assign_weights", "check_digest", "has_meta_tensors", "read_paired_weights"]


def check_digest(spec: Spec, path: str | Path) -> None:
    """Refuse a weights file other than the one ``spec`` was exported with: a spec that records
    a ``weights_digest`` loads only with a file whose header holds the same digest (the file is
    not hashed again: its header is read). A spec without one takes any file that fits it."""
    from fxgen.read.weights import weights_digest

    if spec.weights_digest is None:
        return
    found = weights_digest(path)
    if found == spec.weights_digest:
        return
    label = printable_path(spec.document.path) if spec.document is not None else f"<spec {spec.name}>"
    held = f"holds weights {found[:19]}..." if found else "records no digest (it was not written by fxgen export)"
    raise WeightsError(
        f"these weights do not belong to the spec {label}: the spec was exported with weights "
        f"{spec.weights_digest[:19]}..., this file {held}. Pass the weights file exported with the spec, or export both "
        "again (`fxgen export ... --out SPEC --weights WEIGHTS`); to load other weights that fit the spec, "
        "delete its `weights_digest` line",
        Location(str(path)),
    )


def read_paired_weights(spec: Spec, path: str | Path) -> dict[str, torch.Tensor]:
    """The tensors of the weights file ``spec`` was exported with (``check_digest`` first: another
    file is refused before a tensor is read)."""
    from fxgen.read.weights import read_weights

    check_digest(spec, path)
    return read_weights(path)


def check_weights(
    path: str | Path, expected: Mapping[str, torch.Tensor], found: Mapping[str, torch.Tensor]
) -> None:
    """Strict comparison of a weights file with the model's state: keys, shapes and dtypes."""
    problems = []
    if expected.keys() != found.keys():
        problems = [f"missing tensor {k!r}" for k in expected if k not in found]
        problems += [f"unexpected tensor {k!r}" for k in found if k not in expected]
    for key, want in expected.items():
        got = found.get(key)
        if got is None:
            continue
        if got.shape != want.shape:
            problems.append(f"{key!r} has shape {list(got.shape)}, the spec declares {list(want.shape)}")
        elif got.dtype != want.dtype:
            problems.append(f"{key!r} has dtype {got.dtype}, the spec declares {want.dtype}")
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise WeightsError(
            "weights do not fit the spec: " + "; ".join(problems[:5]) + more
            + "; export them again with `fxgen export ... --weights` or fix the spec",
            Location(str(path)),
        )


# -- assigning loaded tensors -------------------------------------------------------------------
Slot = tuple[nn.Module, str, torch.Tensor, bool]  # owner, attribute, current tensor, is a parameter


def assign_weights(model: nn.Module, state: dict[str, torch.Tensor], path: str | Path) -> list[str]:
    """Check ``state`` against ``model``'s state-dict layout strictly, then make its tensors the
    model's parameters and persistent buffers (no copy; parameters keep ``requires_grad``).
    Returns the names of tensors still on the meta device (non-persistent buffers, which a
    weights file does not carry): the caller builds those for real or refuses the model.

    The same result as ``check_weights`` + ``load_state_dict(state, strict=True, assign=True)``,
    but linear in the number of tensors: each key's owner is found once by walking the module
    tree, where torch's loader is quadratic in the width of a container. Models with custom
    state-dict behaviour (hooks, overridden state-dict methods, extra state) take torch's loader.
    """
    walked = _state_slots(model)
    if walked is None:
        check_weights(path, model.state_dict(), state)
        model.load_state_dict(state, strict=True, assign=True)
        return [k for k, t in (*model.named_parameters(), *model.named_buffers()) if t.is_meta]
    slots, unsaved = walked
    check_weights(path, {key: slot[2] for key, slot in slots.items()}, state)
    from torch.nn.modules import module as torch_module

    hooked = bool(
        torch_module._global_parameter_registration_hooks or torch_module._global_buffer_registration_hooks
    )
    setattr_of_module = nn.Module.__setattr__
    with torch.no_grad():
        for key, (owner, name, current, is_parameter) in slots.items():
            tensor: torch.Tensor = state[key]
            if isinstance(current, nn.Parameter):
                tensor = nn.Parameter(tensor, requires_grad=current.requires_grad)
            if hooked or type(owner).__setattr__ is not setattr_of_module:
                setattr(owner, name, tensor)  # what load_state_dict(assign=True) does
            elif is_parameter:
                owner._parameters[name] = cast(nn.Parameter, tensor)  # the same, minus __setattr__'s lookups
            else:
                owner._buffers[name] = tensor  # persistence (a separate set) is unchanged
    return [key for key, tensor in unsaved.items() if tensor.is_meta]


def _state_slots(model: nn.Module) -> tuple[dict[str, Slot], dict[str, torch.Tensor]] | None:
    """``state_dict()``'s keys, in its order, each with where its tensor lives, and the
    non-persistent buffers (not in the file); None if some module customises its state dict
    (then only torch's own loader is sure to do the right thing)."""
    slots: dict[str, Slot] = {}
    unsaved: dict[str, torch.Tensor] = {}
    stack: list[tuple[nn.Module, str]] = [(model, "")]
    while stack:
        module, prefix = stack.pop()
        if not _plain_state(module):
            return None
        for name, param in module._parameters.items():
            if param is not None:
                slots[prefix + name] = (module, name, param, True)
        dropped = module._non_persistent_buffers_set
        for name, buffer in module._buffers.items():
            if buffer is not None:
                if name in dropped:
                    unsaved[prefix + name] = buffer
                else:
                    slots[prefix + name] = (module, name, buffer, False)
        children = [(child, f"{prefix}{name}.") for name, child in module._modules.items() if child is not None]
        stack.extend(reversed(children))  # depth first, in order, like state_dict()
    return slots, unsaved


_STATE_METHODS = (
    "_save_to_state_dict",
    "_load_from_state_dict",
    "state_dict",
    "load_state_dict",
    "get_extra_state",
    "set_extra_state",
)


_STATE_HOOKS = ("_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")


@functools.cache
def _safe_overrides() -> frozenset[Any]:
    """Overrides that only upgrade old checkpoints and do nothing when every key is present
    (which the strict check guarantees): BatchNorm's ``num_batches_tracked``, InstanceNorm's
    running statistics."""
    from torch.nn.modules.batchnorm import _NormBase
    from torch.nn.modules.instancenorm import _InstanceNorm

    return frozenset({_NormBase._load_from_state_dict, _InstanceNorm._load_from_state_dict})


_PLAIN_CLASSES: dict[type, bool] = {}


def _plain_state(module: nn.Module) -> bool:
    """Whether ``module``'s state dict is exactly its parameters and persistent buffers."""
    cls = type(module)
    plain = _PLAIN_CLASSES.get(cls)
    if plain is None:
        safe = _safe_overrides()
        plain = _PLAIN_CLASSES[cls] = all(
            getattr(cls, name) is getattr(nn.Module, name) or getattr(cls, name) in safe for name in _STATE_METHODS
        )
    if not plain:
        return False
    return not any(module.__dict__.get(hooks) for hooks in _STATE_HOOKS)


def has_meta_tensors(module: nn.Module, *, saved: bool = True, recurse: bool = True) -> bool:
    """Whether ``module`` or (with ``recurse``) a submodule holds a meta tensor: a parameter, a
    buffer, or a tensor kept as a plain attribute. ``saved=False`` skips parameters and
    persistent buffers (the tensors a weights file replaces)."""
    for sub in module.modules() if recurse else (module,):
        if saved and any(t is not None and t.is_meta for t in sub._parameters.values()):
            return True
        dropped = sub._non_persistent_buffers_set
        for name, buffer in sub._buffers.items():
            if buffer is not None and buffer.is_meta and (saved or name in dropped):
                return True
        for name, value in sub.__dict__.items():
            if name in _MODULE_INTERNALS or type(value) in NO_TENSORS:
                continue
            if any(t.is_meta for t in tensors_in(value)):
                return True
    return False


_MODULE_INTERNALS = frozenset(nn.Module().__dict__)
