"""Running passes: a Spec -> its GraphModule -> each pass -> ``to_spec`` -> validated again.

``fxgen.transform`` is the public face; ``apply_passes`` is what loading or generating a spec
with a ``passes:`` list, and ``fxgen transform``, run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from fxgen._errors import ExportError, FxgenError, Location, SpecError
from fxgen.assemble.module import META_KEY, Builder, Declarations, build_module
from fxgen.check.passes import check_passes, pass_entry
from fxgen.check.validate import validate_body, validate_data
from fxgen.construct.modules import same_random_state
from fxgen.describe.to_spec import graph_module_to_spec, spec_state
from fxgen.passes.context import PassContext
from fxgen.passes.registry import builtin_passes, pass_arguments, registered
from fxgen.policy.policy import Policy
from fxgen.read.reader import Document
from fxgen.read.yaml_events import JsonPath
from fxgen.spec.model import BufferSpec, ParameterSpec, Spec
from fxgen.spec.resolve import cases

__all__ = ["Transformed", "apply_passes", "check_pass_list", "pass_names"]


@dataclass
class Transformed:
    """A transform's result: the new (validated) spec, the model's tensors after the passes (its
    state dict, keyed by the new spec's paths), and what each pass reported."""

    spec: Spec
    tensors: dict[str, torch.Tensor]
    notes: list[str] = field(default_factory=list)


class _PassChecker:
    """``check_passes``'s reporter for passes given outside a spec (code, the command line)."""

    def __init__(self, doc: Document, policy: Policy) -> None:
        self.doc = doc
        self.policy = policy
        self.errors: list[Any] = []

    def error(self, path: JsonPath, message: str, *, key: bool = False) -> None:
        from fxgen._errors import Diagnostic

        loc = self.doc.key_location(path) if key else self.doc.locate(path)
        self.errors.append(Diagnostic(loc, " ".join(message.splitlines())))

    def check_body(self, where: JsonPath, body: dict[str, Any]) -> None:
        try:
            validate_body(self.doc, where, body, self.policy)
        except SpecError as exc:
            self.errors.extend(exc.diagnostics)


def check_pass_list(doc: Document, where: JsonPath, policy: Policy, allowed: Iterable[str] = ()) -> None:
    """The passes at ``where`` in ``doc`` (built-in, or registered and ``allowed``), checked; a
    SpecError lists every problem at its place."""
    checker = _PassChecker(doc, policy)
    passes = doc.data
    for key in where:
        passes = passes[key]
    if not isinstance(passes, list) or not all(_entry_shape(p) for p in passes):
        raise SpecError.at(doc.locate(where), "passes are a list of names or one-entry mappings "
                           "`{name: {arguments}}`")  # fmt: skip
    check_passes(checker, passes, pass_arguments, where=where, allowed=allowed)
    if checker.errors:
        raise SpecError(checker.errors)


def _entry_shape(entry: Any) -> bool:
    if isinstance(entry, str):
        return True
    return isinstance(entry, dict) and len(entry) == 1 and isinstance(next(iter(entry.values())), dict)


def pass_names(passes: Sequence[Any]) -> list[str]:
    return [pass_entry(p)[0] for p in passes]


def apply_passes(
    spec: Spec,
    passes: Sequence[Any],
    policy: Policy,
    *,
    state: Mapping[str, torch.Tensor] | None = None,
    locate: Any = None,
    meta: bool = False,
) -> Transformed:
    """Run ``passes`` (checked already) over ``spec``'s model, with ``state``'s tensors if given
    (else as ``fxgen.load`` initialises it, leaving the random generator as it was). ``locate(i)``
    is where the i-th pass was named. With ``meta`` (validating, generating: the passes' result is
    a spec, not tensors), the model is built on the meta device but for the spec's own constant
    tensors (by value or packed data: its own bytes), so nothing of the sizes it declares is
    allocated; the result's other tensors are meta tensors then."""
    if cases(spec.nodes) != [{}] or any(cases(body.nodes) != [{}] for body in spec.classes.values()):
        raise SpecError.at(locate(0) if locate is not None else spec.locate(("passes", 0)),
                           "passes run on one graph, and this spec's graph depends on the mode (`training`) or on "
                           "the optional inputs a call gives (`mask is None`): transform a spec whose conditions "
                           "test neither")  # fmt: skip
    base = dataclasses.replace(spec, passes=[])
    base.document = spec.document
    with same_random_state():
        gm = build_module(base, policy, builder=Builder(policy, "meta", placement=_constants_real) if meta else None)
    if state is not None:
        gm.load_state_dict(dict(state), strict=True)
    original = {path: module for path, module in gm.named_modules()}
    notes: list[str] = []
    for i, entry in enumerate(passes):
        name, args = pass_entry(entry)
        where = locate(i) if locate is not None else spec.locate(("passes", i))
        builtin = builtin_passes().get(name)
        function = builtin.function if builtin is not None else registered().get(name)
        if function is None:  # a Spec validated without the catalogue (fxgen._api hands it on)
            raise SpecError.at(where, f"unknown pass {name!r}; the built-in passes are {', '.join(builtin_passes())}")
        context = PassContext(policy, spec, where, notes, meta=meta)
        try:
            result = function(gm, args, context)
            if not isinstance(result, torch.fx.GraphModule):
                raise TypeError(f"it returned {type(result).__name__}, not a GraphModule")
            result.graph.lint()
        except FxgenError:
            raise
        except Exception as exc:
            text = str(exc).strip().splitlines()
            raise SpecError.at(where, f"pass {name!r} failed: {type(exc).__name__}: {text[0] if text else ''}"[:400]) from exc
        result.meta.setdefault(META_KEY, gm.meta.get(META_KEY))
        gm = result
    last = locate(len(passes) - 1) if locate is not None else spec.locate(("passes",))
    if spec.fxgen >= 2:
        _format2_unchanged(base, gm, original, last)
    else:
        gm.meta[META_KEY] = _still_declared(base, gm, original)
    try:
        new = graph_module_to_spec(gm, name=spec.name, doc=spec.doc)
    except ExportError as exc:
        raise SpecError.at(last, f"the passes' result cannot be written as a spec: {exc.message}") from None
    if spec.fxgen >= 2:  # the top class's declarations, as written, of what the model still holds
        new.modules = {p: m for p, m in new.modules.items() if _holds(gm, p)}
        new.parameters = {p: d for p, d in new.parameters.items() if _holds(gm, p)}
        new.buffers = {p: d for p, d in new.buffers.items() if _holds(gm, p)}
    order = [p for p in spec.modules if p in new.modules] + [p for p in new.modules if p not in spec.modules]
    new.modules = {p: new.modules[p] for p in order}  # the spec's order (a fused layer stays where it was)
    data = new.to_dict()
    if spec.inputs:
        data["inputs"] = {n: i.to_dict() for n, i in spec.inputs.items()}
    if spec.shapes:
        data["shapes"] = True
    label = spec.document.path if spec.document is not None else f"<spec {spec.name}>"
    try:
        checked = validate_data(data, policy, path=f"{label} after {', '.join(pass_names(passes))}")
    except SpecError as exc:  # a pass made something a spec cannot say: the pass's fault, shown as such
        raise SpecError.at(spec.locate(("passes",)) if spec.passes else Location(label),
                           f"the passes' result is not a valid spec: {exc.diagnostics[0].message}") from None  # fmt: skip
    return Transformed(checked, spec_state(gm), notes)


def _constants_real(table: str, declared: ParameterSpec | BufferSpec) -> str | None:
    """Where a meta build puts a tensor: a buffer declared by value or packed data on the CPU
    (what ``fold_constants`` computes from), anything else on the meta device."""
    constant = isinstance(declared, BufferSpec) and (declared.value is not None or declared.data is not None)
    return None if constant else "meta"


def _holds(gm: torch.nn.Module, path: str) -> bool:
    try:
        gm.get_submodule(path)
        return True
    except AttributeError:
        pass
    owner, _, name = path.rpartition(".")
    try:
        return hasattr(gm.get_submodule(owner), name)
    except AttributeError:
        return False


def _format2_unchanged(
    spec: Spec, gm: torch.fx.GraphModule, original: Mapping[str, torch.nn.Module], where: Location
) -> None:
    """A format-2 spec keeps its declarations as written (argument expressions, blocks): passes
    may change its top class's graph, and drop what it no longer uses, but not replace a module."""
    now = dict(gm.named_modules())
    for path in spec.modules:
        if path in now and now[path] is not original.get(path):
            raise SpecError.at(where, f"the passes replaced module {path!r}; a format-2 spec keeps its "
                               "declarations as written, so passes that replace modules (fuse_conv_bn) are not "
                               "supported for format 2 yet: run them on a format-1 spec (fxgen export --flat)")  # fmt: skip


def _still_declared(spec: Spec, gm: torch.fx.GraphModule, original: Mapping[str, torch.nn.Module]) -> Declarations:
    """The spec's declarations that still describe ``gm``: modules the passes left as they were
    (the same objects at the same paths), tensors still there with the same shape and dtype. The
    rest ``to_spec`` recovers from the instances (a fused convolution gains a bias)."""
    now = dict(gm.named_modules())
    modules = {p: m for p, m in spec.modules.items() if p in now and now[p] is original.get(p)}

    def same(path: str, shape: Any, dtype: str) -> bool:
        from fxgen.spec.values import dtype_name

        t: torch.Tensor
        try:
            t = gm.get_parameter(path)
        except AttributeError:
            try:
                t = gm.get_buffer(path)
            except AttributeError:
                return False
        return list(t.shape) == list(shape or t.shape) and dtype_name(t.dtype) == dtype

    parameters = {p: d for p, d in spec.parameters.items() if same(p, d.shape, d.dtype)}
    buffers = {p: d for p, d in spec.buffers.items() if same(p, d.shape, d.dtype)}
    kept = dataclasses.replace(spec, modules=modules, parameters=parameters, buffers=buffers)
    return Declarations(kept, {})

