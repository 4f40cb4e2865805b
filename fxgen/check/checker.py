"""Validation's shared state: the document being checked, the diagnostics found so far, and the
value checks that module declarations and nodes both make (keyword names, tags, decoding).

The checks themselves are split by what they look at: ``fxgen.check.nodes`` checks the graph's
nodes, ``fxgen.check.validate`` the declarations (modules, parameters, buffers) and runs the stage.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import keyword
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fxgen._errors import Diagnostic, Location
from fxgen.policy.policy import Policy
from fxgen.read.reader import Document
from fxgen.read.yaml_events import JsonPath
from fxgen.spec.budget import Budget, BudgetError
from fxgen.spec.file_names import FILE_NAMES
from fxgen.spec.resolve import walk_data
from fxgen.spec.tags import lookup
from fxgen.spec.values import decode, decode_kwargs, iter_refs

__all__ = [
    "DECODE_ERRORS",
    "IDENTIFIER",
    "RESERVED_NAMES",
    "CheckerBase",
    "Construct",
    "MakeTensor",
]


# Names the generated module (fxgen.spec.file_names) and torch.fx's own code use as globals; no
# name of a spec may shadow them.
RESERVED_NAMES = FILE_NAMES | {"self", "device", "inf", "nan", "NoneType", "pytree", "fx_pytree"}


# jsonschema's `$` also matches before a trailing newline, so names are re-checked with fullmatch.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# what decoding a value the schema accepted can raise: a bad device string, a complex part
# beyond a float, a torch.Size that is not one
DECODE_ERRORS = (RuntimeError, ValueError, TypeError, OverflowError)


Construct = Callable[[str, dict[str, Any], type], Any]
"""``(path, declaration, class) -> module``: how ``validate_for_load`` constructs a declared
module (the declaration as data; the class already resolved and its arguments checked)."""


MakeTensor = Callable[[str, dict[str, Any]], Any]
"""``(table, declaration) -> tensor``: how ``validate_for_load`` creates a checked parameter
or buffer whose random initialisation must come between two module constructions."""


@dataclass
class _Folded:
    """The diagnostic of a block's line in the first instance that failed there, and the other
    instances that failed at that line too (folded into it)."""

    index: int  # in the diagnostics
    instance: str  # the first instance's " (in Block(...), built at ...)"
    text: str  # its message without that
    others: list[str] = field(default_factory=list)  # the other instances failing there


_NAMED = 2  # other instances a folded diagnostic names; it counts the rest


class CheckerBase:
    """What every check shares: the document, the policy, the diagnostics, and memos that
    models with repeated blocks hit again and again."""

    def __init__(
        self,
        doc: Document,
        policy: Policy,
        construct: Construct | None = None,
        make_tensor: MakeTensor | None = None,
        *,
        scope: tuple[str, ...] = (),
        parent: CheckerBase | None = None,
    ) -> None:
        self.doc = doc
        # The graph body being checked: the document itself, or one of its blocks (format 2's
        # ``classes``), whose diagnostics are located under ``scope``.
        self.scope = scope
        # For a block checked with argument values: which instance, and where the model builds it
        # (every diagnostic of the body says so: the same line serves many instances)
        self.instance = ""
        self.data: dict[str, Any] = doc.data if not scope else doc.data[scope[0]][scope[1]]
        self.policy = policy
        self.construct = construct
        self.make_tensor = make_tensor
        self.errors: list[Diagnostic] = []
        self.canonical_types: list[str | None] = []
        self.module_classes: dict[str, type] = {}
        # path -> an instance of the declared module, for get_attr checks
        self.instances: dict[str, Any] = {}
        # path -> the module ``construct`` built, or the tensor ``make_tensor`` created
        # (validating for a load): the build keeps it
        self.constructed: dict[str, Any] = {}
        self.refused: set[str] = set()  # declaration paths with a problem reported
        self.absent: dict[str, str] = {}  # module path -> the condition it is declared on, false here
        self.unfinished = False  # a module failed for real while validating for a load
        # constructor call -> its meta instance or why it fails: models repeat the same block
        self.meta_builds: dict[tuple[type, str], tuple[Any, str | None]] = {}
        self.bindings: dict[tuple[type, str], str | None] = {}  # the same, for signature binding
        self.keyword_names: set[str] = set()  # keyword argument names already found usable
        self.arities: dict[str, Any] = {}  # call_function target -> its operator arity, or None
        # bytes the packed tensors checked so far declare (the spec's limit); problems found so far,
        # folded or not (a check asks whether its part failed by this count: `reported`)
        self.totals = {"packed_bytes": 0, "errors": 0}
        # what the whole model builds, every instance of every block counted (fxgen.spec.budget)
        self.budget = Budget()
        # location -> the diagnostic of a block's line in its first failing instance: a line fails
        # in every instance alike, and one mistake is one diagnostic
        self.folded: dict[Location, _Folded] = {}
        if parent is not None:  # a block of the same document: one list of diagnostics, one set of memos
            self.errors, self.totals, self.folded, self.budget = parent.errors, parent.totals, parent.folded, parent.budget
            self.meta_builds, self.bindings = parent.meta_builds, parent.bindings
            self.keyword_names, self.arities = parent.keyword_names, parent.arities

    def error(self, path: JsonPath, message: str, *, key: bool = False) -> None:
        path = (*self.scope, *path)
        loc = self.doc.key_location(path) if key else self.doc.locate(path)
        # One line, always: messages may quote torch's or the policy's multi-line exceptions.
        self.totals["errors"] += 1
        text = " ".join(message.splitlines())
        first = self.folded.get(loc) if self.instance else None
        if first is not None and first.instance != self.instance:  # the same line, failing in another instance
            first.others.append(self.instance.strip()[4:-1])  # " (in X(...), built at ...)" -> "X(...), built at ..."
            named = "".join(f"; also in {other}" for other in first.others[:_NAMED])
            more = len(first.others) - _NAMED
            rest = f"; and in {more} other instance{'s' * (more > 1)}" if more > 0 else ""
            self.errors[first.index] = Diagnostic(loc, f"{first.text}{first.instance[:-1]}{named}{rest})")
            return
        if self.instance and first is None:
            self.folded[loc] = _Folded(len(self.errors), self.instance, text)
        self.errors.append(Diagnostic(loc, text + self.instance))

    @contextlib.contextmanager
    def located(self, where: JsonPath) -> Iterator[None]:
        """A count beyond its cap located at ``where`` in this body (the outermost place wins:
        the declaration of the model's class that holds what made it so large)."""
        try:
            yield
        except BudgetError as exc:
            exc.at = (*self.scope, *where)
            raise

    @property
    def reported(self) -> int:
        """How many problems were found so far (one folded into another's diagnostic counts)."""
        return self.totals["errors"]

    def decode_constant(self, value: Any, where: JsonPath, *, mapping: bool = False) -> Any:
        refs = list(iter_refs(value))
        for rel, name in refs:
            self.error((*where, *rel), f"%{name}: module arguments are constants and cannot refer to a node; "
                       f"write '%%{name}' for the literal string '%{name}'")  # fmt: skip
        names_ok = self.check_kwargs(value, where) if mapping else True
        if not (self.check_tags(value, where, mapping=mapping) and names_ok) or refs:
            return None
        try:
            return decode_kwargs(value, _no_ref) if mapping else decode(value, _no_ref)
        except DECODE_ERRORS as exc:
            self.error(where, f"invalid value: {exc}")
            return None

    def check_kwargs(self, kwargs: dict[str, Any], where: JsonPath) -> bool:
        """Keyword names must be usable in generated code: identifiers, not keywords."""
        ok = True
        for key in kwargs:
            if not self.is_keyword_name(key):
                what = "a Python keyword" if keyword.iskeyword(key) else "not an identifier"
                self.error((*where, key), f"keyword argument {key!r} is {what}; a call cannot pass it by name",
                           key=True)  # fmt: skip
                ok = False
        return ok

    def check_tags(self, value: Any, where: JsonPath, *, mapping: bool = False) -> bool:
        """Tagged values the schema cannot fully check (devices, torch.Size entries): each tag's ``problem``."""
        ok = True
        items = value.items() if mapping else [((), value)]
        tagged = [found for key, item in items for found in _tagged(item, (key,) if mapping else ())]
        for rel, tag, body in tagged:
            at = (*where, *rel, tag)
            known = lookup(tag)
            problem = known.problem(body) if known is not None else None
            if problem:
                self.error(at, problem)
                ok = False
        return ok

    @functools.cached_property
    def imported_roots(self) -> frozenset[str]:
        """Top-level packages the generated code will import (node names must not shadow them)."""
        roots = {m["class"].split(".")[0] for m in self.data.get("modules", {}).values()}
        # a bare function target is a builtin, never imported (one that is none is refused at the target,
        # and the name torch.fx gives its node is not reported again as shadowing an import)
        targets = (n["target"] for _, n in walk_data(self.data["nodes"]) if n["op"] == "call_function")
        roots |= {target.split(".")[0] for target in targets if "." in target}
        return frozenset(r for r in roots if r not in self.builtin_names)

    @property
    def builtin_names(self) -> dict[str, Any]:
        """The names ``dir(builtins)`` lists, read live (the REPL adds ``_`` at run time): the
        namespace itself, since a set of its 160 names built per validation cost more than the checks."""
        return vars(builtins)

    def is_keyword_name(self, key: str) -> bool:
        """Usable as a keyword argument in generated code (an identifier, not a keyword);
        remembered when it is, since models pass the same few names over and over."""
        if key in self.keyword_names:
            return True
        if IDENTIFIER.fullmatch(key) and not keyword.iskeyword(key):
            self.keyword_names.add(key)
            return True
        return False


def _tagged(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str, Any]]:
    """Every tagged mapping inside an encoded (schema-valid) value: (path, tag, body)."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _tagged(item, (*path, i))
    elif isinstance(value, dict):
        ((tag, body),) = value.items()
        yield path, tag, body
        known = lookup(tag)
        if known is not None and known.holds == "mapping":
            for key, item in body.items():
                yield from _tagged(item, (*path, tag, key))
        elif known is not None and known.holds == "list":
            for i, item in enumerate(body):
                yield from _tagged(item, (*path, tag, i))


def _no_ref(name: str) -> Any:
    raise AssertionError(f"unexpected reference %{name}")  # refs were checked before decoding
