"""The ``fxgen`` command: validate | show | expand | generate | transform | export.

Errors are printed as ``PATH:LINE:COL: error: message`` and the exit status is 1; a traceback
is shown only with ``--debug``. Heavy imports (torch, black) happen inside the commands, so
``fxgen generate --check`` with nothing to do stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from fxgen._errors import Diagnostic, FxgenError, GenerateError, Location, SpecError, printable_path
from fxgen._version import __version__
from fxgen.cli.leftovers import LEFT_BY
from fxgen.cli.progress import Progress

__all__ = ["main"]

P = ParamSpec("P")
T = TypeVar("T")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        given = (*(args.allow or ()), *getattr(args, "allow_after", ()))  # before and after the command
        allow = given + project_allow(Path.cwd())
        return int(args.run(args, allow))
    except FxgenError as exc:
        if args.debug:
            raise
        print(exc if exc.location is not None else f"fxgen: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fxgen: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug in fxgen: say so in one line unless debugging
        if args.debug:
            raise
        print(f"fxgen: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)",
              file=sys.stderr)  # fmt: skip
        return 1


def project_passes(start: Path) -> tuple[str, ...]:
    """Register the passes ``[tool.fxgen] passes = {name = "pkg.module:function"}`` in the nearest
    pyproject.toml names (trusted project configuration: this imports those modules) and return
    their names. A spec can never do this."""
    import tomllib

    from fxgen.read.files import CONFIG_BYTES, bounded_text

    for folder in (start, *start.parents):
        pyproject = folder / "pyproject.toml"
        if not pyproject.is_file():
            continue
        where = Location(str(pyproject))
        try:
            data = tomllib.loads(bounded_text(pyproject, CONFIG_BYTES))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise FxgenError(f"cannot read [tool.fxgen]: {getattr(exc, 'strerror', None) or exc}", where) from None
        passes = data.get("tool", {}).get("fxgen", {}).get("passes", {})
        if not (isinstance(passes, dict) and all(isinstance(v, str) and v.count(":") == 1 for v in passes.values())):
            raise FxgenError('[tool.fxgen] passes must map names to "pkg.module:function"', where)
        from fxgen.passes.registry import register_pass
        from fxgen.policy.lookup import import_named

        for name, ref in passes.items():
            module_name, _, attr = ref.partition(":")
            try:
                function = getattr(import_named(module_name), attr)
                register_pass(name, function)
            except Exception as exc:  # trusted code, but its failure is a configuration error
                raise FxgenError(f"[tool.fxgen] passes: {name} = {ref!r}: {type(exc).__name__}: {exc}", where) from None
        return tuple(passes)
    return ()


def project_allow(start: Path) -> tuple[str, ...]:
    """``[tool.fxgen] allow = [...]`` from the nearest pyproject.toml (trusted project config)."""
    import tomllib

    from fxgen.read.files import CONFIG_BYTES, bounded_text

    for folder in (start, *start.parents):
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(bounded_text(pyproject, CONFIG_BYTES))
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise FxgenError(f"cannot read [tool.fxgen]: {getattr(exc, 'strerror', None) or exc}",
                                 Location(str(pyproject))) from None
            allow = data.get("tool", {}).get("fxgen", {}).get("allow", [])
            if not (isinstance(allow, list) and all(isinstance(a, str) for a in allow)):
                raise FxgenError("[tool.fxgen] allow must be a list of strings", Location(str(pyproject)))
            from fxgen.policy.policy import allow_entry_problem

            for entry in allow:
                problem = allow_entry_problem(entry)
                if problem:
                    raise FxgenError(f"[tool.fxgen] {problem}", Location(str(pyproject)))
            return tuple(allow)
    return ()


def _allow_entry(text: str) -> str:
    """``--allow`` values are checked while parsing (a bad one is a usage error, exit 2)."""
    from fxgen.policy.policy import allow_entry_problem

    problem = allow_entry_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text.strip()


def _common(*, top: bool) -> argparse.ArgumentParser:
    """Options every command takes, before or after the command name.

    The sub-commands' copies default to SUPPRESS and collect into their own list, so that
    ``fxgen --allow X validate --allow Y`` allows both: neither parser's default or values
    overwrite the other's.
    """
    common = argparse.ArgumentParser(add_help=False)
    default: object = None if top else argparse.SUPPRESS
    common.add_argument("--debug", action="store_true", default=False if top else argparse.SUPPRESS,
                        help="show Python tracebacks")  # fmt: skip
    common.add_argument("-q", "--quiet", action="store_true", default=False if top else argparse.SUPPRESS,
                        help="print errors and notes only: no summary, no progress")  # fmt: skip
    common.add_argument(
        "--allow", action="append", metavar="NAME", type=_allow_entry, default=default,
        dest="allow" if top else "allow_after",  # one list each: neither parser overwrites the other's
        help="also allow this module or qualified name as a target (repeatable)",
    )  # fmt: skip
    return common


def _set_value(text: str) -> tuple[str, Any]:
    """``--set NAME=VALUE``: the name, and VALUE read as a YAML scalar the way a spec's are
    (``0.5``, ``64``, ``true``, ``relu``; ``yes`` and ``010`` are refused as ambiguous; ``null``
    is None, which only an argument whose type allows None takes). A bad one, an empty VALUE
    among them, is a usage error (exit 2)."""
    name, equals, value = text.partition("=")
    name = name.strip()
    if not equals or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE (an argument's name, then its value: width=0.5)")
    if not value.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} has no VALUE after '='; write one: {name}=64, {name}=0.5, {name}=true, {name}=relu, "
            f"{name}=\"\" for an empty string, or {name}=null for None where the argument's type allows it")
    from fxgen.read.reader import parse_text
    from fxgen.read.scalars import resolve_plain

    if resolve_plain(value.strip()) is None:  # null, ~: a document of its own would be an empty spec
        return name, None
    try:
        data = parse_text(value, f"--set {name}").data
    except FxgenError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc.message}") from None
    if isinstance(data, (dict, list)):
        raise argparse.ArgumentTypeError(f"{text!r}: VALUE is one number, boolean or string, not {type(data).__name__}")
    return name, data


def _choice_options() -> argparse.ArgumentParser:
    """``--variant`` and ``--set``: the top class's arguments for validate, show and generate."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--variant", metavar="NAME", default=None,
                         help="build the spec's variant NAME (one of its `variants:`, e.g. s)")  # fmt: skip
    options.add_argument("--set", dest="set", action="append", default=[], type=_set_value, metavar="NAME=VALUE",
                         help="a value for one of the model's arguments, after the variant's (repeatable; "
                              "VALUE is a YAML scalar: width=0.5)")  # fmt: skip
    return options


