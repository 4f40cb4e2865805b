"""The declaration checks of one graph body (modules, parameters, buffers, arguments, named values,
inputs) and the run of every check over a document: ``Checker`` extends the node checks
(``fxgen.check.nodes``), which extend what both share (``fxgen.check.checker``).

Nothing a spec names is called here except the allowed nn.Module classes' signatures and their
construction: on the meta device (for the constructor and get_attr checks), or, when validating for
a load, by the constructor the load will use, so that each module is constructed once and the build
keeps it. In format 2 one Checker checks the top class and one more each block, once per distinct
set of argument values the model constructs it with.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import keyword
import re
from collections.abc import Iterator
from typing import Any

import torch
import torch.fx

from fxgen._errors import Diagnostic, SpecError, closest_name
from fxgen.check.arguments import SIMPLE_TYPES, choose_data, is_a, variant_problems
from fxgen.check.blocks import (
    PRESENCE_ONLY_IN_CONDITIONS,
    bare_name_problems,
    bind_written,
    block_names,
    class_cycles,
    class_depth,
    declaration_problems,
    float_for_int,
    format_problems,
    is_arg,
    module_values,
    uses,
    value_name_problems,
    value_problems,
)
from fxgen.check.checker import IDENTIFIER, RESERVED_NAMES, Construct, MakeTensor
from fxgen.check.documents import BodyDocument
from fxgen.check.functions import arities, function_problems
from fxgen.check.module_init import init_problems
from fxgen.check.nodes import NodeChecks
from fxgen.check.passes import Catalogue, check_passes
from fxgen.check.schema import check_schema
from fxgen.check.upgrade import check_version
from fxgen.construct.draws import draw_plan
from fxgen.construct.modules import construct_call, same_random_state, set_attr_path
from fxgen.construct.tensors import shape_problem
from fxgen.policy.policy import Policy, TargetError
from fxgen.read.reader import Document
from fxgen.read.yaml_events import JsonPath
from fxgen.spec.budget import Budget, BudgetError, counting
from fxgen.spec.check_bounds import size_limit
from fxgen.spec.choice import Choice
from fxgen.spec.compact import desugared
from fxgen.spec.expr import (
    CALLS,
    FUNCTIONS,
    ExprError,
    Function,
    names,
    parse,
    shown,
    tested,
    user_calls,
)
from fxgen.spec.init import check_init
from fxgen.spec.literals import literal_problem
from fxgen.spec.model import (
    ArgSpec,
    BufferSpec,
    ClassSpec,
    FunctionSpec,
    ModuleSpec,
    ParameterSpec,
    Spec,
    walk_nodes,
)
from fxgen.spec.packed import PACKED_TOTAL_LIMIT, PackedError, check_packed, packed_size
from fxgen.spec.resolve import (
    BindError,
    bind,
    callable_functions,
    declared,
    has_arguments,
    is_module_loop,
    loop_rows,
    needs_resolution,
    substitute,
    substitute_declaration,
    substitute_init,
    with_values,
)
from fxgen.spec.tree import ModelTree
from fxgen.spec.values import DTYPES

__all__ = ["WEIGHTS_DIGEST", "Checker", "run_checks", "validate_body"]

_CONDITIONS = ("<", "<=", ">", ">=", "==", "!=", "and", "or", "not", "bool")  # what a check's tree may be


WEIGHTS_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")  # what fxgen.write.weights records


def run_checks(
    doc: Document,
    policy: Policy,
    construct: Construct | None,
    make_tensor: MakeTensor | None = None,
    choice: Choice | None = None,
    passes: Catalogue | None = None,
) -> tuple[Spec, dict[str, Any] | None]:
    """Every check of ``doc``: its Spec, and what was constructed for a load (``construct``), by
    path; a SpecError lists every problem. ``choice`` (a variant, overrides) gives the top
    class's argument values: the Spec has them as its defaults, and the checks run with them.
    Every variant the spec declares is checked to build too. The passes it names are checked
    against ``passes`` (the built-in passes' catalogue, handed down by ``fxgen._api``; None:
    where they run)."""
    check_version(doc)
    doc = desugared(doc, RESERVED_NAMES)
    errors = check_schema(doc)
    if errors:
        raise SpecError(errors)
    if doc.data["fxgen"] >= 2:
        construct = make_tensor = None  # blocks are built by the build itself, from the validated Spec
    checker = Checker(doc, policy, construct, make_tensor)
    checker.passes = passes
    for where, message in format_problems(doc.data) + class_cycles(doc.data) + class_depth(doc.data):
        checker.error(where, message)
    for where, message, key in variant_problems(doc.data) if doc.data["fxgen"] >= 2 else ():
        checker.error(where, message, key=key)
    if checker.errors:  # the other checks assume the format's shape and acyclic blocks
        raise SpecError(checker.errors)
    if choice:
        doc = choose_data(doc, choice)
        checker = Checker(doc, policy, construct, make_tensor)
    if construct is not None and make_tensor is not None:
        checker.plan = draw_plan(doc.data)
    state = torch.random.get_rng_state() if make_tensor is not None else None
    checker.run()
    checker.check_unused_blocks()
    if checker.errors and choice:  # the spec may be fine with its defaults: say what was chosen
        raise SpecError([Diagnostic(d.location, f"{d.message} (chosen: {choice.describe()})") for d in checker.errors])
    if checker.errors:
        raise SpecError(checker.errors)
    problems = [problem for name in doc.data.get("variants", {}) for problem in _variant_builds(doc, policy, name)]
    if problems:
        raise SpecError(problems)
    made: dict[str, Any] | None = checker.constructed
    if checker.unfinished:  # a module builds on meta only: the build makes everything, and says why
        if state is not None:
            torch.random.set_rng_state(state)
        made = None
    spec = Spec.from_dict(doc.data, document=doc)
    for (*scope, path), kinds in checker.init_kinds.items():
        body = spec.classes[scope[1]] if scope else spec
        body.modules[path].kinds = kinds
    bodies: list[tuple[Spec | ClassSpec, list[str | None]]] = [(spec, checker.canonical_types)]
    bodies += [(spec.classes[name], types) for name, types in checker.block_types.items()]
    for body, types in bodies:
        for node, canonical in zip(walk_nodes(body.nodes), types, strict=True):
            node.type = canonical
            if node.op == "output" and node.name == "output":
                node.name = None  # torch.fx's own name for it; to_spec leaves it out too
    for graph in (spec, *(spec.block(name) for name in spec.classes)):
        if needs_resolution(graph.nodes):
            continue  # checked per instance, resolved (Checker.check_resolved_nodes)
        if any(node.name is None and node.op != "output" for node in walk_nodes(graph.nodes)):
            # torch.fx names unnamed nodes itself ("relu"); a later explicit name may collide with
            # one of those. Building the bare graph (no modules, no tensors) is the exact check.
            from fxgen.construct.graph import build_graph

            build_graph(graph, policy)
    return spec, made


def _variant_builds(doc: Document, policy: Policy, name: str) -> list[Diagnostic]:
    """Variant ``name``'s problems: the spec checked with its values, each problem reported at the
    variant (saying where it arose), since the spec is fine with its defaults."""
    checker = Checker(choose_data(doc, Choice(name)), policy)
    checker.run()
    where = doc.key_location(("variants", name))
    values = ", ".join(f"{k}={v!r}" for k, v in doc.data["variants"][name].items()) or "the defaults"
    return [Diagnostic(where, f"variant {name!r} ({values}) does not build: {d.location}: {d.message}")
            for d in checker.errors]  # fmt: skip


def validate_body(outer: Document, prefix: JsonPath, body: dict[str, Any], policy: Policy) -> Spec:
    """The small spec ``body`` (``{nodes: [...]}``) at ``prefix`` in ``outer``, validated."""
    return run_checks(BodyDocument(outer, prefix, body), policy, None)[0]


def _bound_module_values(
    value: Any, path: JsonPath, env: dict[str, Any]
) -> Iterator[tuple[JsonPath, dict[str, Any], dict[str, Any]]]:
    """Each module value (``{class, args, kwargs}``) inside a declaration value, with its path
    and the environment it is built in: inside a ``for`` over module declarations, once per
    row with the row's names bound (until one row fails: one error says it). A ``for`` whose
    rows cannot be computed gives nothing here; substituting the declaration reports it."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _bound_module_values(item, (*path, i), env)
    elif isinstance(value, dict):
        if is_module_loop(value):
            try:
                rows = loop_rows(value, env)
            except ExprError:
                return
            for bound in rows:
                yield from _bound_module_values({"module": value["module"]}, path, {**env, **bound})
        elif isinstance(value.get("module"), dict):
            decl = value["module"]
            if is_module_loop(decl):
                yield from _bound_module_values(decl, (*path, "module"), env)
                return
            yield (*path, "module"), decl, env
            for field in ("args", "kwargs"):
                yield from _bound_module_values(decl.get(field), (*path, "module", field), env)
        else:
            for key, item in value.items():
                yield from _bound_module_values(item, (*path, key), env)


