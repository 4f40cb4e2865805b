"""Render stage, part 1: Python source text for a spec's values, attribute paths and statements.

Every piece of spec text that reaches source goes through here: names are validated
identifiers, strings are ``repr``-escaped literals, paths are checked segment by segment. The
text is written in black's style already (double quotes, ``x**2``, ``1e20``…) so that only
lines longer than black's limit need black itself (see ``fxgen.blackstyle.formatter``).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import keyword
import math
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fxgen.blackstyle.fast import fits
from fxgen.spec import checks as rules
from fxgen.spec import expr
from fxgen.spec.check_bounds import size_limit
from fxgen.spec.file_names import FILE_NAMES, PACKED_TABLE, STDLIB_ROOTS
from fxgen.spec.model import (
    NO_DEFAULT,
    ForNodes,
    IfNodes,
    Item,
    ModuleSpec,
    Node,
    Spec,
    walk_loops,
    walk_nodes,
)
from fxgen.spec.resolve import arg_expressions, has_arguments, is_module_loop, last_name
from fxgen.spec.tags import lookup
from fxgen.spec.tree import ModelTree, shared_containers
from fxgen.spec.values import iter_refs, parse_ref

__all__ = [
    "FORWARD_DEPTH",
    "Imports",
    "LiteralWriter",
    "access",
    "annotation",
    "attribute_name",
    "call_args",
    "checked",
    "child",
    "declared_classes",
    "expression",
    "forward_block",
    "forward_lines",
    "literal",
    "packed_key",
    "packed_lines",
    "plan_names",
    "qualified",
    "signature",
    "string",
]


_BINARY = {
    "add": "+", "sub": "-", "mul": "*", "floordiv": "//", "truediv": "/", "mod": "%",
    "pow": "**", "lshift": "<<", "rshift": ">>", "and_": "&", "or_": "|", "xor": "^",
    "matmul": "@", "eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">=",
}  # fmt: skip


_UNARY = {"neg": "-", "pos": "+", "invert": "~"}


# never used for forward's locals or an import's alias: they would shadow what the generated code calls
_SHADOW_FREE = frozenset({"self", *FILE_NAMES, *dir(builtins), *keyword.kwlist, *keyword.softkwlist})


@functools.lru_cache(maxsize=1 << 16)
def is_identifier(name: str) -> bool:
    """An ASCII identifier that is not a keyword: the only names fxgen writes into source.
    Cached: a model names the same few keys, classes and keywords hundreds of times, and the
    answer depends on the string alone."""
    return name.isascii() and name.isidentifier() and not keyword.iskeyword(name)


class UnsafeName(ValueError):
    """A name that would not be a plain identifier in source (validation should have caught it)."""


def checked(name: str) -> str:
    if not is_identifier(name):
        raise UnsafeName(f"{name!r} is not a valid identifier")
    return name


@dataclass
class Imports:
    """What the generated file imports, collected while rendering."""

    stdlib: set[str] = field(default_factory=set)
    torch: bool = False
    functional: bool = False
    torch_modules: set[str] = field(default_factory=set)  # torch submodules ``import torch`` may not load
    # Names from other packages: (module, attribute) -> the name ``from module import attribute``
    # binds in the file. ``import a.b`` and ``a.b.f`` would not do: a package that re-exports a
    # function under its own module's name (``a/b.py`` defines ``b``) makes ``a.b`` the
    # function. A from-import looks ``attribute`` up in the module itself, as the policy does.
    aliases: dict[tuple[str, str], str] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)  # names an alias must not shadow (see ``plan_names``)
    written: dict[str, str] = field(default_factory=dict)  # qualified name -> its source text
    # buffer path (a block's: (block, path)) -> packed data, written after the classes
    packed: dict[str | tuple[str, str], str] = field(default_factory=dict)

    def alias(self, module: str, attribute: str) -> str:
        """The file's name for ``attribute`` of ``module``: the attribute's own name unless that is
        taken, else the dotted name with underscores (``pkg_scale_scale``), numbered if need be."""
        key = (module, attribute)
        found = self.aliases.get(key)
        if found is not None:
            return found
        long = f"{module}_{attribute}".replace(".", "_")
        name = next((c for c in (attribute, long) if c not in self.taken), None)
        i = 2
        while name is None:
            name = f"{long}_{i}" if f"{long}_{i}" not in self.taken else None
            i += 1
        self.taken.add(name)
        self.aliases[key] = checked(name)
        return name

    def lines(self) -> list[str]:
        """The import block as ``ruff check`` (isort's rules, default settings) sorts it: the
        standard library, then everything else; plain imports before from-imports, modules in
        natural case-insensitive order, one from-import per module for the names bound as
        themselves, one per ``as`` alias, names ordered constants, classes, then the rest."""
        stdlib = [(m, f"import {m}") for m in self.stdlib]
        third = [(m, f"import {m}") for m in self.torch_modules]
        if self.torch or self.torch_modules:
            third.append(("torch", "import torch"))
        if self.functional:
            third.append(("torch.nn.functional", "import torch.nn.functional as F"))
        named: dict[str, list[str]] = {"torch": ["nn"]}
        froms: list[tuple[str, str, str]] = []  # (module, first name, statement)
        for (module, attribute), alias in self.aliases.items():
            if attribute == alias:
                named.setdefault(module, []).append(attribute)
            else:
                froms.append((module, attribute, f"from {module} import {attribute} as {alias}"))
        for module, names in named.items():
            names.sort(key=_member_key)
            froms.append((module, names[0], f"from {module} import {', '.join(names)}"))
        froms.sort(key=lambda item: (_module_key(item[0]), _member_key(item[1])))
        groups = [[line for _, line in sorted(stdlib, key=lambda item: _module_key(item[0]))],
                  [line for _, line in sorted(third, key=lambda item: _module_key(item[0]))]]  # fmt: skip
        for module, _, line in froms:
            if _in_stdlib(module):
                groups[0].append(line)
            else:
                groups[1].append(line)
        out: list[str] = []
        for group in groups:
            if group:
                if out:
                    out.append("")
                out.extend(group)
        return out


def imports_other_packages(imports: Imports) -> bool:
    """Does the file import from a package other than torch and the standard library?"""
    return any(not _in_stdlib(module) and module.partition(".")[0] != "torch" for module, _ in imports.aliases)


def _in_stdlib(module: str) -> bool:
    return module.partition(".")[0] in sys.stdlib_module_names


# Another package may ship no type information (transformers does not), and mypy's default
# settings then refuse the import; where it does, the comment changes nothing. Written whenever
# a file imports from another package, so the file does not depend on what the generating machine
# has installed. One line for the file: a ``# type: ignore`` on the import itself would move to
# a line of its own when ruff's isort wraps a long import, where mypy no longer sees it.
UNTYPED_IMPORTS = '# mypy: disable-error-code="import-untyped"'


@functools.cmp_to_key
def _natural(a: str, b: str) -> int:
    """Natural order (``mod2`` before ``mod10``), comparing as ruff does (the natord crate):
    character by character, a run of digits against a run of digits as a number."""
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i].isdigit() and b[j].isdigit():
            m, n = i, j
            while m < len(a) and a[m].isdigit():
                m += 1
            while n < len(b) and b[n].isdigit():
                n += 1
            x, y = int(a[i:m]), int(b[j:n])
            if x != y:
                return -1 if x < y else 1
            i, j = m, n
        elif a[i] != b[j]:
            return -1 if a[i] < b[j] else 1
        else:
            i, j = i + 1, j + 1
    return (len(a) - i > 0) - (len(b) - j > 0)


def _module_key(module: str) -> tuple[object, ...]:
    return (_natural(module.lower()), _natural(module))


def _member_key(name: str) -> tuple[object, ...]:
    """isort's order-by-type: CONSTANTS, then Classes, then everything else."""
    kind = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    return (kind, _natural(name.lower()), _natural(name))


def packed_key(key: str | tuple[str, str]) -> str:
    """A key of the packed table as source: a path, or a block's ``("Block", "path")``."""
    return string(key) if isinstance(key, str) else f"({string(key[0])}, {string(key[1])})"


def packed_lines(packed: dict[str | tuple[str, str], str]) -> list[str]:
    """``_PACKED = {path: data, ...}`` as black writes it: each entry on its own line, long data
    as implicitly concatenated strings of 76 characters (the width of base64 in MIME), so no
    line of it is longer than black's limit unless the path itself is."""
    lines = [f"{PACKED_TABLE} = {{"]
    for path, data in packed.items():
        key = packed_key(path)
        if len(data) <= _PACKED_WIDTH:
            lines.append(f"    {key}: {string(data)},")
            continue
        lines.append(f"    {key}: (")
        lines.extend(f"        {string(data[i : i + _PACKED_WIDTH])}" for i in range(0, len(data), _PACKED_WIDTH))
        lines.append("    ),")
    lines.append("}")
    return lines


_PACKED_WIDTH = 76


def string(value: str) -> str:
    """A string literal as black writes it: every character escaped as ``repr`` does, in double
    quotes unless that needs more escapes than single quotes (black's own rule)."""
    text = repr(value)
    if text.startswith('"') or '"' not in value:
        return '"' + text[1:-1] + '"' if text.startswith("'") else text
    # Both quote characters occur: repr chose single quotes; black prefers double quotes
    # unless that takes more backslashes.
    if value.count('"') > value.count("'"):
        return text
    body = "".join('\\"' if ch == '"' else "'" if ch == "'" else repr(ch)[1:-1] for ch in value)
    return '"' + body + '"'


def number(value: int | float) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            return 'float("nan")' if math.isnan(value) else ('float("inf")' if value > 0 else '-float("inf")')
        return repr(value).replace("e+", "e")
    return repr(value)


def _tag(value: Any) -> str | None:
    """The tag of an encoded tagged value (``{"tuple": [...]}`` -> ``"tuple"``), else None."""
    return next(iter(value)) if isinstance(value, dict) else None


def literal(value: Any, imports: Imports) -> str:
    """Source text of an encoded spec value."""
    kind = type(value)  # the exact types first: most values are names and ints
    if kind is str:
        ref = parse_ref(value)
        if ref is not None:
            return checked(ref)
    elif kind is int:
        return repr(value)
    elif kind is Source:
        return str(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        return number(value)
    if isinstance(value, str):
        ref = parse_ref(value)
        return checked(ref) if ref is not None else string(value.removeprefix("%") if value.startswith("%%") else value)
    if isinstance(value, list):
        return "[" + ", ".join(literal(v, imports) for v in value) + "]"
    ((tag, body),) = value.items()
    known = lookup(tag)
    if known is None:
        raise ValueError(f"unknown value tag {tag!r}")
    return known.render(body, LiteralWriter(imports, literal))


@dataclass
class LiteralWriter:
    """How a value tag (``fxgen.spec.tags``) writes itself here: ``value`` renders the encoded
    values inside its body (``literal``, or ``constructor.declared`` for declarations)."""

    imports: Imports
    render: Callable[[Any, Imports], str]

    def value(self, value: Any) -> str:
        return self.render(value, self.imports)

    def number(self, value: int | float) -> str:
        return number(value)

    def string(self, value: str) -> str:
        return string(value)

    def name(self, value: str) -> str:
        return checked(value)

    def module(self, name: str) -> None:
        if name == "torch":
            self.imports.torch = True
        else:
            self.imports.stdlib.add(name)


def index(value: Any, imports: Imports) -> str:
    """The text inside ``x[...]``: a tuple without its parentheses, slices as ``a:b``."""
    if _tag(value) == "tuple" and len(value["tuple"]) != 1:
        items = value["tuple"]
        return ", ".join(_subscript(v, imports) for v in items) if items else "()"
    return _subscript(value, imports)


def _subscript(value: Any, imports: Imports) -> str:
    """One element of an index: slice syntax for slices, a plain literal for everything else."""
    if _tag(value) != "slice":
        return literal(value, imports)
    start, stop, step = (literal(v, imports) if v is not None else "" for v in value["slice"])
    # Black spaces the colons of a slice whose bounds are not "simple" (calls, attributes…),
    # the way PEP 8 does for ``ham[lower + offset : upper + offset]``, except next to an omitted bound.
    spaced = any(_compound(v) for v in value["slice"])

    def colon(left: str, right: str) -> str:
        return (" " if spaced and left else "") + ":" + (" " if spaced and right else "")

    text = start + colon(start, stop) + stop
    return text + colon(stop, step) + step if step else text


def _compound(value: Any) -> bool:
    """Does the literal contain a call, an attribute access or an operator (black's "non-trivial"
    slice expressions)? Names, numbers, strings, ``-1`` and brackets of those are simple."""
    if isinstance(value, list):
        return any(_compound(v) for v in value)
    if not isinstance(value, dict):
        return False
    ((tag, body),) = value.items()
    known = lookup(tag)
    return known is None or known.compound(body, _compound)  # slice(...), torch.float32, ...: True


def expression(tree: expr.Expr, imports: Imports, spelled: dict[str, str] | None = None) -> str:
    """An expression as Python source, recording the modules that source names (``math`` for
    ``math.sqrt``): the one way codegen writes an expression, so no place can forget the import."""
    imports.stdlib |= expr.modules(tree)
    return expr.source(tree, spelled)


def call_args(args: Iterable[Any], kwargs: dict[str, Any], imports: Imports) -> str:
    parts = [literal(a, imports) for a in args]
    parts += [f"{checked(k)}={literal(v, imports)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def qualified(name: str, imports: Imports, module_of: Any) -> str:
    """Source text for a qualified callable/class name, recording its import (once per file:
    a model names the same few classes many times)."""
    text = imports.written.get(name)
    if text is None:
        text = imports.written[name] = _qualified(name, imports, module_of)
    return text


def _qualified(name: str, imports: Imports, module_of: Any) -> str:
    parts = [checked(p) for p in name.split(".")]
    if len(parts) == 1:
        return parts[0]  # a builtin
    if name.startswith("torch.nn.functional."):
        imports.functional = True
        return "F." + ".".join(parts[3:])
    if name.startswith("torch.nn.") and len(parts) == 3:
        return "nn." + parts[2]
    root = parts[0]
    if root == "torch":
        imports.torch = True
        module = module_of(name)
        if not _loaded_by_import_torch(module):
            imports.torch_modules.add(module)
        return name
    if root in STDLIB_ROOTS:
        imports.stdlib.add(root)
        return name
    module = module_of(name)
    attribute, *rest = name[len(module) + 1 :].split(".")
    return ".".join((imports.alias(module, attribute), *rest))


def plan_names(specs: list[Spec], imports: Imports, module_of: Any) -> None:
    """Reserve what the file's names must not shadow (every class's node, argument and value names, the
    classes, builtins and what the file itself defines), then give every name from another
    package its alias, in the order the spec names them: aliases are then fixed before
    ``forward`` picks its locals."""
    imports.taken |= _SHADOW_FREE
    names: list[str] = []
    for spec in specs:
        nodes = walk_nodes(spec.nodes)
        imports.taken |= {n.name for n in nodes if n.name is not None} | {spec.name, *spec.args, *spec.values}
        imports.taken |= _loop_names(spec.nodes)
        for module in spec.modules.values():
            names += declared_classes(module)
        names += [n.target for n in nodes if n.op == "call_function" and n.target]
        names += [name for n in nodes if n.type for name in _DOTTED.findall(n.type)]
        names += [name for arg in spec.args.values() for name in _DOTTED.findall(arg.type)]
    for name in names:
        if "." in name and name.split(".", 1)[0] not in ("torch", *STDLIB_ROOTS):
            qualified(name, imports, module_of)


def _loop_names(items: list[Item]) -> set[str]:
    """The loop indices and collected lists a node list names (``forward``'s locals too)."""
    return {name for loop in walk_loops(items) for name in (loop.var, loop.collect) if name is not None}


def declared_classes(module: ModuleSpec) -> list[str]:
    """The classes a declaration constructs: its own, then its module values' (format 2)."""
    out = [module.cls]
    stack: list[Any] = [module.args, module.kwargs]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(reversed(value))
        elif isinstance(value, dict):
            if isinstance(value.get("module"), dict) and is_module_loop(value["module"]):
                stack.append(value["module"])  # a nested `for`: its module inside
            elif isinstance(value.get("module"), dict):
                out += declared_classes(ModuleSpec.from_data(value["module"]))
            else:
                stack.extend(reversed(list(value.values())))
    return out


# Modules a plain ``import torch`` always loads: targets in them need no import of their own.
_TORCH_LOADED = ("torch", "torch.nn", "torch.fft", "torch.linalg", "torch.special", "torch.functional", "torch._C")


def _loaded_by_import_torch(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in _TORCH_LOADED)


# -- paths: how source reaches a submodule, parameter or buffer ----------------------------------
def access(tree: ModelTree, path: str, bound: dict[str, str] | None = None) -> str:
    """The expression for a dotted path: ``self.layer1[0].conv1``, or from the innermost
    container already bound to a local (``layer1_0.conv1``)."""
    expr, start = "self", 0
    if bound:
        if (name := bound.get(path)) is not None:
            return name
        for prefix in reversed(tree.container_prefixes(path)):  # only containers are bound
            if (name := bound.get(prefix)) is not None:
                expr, start = name, prefix.count(".") + 1
                break
    for part, kind in tree.steps(path, start):
        expr = child(expr, part, kind)
    return expr


def child(expr: str, part: str, kind: str) -> str:
    if kind == "list":
        return f"{expr}[{int(part)}]"
    if kind == "dict":
        return f"{expr}[{string(part)}]"
    if attribute_name(part):
        return f"{expr}.{part}"
    return f"getattr({expr}, {string(part)})"  # any other name a module accepts, as a literal


def attribute_name(name: str) -> bool:
    """Can ``name`` be written after a dot (``self.name``)? Identifiers that are not keywords,
    except those starting with ``__``, which Python would mangle inside a class body."""
    return is_identifier(name) and not name.startswith("__")


# -- forward ---------------------------------------------------------------------------------
def signature(spec: Spec, imports: Imports, module_of: Any) -> tuple[str, str]:
    """``(", x: torch.Tensor, scale: float = 1.0", " -> torch.Tensor")`` for ``def forward``."""
    params = []
    for node in spec.nodes:
        if not isinstance(node, Node) or node.op != "placeholder":
            continue
        assert node.name is not None
        text = checked(node.name)
        if node.type is not None:
            text += ": " + annotation(node.type, imports, module_of)
        if node.default is not NO_DEFAULT:
            text += (" = " if node.type is not None else "=") + literal(node.default, imports)
        params.append(text)
    output = spec.nodes[-1]
    assert isinstance(output, Node)  # validation: the output ends the top-level nodes
    returns = f" -> {annotation(output.type, imports, module_of)}" if output.type is not None else ""
    return "".join(", " + p for p in params), returns


def annotation(text: str, imports: Imports, module_of: Any) -> str:
    """A canonical type expression (validated by the policy); record the modules it names."""
    if not all(ch.isalnum() or ch in "_.[], " for ch in text):
        raise UnsafeName(f"type {text!r} is not a plain type expression")
    # the policy resolved each name, so its module is imported; names from other packages are
    # written as their aliases
    return _DOTTED.sub(lambda found: qualified(found.group(0), imports, module_of), modern_type(text))


@functools.lru_cache(maxsize=1024)
def modern_type(text: str) -> str:
    """A type as current Python writes it (PEP 604 and 585, what ruff's pyupgrade rules ask
    for): ``typing.Optional[X]`` is ``X | None``, ``typing.Union[A, B]`` is ``A | B``,
    ``typing.List[X]`` is ``list[X]``. torch.fx spells types the old way; TorchScript reads both."""
    if "typing." not in text:
        return text
    return ast.unparse(_modern(ast.parse(text, mode="eval").body))


def _modern(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Subscript):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        items = [_modern(item) for item in items]
        name = ast.unparse(node.value)
        if name in ("typing.Optional", "typing.Union"):
            if name == "typing.Optional":
                items.append(ast.Constant(None))
            union = items[0]
            for item in items[1:]:
                union = ast.BinOp(union, ast.BitOr(), item)
            return union
        value = ast.Name(_BUILTIN_GENERICS[name]) if name in _BUILTIN_GENERICS else node.value
        inner = ast.Tuple(items) if isinstance(node.slice, ast.Tuple) else items[0]
        return ast.Subscript(value, inner)
    if isinstance(node, ast.Attribute) and ast.unparse(node) in _BUILTIN_GENERICS:
        return ast.Name(_BUILTIN_GENERICS[ast.unparse(node)])
    return node


_BUILTIN_GENERICS = {"typing.List": "list", "typing.Dict": "dict", "typing.Tuple": "tuple", "typing.Set": "set",
                     "typing.FrozenSet": "frozenset", "typing.Type": "type"}  # fmt: skip


_NOT_WORD = re.compile(r"[^A-Za-z0-9_]+")


_DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


FORWARD_DEPTH = 2  # indentation levels of forward's body (class, def): where fxgen.codegen.generate formats it


def forward_lines(spec: Spec, tree: ModelTree, imports: Imports, module_of: Any) -> list[str]:
    """One statement per node, operators as Python operators, no ``x = None`` clean-up lines.
    A node nothing uses is a bare call (an in-place ``masked_fill_``), or ``_ = a == b`` for
    an operator a trace recorded: naming a result no one reads is what linters flag (F841).

    A container that several nodes reach into is bound to a local just before its first use
    (``layer1 = self.layer1``), so each call pays for one lookup per container, as the
    original module did, rather than one per use. A subscripted callee whose statement head
    would not fit on a line (``x = blocks_2[1].upsample(``) is bound too (``blocks_2_1 =
    blocks_2[1]``): black would otherwise split inside the subscript (``x = blocks_2[`` / ``1``
    / ``].upsample(y)``).
    """
    return [line for line, _ in forward_statements(spec, tree, imports, module_of)]


def forward_statements(spec: Spec, tree: ModelTree, imports: Imports, module_of: Any) -> list[tuple[str, int | None]]:
    """``forward_lines``, each with the index of the node whose statement it is (None for the
    lines that bind a container); a plain graph's (no conditional or repeat)."""
    return [(line, index) for line, index, _ in forward_block(spec, tree, imports, module_of)]


def forward_block(
    spec: Spec, tree: ModelTree, imports: Imports, module_of: Any, fields: list[str] | None = None
) -> list[tuple[str, int | None, int]]:
    """``forward_statements`` with each line's depth of nesting: a conditional is written as
    ``if ...:`` / ``else:`` and a repeat as ``for ...:`` (headers end with ``:``), their nodes
    one level deeper. Only top-level nodes have an index. ``fields`` receives the arguments and
    named values ``forward`` reads (as ``self.NAME``: ``__init__`` keeps them), in the order declared."""
    forward = _Forward(spec, tree, imports, module_of)
    forward.lines += [(line, None, 0) for line in check_statements(spec, imports)]  # what the capture assumed, first
    forward.items(spec.nodes, 0, top=True)
    if fields is not None:
        fields += [name for name in (*spec.args, *spec.values) if name in forward.read]
    return forward.lines


def presence_flags(spec: Spec) -> set[str]:
    """The bool arguments that say whether the module of their name is declared (``downsample``
    and ``downsample: {..., if: downsample}``): ``forward`` asks the module itself, ``if
    self.downsample is not None:``, and ``__init__`` sets it to None first, as a person writes it."""
    return {name for name, arg in spec.args.items()
            if arg.type == "bool" and getattr(spec.modules.get(name), "when", None) == name}  # fmt: skip


class Source(str):
    """Python source of an expression inside a node value (``{arg: i + 1}``), written as it is;
    ``atomic`` when an operator next to it needs no parentheses around it (a name, a number, a call)."""

    atomic: bool


_REPEATABLE = ("torch.nn.ModuleList", "torch.nn.Sequential")  # containers a loop goes through as `for m in self.m`


class _Forward:
    """The statements of ``forward`` for a node list, conditionals and repeats written as
    Python's ``if`` and ``for``."""

    def __init__(self, spec: Spec, tree: ModelTree, imports: Imports, module_of: Any) -> None:
        self.spec, self.tree, self.imports, self.module_of = spec, tree, imports, module_of
        top = [n.target for n in spec.nodes if isinstance(n, Node) and n.op in ("call_module", "get_attr")
               and n.target is not None]  # fmt: skip
        self.local = _Locals(imports)
        self.local.taken.add("_")  # where a result nothing uses goes (node names are never ``_``: a soft keyword)
        # Containers are bound to locals at the top level only (a binding inside a branch would
        # be missing in the other).
        self.names = {prefix: self.local.name(prefix) for prefix in shared_containers(tree, top)}
        self.bound: dict[str, str] = {}
        self.used = _used_names(spec.nodes)
        self.spelled = {name: f"self.{checked(name)}" for name in (*spec.args, *spec.values)}
        self.spelled["training"] = "self.training"
        self.presence = presence_flags(spec)
        self.spelled.update({name: f"(self.{checked(name)} is not None)" for name in self.presence})
        self.read: set[str] = set()  # the arguments and values written as self.NAME
        self.loops: dict[str, dict[str, str]] = {}  # loop index -> container path -> its item's variable
        self.lines: list[tuple[str, int | None, int]] = []

    def add(self, line: str, index: int | None, depth: int) -> None:
        self.lines.append((line, index, depth))

    def items(self, items: list[Item], depth: int, *, top: bool = False) -> None:
        for position, item in enumerate(items):
            if isinstance(item, IfNodes):
                self.conditional(item, depth)
            elif isinstance(item, ForNodes):
                self.repeat(item, depth)
            else:
                self.node(item, position if top else None, depth, top)

    def condition(self, value: Any) -> str:
        return self.source(value) if isinstance(value, str) else repr(value)

    def source(self, text: str) -> Source:
        """An expression as ``forward`` writes it: arguments and values as ``self.NAME``, the
        mode as ``self.training``, loop indices as themselves."""
        tree = expr.parse(text)
        used = expr.names(tree)
        self.read |= {name for name in used if name not in self.loops and name in self.spelled}
        negated = tree[0] == "not" and tree[1][0] == "name"
        flag = tree[1][1] if negated else tree[1] if tree[0] == "name" else None
        if flag in self.presence and flag not in self.loops:  # ``if self.downsample is not None:``
            return Source(f"self.{checked(flag)} is {'' if negated else 'not '}None")
        spelled = {name: self.spelled[name] for name in used if name not in self.loops and name in self.spelled}
        out = Source(expression(tree, self.imports, spelled))
        out.atomic = tree[0] in ("num", "bool", "name", "call")
        return out

    def conditional(self, item: IfNodes, depth: int) -> None:
        self.add(f"if {self.condition(item.cond)}:", None, depth)
        self.body(item.then, depth + 1)
        if item.orelse:
            self.add("else:", None, depth)
            self.body(item.orelse, depth + 1)

    def body(self, items: list[Item], depth: int) -> None:
        before = len(self.lines)
        self.items(items, depth)
        if len(self.lines) == before:
            self.add("pass", None, depth)

    def repeat(self, item: ForNodes, depth: int) -> None:
        var = checked(item.var)
        if item.collect is not None:
            self.add(f"{checked(item.collect)} = []", None, depth)
        paths, needs_index = self.loop_containers(item)
        if paths:
            items = {path: self.local.name(_singular(path.rpartition(".")[2])) for path in paths}
            self.loops[item.var] = items
            overs = [access(self.tree, path, self.bound) for path in paths]
            over = overs[0] if len(overs) == 1 else f"zip({', '.join(overs)})"
            taken = ", ".join(items.values())
            if needs_index:
                head = f"for {var}, {taken if len(items) == 1 else f'({taken})'} in enumerate({over}):"
            else:
                head = f"for {taken} in {over}:"
        else:
            head = f"for {var} in range({self.condition(item.count)}):"
            self.loops[item.var] = {}
        self.add(head, None, depth)
        self.items(item.nodes, depth + 1)
        if item.carry:
            names = [checked(name) for name in item.carry]
            values = [literal(value, self.imports) for value in item.carry.values()]
            if names != values:
                self.add(f"{', '.join(names)} = {', '.join(values)}", None, depth + 1)
        if item.collect is not None:
            last = last_name([node.to_dict() for node in item.nodes])
            assert last is not None  # validation
            self.add(f"{checked(item.collect)}.append({checked(last)})", None, depth + 1)
        del self.loops[item.var]

    def loop_containers(self, item: ForNodes) -> tuple[list[str], bool]:
        """The declared ModuleLists (or Sequentials) the loop goes through item by item, together
        (``zip``, as YOLOv8's Detect goes through ``cv2`` and ``cv3``), when every use of its
        index is a target ``P.{i}...`` of such a ``P`` declared with exactly as many items as the
        loop has steps (``[{repeat: n, ...}]``, ``in: n``); and whether the index is needed
        besides. No container: the loop is over ``range``."""
        marker = "{" + item.var + "}"
        prefixes: dict[str, None] = {}  # in the order of first use
        needs_index = False
        for node in walk_nodes(item.nodes):
            if node.target is not None and marker in node.target:
                head, _, _ = node.target.partition("." + marker)
                prefixes[head] = None
            texts = [t for v in (node.args, node.kwargs) for _, t in arg_expressions(v)]
            needs_index = needs_index or any(item.var in expr.names(expr.parse(t)) for t in texts)
        inner = [i for i in item.nodes if not isinstance(i, Node)]
        texts = [i.cond for i in inner if isinstance(i, IfNodes) and isinstance(i.cond, str)]
        texts += [i.count for i in inner if isinstance(i, ForNodes) and isinstance(i.count, str)]
        needs_index = needs_index or any(item.var in expr.names(expr.parse(t)) for t in texts)
        paths = list(prefixes)
        for path in paths:
            declared = self.spec.modules.get(path)
            if declared is None or declared.cls not in _REPEATABLE or not _same_count(declared, item.count):
                return [], True
        return paths, needs_index

    def target(self, target: str) -> str:
        """The callee of a target: inside a loop, ``m.{i}`` is the loop's item (``m``) or
        ``self.m[i]`` (validation: the index is a whole segment after the first)."""
        found = [(target.rfind(f".{{{var}}}"), var) for var in self.loops] if "{" in target else []
        at, var = max(found, default=(-1, ""))
        if at < 0:
            return access(self.tree, target, self.bound)
        head, rest = target[:at], target[at + len(var) + 3 :]
        name = self.loops[var].get(head)
        base = name if name is not None else f"{self.target(head)}[{checked(var)}]"
        kind = "list" if _items_are_lists(self.spec.modules.get(head)) else "attr"  # (`layer[0]`)
        for part in rest.split(".")[1:]:
            base = child(base, part, kind if part.isdigit() else "attr")
            kind = "attr"
        return base

    def node(self, node: Node, position: int | None, depth: int, top: bool) -> None:
        imports = self.imports
        if node.op == "placeholder":
            return
        if node.op == "output":
            if node.args[0] is not None or not self.lines:  # (falling off the end returns None: ruff's RET501)
                self.add("return " + self.value(node.args[0]), position, depth)
            return
        if node.op == "alias":
            if node.name in self.used:
                self.add(f"{checked(node.name or '')} = {self.value(node.args[0])}", position, depth)
            return
        if node.op in ("call_module", "get_attr") and node.target is not None:
            if top:
                for prefix in self.tree.container_prefixes(node.target):
                    if prefix in self.names and prefix not in self.bound:
                        self.add(f"{self.names[prefix]} = {access(self.tree, prefix, self.bound)}", None, depth)
                        self.bound[prefix] = self.names[prefix]
            callee = self.target(node.target)
            item = _long_subscripted_head(node, callee, self.tree) if top else None
            if item is not None:
                name = self.local.name(item)
                self.add(f"{name} = {access(self.tree, item, self.bound)}", None, depth)
                self.bound[item] = name
                callee = access(self.tree, node.target, self.bound)
            node = self.concrete(node)
            expr_ = callee if node.op == "get_attr" else f"{callee}({call_args(node.args, node.kwargs, imports)})"
        elif _is_item_assignment(node) and node.name not in self.used:
            # ``x[key] = value``, as a person writes it (typeshed's operator.setitem takes no Tensor)
            container, key, value = self.concrete(node).args
            target = f"{_operand(container, imports, before='[')}[{index(key, imports)}]"
            self.add(f"{target} = {literal(value, imports)}", position, depth)
            return
        else:
            node = self.concrete(node)
            expr_ = _expression(node, imports, self.module_of)
        if node.name in self.used:
            self.add(f"{checked(node.name)} = {expr_}", position, depth)
        elif node.op == "get_attr" or _operator_form(node, imports) is not None:
            self.add(f"_ = {expr_}", position, depth)  # a bare `a == b` or `x.shape` reads as a mistake (B015, B018)
        else:
            self.add(expr_, position, depth)

    def value(self, value: Any) -> str:
        return literal(self.arguments(value), self.imports)

    def concrete(self, node: Node) -> Node:
        """``node`` with its ``{arg: ...}`` values as Python source (``Source``)."""
        if not (has_arguments(node.args) or has_arguments(node.kwargs)):
            return node
        return dataclasses.replace(node, args=self.arguments(node.args), kwargs=self.arguments(node.kwargs))

    def arguments(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.arguments(item) for item in value]
        if not isinstance(value, dict) or not has_arguments(value):
            return value
        if set(value) == {"arg"}:
            return self.source(value["arg"])
        return {key: self.arguments(item) for key, item in value.items()}


def _singular(attribute: str) -> str:
    """The name of one item of a container attribute: ``blocks`` -> ``block``; a short name or
    one that is no plural (``cls``, ``heads_bias``, ``ss``/``us``/``is`` endings) as it is."""
    plural = len(attribute) > 3 and attribute.endswith("s") and not attribute.endswith(("ss", "us", "is"))
    return attribute[:-1] if plural else attribute


def _items_are_lists(declared: ModuleSpec | None) -> bool:
    """Is ``declared`` a ModuleList or Sequential of ModuleLists or Sequentials (indexed by
    position: ``for attn, ff in self.layers`` walks one)?"""
    if declared is None or declared.cls not in _REPEATABLE:
        return False
    items = declared.args[0] if declared.cls.endswith("ModuleList") and declared.args else declared.args
    modules = [item.get("module") for item in items if isinstance(item, dict)] if isinstance(items, list) else []
    return bool(modules) and all(isinstance(m, dict) and m.get("class") in _REPEATABLE for m in modules)


def _same_count(declared: ModuleSpec, count: Any) -> bool:
    """Does a ModuleList or Sequential declaration hold exactly ``count`` items: one repeat of
    that many (``[{repeat: n, ...}]``) or one ``for`` over that many rows, ``count`` written as
    the loop writes it, or as many items written out as a constant ``count`` says (YOLOv8's
    three detection levels)?"""
    items = declared.args[0] if declared.cls.endswith("ModuleList") and len(declared.args) == 1 else declared.args
    if declared.kwargs or not isinstance(items, list):
        return False
    if not any(isinstance(item, dict) and ("repeat" in item or is_module_loop(item)) for item in items):
        return not isinstance(count, bool) and count == len(items)
    if len(items) != 1:
        return False
    if is_module_loop(items[0]):  # one module per row of a `for` (YOLOv8's levels): its rows or its count
        if is_module_loop(items[0]["module"]):
            return False
        rows = items[0]["in"]
        if isinstance(rows, list):
            return not isinstance(count, bool) and count == len(rows)
        items = [{"repeat": rows}]
    repeat = items[0].get("repeat") if isinstance(items[0], dict) else None
    if isinstance(repeat, dict) and set(repeat) == {"arg"}:
        repeat = repeat["arg"]
    try:
        as_tree = [expr.parse(v) if isinstance(v, str) else ("num", v) for v in (repeat, count)]
    except (expr.ExprError, TypeError):
        return False
    return repeat is not None and as_tree[0] == as_tree[1]


def _used_names(items: list[Item]) -> set[str]:
    """The names a node list reads: references in node values, carried values, collected steps."""
    used = {ref for n in walk_nodes(items) for value in (n.args, n.kwargs) for _, ref in iter_refs(value)}
    for loop in walk_loops(items):
        used |= {str(value)[1:] for value in loop.carry.values()}
        last = last_name([node.to_dict() for node in loop.nodes]) if loop.collect is not None else None
        if last is not None:
            used.add(last)
    return used



def check_statements(spec: Spec, imports: Imports) -> list[str]:
    """The checks of ``inputs:`` and ``checks:`` (``fxgen.spec.checks``) as ``if`` statements
    raising ValueError with the messages ``fxgen.load``'s check gives: a dimension written
    ``x.size(2)``, never a local name (which could be a node's)."""
    if spec.checks is None:
        return []
    shapes = [(name, entry.shape) for name, entry in spec.inputs.items()]
    places = rules.first_places(shapes)
    out = []

    def size(place: tuple[str, int]) -> str:
        return f"{place[0]}.size({place[1]})"

    optional = {n.name for n in spec.nodes if isinstance(n, Node) and n.op == "placeholder" and n.default is None}

    def statement(condition: str, message: str, inputs: Iterable[str] = ()) -> str:
        assert '"' not in message and "\\" not in message  # validated names, numbers and operators only
        # an optional input the call leaves out: what concerns it holds when it is given
        given = "".join(f"{name} is not None and " for name in dict.fromkeys(inputs) if name in optional)
        if given and (" or " in condition or " if " in condition):
            condition = f"({condition})"
        return f'if {given}{condition}:\n{"    " * (FORWARD_DEPTH + 1)}raise ValueError(f"{message}")'

    for kind, name, dim, what in rules.shape_checks(shapes):
        if kind == "rank":
            shape = rules.shape_text(what)
            message = rules.RANK.format(input=name, actual=f"{{{name}.dim()}}", rank=dim, shape=shape)
            out.append(statement(f"{name}.dim() != {dim}", message, [name]))
        elif kind == "static":
            here = size((name, dim))
            message = rules.STATIC.format(input=name, dim=dim, actual=f"{{{here}}}", size=what)
            out.append(statement(f"{here} != {what}", message, [name]))
        else:
            dim_name, other, other_dim = what
            here, there = size((name, dim)), size((other, other_dim))
            message = rules.SAME.format(input=name, dim=dim, name=dim_name, actual=f"{{{here}}}",
                                        first=f"{{{there}}}", other=other, other_dim=other_dim)  # fmt: skip
            out.append(statement(f"{here} != {there}", message, [name, other]))
    for text in spec.checks:
        tree = expr.parse(text)
        used = list(dict.fromkeys(expr.names(tree)))
        spelled = expr.renamed(tree, {name: size(places[name]) for name in used})
        told = ", ".join(rules.VALUE.format(input=places[n][0], dim=places[n][1], name=n,
                                            actual=f"{{{size(places[n])}}}") for n in used)  # fmt: skip
        inputs = [places[n][0] for n in used]
        limit = size_limit(tree)
        if limit is not None:  # past it, fxgen.load could not compute the condition: refused alike
            past = " or ".join(f"{size(places[n])} > {limit}" for n in used)
            out.append(statement(past, rules.LIMIT.format(values=told, condition=text, limit=limit), inputs))
        message = rules.CONDITION.format(values=told, condition=text)
        out.append(statement(expression(expr.negated(spelled), imports), message, inputs))
    return out


def comment(text: str | None) -> str | None:
    """A shape comment as one printable line (it is made of dtype names, numbers and symbolic
    dimension names, which are validated identifiers; anything else is replaced)."""
    if text is None:
        return None
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def _is_item_assignment(node: Node) -> bool:
    return (node.op == "call_function" and node.target == "operator.setitem" and len(node.args) == 3
            and not node.kwargs)  # fmt: skip


def _long_subscripted_head(node: Node, callee: str, tree: ModelTree) -> str | None:
    """The path up to the last subscript of the node's callee (``blocks.2.1`` for
    ``blocks_2[1].upsample``) when ``target = callee(`` does not fit on a line, else None."""
    assert node.target is not None
    if "[" not in callee:
        return None
    head = f"{node.name or ''} = {callee}" + ("(" if node.op == "call_module" else "")
    if fits(head, FORWARD_DEPTH):
        return None
    steps = tree.steps(node.target)
    last = max(i for i, (_, kind) in enumerate(steps) if kind in ("list", "dict"))
    return ".".join(part for part, _ in steps[: last + 1])


class _Locals:
    """Local variable names for paths bound in ``forward`` (``layer1.0`` -> ``layer1_0``) that
    shadow no node, keyword, builtin or imported name, nor each other."""

    def __init__(self, imports: Imports) -> None:
        self.taken = set(imports.taken)  # node names, builtins, the file's own names, aliases (plan_names)

    def name(self, path: str) -> str:
        # Any name a module accepts may be a path segment: what is not a letter, digit or _
        # becomes _ ("block1-0" -> block1_0), as torch.fx names nodes.
        base = _NOT_WORD.sub("_", path.replace(".", "_"))
        if not is_identifier(base):
            base = "m_" + base  # a keyword, or a leading digit
        name, i = base, 0
        while name in self.taken or not is_identifier(name):
            i += 1
            name = f"{base}_{i}"
        self.taken.add(name)
        return checked(name)


def _negative(value: Any) -> bool:
    """A literal written with a leading minus sign (``-1``, ``-0.0``, ``-float("inf")``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return math.copysign(1.0, value) < 0
    if not isinstance(value, dict):
        return False
    ((tag, body),) = value.items()
    known = lookup(tag)
    return known is not None and known.negative(body)


def _operand(value: Any, imports: Imports, *, before: str) -> str:
    """A literal operand, parenthesised where the bare text would bind differently or not parse.

    ``before`` is what follows the operand: ``"**"`` (``(-1) ** x``, not ``-1 ** x``), ``"."``
    or ``"["`` (``(1).real``, ``(-1)[0]``, ``(...)``), or ``"unary"`` for the operand of a unary
    operator (``-(-1)``).
    """
    text = literal(value, imports)
    if _negative(value) or (type(value) is Source and not value.atomic):
        return f"({text})"
    bare_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if before in (".", "[") and (bare_number or text == "..."):
        return f"({text})"
    return text


def _binary_operand(value: Any, imports: Imports) -> str:
    """An operand of a binary operator: a literal, or an expression in parentheses unless atomic."""
    if type(value) is Source and not value.atomic:
        return f"({value})"
    return literal(value, imports)


def _power(args: list[Any], imports: Imports) -> str:
    base = _operand(args[0], imports, before="**")
    exponent = literal(args[1], imports)  # x ** -1 needs no parentheses
    hug = _power_operand(args[0], base) and _power_operand(args[1], exponent)
    return f"{base}**{exponent}" if hug else f"{base} ** {exponent}"


def _power_operand(value: Any, text: str) -> bool:
    """Black hugs ``**`` when both operands are simple: names, numbers and attribute chains, each
    with an optional unary minus; a parenthesised operand is not simple."""
    if text.startswith("("):
        return False
    if isinstance(value, str):
        return parse_ref(value) is not None
    if value is None or isinstance(value, (int, float)):
        return True
    if not isinstance(value, dict):
        return False
    ((tag, body),) = value.items()
    known = lookup(tag)
    return known is not None and known.attribute(body)


def _expression(node: Node, imports: Imports, module_of: Any) -> str:
    """A call_method or call_function node's value (forward_lines writes module and attribute
    access, which depend on what is bound)."""
    args, kwargs = node.args, node.kwargs
    assert node.target is not None
    if node.op == "call_method":
        return f"{_operand(args[0], imports, before='.')}.{checked(node.target)}({call_args(args[1:], kwargs, imports)})"
    operator = _operator_form(node, imports)
    if operator is not None:
        return operator
    return f"{qualified(node.target, imports, module_of)}({call_args(args, kwargs, imports)})"


def _operator_form(node: Node, imports: Imports) -> str | None:
    """A call_function node written as Python's operator or attribute syntax (``a + b``,
    ``x[0]``, ``x.shape``), or None when it is written as a call."""
    args, kwargs, target = node.args, node.kwargs, node.target
    assert target is not None
    if node.op != "call_function":
        return None
    if target.startswith("operator.") and not kwargs:
        op = target.removeprefix("operator.")
        if op == "pow" and len(args) == 2:
            return _power(args, imports)
        if op in _BINARY and len(args) == 2:  # operands are names or literals: no precedence issues
            return f"{_binary_operand(args[0], imports)} {_BINARY[op]} {_binary_operand(args[1], imports)}"
        if op in _UNARY and len(args) == 1:
            return _UNARY[op] + _operand(args[0], imports, before="unary")
        if op == "getitem" and len(args) == 2:
            return f"{_operand(args[0], imports, before='[')}[{index(args[1], imports)}]"
    if target == "getattr" and len(args) == 2 and not kwargs and isinstance(args[1], str):
        attr = args[1]
        if is_identifier(attr) and parse_ref(attr) is None:
            return f"{_operand(args[0], imports, before='.')}.{attr}"
    return None