def _choice(args: argparse.Namespace) -> Any:
    from fxgen.spec.choice import Choice

    return Choice.of(args.variant, dict(args.set), "--set")


def _load_spec(path: Any, allow: tuple[str, ...], args: argparse.Namespace) -> Any:
    """The validated spec at ``path`` with the command's ``--variant``/``--set`` as its defaults."""
    from fxgen._api import pass_arguments
    from fxgen.check.validate import validate_document
    from fxgen.policy.policy import policy_for
    from fxgen.read.imports import read_spec

    return validate_document(read_spec(path), policy_for(allow), _choice(args), passes=pass_arguments)


_EXAMPLES = {
    None: """examples:
  fxgen validate model_specs/                     check every spec, report each error at PATH:LINE:COL
  fxgen generate model_specs/                     write generated/<spec>.py for each spec
  fxgen export mypkg.models:Net --out net.yaml    trace a module and write its spec""",
    "validate": """example:
  fxgen validate model_specs/ --allow mypkg       allow mypkg's modules and functions as targets""",
    "show": """examples:
  fxgen show model_specs/resnet_block.yaml        the nodes as a table (shapes, FLOPs with `inputs:`), then parameters
  fxgen show --variants model_specs/width_net.yaml  parameters and FLOPs of every variant
  fxgen show --set width=0.5 model_specs/width_net.yaml  the model with width 0.5
  fxgen show --format mermaid model_specs/mlp.yaml  the graph as a mermaid flowchart (renders in GitHub markdown)""",
    "generate": """examples:
  fxgen generate model_specs/                     write what is missing or stale
  fxgen generate --check --diff model_specs/      write nothing; show what would change, exit 1 if any
  fxgen generate --check --full model_specs/      render every spec and compare the bytes (for CI)""",
    "expand": """example:
  fxgen expand model_specs/mobilenet_v2.yaml      the canonical nodes and declarations its compact items and shorthands stand for""",
    "transform": """examples:
  fxgen transform net.yaml --pass eliminate_dead_code --pass 'replace:{target: torch.add, by: torch.mul}' -o out.yaml
  fxgen transform net.yaml --pass fuse_conv_bn --weights net.safetensors -o fused.yaml --out-weights fused.safetensors
built-in passes: replace, rewrite, decompose, fuse_conv_bn, eliminate_dead_code, fold_constants (docs/transforms.md)""",
    "export": """examples:
  fxgen export mypkg.models:ResNetSmall --kwargs '{"num_classes": 10}' \\
      --out model_specs/resnet_small.yaml --weights resnet_small.safetensors
  fxgen export mypkg.nets:make_llama --example-input input_ids=int64[2,7] \\
      --example-kwargs '{"use_cache": false}' --out llama.yaml    (TorchDynamo when tracing fails)""",
}