def _item(value: Any, path: tuple[Any, ...]) -> Any:
    """The part of a (schema-valid) declaration value at ``path``."""
    for key in path:
        value = value[key]
    return value




class Checker(NodeChecks):
    """Every check of a graph body: the declarations here, the nodes in ``NodeChecks``. One
    checks the top class; in format 2, one more checks each block, once per distinct set of
    argument values the model constructs it with (``instantiate``), or once without values for a
    block nothing uses."""

    # What a load makes during validation, in order, when that is not the declarations' order.
    plan: list[tuple[str, str]] | None = None
    passes: Catalogue | None = None  # the built-in passes a spec's `passes:` may name
    stopped = False  # the model's budget stopped the check (fxgen.spec.budget)

    def __init__(self, *args: Any, env: dict[str, Any] | None = None, top: Checker | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs, parent=top)
        self.top = top or self
        self.blocks = block_names(self.doc.data)
        self.arguments = list(self.data.get("args", {}))
        self.value_names = list(self.data.get("values", {}))
        self.label = f"block {self.scope[1]!r}" if self.scope else f"class {self.doc.data['name']!r}"
        if top is None:
            self.block_types: dict[str, list[str | None]] = {}  # block -> its nodes' canonical types
            self.instantiated: dict[tuple[str, str], Any] = {}  # (block, its values) -> a stand-in module
            self.costs: dict[tuple[str, str], dict[str, int]] = {}  # (block, its values) -> what it charged the budget
            self.top_runs = {}  # a block instance's stand-in (by id) -> the nodes its forward runs
            self.active: set[str] = set()  # blocks being checked now (a cycle is reported, not followed)
            self.init_kinds: dict[tuple[str, ...], dict[str, str]] = {}  # (scope..., module) -> its init's kinds
            self.arities = arities(self.doc.data)  # the spec's functions -> (fewest, most) arguments
            self.callables: dict[str, Function] = {}  # the spec's functions, once they check
            env = self.top_values()
        elif env is not None and top.callables:
            env = {**env, CALLS: top.callables}
        if top is not None:
            self.top_runs = top.top_runs
        self.env = env  # the values of this body's arguments, when known

    def top_values(self) -> dict[str, Any] | None:
        """The top class's arguments at their defaults (what ``fxgen.load`` builds), or None."""
        try:
            return bind({n: ArgSpec.from_data(a) for n, a in self.data.get("args", {}).items()}, [], {})
        except BindError:
            return None  # check_arguments reports the missing default

    def run(self) -> None:
        """Every check of this body; for the model's class, with the whole model's budget in force
        (``fxgen.spec.budget``): a count beyond its cap stops the check, with one error."""
        if self.scope:
            self._run()
            return
        try:
            with counting(self.budget):
                self._run()
        except BudgetError as exc:
            self.error(exc.at or (), str(exc))
            self.stopped = True

    def _run(self) -> None:
        if not self.scope:
            self.check_class_name()
            self.check_functions()
        self.check_arguments()
        self.check_named_values()
        self.check_paths()
        self.check_tensors("parameters")  # before the modules: a plan may create tensors among them
        self.check_tensors("buffers")
        self.check_modules()
        self.check_nodes()
        if not self.scope:
            self.check_inputs()
            self.check_conditions()
            check_passes(self, self.data.get("passes", []), self.passes)
            self.check_weights_digest()

    def check_body(self, where: JsonPath, body: dict[str, Any]) -> None:
        """A pass's small spec (``{nodes: [...]}``), validated as a spec of its own, located here."""
        try:
            validate_body(self.doc, (*self.scope, *where), body, self.policy)
        except SpecError as exc:
            self.errors.extend(exc.diagnostics)

    def check_weights_digest(self) -> None:
        """``weights_digest`` exactly as fxgen writes it (the schema's pattern, read by Python,
        lets a trailing newline through)."""
        digest = self.data.get("weights_digest")
        if isinstance(digest, str) and not WEIGHTS_DIGEST.fullmatch(digest):
            self.error(("weights_digest",), f"weights_digest {digest!r} is not 'sha256:' and 64 lowercase hex digits; "
                       "`fxgen export --weights` writes it: export again, or delete the line to load any weights "
                       "that fit")  # fmt: skip

    def check_inputs(self) -> None:
        """``inputs`` names placeholders, and every placeholder without a default (or none)."""
        inputs = self.data.get("inputs")
        if inputs is None:
            if self.data.get("shapes"):
                self.error(("shapes",), "`shapes: true` needs example inputs: declare them under `inputs:` "
                           "(`inputs: {x: {shape: [1, 3, 224, 224]}}`)")  # fmt: skip
            return
        placeholders = {n.get("name"): n for n in self.data["nodes"] if n.get("op") == "placeholder"}
        for name, entry in inputs.items():
            if name not in placeholders:
                known = ", ".join(repr(p) for p in placeholders if p) or "none"
                written = name in {n.get("name") for n in self.data["nodes"]} or not placeholders
                hint = "" if written else (f", or write its placeholder ({{op: placeholder, name: {name}}}): `inputs:` "
                                           "implies the placeholders only of compact nodes that write none")  # fmt: skip
                self.error(("inputs", name), f"input {name!r} is not a placeholder of the graph (its placeholders: "
                           f"{known}); name a placeholder{hint}", key=True)  # fmt: skip
            for i, dim in enumerate(entry["shape"]):
                if isinstance(dim, str) and not IDENTIFIER.fullmatch(dim):
                    self.error(("inputs", name, "shape", i), f"symbolic dimension {dim!r} is not an identifier; "
                               "use only letters, digits and _")  # fmt: skip
                elif isinstance(dim, str) and (keyword.iskeyword(dim) or dim in placeholders):
                    self.error(("inputs", name, "shape", i), f"symbolic dimension {dim!r} is a keyword or a "
                               "placeholder's name; choose another name")  # fmt: skip
        missing = [p for p, n in placeholders.items() if p and p not in inputs and "default" not in n]
        if missing:
            self.error(("inputs",), f"inputs: no example for placeholder{'s' * (len(missing) > 1)} "
                       f"{', '.join(map(repr, missing))}, which {'have' if len(missing) > 1 else 'has'} no default; "
                       "declare every input without a default", key=True)  # fmt: skip

    def check_conditions(self) -> None:
        """``checks`` needs ``inputs`` declaring every placeholder that has no default; each
        condition parses, uses only dimension names of ``inputs``, and is a condition (a
        comparison, ``and``/``or``/``not`` of them, or ``True``/``False``)."""
        texts = self.data.get("checks")
        if texts is None:
            return
        inputs = self.data.get("inputs")
        if inputs is None:
            self.error(("checks",), "`checks` needs `inputs`: the shapes it checks the inputs against "
                       "(`inputs: {x: {shape: [batch, 3, height, width]}}`)", key=True)  # fmt: skip
            return
        dims = list(dict.fromkeys(d for entry in inputs.values() for d in entry["shape"] if isinstance(d, str)))
        for i, text in enumerate(texts):
            try:
                tree = parse(text)
            except ExprError as exc:
                self.error(("checks", i), f"check {text!r}: {exc}")
                continue
            if tested(tree):
                self.error(("checks", i), f"check {text!r}: {PRESENCE_ONLY_IN_CONDITIONS}")
                continue
            if user_calls(tree):
                self.error(("checks", i), f"check {text!r}: calls {user_calls(tree)[0]}(), but a check calls only "
                           f"the built-in functions ({' '.join(FUNCTIONS)}): it is checked in forward, on sizes")  # fmt: skip
                continue
            unknown = [name for name in names(tree) if name not in dims]
            if unknown:
                close = closest_name(unknown[0], dims)
                hint = f"; did you mean {close!r}?" if close else (
                    f" (they are: {', '.join(dims)})" if dims else "; name a dimension in `inputs:` (`[batch, 3]`)")
                self.error(("checks", i), f"check {text!r}: {unknown[0]!r} is no dimension name of `inputs`{hint}")
            elif tree[0] not in _CONDITIONS:
                self.error(("checks", i), f"check {text!r} is no condition: write a comparison (`height % 8 == 0`, "
                           "`seq <= 512`), or `and`/`or`/`not` of comparisons")  # fmt: skip
            elif size_limit(tree) == -1:
                self.error(("checks", i), f"check {text!r} cannot be computed alike by fxgen.load and the generated "
                           "forward at any size (arithmetic on a comparison's True/False, a root of a negative number, "
                           "a power past 2**63): write it with numbers only, within the bounds")  # fmt: skip

    # -- format 2: arguments and blocks ------------------------------------------------------
    def check_arguments(self) -> None:
        refused: list[str] = []  # arguments whose default is refused
        instance, self.instance = self.instance, ""  # the class's own declarations: the same for every instance
        try:
            self._check_arguments(refused)
        finally:
            self.instance = instance
        if self.env is not None and any(self.env.get(name) == self.data["args"][name]["default"] for name in refused):
            self.env = None  # this instance takes a refused default: one error, not one per use of it

    def _check_arguments(self, refused: list[str]) -> None:
        for name, decl in self.data.get("args", {}).items():
            where: JsonPath = ("args", name)
            if not IDENTIFIER.fullmatch(name):
                self.error(where, f"argument name {name!r} is not an identifier; use only letters, digits and _",
                           key=True)  # fmt: skip
            elif keyword.iskeyword(name) or keyword.issoftkeyword(name):
                self.error(where, f"argument name {name!r} is a Python keyword; choose another name", key=True)
            elif name in ("self", *RESERVED_NAMES) or hasattr(builtins, name) or name in self.top.class_names:
                self.error(where, f"argument name {name!r} would shadow a name the generated code uses", key=True)
            arg = ArgSpec.from_data(decl)
            try:
                self.policy.resolve_type(arg.type)
            except TargetError as exc:
                self.error((*where, "type") if isinstance(decl, dict) else where, f"argument {name!r}: {exc}")
            if isinstance(decl, dict) and "default" in decl:
                default = decl["default"]
                if has_arguments(default):
                    refused.append(name)
                    self.error((*where, "default"), f"argument {name!r}: a default is a constant (a number, string, "
                               "bool, null, or a list of them), not an expression or a module; compute what "
                               "depends on other arguments under `values:`")  # fmt: skip
                else:
                    value = self.decode_constant(default, (*where, "default"))
                    expected = SIMPLE_TYPES.get(arg.type)
                    # null is None, no value of a simple type (`typing.Optional[int]` takes it); a default that
                    # did not decode (None too) was reported already
                    if expected is not None and (default is None or value is not None) and not is_a(value, expected):
                        refused.append(name)
                        self.error((*where, "default"), f"argument {name!r}: the default {value!r} is not "
                                   f"{arg.type}; write a default of the declared type{_written(value, arg.type)}")  # fmt: skip
            elif not self.scope:
                self.error(where, f"argument {name!r} of the top class needs a default: fxgen.load builds the "
                           f"model with it (`{name}: {{type: {arg.type}, default: ...}}`)", key=True)  # fmt: skip

    def check_functions(self) -> None:
        """The spec's ``functions:`` (``fxgen.check.functions``); once they check, the
        expressions of every class may call them (``CALLS`` in the environment)."""
        bodies = [self.doc.data, *self.doc.data.get("classes", {}).values()]
        imported = {name.split(".")[-1] for body in bodies for entry in body.get("modules", {}).values()
                    for _, name in uses(entry)}  # a class the file may import by its own name  # fmt: skip
        problems = function_problems(self.doc.data, self.class_names | imported)
        for where, message in problems:
            self.error(where, message, key=len(where) == 2)
        if problems:
            self.env = None  # one error for a bad function, not one per call
        elif self.arities:
            self.callables = callable_functions(
                {name: FunctionSpec.from_data(f) for name, f in self.doc.data["functions"].items()}, self.doc.locate)
            if self.env is not None:
                self.env = {**self.env, CALLS: self.callables}

    def check_named_values(self) -> None:
        """The class's named values: their names and expressions (``value_problems``), then,
        with argument values, what they compute, added to ``env`` for the declarations."""
        if "values" not in self.data:
            return
        for where, message in value_name_problems(self.data, self.top.class_names | RESERVED_NAMES, self.label):
            self.error(where, message, key=True)
        problems = value_problems(self.data, self.label, self.top.arities)
        for where, message in problems:
            self.error(where, message)
        if problems or self.env is None:
            self.env = None  # the declarations' structure is still checked, without values
            return
        env = self.env
        for name, text in self.data["values"].items():
            try:
                with self.located(("values", name)):
                    env = with_values(env, {name: text})
            except ExprError as exc:
                self.error(("values", name), f"{exc} (with {_shown(self.env)})")
                self.env = None
                return
        self.env = env

    @functools.cached_property
    def class_names(self) -> frozenset[str]:
        """The names an ``__init__`` may call: the blocks, the spec's class, and the top-level
        package of every class the spec declares (an argument must not hide them)."""
        bodies = [self.doc.data, *self.doc.data.get("classes", {}).values()]
        roots = {name.split(".")[0] for body in bodies for entry in body.get("modules", {}).values()
                 for _, name in uses(entry)}  # fmt: skip
        return frozenset(roots | self.blocks | {self.doc.data["name"]})

    def check_declaration(self, value: Any, where: JsonPath) -> bool:
        """The expressions in a declaration value name this body's arguments; module values
        name classes that exist. Reported here, at their own place; True if all is well."""
        problems = declaration_problems(value, where, self.arguments, self.label, self.value_names,
                                        taken=self.top.class_names | RESERVED_NAMES, functions=self.top.arities)
        names_ok = True
        for rel, used in module_values(value):
            decl = _item(value, rel[:-1])  # the module value's {class, args, kwargs}
            names_ok = self.check_kwargs(decl.get("kwargs", {}), (*where, *rel[:-1], "kwargs")) and names_ok
            if used not in self.blocks:
                try:
                    self.policy.resolve_module_class(used)
                except TargetError as exc:
                    problems.append(((*where, *rel), f"module value: {self.unknown_class(used, exc)}"))
        for at, message in problems:
            self.error(at, message)
        return names_ok and not problems

    def unknown_class(self, name: str, exc: TargetError) -> str:
        """Why ``name`` is no class: in format 2 a bare name is a block of this spec."""
        if "." in name or self.doc.data["fxgen"] < 2:
            return str(exc)
        close = closest_name(name, self.blocks)
        if close:
            return f"no block {name!r} in this spec; did you mean {close!r}?"
        known = f" (its blocks: {', '.join(sorted(self.blocks))})" if self.blocks else ""
        return (f"no block {name!r} in this spec{known}; declare it under `classes`, or write a qualified "
                "class such as torch.nn.Linear")  # fmt: skip

    def instantiate(self, name: str, values: dict[str, Any], where: JsonPath) -> Any:
        """Check block ``name`` built with ``values`` (once per distinct set of values) by the
        declaration at ``where`` and return a stand-in module holding what it declares (for
        attribute checks), or None if it fails."""
        top = self.top
        key = (name, repr(sorted(values.items())))
        if key in top.instantiated:
            self.budget.charge_all(top.costs[key])  # the model builds this copy as it built the first
            return top.instantiated[key]
        if name in top.active:
            return None  # a cycle, reported by class_cycles
        top.active.add(name)
        before = self.budget.snapshot()
        try:
            checker = Checker(self.doc, self.policy, scope=("classes", name), env=values, top=top)
            shown = ", ".join(f"{arg}={value!r}" for arg, value in values.items())
            checker.instance = f" (in {name}({shown}), built at {self.doc.locate((*self.scope, *where))})"
            reported = self.reported
            checker.run()
            top.block_types.setdefault(name, checker.canonical_types)
            top.instantiated[key] = None if self.reported > reported else checker.stand_in(name)
            top.costs[key] = self.budget.since(before)
            if top.instantiated[key] is not None:
                top.top_runs[id(top.instantiated[key])] = checker.forward_runs
        finally:
            top.active.discard(name)
        return top.instantiated[key]

    def check_unused_blocks(self) -> None:
        """A block no declaration uses is still checked, without argument values (the model builds
        none: nothing is charged to its budget). Not after the budget stopped the check: the
        blocks it did not reach are not unused."""
        if self.stopped:
            return
        for name in sorted(self.blocks - set(self.block_types)):
            checker = Checker(self.doc, self.policy, scope=("classes", name), env=None, top=self)
            checker.budget = Budget()
            checker.run()
            self.block_types[name] = checker.canonical_types

    def stand_in(self, name: str) -> torch.nn.Module:
        """A module named after the block, holding the modules, parameters and buffers it
        declares (meta tensors): what get_attr checks and container constructors see of it."""
        module: torch.nn.Module = type(name, (torch.nn.Module,), {})()
        for path, instance in self.instances.items():
            set_attr_path(module, path, instance)
        for table in ("parameters", "buffers"):
            for path, entry in self.data.get(table, {}).items():
                shape = substitute(entry.get("shape", []), self.env or {}) if "value" not in entry else []
                with contextlib.suppress(Exception):  # reported by check_tensor
                    tensor = torch.empty(shape, dtype=DTYPES[entry.get("dtype", "float32")], device="meta")
                    if table == "parameters":
                        tensor = torch.nn.Parameter(tensor, requires_grad=False)
                    set_attr_path(module, path, tensor)
        return module

    def make_value(self, decl: dict[str, Any], where: JsonPath) -> torch.nn.Module:
        """A module value (its arguments substituted) declared at ``where``, as validation builds
        it: a block as its stand-in, any other class on the meta device."""
        name = decl["class"]
        self.budget.charge("modules")
        if name in self.blocks:
            return self.instantiate(name, self.bind_block(name, decl), where) or torch.nn.Module()
        cls = self.policy.resolve_module_class(name)
        return construct_call(cls, decl.get("args", []), decl.get("kwargs", {}), "meta",
                              make_module=lambda inner: self.make_value(inner, where))  # fmt: skip

    # -- declarations ------------------------------------------------------------------------
    def check_class_name(self) -> None:
        name: str = self.data["name"]
        if not IDENTIFIER.fullmatch(name):
            self.error(("name",), f"class name {name!r} is not an identifier; use only letters, digits and _")
        elif keyword.iskeyword(name) or keyword.issoftkeyword(name):
            self.error(("name",), f"class name {name!r} is a Python keyword; choose another name")
        elif hasattr(builtins, name) or name in RESERVED_NAMES or name in self.imported_roots:
            self.error(("name",), f"class name {name!r} would shadow a name the generated code uses; "
                       "choose another name")  # fmt: skip

    def check_paths(self) -> None:
        seen: dict[str, str] = {}
        for table in ("modules", "parameters", "buffers"):
            for path in self.data.get(table, {}):
                where = (table, path)
                problem = _path_problem(path)
                if problem:
                    self.error(where, f"path {path!r}: {problem}", key=True)
                elif path in seen:
                    self.error(where, f"{path!r} is already declared in `{seen[path]}`; "
                               "declare each path once", key=True)  # fmt: skip
                    continue
                seen[path] = table
        modules = self.data.get("modules", {})
        kinds = {"modules": "module", "parameters": "parameter", "buffers": "buffer"}
        for path, table in seen.items():
            for i in range(path.count(".")):
                prefix = path.rsplit(".", i + 1)[0]
                if prefix in modules:
                    self.error(
                        (table, path),
                        f"{path!r} is inside module {prefix!r}, which owns its own attributes; "
                        "declare it on a container path instead",
                        key=True,
                    )
                    break
                if prefix in seen:
                    self.error((table, path), f"{path!r} is inside {kinds[seen[prefix]]} {prefix!r}, which "
                               "cannot hold attributes; declare it on another path", key=True)  # fmt: skip
                    break

    def check_modules(self) -> None:
        modules = self.data.get("modules", {})
        for table, path in self.plan or [("modules", path) for path in modules]:
            if table == "modules":
                if "if" in modules[path] and not self.check_condition(path, modules[path]):
                    continue  # not declared for this instance (or its condition is refused)
                reported = len(self.errors)
                with self.located(("modules", path)):
                    self.budget.charge("modules")
                    self.check_module(path, modules[path])
                if len(self.errors) > reported:
                    self.refused.add(path)  # the nodes calling its items are not told again that they are undeclared
                if "init" in modules[path]:
                    self.check_module_init(path, modules[path])
            elif self.make_tensor is not None and path not in self.refused:
                # A checked tensor whose initialisation comes between module constructions;
                # one that fails here is left to the build, which reports it.
                with contextlib.suppress(Exception):
                    self.constructed[path] = self.make_tensor(table, self.data[table][path])

    def check_module_init(self, path: str, entry: dict[str, Any]) -> None:
        """A declared module's ``init``: on an attribute of its own (not an item of a list or dict
        container, which is built inside the container's creation), naming its tensors, with
        schemes that fit them (``fxgen.check.module_init``)."""
        where: JsonPath = ("modules", path, "init")
        if any(kind in ("list", "dict") for _, kind in self.tree.steps(path)):
            self.error(where, f"module {path!r}: init is for a module on an attribute of its own; this one is an item "
                       "of a list or dict container, whose items are built in one expression: declare the init in "
                       "a block class whose instances the container holds", key=True)  # fmt: skip
            return
        module = self.instances.get(path)
        if module is None or (self.env is None and has_arguments(entry["init"])):
            return  # reported already, or (a block without argument values) only the structure is checked
        try:
            inits = {p: substitute_init(init, self.env or {}) for p, init in entry["init"].items()}
        except ExprError as exc:
            self.error(where, f"module {path!r}: init: {exc} (with {_shown(self.env)})")
            return
        problems, kinds = init_problems(module, inits, f"module {path!r}")
        for rel, message in problems:
            self.error((*where, *rel), message)
        self.top.init_kinds[(*self.scope, path)] = kinds

    @functools.cached_property
    def tree(self) -> ModelTree:
        """The body's declarations as the generated class's tree of containers."""
        body = Spec(name="_", nodes=[], modules={p: ModuleSpec.from_data(m) for p, m in self.data.get("modules", {}).items()},
                    parameters={p: ParameterSpec(**d) for p, d in self.data.get("parameters", {}).items()},
                    buffers={p: BufferSpec(**d) for p, d in self.data.get("buffers", {}).items()})  # fmt: skip
        return ModelTree(body)

    def check_condition(self, path: str, entry: dict[str, Any]) -> bool:
        """A declaration's ``if``: allowed where it is (format 2, a path of its own), naming what
        the class has; is the module declared for this instance? (Without argument values, it is
        checked as if it were.)"""
        where: JsonPath = ("modules", path, "if")
        condition = entry["if"]
        if self.doc.data["fxgen"] < 2:
            self.error(where, "a declaration's `if` needs `fxgen: 2` (format 2 adds constructor arguments)")
            return False
        if "." in path:
            self.error(where, f"module {path!r}: only a module on an attribute of its own (a path without dots) can be "
                       "declared on a condition; declare the container in a block class, on the condition")  # fmt: skip
            return False
        if isinstance(condition, str) and not self.check_declaration({"arg": condition}, where):
            return False
        if self.env is None:
            return True
        try:
            if declared(entry, self.env):
                return True
            self.absent[path] = str(condition)
            return False
        except ExprError as exc:
            self.error(where, f"module {path!r}: {exc} (with {_shown(self.env)})")
            return False

    def check_module(self, path: str, entry: dict[str, Any]) -> None:
        where: JsonPath = ("modules", path)
        written = entry
        if self.doc.data["fxgen"] >= 2:
            concrete = self.concrete_module(path, entry, where)
            if concrete is None:
                return
            entry = concrete
        try:
            cls = self.policy.resolve_module_class(entry["class"])
        except TargetError as exc:
            hint = "; call functions with a call_function node" if "not an nn.Module" in str(exc) else ""
            self.error((*where, "class"), f"module {path!r}: {self.unknown_class(entry['class'], exc)}{hint}")
            return
        args = self.decode_constant(entry.get("args", []), (*where, "args"))
        kwargs = self.decode_constant(entry.get("kwargs", {}), (*where, "kwargs"), mapping=True)
        if args is None or kwargs is None:
            return
        unfit = self.bind_problem(cls, entry, args, kwargs)
        if unfit is not None:
            self.error(where, f"module {path!r}: arguments do not fit {entry['class']}: {unfit}; "
                       f"its signature is {cls.__name__}{_plain_signature(_signature(cls))}")  # fmt: skip
            return
        wrong = float_for_int(_signature(cls), written, args, kwargs) if written is not entry else None
        if wrong:
            self.error(where, f"module {path!r}: {wrong} (with {_shown(self.env)}); make it an int: int(...), "
                       "round(...) or ceil(...)")  # fmt: skip
            return
        module, problem = self.build(path, entry, cls)
        if problem:  # the constructor itself refuses them (types, ranges, devices): say so now, not at load
            self.error(where, f"module {path!r}: {entry['class']} cannot be built with these arguments: {problem}")
            return
        self.module_classes[path] = cls
        self.instances[path] = module

    def concrete_module(self, path: str, entry: dict[str, Any], where: JsonPath) -> dict[str, Any] | None:
        """A format-2 declaration with its arguments substituted, for the checks of a format-1
        one; None when it is checked here already (a block, a module value) or cannot be yet."""
        ok = self.check_declaration(entry.get("args", []), (*where, "args"))
        ok = self.check_declaration(entry.get("kwargs", {}), (*where, "kwargs")) and ok
        ok = self.check_declaration(entry.get("init", {}), (*where, "init")) and ok
        bare = bare_name_problems({"args": entry.get("args", []), "kwargs": entry.get("kwargs", {})}, where,
                                  [*self.arguments, *self.value_names], self.label)  # fmt: skip
        for at, message in bare:
            self.error(at, message)
        ok = ok and not bare
        local = entry["class"] in self.blocks
        if not ok or (self.env is None and (local or has_arguments(entry))):
            return None  # without argument values, the structure is all that can be checked
        try:
            concrete = substitute_declaration(entry, self.env or {})
        except ExprError as exc:
            self.error(where, f"module {path!r}: {exc} (with {_shown(self.env)})")
            return None
        if not self.block_values_bind(entry, where):
            return None
        if local:
            try:
                values = self.bind_block(entry["class"], concrete, entry)
            except BindError as exc:
                self.error(where, f"module {path!r}: {self.unfit_block(entry['class'], exc)}")
                return None
            stand_in = self.instantiate(entry["class"], values, where)
            if stand_in is not None:
                self.module_classes[path], self.instances[path] = type(stand_in), stand_in
            return None
        if not has_arguments(concrete):
            return concrete
        try:  # module values: built now, with the class's constructor, to check the whole call
            cls = self.policy.resolve_module_class(concrete["class"])
            module = construct_call(cls, concrete.get("args", []), concrete.get("kwargs", {}), "meta",
                                    make_module=lambda inner: self.make_value(inner, where))  # fmt: skip
        except TargetError as exc:
            self.error((*where, "class"), f"module {path!r}: {exc}")
            return None
        except BudgetError:
            raise  # the whole model's, not this call's: reported once, where it is located
        except Exception as exc:
            text = str(exc).strip().splitlines()
            self.error(where, f"module {path!r}: {entry['class']} cannot be built with these arguments: "
                       f"{type(exc).__name__}: {text[0] if text else ''}"[:400])  # fmt: skip
            return None
        self.module_classes[path], self.instances[path] = cls, module
        return None

    def block_values_bind(self, entry: dict[str, Any], where: JsonPath) -> bool:
        """Each block used as a module value gets arguments that fit it: reported at that
        value, as the constructor of the enclosing module would only say that it failed."""
        ok = True
        for field in ("args", "kwargs"):
            for at, raw, env in _bound_module_values(entry.get(field), (field,), self.env or {}):
                if raw.get("class") not in self.blocks:
                    continue
                try:
                    self.bind_block(raw["class"], substitute_declaration(raw, env), raw)
                except (BindError, ExprError) as exc:
                    self.error((*where, *at), f"module value: {self.unfit_block(raw['class'], exc)}")
                    ok = False
        return ok

    def bind_block(self, name: str, decl: dict[str, Any], raw: dict[str, Any] | None = None) -> dict[str, Any]:
        """Block ``name``'s argument values for a (concrete) declaration of it; BindError if
        they do not fit, or one is not of its declared type (``raw``: the declaration as
        written, whose expressions the message quotes)."""
        params = {n: ArgSpec.from_data(a) for n, a in self.doc.data["classes"][name].get("args", {}).items()}
        values = bind(params, decl.get("args", []), decl.get("kwargs", {}))
        written = bind_written(list(params), raw) if raw is not None else {}
        given = {*list(params)[: len(decl.get("args", []))], *decl.get("kwargs", {})}  # a default is checked itself
        for arg, param in params.items():
            expected, value = SIMPLE_TYPES.get(param.type), values[arg]
            if arg not in given or expected is None or isinstance(value, dict | list) or is_a(value, expected):
                continue
            source = written.get(arg)
            got = f"{{arg: {source['arg']}}} gives {value!r} (with {_shown(self.env)})" if is_arg(source) else (
                f"it is given {value!r}")  # fmt: skip
            fix = "; make it an int: int(...), round(...) or ceil(...)" if expected is int and isinstance(value, float) \
                else "; give a value of that type"  # fmt: skip
            raise BindError(f"argument {arg!r} is {param.type}, but {got}{fix}")
        return values

    def unfit_block(self, name: str, exc: Exception) -> str:
        arguments = ", ".join(self.doc.data["classes"][name].get("args", {}))
        return f"arguments do not fit block {name!r}: {exc}; its arguments are ({arguments})"

    def bind_problem(self, cls: type, entry: dict[str, Any], args: list[Any], kwargs: dict[str, Any]) -> str | None:
        """Why ``cls``'s signature refuses the (decoded) arguments, or None: bound once per
        distinct call, as models repeat the same block (binding costs about 10 us)."""
        call = _call_key(cls, entry)
        if call not in self.bindings:
            signature = _signature(cls)
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                self.bindings[call] = _unknown_keyword(signature, kwargs) or str(exc)
            else:
                self.bindings[call] = None
        return self.bindings[call]

    def build(self, path: str, entry: dict[str, Any], cls: type) -> tuple[Any, str | None]:
        """The module (for attribute checks) and why its constructor refuses the call, or None.

        On the meta device each distinct call is built once. Validating for a load, the load's
        constructor builds every module; when it fails, the meta build decides whether the spec
        is wrong (reported here, as always) or only the real build is (left to the build).
        """
        if self.construct is not None:
            try:
                module = self.construct(path, entry, cls)
            except Exception:
                # Only the real build fails (memory, devices): make nothing more here; the load
                # starts over from the same random state, as for a validated Spec (_validate).
                self.construct = self.make_tensor = None
                self.unfinished = True
            else:
                self.constructed[path] = module
                return module, None
        call = _call_key(cls, entry)
        if call not in self.meta_builds:
            self.meta_builds[call] = _meta_build(entry, cls)
        return self.meta_builds[call]

    def check_tensors(self, table: str) -> None:
        for path, entry in self.data.get(table, {}).items():
            reported = self.reported
            self.check_tensor(table, path, entry)
            if self.reported > reported:
                self.refused.add(path)

    def check_tensor(self, table: str, path: str, entry: dict[str, Any]) -> None:
        where: JsonPath = (table, path)
        if has_arguments(entry.get("shape")) or has_arguments(entry.get("init")):
            ok = self.check_declaration(entry.get("shape", []), (*where, "shape"))
            ok = self.check_declaration(entry.get("init"), (*where, "init")) and ok
            if not ok or self.env is None:
                return
            try:
                entry = {**entry, "shape": substitute(entry["shape"], self.env)}
                if "init" in entry:
                    entry["init"] = substitute_init(entry["init"], self.env)
            except ExprError as exc:
                self.error(where, f"{path!r}: {exc} (with {_shown(self.env)})", key=True)
                return
        dtype = entry.get("dtype", "float32")
        if "value" in entry:
            unfit = literal_problem(entry["value"], dtype)
            if unfit:
                self.error((*where, "value", *unfit[0]), f"{path!r}: {unfit[1]}")
                return
            try:
                torch.tensor(entry["value"], dtype=getattr(torch, dtype))
            except (TypeError, ValueError, RuntimeError) as exc:
                self.error((*where, "value"), f"{path!r}: value is not a valid {dtype} tensor ({exc}); "
                           "nested lists must be rectangular: every row the same length")  # fmt: skip
            return
        shape = entry["shape"]
        floats = [i for i, d in enumerate(shape) if not isinstance(d, int)]
        for i in floats:
            self.error((*where, "shape", i), f"{path!r}: shape entries are integers; write {int(shape[i])}, "
                       f"not {shape[i]}")  # fmt: skip
        if "data" in entry:
            if not floats:
                self.check_packed(where, path, entry["data"], shape, dtype)
            return
        problem = None if floats else shape_problem(shape, dtype)
        if problem:
            self.error((*where, "shape"), f"{path!r}: {problem}")
            return
        init = entry.get("init", "zeros")
        groups = init.get("dirac", {}).get("groups") if isinstance(init, dict) else None
        if groups is not None and not isinstance(groups, int):
            self.error((*where, "init", "dirac", "groups"), f"{path!r}: groups is an integer; write {int(groups)}")
            return
        problem = None if floats else check_init(init, shape, dtype)
        if problem:
            self.error((*where, "init") if "init" in entry else where, f"{path!r}: {problem}")
        if table == "parameters" and entry.get("requires_grad", True) and not _differentiable(dtype):
            self.error(where, f"parameter {path!r} has dtype {dtype}, which cannot require gradients; "
                       "add `requires_grad: false` or declare it as a buffer", key=True)  # fmt: skip


    def check_packed(self, where: JsonPath, path: str, data: str, shape: list[int], dtype: str) -> None:
        """Packed data decodes to exactly its shape and dtype, within the limits (bounded memory)."""
        self.totals["packed_bytes"] += packed_size(shape, dtype)
        if self.totals["packed_bytes"] > PACKED_TOTAL_LIMIT:
            self.error((*where, "data"), f"{path!r}: the spec's packed tensors take more than {PACKED_TOTAL_LIMIT} "
                       "bytes together; keep large tensors in the weights file as persistent buffers")  # fmt: skip
            return
        try:
            check_packed(data, shape, dtype)
        except PackedError as exc:
            self.error((*where, "data"), f"{path!r}: {exc}")


