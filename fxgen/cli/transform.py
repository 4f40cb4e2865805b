"""``fxgen transform IN --pass NAME[:ARGS]... -o OUT [--weights W --out-weights W2]``.

Each ``--pass`` is a pass's name, then optionally ``:`` and its arguments as a YAML flow mapping;
a problem in one is reported at its place in the option (``--pass 2:1:17: error: ...``). The
spec's own ``passes:`` run first. Nothing is written unless every pass ran and the result is a
valid spec; the spec and the weights are each written atomically.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fxgen._errors import FxgenError, Location, SpecError, printable_path
from fxgen.cli.leftovers import sweep
from fxgen.read.reader import Document
from fxgen.read.yaml_events import JsonPath

__all__ = ["parse_pass", "transform_command"]


class _PassDocument(Document):
    """One ``--pass`` option as ``{passes: [{name: args}]}``, located in the option's own text."""

    def __init__(self, label: str, name: str, args: Document | None) -> None:
        super().__init__({"passes": [{name: args.data if args is not None else {}}]}, label)
        self.args = args
        self.name = name

    def _inner(self, path: JsonPath) -> JsonPath | None:
        return path[3:] if path[:3] == ("passes", 0, self.name) and self.args is not None else None

    def locate(self, path: JsonPath) -> Location:
        inner = self._inner(path)
        return self.args.locate(inner) if inner is not None and self.args is not None else Location(self.path, 1, 1)

    def key_location(self, path: JsonPath) -> Location:
        inner = self._inner(path)
        if inner and self.args is not None:
            return self.args.key_location(inner)
        return Location(self.path, 1, 1)


def parse_pass(text: str, label: str) -> _PassDocument:
    """``NAME`` or ``NAME:{...}`` as a located document (columns count in ``text`` itself)."""
    from fxgen.read.reader import parse_text

    name, colon, rest = text.partition(":")
    name = name.strip()
    if not name.isidentifier():
        raise SpecError.at(Location(label, 1, 1), f"{text[:40]!r} is not NAME or NAME:{{ARGS}}; "
                           "e.g. --pass 'replace:{target: operator.add, by: operator.mul}'")  # fmt: skip
    if not colon or not rest.strip():
        return _PassDocument(label, name, None)
    args = parse_text(" " * (len(text) - len(rest)) + rest, label)  # the same columns as in the option
    if not isinstance(args.data, dict):
        raise SpecError.at(args.locate(()), f"the arguments of pass {name!r} are a mapping (`{name}:{{key: value}}`)")
    return _PassDocument(label, name, args)


def _check_targets(args: argparse.Namespace, spec: Any) -> None:
    """-o and --out-weights name two files, neither of which the run reads (IN, the files IN
    imports, --weights), before any pass runs."""
    from fxgen.write.targets import check_targets

    inputs = [(f"IN ({printable_path(args.path)})", Path(args.path))]
    imported = getattr(spec.document, "imported_files", ())
    inputs += [(f"{printable_path(shown)} (IN imports it)", Path(shown)) for shown, _ in imported]
    outputs = [("-o", Path(args.out))]
    if args.weights is not None:
        inputs.append(("--weights", Path(args.weights)))
        outputs.append(("--out-weights", Path(args.out_weights)))
    check_targets(outputs, inputs)


def transform_command(args: argparse.Namespace, allow: tuple[str, ...], registered: tuple[str, ...]) -> int:
    from fxgen._api import load_spec
    from fxgen.passes.run import apply_passes, check_pass_list, pass_names
    from fxgen.policy.policy import policy_for

    if args.out_weights is not None and args.weights is None:
        raise FxgenError("--out-weights needs --weights (the tensors to transform)")
    if args.weights is not None and args.out_weights is None:
        raise FxgenError("--weights needs --out-weights: the transformed tensors must be written somewhere")
    policy = policy_for(allow)
    spec = load_spec(args.path, allow=allow)
    _check_targets(args, spec)
    docs = [parse_pass(text, f"--pass {i}") for i, text in enumerate(args.passes, 1)]
    problems = []
    for doc in docs:
        try:
            check_pass_list(doc, ("passes",), policy, allowed=registered)
        except SpecError as exc:
            problems += exc.diagnostics
    if problems:
        raise SpecError(problems)
    given = [doc.data["passes"][0] for doc in docs]
    every: list[Any] = [*spec.passes, *given]
    if not every:
        raise FxgenError("no passes: name one with --pass NAME (or list them under `passes:` in the spec)")
    own = len(spec.passes)

    def locate(i: int) -> Location:
        return spec.locate(("passes", i)) if i < own else Location(docs[i - own].path, 1, 1)

    state = None
    if args.weights is not None:
        from fxgen.assemble.weights import read_paired_weights

        state = read_paired_weights(spec, args.weights)
    result = apply_passes(spec, every, policy, state=state, locate=locate)
    for note in result.notes:
        print(note, file=sys.stderr)
    sweep((Path(args.out), Path(args.out_weights) if args.out_weights is not None else None), quiet=args.quiet)
    if args.out_weights is not None:
        from fxgen.write.weights import write_weights

        # the weights first: a run stopped before the spec is written leaves a spec that refuses them
        result.spec.weights_digest = write_weights(args.out_weights, result.tensors)
    result.spec.to_file(args.out)
    if not args.quiet:
        print(f"fxgen: wrote {printable_path(args.out)} ({', '.join(pass_names(every))})"
              + (f" and {printable_path(args.out_weights)}" if args.out_weights else ""), file=sys.stderr)  # fmt: skip
    return 0