def _parser() -> argparse.ArgumentParser:
    common = _common(top=False)
    choice = _choice_options()
    help_format = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="fxgen", description="Declarative torch.fx model specs: validate, show, expand, generate, transform, export.",
        parents=[_common(top=True)], epilog=_EXAMPLES[None], formatter_class=help_format,
    )  # fmt: skip
    parser.add_argument("--version", action="version", version=f"fxgen {__version__}")
    parser.set_defaults(command=None)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    p = sub.add_parser("validate", parents=[common, choice], epilog=_EXAMPLES["validate"], formatter_class=help_format, help="check specs; report every error with its location")
    p.add_argument("paths", nargs="+", metavar="PATH", help="spec files or directories")
    p.set_defaults(command="validate", run=cmd_validate)

    p = sub.add_parser("show", parents=[common, choice], epilog=_EXAMPLES["show"], formatter_class=help_format, help="print a spec's graph as a table with parameter counts (and shapes, FLOPs), or as a picture")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--format", choices=("table", "json", "mermaid", "dot", "svg"), default="table",
                   help="table (default; with declared inputs: shapes, dtypes and FLOPs), json, or a picture: "
                        "mermaid, dot, svg (needs Graphviz); pictures show shapes on the edges when the spec "
                        "declares inputs")  # fmt: skip
    p.add_argument("--depth", type=_depth, default=0, metavar="N",
                   help="open the blocks' calls N levels deep: their own nodes, shapes and modules in place of the "
                        "call (a Sequential of blocks opens into its items on the way); default 0")  # fmt: skip
    p.add_argument("--variants", action="store_true",
                   help="a table of the spec's variants: their arguments, parameters and FLOPs (with `inputs:`)")  # fmt: skip
    p.set_defaults(command="show", run=cmd_show)

    p = sub.add_parser("expand", parents=[common], epilog=_EXAMPLES["expand"], formatter_class=help_format, help="print a spec with its compact nodes and declaration shorthands written out: the canonical spec it stands for")
    p.add_argument("path", metavar="PATH")
    p.set_defaults(command="expand", run=cmd_expand)

    p = sub.add_parser("generate", parents=[common, choice], epilog=_EXAMPLES["generate"], formatter_class=help_format, help="write generated/<spec>.py for each spec")
    p.add_argument("paths", nargs="+", metavar="PATH", help="spec files or directories")
    p.add_argument("--out-dir", default="generated", type=Path, help="output directory (default: generated/)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if any file is missing, stale or orphaned")
    p.add_argument("--full", action="store_true",
                   help="render every spec and compare the result with its file, not only the header's hashes (which "
                        "whoever edits a file can recompute): with --check, what CI should run")  # fmt: skip
    p.add_argument("--diff", action="store_true", help="also print a unified diff of each change (with --check: of what would change; nothing is written)")
    p.add_argument("--force", action="store_true", help="overwrite files edited by hand or not written by fxgen")
    p.add_argument("--fail-on-change", action="store_true",
                   help="exit 1 when a file was written or removed (for hooks: pre-commit does not notice new files)")  # fmt: skip
    p.add_argument("--staged", action="store_true",
                   help="for hooks: in a git work tree, also exit 1 when a spec or generated file this run looked at "
                        "is not staged as it is (untracked, or changed since `git add`): the commit would lack it")  # fmt: skip
    p.add_argument("--jobs", "-j", type=int, default=0, help="worker processes (default: all cores)")
    p.add_argument("--shapes", action="store_true",
                   help="end forward's statements with their output shapes (needs `inputs:` in the spec)")  # fmt: skip
    p.set_defaults(command="generate", run=cmd_generate)

    p = sub.add_parser("transform", parents=[common], epilog=_EXAMPLES["transform"], formatter_class=help_format, help="run passes over a spec; write the transformed spec (and weights)")
    p.add_argument("path", metavar="IN", help="spec file to transform (its own passes run first)")
    p.add_argument("--pass", dest="passes", action="append", default=[], metavar="NAME[:ARGS]",
                   help="a pass, repeatable, run in order: its name, then `:` and its arguments as a YAML "
                        "flow mapping (`replace:{target: operator.add, by: operator.mul}`)")  # fmt: skip
    p.add_argument("-o", "--out", required=True, type=Path, help="spec file to write (.yaml or .json)")
    p.add_argument("--weights", type=Path, default=None, help="safetensors weights of IN (fused layers need them)")
    p.add_argument("--out-weights", type=Path, default=None, help="safetensors file for the transformed weights")
    p.set_defaults(command="transform", run=cmd_transform)

    p = sub.add_parser("export", parents=[common], epilog=_EXAMPLES["export"], formatter_class=help_format, help="trace an nn.Module and write its spec (and weights)")
    p.add_argument("target", metavar="PKG.MODULE:ATTR", help="an nn.Module class or a function returning a module")
    p.add_argument("--args", default="[]", help="JSON list of positional arguments for ATTR")
    p.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments for ATTR")
    p.add_argument("--concrete-args", default=None, help="JSON object of forward arguments to fix while tracing")
    p.add_argument("--leaf-module", action="append", default=[], metavar="CLASS",
                   help="qualified class name to keep as a call_module leaf (repeatable)")  # fmt: skip
    p.add_argument("--capture", choices=("auto", "trace", "dynamo"), default="auto",
                   help="trace: torch.fx symbolic tracing; dynamo: TorchDynamo on the example inputs; auto (default): "
                        "trace, and capture with Dynamo when tracing fails and example inputs are given")  # fmt: skip
    p.add_argument("--example-input", action="append", default=[], metavar="NAME=DTYPE[SHAPE]",
                   help="an example input for a Dynamo capture, e.g. x=float32[1,3,224,224] or ids=int64[2,7] "
                        "(repeatable; floats are seeded random values, integers ones)")  # fmt: skip
    p.add_argument("--example-kwargs", default=None, metavar="JSON",
                   help='JSON object of forward keyword arguments fixed during a Dynamo capture, e.g. \'{"use_cache": false}\'')  # fmt: skip
    p.add_argument("--dynamic", action="append", default=[], metavar="NAME=DIMS",
                   help="name an input's dimensions for a Dynamo capture, in order: a name keeps a dimension "
                        "symbolic under that name, - makes it static, e.g. x=batch,-,height,width (repeatable; "
                        "by default every dimension is symbolic, named INPUT_dimN)")  # fmt: skip
    p.add_argument("--static", action="store_true",
                   help="a Dynamo capture with every size fixed at the example inputs' (the spec takes only those shapes)")
    p.add_argument("--name", default=None, help="class name for the spec (default: the module's class name)")
    p.add_argument("--flat", action="store_true",
                   help="one graph (format 1) instead of keeping the model's own classes as blocks")  # fmt: skip
    p.add_argument("--out", required=True, type=Path, help="spec file to write (.yaml or .json)")
    p.add_argument("--weights", type=Path, default=None, help="safetensors file to write the weights to")
    p.set_defaults(command="export", run=cmd_export)
    return parser


