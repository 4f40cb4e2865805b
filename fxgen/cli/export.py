"""``fxgen export PKG.MODULE:ATTR``: import the user's code, build the module, export it, and write
the spec and weights once the spec is computed: the weights first, then the spec recording their
digest, so that an interrupted run never leaves a spec that loads with weights of another export.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import torch
import torch.fx

from fxgen._errors import ExportError, printable_path
from fxgen.capture.export import (
    capture_modes,
    capture_notes,
    modes_spec,
    tied_notes,
    traced_options,
)
from fxgen.capture.options import CaptureOptions
from fxgen.describe.to_spec import spec_state
from fxgen.policy.lookup import import_named, where_looked
from fxgen.spec.model import ClassSpec, Spec, walk_nodes

__all__ = ["example_tensors", "export_command", "outside_default_policy"]


# -- the `fxgen export` command ----------------------------------------------------------------
def _import_attr(spec: str) -> Any:
    """``pkg.module:Attr.sub`` -> the object (the user's own code: importing it is intended)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ExportError(f"{spec!r}: expected PKG.MODULE:ATTR, e.g. mypkg.models:Net")
    try:
        obj: Any = import_named(module_name)
    except ImportError as exc:
        root = module_name.split(".")[0]
        if isinstance(exc, ModuleNotFoundError) and exc.name == root:
            raise ExportError(f"cannot import {module_name!r}: no module {root!r} {where_looked()} (is it installed?)") from None
        raise ExportError(f"cannot import {module_name!r}: {exc}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ExportError(f"{module_name!r} has no attribute {attr!r}") from None
    return obj


def _json(text: str | None, what: str, kind: type) -> Any:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExportError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(value, kind):
        raise ExportError(f"{what} must be a JSON {'list' if kind is list else 'object'}")
    return value


def build_target(spec: str, args: list[Any], kwargs: dict[str, Any]) -> torch.nn.Module:
    """Instantiate ``PKG.MODULE:ATTR``: a module class, a function returning a module, or a module."""
    from fxgen.spec.values import decode, decode_kwargs

    obj = _import_attr(spec)
    if isinstance(obj, torch.nn.Module):
        return obj
    if not callable(obj):
        raise ExportError(f"{spec!r} is neither an nn.Module class nor a function returning one")
    try:
        module = obj(*decode(args, _no_ref), **decode_kwargs(kwargs, _no_ref))
    except Exception as exc:
        raise ExportError(f"calling {spec!r} failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(module, torch.nn.Module):
        raise ExportError(f"{spec!r} returned a {type(module).__name__}, not an nn.Module")
    return module


_EXAMPLE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=([a-z0-9_]+)\[([0-9, ]*)\]$")


def example_tensors(specs: list[str]) -> dict[str, torch.Tensor]:
    """``--example-input NAME=DTYPE[SHAPE]`` -> name -> tensor: floating point values from a
    seeded generator, integers and booleans all ones (a valid token id, an attention mask that
    keeps every position)."""
    tensors: dict[str, torch.Tensor] = {}
    generator = torch.Generator().manual_seed(0)
    for text in specs:
        match = _EXAMPLE.match(text.replace(" ", ""))
        if match is None:
            raise ExportError(f"--example-input {text!r}: expected NAME=DTYPE[SHAPE], for example "
                              "x=float32[1,3,224,224] or ids=int64[2,7]")  # fmt: skip
        name, dtype_name, dims = match.groups()
        dtype = getattr(torch, dtype_name, None)
        if not isinstance(dtype, torch.dtype):
            raise ExportError(f"--example-input {text!r}: {dtype_name!r} is not a torch dtype (float32, float16, "
                              "bfloat16, int64, int32, bool, ...)")  # fmt: skip
        shape = [int(d) for d in dims.split(",") if d] if dims.strip(", ") else []
        if name in tensors:
            raise ExportError(f"--example-input {name!r} is given twice")
        if dtype.is_floating_point or dtype.is_complex:
            tensors[name] = torch.randn(shape, generator=generator, dtype=dtype)
        else:
            tensors[name] = torch.ones(shape, dtype=dtype)
    return tensors


_DYNAMIC = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=((?:[A-Za-z_][A-Za-z0-9_]*|-)(?:,(?:[A-Za-z_][A-Za-z0-9_]*|-))*)$")


def dynamic_dimensions(specs: list[str], static: bool) -> bool | dict[str, list[str | None]]:
    """``--dynamic NAME=DIMS`` (a name per dimension, ``-`` for a static one) and ``--static``
    -> ``CaptureOptions.dynamic``."""
    if static:
        if specs:
            raise ExportError("--static fixes every size; --dynamic names symbolic ones: give one of them")
        return False
    out: dict[str, list[str | None]] = {}
    for text in specs:
        match = _DYNAMIC.match(text.replace(" ", ""))
        if match is None:
            raise ExportError(f"--dynamic {text!r}: expected NAME=DIMS, a name or - per dimension, for example "
                              "x=batch,-,height,width")  # fmt: skip
        name, dims = match.groups()
        if name in out:
            raise ExportError(f"--dynamic {name!r} is given twice")
        out[name] = [None if dim == "-" else dim for dim in dims.split(",")]
    return out or True


def _no_ref(name: str) -> Any:
    raise ExportError(f"'%{name}': node references make no sense in export arguments")


def export_command(ns: argparse.Namespace) -> None:
    """``fxgen export``: compute the spec, then write the weights and the spec that records them."""
    from fxgen.cli.leftovers import sweep
    from fxgen.cli.progress import Progress
    from fxgen.spec.values import decode_kwargs
    from fxgen.write.atomic import write_atomic
    from fxgen.write.targets import check_targets
    from fxgen.write.weights import write_weights

    outputs = [("--out", ns.out), *([("--weights", ns.weights)] if ns.weights is not None else [])]
    check_targets(outputs)  # before importing the user's code
    module = build_target(ns.target, _json(ns.args, "--args", list), _json(ns.kwargs, "--kwargs", dict))
    check_targets(outputs, _sources(ns.target, module))
    module.eval()  # the spec computes both modes (fxgen.capture.modes); a failing train capture leaves eval's
    concrete = _json(ns.concrete_args, "--concrete-args", dict)
    concrete = decode_kwargs(concrete, _no_ref) if concrete is not None else None
    leaves = [_import_attr(name if ":" in name else ":".join(name.rsplit(".", 1))) for name in ns.leaf_module]
    for leaf in leaves:
        if not (isinstance(leaf, type) and issubclass(leaf, torch.nn.Module)):
            raise ExportError(f"--leaf-module {leaf!r} is not an nn.Module class")
    quiet = getattr(ns, "quiet", False)
    capture = getattr(ns, "capture", "auto")
    example_inputs = example_tensors(getattr(ns, "example_input", None) or [])
    example_kwargs = _json(getattr(ns, "example_kwargs", None), "--example-kwargs", dict)
    if example_kwargs is not None:
        example_kwargs = decode_kwargs(example_kwargs, _no_ref)
    if capture == "dynamo" and not example_inputs:
        raise ExportError("--capture dynamo needs example inputs: --example-input NAME=DTYPE[SHAPE] (for example "
                          "x=float32[1,3,224,224]), one per input")  # fmt: skip
    dynamic = dynamic_dimensions(getattr(ns, "dynamic", None) or [], getattr(ns, "static", False))
    options = traced_options(module, CaptureOptions(example_inputs=example_inputs or None, example_kwargs=example_kwargs,
                                                    capture=capture, concrete_args=concrete, leaf_modules=tuple(leaves),
                                                    dynamic=dynamic))  # fmt: skip
    from fxgen.capture.dynamo import kept_state

    notes: list[str] = []
    found: list[str] = []
    # Every run of the model (train mode, the proofs) leaves its buffers as they were: the weights
    # written below are the model's own, not batch norm statistics a capture updated.
    with kept_state(module):
        with Progress("capturing", 2, quiet=quiet) as progress:
            progress.step(1, type(module).__name__)
            captures = capture_modes(module, options, notify=notes.append)
        for note in dict.fromkeys(notes):
            print(f"fxgen: note: {note}", file=sys.stderr)
        name = ns.name or type(module).__name__
        gm = (captures[module.training] if module.training in captures else next(iter(captures.values())))[0]
        modules = len({node.target for node in gm.graph.nodes if node.op == "call_module"})
        with Progress("verifying constructor calls" if ns.flat else "keeping the model's classes as blocks", modules,
                      quiet=quiet) as bar:  # fmt: skip
            spec, gm = modes_spec(module, captures, name, flat=ns.flat, options=options,
                                  notify=found.append, progress=lambda done, total, path: bar.step(done, path))  # fmt: skip
    for note in dict.fromkeys(found):
        print(f"fxgen: note: {note}", file=sys.stderr)
    out: Path = ns.out
    sweep((out, ns.weights), quiet=quiet)
    if ns.weights is not None:
        # The weights first, streamed, then the spec that records their digest: a run stopped in
        # between leaves the old spec, which refuses the new weights (fxgen.assemble.weights).
        spec.weights_digest = write_weights(ns.weights, spec_state(gm))
    write_atomic(out, spec.to_json() if out.suffix == ".json" else spec.to_yaml(schema_ref=_schema_ref(out)))
    for note in (*capture_notes(gm), *tied_notes(gm)):
        print(f"fxgen: note: {note}", file=sys.stderr)
    outside = outside_default_policy(spec)
    if outside:
        names = " ".join(f"--allow {m}" for m in outside)
        print(f"fxgen: note: this spec uses {', '.join(outside)}; load or generate it with {names} "
              "or list them in [tool.fxgen] allow", file=sys.stderr)  # fmt: skip
    if not quiet:
        written = printable_path(out) + (f" and {printable_path(ns.weights)}" if ns.weights is not None else "")
        tensors = len(spec.parameters) + len(spec.buffers)
        count = len(spec.classes)
        blocks = f", {count} block {'class' if count == 1 else 'classes'}" if spec.classes else ""
        print(f"fxgen: exported {spec.name} to {written}: {len(spec.nodes)} nodes, {len(spec.modules)} modules, "
              f"{tensors} tensors{blocks}", file=sys.stderr)  # fmt: skip


def _sources(target: str, module: torch.nn.Module) -> list[tuple[str, Path]]:
    """The source files of the code exported (the module PKG.MODULE and the model's class): an
    output over one would replace the user's code with the spec."""
    import inspect

    module_name = target.partition(":")[0]
    candidates = [(f"the source of {module_name}", sys.modules.get(module_name)),
                  (f"the source of {type(module).__qualname__}", type(module))]  # fmt: skip
    found = []
    for what, obj in candidates:
        try:
            source = inspect.getsourcefile(obj) if obj is not None else None
        except TypeError:  # built in: no file
            source = None
        if source:
            found.append((what, Path(source)))
    return found


def _schema_ref(out: Path) -> str:
    """A schema reference for editors: the repository's schemas/ if the spec sits inside one."""
    import os

    from fxgen.read.schema import load_schema

    here = Path(os.path.realpath(out)).parent
    for folder in (here, *here.parents):
        candidate = folder / "schemas" / "fxgen.schema.json"
        if candidate.is_file():
            return Path(os.path.relpath(candidate, here)).as_posix()
    return str(load_schema()["$id"])


def outside_default_policy(spec: Spec) -> list[str]:
    """The names the spec uses that the default target policy refuses (the narrowest entries to
    allow: suggesting a whole package such as ``torch`` would also allow ``torch.load``), in the
    top class and in every block; a block's own name is the spec's, never an import."""
    from fxgen.codegen.render import declared_classes
    from fxgen.policy.policy import DEFAULT_POLICY, TargetError

    outside = set()
    bodies: list[Spec | ClassSpec] = [spec, *spec.classes.values()]
    for body in bodies:
        for module in body.modules.values():
            for cls in declared_classes(module):
                if cls in spec.classes:
                    continue
                try:
                    DEFAULT_POLICY.resolve_module_class(cls)
                except TargetError:
                    outside.add(cls)
        for node in walk_nodes(body.nodes):
            if node.op == "call_function" and node.target:
                try:
                    DEFAULT_POLICY.resolve_function(node.target)
                except TargetError:
                    outside.add(node.target)
    return sorted(outside)
