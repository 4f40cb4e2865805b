"""Declaration shorthands, desugared to the canonical declarations before any check sees them.

The node form has its compact items (``compact``); this is the same for declarations. Each
shorthand stands for exactly one canonical declaration:

* a module declared as a **call string**, parsed here (never ``eval``'d):
  ``conv: "torch.nn.Conv2d(cin, hidden, 1, stride=s, bias=False)"`` is
  ``{class: torch.nn.Conv2d, args: [{arg: cin}, {arg: hidden}, 1], kwargs: {stride: {arg: s},
  bias: false}}``. It may stand wherever a module declaration does: a value of ``modules:``,
  ``{module: "..."}`` and ``{repeat: N, module: "..."}`` in constructor arguments, and
  ``{call: "...", init: ..., if: ...}``, the mapping form for what a call cannot say. An
  argument is a literal (an integer, a float, ``True``/``False``/``None``, a quoted string), a
  list ``[...]`` or tuple ``(a, b)`` of arguments, a module written as a call (``Conv(c, c,
  3)`` inside ``torch.nn.Sequential(...)``: ``{module: ...}``), or else an expression of
  ``fxgen.spec.expr`` over the class's arguments and values (``{arg: EXPR}``);
* a **list of modules** wherever a module is declared: ``[torch.nn.Dropout(p), "torch.nn.Linear(a,
  b)"]`` is ``{class: torch.nn.Sequential, args: [{module: ...}, ...]}``, each item a module or
  an item of constructor arguments (``{repeat: ...}``, ``{for: ...}``), located where written;
* a ``{repeat: ...}`` or ``{for: ...}`` **declared as a module** is a ``torch.nn.ModuleList`` of
  what it makes: ``m: {repeat: n, module: "Block(c)"}`` is ``{class: torch.nn.ModuleList, args:
  [[{repeat: n, module: ...}]]}``;
* ``{repeat: EXPR}`` with the count an expression string: ``{repeat: {arg: EXPR}}``;
* ``{for: NAMES, in: ..., module: ...}`` (a ``for`` over module declarations) with ``in:`` an
  expression string (``{arg: EXPR}``, a count) or rows holding expression strings (each
  ``{arg: EXPR}``), and its module a call string;
* an **argument declared by its default**: ``args: {n_layer: 12, dropout: 0.0, tie: true}`` is
  ``{type: int, default: 12}``, ``{type: float, default: 0.0}``, ``{type: bool, default: true}``.

The canonical form stays the definition: ``fxgen expand`` prints it, the schema and every check
see only it, and each desugared declaration is located at the text it comes from (the
``Source`` table ``compact.CompactDocument`` reads). A pure function of the data (no torch, no
file): the same text always gives the same declarations, and a spec without shorthands is
returned as it is. A class name is validated later exactly as one written out is (the policy).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fxgen.read.yaml_events import JsonPath
from fxgen.spec.expr import FUNCTIONS, MAX_DEPTH, ExprError, parse

__all__ = ["CALL_ALLOWED", "MAX_CALL_LENGTH", "Source", "desugar_declarations", "parse_call", "with_classes"]

# A canonical path's source: the path it was written at (a compact item, a shorthand), and whether
# the paths below it are the same below that (a node written out) or all at it (what a compact
# item or a call string stands for).
Source = tuple[JsonPath, bool]
Problem = tuple[JsonPath, str]

MAX_CALL_LENGTH = 2000  # a call declares one module (a Sequential of a few), not a model

_QUALNAME = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_CALL = re.compile(rf" *({_QUALNAME}) *\((.*)\)\s*", re.DOTALL)
_KEYWORD = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)(.*)", re.DOTALL)
_STRING = re.compile(r"\s*(?:'([^'\\]*)'|\"([^\"\\]*)\")\s*", re.DOTALL)
_CLOSE = {"(": ")", "[": "]"}

CALL_ALLOWED = (
    "a module written as a call is CLASS(ARG, ..., NAME=ARG, ...), each ARG a literal (an integer, a float, True, "
    "False, None, a quoted string), a list [...] or tuple (a, b) of them, a module written as a call, or an "
    "expression over the class's arguments and values (`cout * 4`); write anything else in the mapping form "
    "{class: ..., args: [...], kwargs: {...}}"
)

SEQUENTIAL_ALLOWED = (
    "a list of modules is a torch.nn.Sequential of them, each item a module written as a call "
    '("torch.nn.ReLU()"), a mapping {class: ..., args: [...]}, a list (a Sequential), or {module: ...}, '
    "{repeat: N, module: ...}, {for: NAMES, in: ..., module: ...}"
)

ARG_ALLOWED = (
    "an argument is declared by its type (`int`), by its default (`12`, `0.5`, `true`: the type is int, float "
    "or bool, as the literal's), or as {type: ..., default: ...}"
)


class CallError(ValueError):
    """A call string that is not well formed (the message says what is allowed)."""


# -- one call --------------------------------------------------------------------------------
def parse_call(text: str, functions: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The canonical declaration ``{class, args, kwargs}`` a call string stands for; CallError
    says what is wrong and what is allowed. A call of one of the spec's ``functions`` inside
    it is an expression (``make_divisible(c * width)``), not a module."""
    if len(text) > MAX_CALL_LENGTH:
        raise CallError(f"a module written as a call has at most {MAX_CALL_LENGTH} characters (this one has "
                        f"{len(text)}); declare its parts as modules or classes of their own")  # fmt: skip
    return _call(text, 0, functions)