def _report(diagnostics: list[Diagnostic]) -> None:
    for diagnostic in diagnostics:
        print(diagnostic, file=sys.stderr)


# -- validate / show ---------------------------------------------------------------------------
def cmd_validate(args: argparse.Namespace, allow: tuple[str, ...]) -> int:
    from fxgen.read.paths import find_specs

    specs = find_specs(args.paths)
    failed = 0
    unshaped: list[Path] = []  # valid, but without `inputs:` no shape was checked
    with Progress("validating", len(specs), quiet=args.quiet) as progress:
        for done, path in enumerate(specs, 1):
            progress.step(done, str(path))
            try:
                spec = _load_spec(path, allow, args)
                if spec.inputs or spec.passes:  # passes run and are checked; inputs must flow
                    _prepared(spec, allow, analyse=False)
                    _variants_flow(spec, allow)
                if not spec.inputs:
                    unshaped.append(path)
            except SpecError as exc:
                failed += 1
                _report(exc.diagnostics)
    ok = len(specs) - failed
    _summary(args, (f"{ok} of {_count(len(specs), 'spec')} valid" if failed else f"{_count(ok, 'spec')} valid")
             + _unshaped(unshaped))  # fmt: skip
    return 1 if failed else 0


def _unshaped(paths: list[Path]) -> str:
    """What the summary adds for valid specs that declare no example inputs: nothing ran through
    them, so a wrong channel count there passes; say which, and how to have it checked."""
    if not paths:
        return ""
    names = [str(path) if str(path).isprintable() else repr(str(path)) for path in paths[:3]]  # one line, always
    shown = ", ".join(names) + (f" and {len(paths) - 3:,} more" if len(paths) > 3 else "")
    these = "it declares" if len(paths) == 1 else "they declare"
    return (f"; shapes not checked in {_count(len(paths), 'spec')} ({shown}): {these} no `inputs:`; declare example "
            "inputs (`inputs: {x: {shape: [batch, 3, 32, 32]}}`) to have every node's shapes checked")