def _written(value: Any, kind: str) -> str:
    """A hint for a default of null (None) or written as an expression in a string (``"32 * 0.75"``)."""
    if value is None:
        return f", or declare it `typing.Optional[{kind}]` to allow null"
    if not isinstance(value, str) or not any(op in value for op in "+-*/%()<>"):
        return ""
    try:
        parse(value)
    except ExprError:
        return ""
    return " (a default is not computed: write its value, or compute it under `values:`)"


def _shown(env: dict[str, Any] | None) -> str:
    return shown(env or {}) or "no arguments"


@functools.cache
def _module_attributes() -> frozenset[str]:
    """Names an nn.Module instance already has (class and instance attributes)."""
    return frozenset(dir(torch.nn.Module()))


@functools.cache
def _graph_module_attributes() -> frozenset[str]:
    """Names the root GraphModule has on top of an nn.Module's (``graph``, ``code``, ``meta``...)."""
    import torch.fx

    return frozenset(dir(torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph()))) - _module_attributes()


def _path_problem(path: str) -> str | None:
    """Why a dotted declaration path cannot be an attribute path, or None. A segment may be any
    name ``nn.Module.add_module`` accepts (generated code quotes those that are not identifiers):
    not empty (the schema), and not an attribute every module already has."""
    for i, segment in enumerate(path.split(".")):
        if segment in _module_attributes():
            return f"segment {segment!r} is an nn.Module attribute (nn.Module.{segment}); rename it"
        if i == 0 and segment in _graph_module_attributes():
            return f"{segment!r} is an attribute of torch.fx.GraphModule; rename it"
    return None