def _call(text: str, depth: int, functions: frozenset[str]) -> dict[str, Any]:
    match = _CALL.fullmatch(text)
    if match is None:
        if depth == 0 and text.count("(") != text.count(")"):
            raise CallError(f"{text.strip()!r} is not a call: its parentheses do not close. YAML cuts an unquoted "
                            "call inside [...] or {...} at each comma: put the call in quotes "
                            '("torch.nn.Linear(d, d)")')  # fmt: skip
        raise CallError(f"{text.strip()!r} is not a call; {CALL_ALLOWED}")
    name, inner = match.groups()
    if name in FUNCTIONS or name in functions:
        raise CallError(f"{name}(...) is an expression's function, not a module class; {CALL_ALLOWED}")
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for piece in _split(inner, text):
        keyword = _KEYWORD.fullmatch(piece)
        if keyword is None:
            if kwargs:
                raise CallError(f"in {text.strip()!r}, the positional argument {piece.strip()!r} comes after a "
                                "keyword argument; positional arguments come first")  # fmt: skip
            args.append(_value(piece, text, depth, functions))
            continue
        key, value = keyword.groups()
        if key in kwargs:
            raise CallError(f"in {text.strip()!r}, the keyword argument {key!r} is given twice; give each once")
        kwargs[key] = _value(value, text, depth, functions)
    out: dict[str, Any] = {"class": name}
    if args:
        out["args"] = args
    if kwargs:
        out["kwargs"] = kwargs
    return out


def _split(inner: str, text: str) -> list[str]:
    """``inner`` cut at its commas outside brackets and quotes; a trailing comma is allowed."""
    pieces: list[str] = []
    stack: list[str] = []
    quote: str | None = None
    start = 0
    for i, char in enumerate(inner):
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in _CLOSE:
            stack.append(_CLOSE[char])
        elif char in ")]":
            if not stack or stack.pop() != char:
                raise CallError(f"unbalanced {char!r} in {text.strip()!r}; {CALL_ALLOWED}")
        elif char == "," and not stack:
            pieces.append(inner[start:i])
            start = i + 1
    if quote is not None or stack:
        raise CallError(f"{'a quote' if quote else 'a bracket'} is not closed in {text.strip()!r}; {CALL_ALLOWED}")
    pieces.append(inner[start:])
    if pieces and not pieces[-1].strip():
        pieces.pop()  # f(a, b,) and f()
    if any(not piece.strip() for piece in pieces):
        raise CallError(f"an argument is missing between two commas in {text.strip()!r}; {CALL_ALLOWED}")
    return pieces