def _variants_flow(spec: Any, allow: tuple[str, ...]) -> None:
    """Each variant's model, after its passes, with the declared inputs flowing through it (as
    the spec's own must): a failure is reported at the variant, saying where it arose."""
    from fxgen.check.arguments import choose
    from fxgen.spec.choice import Choice

    for name in spec.variants:
        try:
            _prepared(choose(spec, Choice(name)), allow, analyse=False)
        except SpecError as exc:
            where = spec.document.key_location(("variants", name)) if spec.document else Location(f"<spec {spec.name}>")
            raise SpecError([Diagnostic(where, f"variant {name!r}: {d.location}: {d.message}")
                             for d in exc.diagnostics]) from None  # fmt: skip


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' * (n != 1)}"


def _summary(args: argparse.Namespace, text: str) -> None:
    """The one line a command ends with, as black and ruff do (silenced by -q)."""
    if not args.quiet:
        print(f"fxgen: {text}", file=sys.stderr)


def _depth(text: str) -> int:
    """``--depth``: a count of levels, 0 or more."""
    if not text.isdigit() or int(text) > 1000:
        raise argparse.ArgumentTypeError(f"a depth is a whole number of levels, 0 to 1000, not {text!r}")
    return int(text)


def _prepared(
    spec: Any, allow: tuple[str, ...], *, notes: bool = False, analyse: bool = True, depth: int = 0
) -> tuple[Any, Any]:
    """The spec after its passes (with ``notes``, printing what they reported), with its blocks
    opened ``depth`` levels deep, and its analysis when it declares inputs (a located error when
    they do not flow). Without ``analyse`` (for ``fxgen validate``), only whether they flow is
    checked, and the analysis is None."""
    from fxgen.policy.policy import policy_for

    policy = policy_for(allow)
    origin = None
    if spec.passes:
        from fxgen._api import transformed

        result = transformed(spec, policy, meta=True)  # the spec they make; no tensor of the sizes it declares
        assert result is not None
        origin, spec = spec, result.spec
        for note in result.notes if notes else ():
            print(note, file=sys.stderr)
    from fxgen.analysis.expand import expand_blocks
    from fxgen.assemble.module import default_instance

    spec = default_instance(spec)[0]  # the graph the model runs, as its top class builds it at its defaults
    analysis = None
    if depth:
        if spec.inputs:  # where the inputs do not flow, the error is located in the spec as written
            from fxgen.analysis import shapes

            shapes.check_flow(spec, policy, origin=origin)
        spec = expand_blocks(spec, depth)
    if spec.inputs:
        from fxgen.analysis import shapes

        if analyse:
            analysis = shapes.analyse(spec, policy, origin=None if depth else origin)
        else:
            shapes.check_flow(spec, policy, origin=origin)
    return spec, analysis


