"""Validate stage: a located Document -> a Spec, or a SpecError listing every problem.

The JSON Schema checks the shape (``fxgen.check.schema``); the rest checks what a schema cannot,
one module per concern: the format version (``upgrade``), the declarations and the run of every
check (``declarations``), the nodes (``nodes``), format 2's blocks (``blocks``), the passes a spec
names (``passes``); documents that are not a file (``documents``). This module is the stage's
face: what the other stages call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fxgen.check.arguments import choose
from fxgen.check.checker import Construct, MakeTensor
from fxgen.check.declarations import run_checks, validate_body
from fxgen.check.documents import parse_data
from fxgen.check.passes import Catalogue
from fxgen.policy.policy import DEFAULT_POLICY, Policy
from fxgen.read.imports import read_spec
from fxgen.read.reader import Document
from fxgen.spec.choice import Choice
from fxgen.spec.model import Spec

__all__ = [
    "SpecLike",
    "as_spec",
    "parse_data",
    "validate_body",
    "validate_data",
    "validate_document",
    "validate_for_load",
]


def validate_document(
    doc: Document, policy: Policy = DEFAULT_POLICY, choice: Choice | None = None, *, passes: Catalogue | None = None
) -> Spec:
    """Check ``doc`` fully and return its Spec; raise SpecError with every problem found.
    ``choice``: the top class's chosen arguments (a variant, overrides), the Spec's defaults. The
    passes it names are checked against ``passes``, the built-in passes' catalogue (``fxgen._api``
    hands it on; without it, the passes stage checks them when it runs them)."""
    return run_checks(doc, policy, None, choice=choice, passes=passes)[0]


def validate_for_load(
    doc: Document,
    policy: Policy,
    construct: Construct,
    make_tensor: MakeTensor | None = None,
    choice: Choice | None = None,
) -> tuple[Spec, dict[str, Any] | None]:
    """``validate_document``, constructing each declared module with ``construct`` (the load's
    own constructor) instead of on the meta device; returns the Spec and those modules by path.

    Errors are the same as ``validate_document``'s: a constructor that fails is tried again on
    the meta device, and only a failure there is a spec problem. One that fails only for real
    (memory, devices) makes validation stop making anything for real: the random generator
    goes back to where it was and the build makes everything (returned as None), reporting the
    failure at the declaration, as it does for a validated Spec.

    Modules are constructed here in declaration order, and the build creates the parameters
    and buffers after them. With ``make_tensor`` (a load that initialises for real), a spec
    whose generated ``__init__`` draws from the random generator in another order
    (``_build.construction_plan``) is made here in that order, tensors included, so that a
    seeded load and the generated class hold the same values. Returns the Spec and what was
    made, by path.
    """
    return run_checks(doc, policy, construct, make_tensor, choice)


def validate_data(
    data: dict[str, Any],
    policy: Policy = DEFAULT_POLICY,
    *,
    path: str = "<spec>",
    choice: Choice | None = None,
    passes: Catalogue | None = None,
) -> Spec:
    """Validate an in-memory dict (locations come from its JSON rendering)."""
    return validate_document(parse_data(data, path), policy, choice, passes=passes)


SpecLike = Spec | str | Path | dict[str, Any]


def as_spec(spec: SpecLike, policy: Policy, choice: Choice | None = None, *, passes: Catalogue | None = None) -> Spec:
    """A validated Spec of ``spec`` (a Spec is taken as validated), with ``choice`` applied."""
    if isinstance(spec, Spec):
        return choose(spec, choice) if choice else spec
    if isinstance(spec, dict):
        return validate_data(spec, policy, choice=choice, passes=passes)
    return validate_document(read_spec(spec), policy, choice, passes=passes)