def _value(piece: str, text: str, depth: int, functions: frozenset[str]) -> Any:
    """One argument of a call as an encoded value."""
    if depth >= MAX_DEPTH:
        raise CallError(f"{text.strip()!r} nests more than {MAX_DEPTH} deep; declare its parts as modules of their own")
    stripped = piece.strip()
    string = _STRING.fullmatch(piece)
    if string is not None:
        value = string.group(1) if string.group(1) is not None else string.group(2)
        return "%" + value if value.startswith("%") else value  # a literal string, never a reference
    if stripped == "None":
        return None
    if stripped[:1] == "[" and stripped[-1:] == "]" and _closes(stripped):
        return [_value(p, text, depth + 1, functions) for p in _split(stripped[1:-1], text)]
    if stripped[:1] == "(" and stripped[-1:] == ")" and _closes(stripped):
        items = _split(stripped[1:-1], text)
        if len(items) != 1 or stripped[1:-1].rstrip().endswith(","):
            return {"tuple": [_value(p, text, depth + 1, functions) for p in items]}
    call = _CALL.fullmatch(stripped)
    if call is not None and call.group(1) not in FUNCTIONS and call.group(1) not in functions and _closes(
        stripped[stripped.index("(") :]
    ):
        return {"module": _call(stripped, depth + 1, functions)}
    if "\\" in stripped or "'" in stripped or '"' in stripped:
        raise CallError(f"argument {stripped!r} of {text.strip()!r}: a string is quoted whole, without backslashes; "
                        f"{CALL_ALLOWED}")  # fmt: skip
    try:
        tree = parse(stripped)
    except ExprError as exc:
        raise CallError(f"argument {stripped!r} of {text.strip()!r}: {exc}; {CALL_ALLOWED}") from None
    if tree[0] in ("num", "bool"):
        return tree[1]
    if tree[0] == "neg" and tree[1][0] == "num":
        return -tree[1][1]
    return {"arg": stripped}


def _closes(text: str) -> bool:
    """Does the bracket ``text`` opens with close at its end (``(a)`` yes, ``(a) + (b)`` no)?"""
    depth = 0
    quote: str | None = None
    for i, char in enumerate(text):
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
            if depth == 0:
                return i == len(text) - 1
    return False


# -- a whole spec ----------------------------------------------------------------------------
def desugar_declarations(data: Any) -> tuple[Any, dict[JsonPath, Source] | None, list[Problem]]:
    """The canonical data of ``data``, where each desugared declaration comes from (None when
    nothing is a shorthand: ``data`` is then returned as it is), and the problems found."""
    if not isinstance(data, dict):
        return data, None, []
    functions = data.get("functions")
    state = _Desugar(frozenset(functions) if isinstance(functions, dict) else frozenset())
    out = state.body(data, ())
    if isinstance(functions, dict):
        new_functions = {name: state.function(body, ("functions", name)) for name, body in functions.items()}
        if any(new_functions[name] is not functions[name] for name in functions):
            out = {**out, "functions": new_functions}
    out = with_classes(out, data, state.body)
    if not state.sources and not state.problems:
        return data, None, []
    return out, state.sources, state.problems


def with_classes(out: dict[str, Any], data: dict[str, Any], body: Callable[[dict[str, Any], JsonPath], dict[str, Any]]) -> dict[str, Any]:
    """``out`` (``data``'s top level as rewritten) with ``body`` applied to each class of
    ``data``: ``classes`` as it is when no class changes (a rewrite returns a body it leaves
    alone as it is)."""
    classes = data.get("classes")
    if not isinstance(classes, dict):
        return out
    new = {name: body(item, ("classes", name)) if isinstance(item, dict) else item for name, item in classes.items()}
    return {**out, "classes": new} if any(new[name] is not classes[name] for name in classes) else out