def _svg(source: str) -> str:
    """Graphviz's ``dot -Tsvg`` of ``source``."""
    import shutil
    import subprocess

    program = shutil.which("dot")
    if program is None:
        raise FxgenError("--format svg needs Graphviz's `dot` program, which is not installed (apt-get install "
                         "graphviz, brew install graphviz); --format dot prints the source it would draw")  # fmt: skip
    done = subprocess.run([program, "-Tsvg"], input=source, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise FxgenError(f"Graphviz's dot failed: {done.stderr.strip()[:300]}")
    return done.stdout


def cmd_show(args: argparse.Namespace, allow: tuple[str, ...]) -> int:
    from fxgen.cli.show import show, show_json, show_variants

    spec = _load_spec(args.path, allow, args)
    if args.variants:
        if args.format != "table":
            raise FxgenError(f"--variants prints a table; leave out --format {args.format}")
        text = show_variants(spec, lambda chosen: _prepared(chosen, allow), allow=allow)
        sys.stdout.write(text)
        _summary(args, f"{spec.name}: {_count(len(spec.variants), 'variant')}")
        return 0
    spec, analysis = _prepared(spec, allow, notes=True, depth=args.depth)
    if args.format == "json":
        text = show_json(spec, analysis, allow=allow)
    elif args.format in ("mermaid", "dot", "svg"):
        from fxgen.analysis.pictures import dot, mermaid

        text = mermaid(spec, analysis) if args.format == "mermaid" else dot(spec, analysis)
        if args.format == "svg":
            text = _svg(text)
    else:
        text = show(spec, allow=allow, analysis=analysis)
    sys.stdout.write(text)
    _summary(args, f"{spec.name}: {_count(len(spec.nodes), 'node')}, {_count(len(spec.modules), 'module')}")
    return 0


# -- generate ----------------------------------------------------------------------------------
def cmd_expand(args: argparse.Namespace, allow: tuple[str, ...]) -> int:
    """The spec's canonical form: its compact items and declaration shorthands desugared
    (docs/spec-format.md, "The compact node form", "Declaration shorthands"), as YAML on stdout,
    loading and validating as the spec does. Only the file's own text: its imports stay imports
    (resolved, so a missing one is reported)."""
    from fxgen.check.checker import RESERVED_NAMES
    from fxgen.read.imports import read_spec
    from fxgen.spec.compact import desugared
    from fxgen.spec.model import yaml_text

    read = read_spec(args.path)
    doc = desugared(getattr(read, "own", None) or read, RESERVED_NAMES)
    if not isinstance(doc.data, dict):
        raise SpecError.at(Location(args.path, 1, 1), "a spec is a mapping with `fxgen`, `name` and `nodes`")
    sys.stdout.write(yaml_text(doc.data))
    return 0


def cmd_generate(args: argparse.Namespace, allow: tuple[str, ...]) -> int:
    """Write (or with --check, only compare) the generated file of every spec.

    Up-to-date files are recognised from their header hashes alone, so a no-op run imports
    neither torch nor black; with --full every spec is rendered and its file compared with the
    result, since those unkeyed hashes prove nothing to whoever recomputes them after an edit
    (a forged file). Hand-edited files and files fxgen did not write are left alone
    without --force. With whole spec directories, generated files whose spec was deleted
    (orphans) are removed, or with --check reported.
    """
    with _terminate_cleanly():
        return _generate(args, allow)


def _generate(args: argparse.Namespace, allow: tuple[str, ...]) -> int:
    from fxgen.read.paths import find_specs
    from fxgen.write.outputs import orphans, plan, refusal

    jobs = plan(find_specs(args.paths), args.out_dir, shapes=args.shapes, imports=allow, variant=args.variant,
                arguments=tuple(args.set))  # fmt: skip
    todo = [j for j in jobs if j.status in ("missing", "stale") or (args.force and j.status != "current")
            or (args.full and j.status == "current")]  # fmt: skip
    problems, swept = _temporaries(args)
    if todo and not args.check:
        from fxgen.write.atomic import ensure_writable

        ensure_writable(args.out_dir)  # before minutes of rendering, not after
    rendered, failures = _render_all(todo, allow, args.jobs, quiet=args.quiet, shapes=args.shapes)
    changed = written = removed = 0
    for job in jobs:
        if job.status in ("edited", "foreign") and not args.force:
            problems += 1
            print(GenerateError(refusal(job), Location(str(job.out))), file=sys.stderr)
    for job in todo:
        if job.spec in failures:
            problems += 1
            _report_failure(failures[job.spec])
            continue
        new = rendered[job.spec]
        if new == job.old:
            continue
        if args.diff:
            from fxgen.write.outputs import unified_diff

            sys.stdout.write(unified_diff(job, new))
        if args.check:
            problems += 1
            print(GenerateError(_out_of_date(job), Location(str(job.out))), file=sys.stderr)
            continue
        from fxgen.write.atomic import write_atomic
        from fxgen.write.outputs import guard

        # looked at again right before the rename: an edit made while rendering is kept
        if _or_report(write_atomic, job.out, new, check=guard(job, force=args.force), sweep=False) is None:
            problems += 1
            continue
        changed += 1
        written += 1
        if not args.quiet:
            print(f"fxgen: wrote {printable_path(job.out)}", file=sys.stderr)
    spec_dirs = [Path(p) for p in args.paths if Path(p).is_dir()]
    for path, intact in orphans(spec_dirs, args.out_dir, jobs) if spec_dirs else ():
        if args.check or not intact:
            problems += 1
            why = "its spec no longer exists; " + (
                "run `fxgen generate` to remove it" if intact else "it was edited by hand, so fxgen leaves it: delete it"
            )
            print(GenerateError(f"orphaned: {why}", Location(str(path))), file=sys.stderr)
            continue
        from fxgen.write.outputs import remove_orphan

        gone = _or_report(remove_orphan, path)
        if gone is None:
            problems += 1
        if not gone:  # a run in parallel removed it first
            continue
        changed += 1
        removed += 1
        if not args.quiet:
            print(f"fxgen: removed {printable_path(path)} (its spec no longer exists)", file=sys.stderr)
    if args.check and problems:
        print(f"fxgen: {problems} problem{'s' * (problems != 1)} with generated files; "
              "run `fxgen generate` (with --diff to see the changes)", file=sys.stderr)  # fmt: skip
    unstaged = _unstaged(jobs) if args.staged else 0
    if not problems and not unstaged:
        if args.check:
            compared = " (each rendered and compared with its file)" if args.full else ""
            _summary(args, f"{_count(len(jobs), 'spec')}, every generated file up to date{compared}")
        else:
            parts = [f"{written} written", f"{len(jobs) - written} unchanged"] + ([f"{removed} removed"] if removed else [])
            parts += [f"{_count(swept, 'stale temporary file')} removed"] if swept else []
            _summary(args, f"{_count(len(jobs), 'spec')}, {', '.join(parts)}")
    if args.fail_on_change and changed:
        print(f"fxgen: {changed} generated file{'s' * (changed != 1)} changed; review and stage "
              f"{'them' if changed != 1 else 'it'} (git add), then commit again", file=sys.stderr)  # fmt: skip
        return 1
    return 1 if problems or unstaged else 0


def _unstaged(jobs: list[Any]) -> int:
    """``--staged``: report each spec or generated file of ``jobs`` that git would not commit as
    fxgen saw it (``fxgen.cli.staged``); returns how many."""
    import shlex

    from fxgen.cli.staged import not_staged

    found = not_staged((job.spec, job.out) for job in jobs)
    for path in found:
        print(GenerateError(f"not staged: git add {shlex.quote(str(path))}", Location(str(path))), file=sys.stderr)
    if found:
        print(f"fxgen: {_count(len(found), 'file')} not staged: the commit would not hold what fxgen checked; "
              f"stage {'it' if len(found) == 1 else 'them'} (git add), then commit again", file=sys.stderr)  # fmt: skip
    return len(found)


def _or_report(step: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
    """``step(...)``, or None once the GenerateError it raised is printed: a problem with one
    file, the others go on."""
    try:
        return step(*args, **kwargs)
    except GenerateError as exc:
        print(exc, file=sys.stderr)
        return None


def _temporaries(args: argparse.Namespace) -> tuple[int, int]:
    """Temporary files killed runs left in the output directory (not those of runs going on in
    parallel, ``fxgen.write.atomic``): with --check each is a problem, else each is removed and
    named. Returns (problems, removed)."""
    from fxgen.write.atomic import remove_stale, stale_temporaries

    if args.check:
        stale = stale_temporaries(args.out_dir)
        for path in stale:
            print(GenerateError("temporary file left by an interrupted fxgen run; run `fxgen generate` to remove it",
                                Location(str(path))), file=sys.stderr)  # fmt: skip
        return len(stale), 0
    try:
        removed = remove_stale(args.out_dir)
    except GenerateError as exc:
        print(exc, file=sys.stderr)
        return 1, 0
    for path in removed if not args.quiet else ():
        print(f"fxgen: removed {printable_path(path)} ({LEFT_BY})", file=sys.stderr)
    return 0, len(removed)


def _out_of_date(job: Any) -> str:
    if job.status == "missing":
        return f"missing: not generated yet from {printable_path(job.label)}"
    if job.status == "stale":
        return f"stale: out of date with {printable_path(job.label)}"
    if job.status == "current":  # found only by --full: the header's hashes match, the bytes do not
        return (f"forged: differs from what {printable_path(job.label)} generates, though its header's hashes say "
                "it is current (anyone can recompute them); run `fxgen generate --full` to rewrite it")  # fmt: skip
    return f"{job.status}: differs from what {printable_path(job.label)} generates"


@contextlib.contextmanager
def _terminate_cleanly() -> Iterator[None]:
    """Turn SIGTERM (CI timeouts, pre-commit being stopped) into SystemExit while generating, so
    an interrupted write removes its temporary file as Ctrl-C does (targets are never half-written)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _report_failure(failure: list[Diagnostic] | str) -> None:
    if isinstance(failure, str):
        print(failure, file=sys.stderr)
    else:
        _report(failure)


def _render_all(
    jobs: list[Any], allow: tuple[str, ...], workers: int, *, quiet: bool = False, shapes: bool = False
) -> tuple[dict[Path, str], dict[Path, Any]]:
    """Render every job, across processes when there are several (black is CPU-bound)."""
    rendered: dict[Path, str] = {}
    failures: dict[Path, Any] = {}
    if not jobs:
        return rendered, failures  # nothing to render: torch and black stay unimported
    from fxgen._api import render_job_safely

    workers = workers or os.cpu_count() or 1
    tasks = [(job, allow, shapes) for job in jobs]
    if len(tasks) >= 4 and workers > 1:  # below that, starting workers costs more than it saves
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("forkserver" if sys.platform != "win32" else "spawn")
        with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=context) as pool:
            results = _with_progress(pool.map(render_job_safely, tasks), jobs, quiet)
    else:
        results = _with_progress(map(render_job_safely, tasks), jobs, quiet)
    for job, (text, problem) in zip(jobs, results, strict=True):
        if text is None:
            failures[job.spec] = problem
        else:
            rendered[job.spec] = text
    return rendered, failures


def _with_progress(results: Iterator[Any], jobs: list[Any], quiet: bool) -> list[Any]:
    """The results, in order, counting them on a terminal as they come."""
    out = []
    with Progress("rendering", len(jobs), quiet=quiet) as progress:
        for done, (job, result) in enumerate(zip(jobs, results, strict=False), 1):
            progress.step(done, str(job.spec))
            out.append(result)
    return out


# -- transform ---------------------------------------------------------------------------------
def cmd_transform(args: argparse.Namespace, allow: tuple[str, ...]) -> int:
    from fxgen.cli.transform import transform_command

    return transform_command(args, allow, project_passes(Path.cwd()))


# -- export ------------------------------------------------------------------------------------
def cmd_export(args: argparse.Namespace, allow: tuple[str, ...]) -> int:
    from fxgen.cli.export import export_command

    export_command(args)
    return 0