def _differentiable(dtype: str) -> bool:
    return DTYPES[dtype].is_floating_point or DTYPES[dtype].is_complex


def _plain_signature(signature: inspect.Signature) -> str:
    return str(signature.replace(return_annotation=inspect.Signature.empty))


def _call_key(cls: type, entry: dict[str, Any]) -> tuple[type, str]:
    """What makes two declarations the same constructor call (its arguments as the spec encodes them)."""
    return cls, repr((entry.get("args", []), entry.get("kwargs", {})))


@functools.cache
def _signature(cls: type) -> inspect.Signature:
    return inspect.signature(cls)


def _unknown_keyword(signature: inspect.Signature, kwargs: dict[str, Any]) -> str | None:
    """A keyword the signature has no parameter for, named first: inspect reports a missing
    argument before it, though the misspelt keyword (``kernel`` for ``kernel_size``) is the cause."""
    params = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    names = [name for name, p in params.items() if p.kind is not inspect.Parameter.POSITIONAL_ONLY]
    for key in kwargs:
        if key not in names:
            close = closest_name(key, names)
            return f"got an unexpected keyword argument {key!r}" + (f" (did you mean {close!r}?)" if close else "")
    return None


def _meta_build(entry: dict[str, Any], cls: type) -> tuple[Any, str | None]:
    """``cls(*args, **kwargs)`` on the meta device (no memory, no initialisation), as load builds
    it with weights: the module, or None and why the constructor refuses the call.

    It draws nothing from the global generator: a module given an explicit ``device`` builds
    real tensors even here, and their initialisation must not shift what a load draws.
    """

    with same_random_state():
        try:
            return construct_call(cls, entry.get("args", []), entry.get("kwargs", {}), "meta"), None
        except Exception as exc:
            text = str(exc).strip().splitlines()
            return None, f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