class _Desugar:
    def __init__(self, functions: frozenset[str]) -> None:
        self.functions = functions  # the spec's functions: a call of one is an expression, not a module
        self.sources: dict[JsonPath, Source] = {}
        self.problems: list[Problem] = []

    def function(self, body: Any, where: JsonPath) -> Any:
        """A function of ``functions:`` with its arguments declared by their defaults desugared."""
        if not isinstance(body, dict) or not isinstance(body.get("args"), dict):
            return body
        args = body["args"]
        new_args = {name: self.argument(decl, (*where, "args", name)) for name, decl in args.items()}
        return {**body, "args": new_args} if any(new_args[n] is not args[n] for n in args) else body

    def body(self, body: dict[str, Any], where: JsonPath) -> dict[str, Any]:
        """``body`` (the top level or a class) with its argument and module shorthands desugared."""
        out = body
        args = body.get("args")
        if isinstance(args, dict):
            new_args = {name: self.argument(decl, (*where, "args", name)) for name, decl in args.items()}
            if any(new_args[name] is not args[name] for name in args):
                out = {**out, "args": new_args}
        modules = body.get("modules")
        if isinstance(modules, dict):
            new_modules = {path: self.module(decl, (*where, "modules", path), top=True) for path, decl in modules.items()}
            if any(new_modules[path] is not modules[path] for path in modules):
                out = {**out, "modules": new_modules}
        return out

    def argument(self, decl: Any, at: JsonPath) -> Any:
        if isinstance(decl, str | dict):
            return decl
        if isinstance(decl, bool):
            kind = "bool"
        elif isinstance(decl, int):
            kind = "int"
        elif isinstance(decl, float):
            kind = "float"
        else:
            self.problems.append((at, f"{decl!r} is no argument declaration; {ARG_ALLOWED}"))
            return decl
        self.sources[at] = (at, False)
        return {"type": kind, "default": decl}

    def module(self, decl: Any, at: JsonPath, *, top: bool) -> Any:
        """A module declaration at ``at`` (``top``: one of ``modules:``, where ``init`` and ``if``
        may go), canonical."""
        if isinstance(decl, str):
            return self.call(decl, at) or decl
        if isinstance(decl, list):
            return self.sequential(decl, at)
        if not isinstance(decl, dict):
            return decl
        if "module" in decl and (set(decl) <= {"repeat", "module"} or set(decl) <= {"for", "in", "module"}):
            return self.module_list(decl, at)
        out = decl
        if top and "call" in decl:
            if not isinstance(decl["call"], str):
                self.problems.append(((*at, "call"), f"`call:` is a module written as a call string; {CALL_ALLOWED}"))
                return decl
            clash = sorted(set(decl) & {"class", "args", "kwargs"})
            if clash:
                self.problems.append(((*at, "call"), f"a declaration with `call:` has no {clash[0]!r} (the call says "
                                      "it); beside `call:` go `init:` and `if:`"))  # fmt: skip
                return decl
            parsed = self.call(decl["call"], (*at, "call"))
            if parsed is None:
                return decl
            rest = {key: value for key, value in decl.items() if key != "call"}
            for key in parsed:
                self.sources[(*at, key)] = ((*at, "call"), False)
            out = {**parsed, **rest}
        args, kwargs = out.get("args"), out.get("kwargs")
        if isinstance(args, list):
            new_args = self.values(args, (*at, "args"))
            if new_args is not args:
                out = {**out, "args": new_args}
        if isinstance(kwargs, dict):
            new_kwargs = {key: self.values(item, (*at, "kwargs", key)) for key, item in kwargs.items()}
            if any(new_kwargs[key] is not kwargs[key] for key in kwargs):
                out = {**out, "kwargs": new_kwargs}
        return out

    def sequential(self, items: list[Any], at: JsonPath) -> dict[str, Any]:
        """A list of modules is a ``torch.nn.Sequential`` of them: each item a module (a call
        string, a mapping, a list again) or a constructor argument's ``{module: ...}``,
        ``{repeat: ...}`` or ``{for: ...}`` item."""
        args: list[Any] = []
        cut = 0  # the open parentheses of a call YAML cut at a comma, still to be closed by later items
        for i, item in enumerate(items):
            if isinstance(item, str) and (cut or item.count("(") > item.count(")")):
                if not cut:  # one error for the call, not one per piece
                    self.call(item, (*at, i))
                cut = max(cut + item.count("(") - item.count(")"), 0)
                args.append(item)
                continue
            module = isinstance(item, str | list) or (isinstance(item, dict) and "class" in item)
            listed = isinstance(item, dict) and ("module" in item or "for" in item)
            if not (module or listed):
                self.problems.append(((*at, i), f"{item!r} is not a module: {SEQUENTIAL_ALLOWED}"))
                args.append(item)
                continue
            if module:
                args.append({"module": self.relocated(item, (*at, "args", i, "module"), (*at, i), module=True)})
            else:
                args.append(self.relocated(item, (*at, "args", i), (*at, i), module=False))
        self.sources[(*at, "class")] = (at, False)
        self.sources[(*at, "args")] = (at, True)
        return {"class": "torch.nn.Sequential", "args": args}

    def module_list(self, decl: dict[str, Any], at: JsonPath) -> dict[str, Any]:
        """A ``{repeat: ...}`` or ``{for: ...}`` declared as a module is a ``torch.nn.ModuleList``
        of what it makes (``nn.ModuleList(Block(c) for c in ch)``)."""
        item = self.relocated(decl, (*at, "args", 0, 0), at, module=False)
        self.sources[(*at, "class")] = (at, False)
        self.sources[(*at, "args")] = (at, False)
        self.sources[(*at, "args", 0)] = (at, False)
        return {"class": "torch.nn.ModuleList", "args": [[item]]}

    def relocated(self, item: Any, canonical: JsonPath, written: JsonPath, *, module: bool) -> Any:
        """``item`` desugared as a module (``module``) or as an item of constructor arguments,
        where it sits at ``canonical`` in the canonical data but is written at ``written``: on a
        state of its own, whose sources and problems are then moved to where it is written."""
        inner = _Desugar(self.functions)
        out = inner.module(item, canonical, top=False) if module else inner.values(item, canonical)
        size = len(canonical)

        def moved(where: JsonPath) -> JsonPath:
            return (*written, *where[size:]) if where[:size] == canonical else where

        self.sources.update({path: (moved(where), same) for path, (where, same) in inner.sources.items()})
        self.problems += [(moved(where), message) for where, message in inner.problems]
        self.sources.setdefault(canonical, (written, True))
        return out

    def values(self, value: Any, at: JsonPath) -> Any:
        """A constructor argument with its ``{module: ...}`` and ``{repeat: ...}`` shorthands
        desugared, at any depth (in lists, tuples and dicts)."""
        if isinstance(value, list):
            new = [self.values(item, (*at, i)) for i, item in enumerate(value)]
            return new if any(a is not b for a, b in zip(new, value, strict=True)) else value
        if not isinstance(value, dict):
            return value
        if "module" in value and set(value) <= {"module", "repeat"}:
            out = value
            module = self.module(value["module"], (*at, "module"), top=False)
            if module is not value["module"]:
                out = {**out, "module": module}
            if isinstance(value.get("repeat"), str):
                out = {**out, "repeat": self.count(value["repeat"], (*at, "repeat"))}
            return out
        if "for" in value and "module" in value and set(value) <= {"for", "in", "module"}:
            return self.module_loop(value, at)
        if set(value) == {"tuple"} and isinstance(value["tuple"], list):
            items = self.values(value["tuple"], (*at, "tuple"))
            return {"tuple": items} if items is not value["tuple"] else value
        if set(value) == {"dict"} and isinstance(value["dict"], dict):
            entries = {key: self.values(item, (*at, "dict", key)) for key, item in value["dict"].items()}
            return {"dict": entries} if any(entries[k] is not value["dict"][k] for k in entries) else value
        return value

    def module_loop(self, value: dict[str, Any], at: JsonPath) -> dict[str, Any]:
        """A ``for`` over module declarations: its module (a call string, or a nested ``for``)
        and its ``in:`` (an expression string is a count; a string in a row an expression)."""
        out = value
        body = value["module"]
        if isinstance(body, dict) and "for" in body:
            module = self.values(body, (*at, "module"))
        else:
            module = self.module(body, (*at, "module"), top=False)
        if module is not body:
            out = {**out, "module": module}
        written = value.get("in")
        if isinstance(written, str):
            out = {**out, "in": self.count(written, (*at, "in"), what="the count of a `for`")}
        elif isinstance(written, list):
            rows = [self.row(row, (*at, "in", k)) for k, row in enumerate(written)]
            if any(a is not b for a, b in zip(rows, written, strict=True)):
                out = {**out, "in": rows}
        return out

    def row(self, row: Any, at: JsonPath) -> Any:
        """A row of a ``for`` over module declarations: each string an expression."""
        if isinstance(row, list):
            new = [self.row(item, (*at, k)) for k, item in enumerate(row)]
            return new if any(a is not b for a, b in zip(new, row, strict=True)) else row
        if not isinstance(row, str):
            return row
        return self.expression(row, at, "a value in the rows of a `for` is a literal", integer=False)

    def count(self, text: str, at: JsonPath, what: str = "a repeat count") -> Any:
        return self.expression(text, at, f"{what} is an integer", integer=True)

    def expression(self, text: str, at: JsonPath, allowed: str, *, integer: bool) -> Any:
        """An expression string as ``{arg: EXPR}`` (a number, an integer if ``integer``, as
        itself); a problem saying what is ``allowed`` if it does not parse."""
        try:
            tree = parse(text)
        except ExprError as exc:
            self.problems.append((at, f"{allowed} or an expression over the class's arguments and values: {exc}"))
            return text
        self.sources[at] = (at, False)
        number = tree[0] == "num" and (isinstance(tree[1], int) or not integer)
        return tree[1] if number else {"arg": text.strip()}

    def call(self, text: str, at: JsonPath) -> dict[str, Any] | None:
        try:
            parsed = parse_call(text, self.functions)
        except CallError as exc:
            self.problems.append((at, str(exc)))
            return None
        self.sources[at] = (at, False)
        return parsed
