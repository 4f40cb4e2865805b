"""What a dynamic-shape capture assumed about its inputs' sizes: named dimensions and checks.

TorchDynamo captures with symbolic sizes (``fxgen.capture.dynamo``): each dimension of an input
it keeps dynamic is a symbol of a ``ShapeEnv``, and whatever the forward decided from a size
(``if h % 8:``, ``view(b, -1)`` into a ``Linear(12, ...)``) is recorded there as a guard, a
replacement (a symbol that must equal a number or another symbol) or a range. The graph is
right exactly where those hold. Here they become what a spec says (``inputs:``, ``checks:``):

- each input's shape, a dimension either a number (static: the capture assumed that size) or
  a name (symbolic; a name repeated means the capture assumed those sizes equal);
- each guard as a condition in fxgen's expression grammar over those names
  (``height % 8 != 0``), so the generated forward refuses an input outside them;
- a guard that pins a symbol (``x_dim1 * x_dim2 == 12``) or that the grammar cannot write (or
  not within its length and nesting limits) fixes that symbol at its example size instead (a
  check of that size): never wider than what the capture proved;
- for each symbol the graph reads, where it comes from at run time: an input's dimension
  (``x.size(2)``) or a number.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import sympy
import torch

from fxgen._errors import ExportError
from fxgen.spec.expr import Expr, ExprError, parse, render

__all__ = ["DimFacts", "dim_facts"]


@dataclasses.dataclass
class DimFacts:
    """``shapes``: input -> its sizes (numbers, names); ``checks``: conditions over the names;
    ``where``: symbol -> ``(input, dim)`` or a number, how the graph gets it; ``notes``: what
    the user asked that the capture could not keep."""

    shapes: dict[str, list[int | str]]
    checks: list[str]
    where: dict[sympy.Symbol, tuple[str, int] | int]
    notes: list[str]


def dim_facts(
    shape_env: Any,
    fakes: Mapping[str, torch.Tensor],
    names: Mapping[str, Sequence[str | None]],
) -> DimFacts:
    """The facts of a capture: ``fakes`` are the inputs' fake tensors (their sizes symbolic where
    the capture kept them so), ``names`` the dimension names the user gave (None: static)."""
    guards = [_bound(shape_env.simplify(g.expr)) for g in shape_env.guards if not _inside_an_operator(g)]
    lines = [str(g.sloc.maybe_user_loc or "") for g in shape_env.guards if not _inside_an_operator(g)]
    for asserts in getattr(shape_env, "deferred_runtime_asserts", {}).values():
        guards.extend(_bound(shape_env.simplify(a.expr)) for a in asserts)
        lines.extend("" for _ in asserts)
    sizes = {name: [_expr(shape_env, size) for size in fake.shape] for name, fake in fakes.items()}
    known = shape_env.backed_var_to_val if hasattr(shape_env, "backed_var_to_val") else shape_env.var_to_val
    hints = {s: int(v) for s, v in known.items()}
    order = {e: i for i, e in enumerate(e for shape in sizes.values() for e in shape if e.is_Symbol)}
    own = {symbol for shape in sizes.values() for size in shape for symbol in size.free_symbols}
    # a guard of a size that depends on data (``nonzero``: an unbacked symbol) is the operator's own
    # runtime assert, which holds for any tensor torch makes: no assumption about the inputs
    kept = [i for i, guard in enumerate(guards) if guard.free_symbols <= own]
    guards, lines = [guards[i] for i in kept], [lines[i] for i in kept]
    subst, why = _settled(guards, lines, sizes, hints, order)
    shapes: dict[str, list[int | str]] = {}
    where: dict[sympy.Symbol, tuple[str, int] | int] = {s: int(v) for s, v in subst.items() if v.is_Integer}
    spelled: dict[sympy.Symbol, str] = {}
    taken = set(fakes)
    notes: list[str] = []
    for name, shape in sizes.items():
        wanted = list(names.get(name, ()))
        out: list[int | str] = []
        for d, size in enumerate(shape):
            size = size.xreplace(subst)
            asked = wanted[d] if d < len(wanted) else ""
            if size.is_Integer:
                out.append(int(size))
                reason = why.get(shape[d]) if shape[d].is_Symbol else None
                if asked or reason:
                    notes.append(f"input {name!r} dimension {d}{f' ({asked})' if asked else ''} is static, "
                                 f"{int(size)}: the capture needed that size{f' ({reason})' if reason else ''}, "
                                 "so the exported model accepts only it (capture on an example of another size "
                                 "if the model takes others)")  # fmt: skip
                continue
            if size not in spelled:  # a name the user gave twice stays one (its sizes checked equal)
                given = bool(asked) and asked in spelled.values()
                spelled[size] = str(asked) if given else _fresh(asked or _dim_name(name, d), taken)
                where[size] = (name, d)
            out.append(spelled[size])
        shapes[name] = out
    checks: list[str] = []
    for guard in guards:
        guard = guard.xreplace(subst)
        if guard is sympy.true or guard == sympy.true:
            continue
        tree = _writable(guard, spelled)
        if tree is None:
            raise ExportError(f"the capture assumed {guard}, which fxgen cannot write as a check; report it, or "
                              "mark the dimensions it names static (dynamic=)")  # fmt: skip
        text = render(tree)
        if text not in checks:
            checks.append(text)
    for symbol, value in subst.items():  # a symbol made another: read where that one is
        if value.is_Symbol and value in where:
            where[symbol] = where[value]
    return DimFacts(shapes, checks, where, notes)


def _settled(guards: list[Any], lines: list[str], sizes: dict[str, list[Any]], hints: dict[Any, int],
             order: dict[Any, int]) -> tuple[dict[Any, Any], dict[Any, str]]:  # fmt: skip
    """Symbol -> what it is taken to be: another symbol, or its example size; and for each
    symbol fixed, the line of the guard that fixed it (``lines``: each guard's, or "").

    An equality guard that holds at twice and three times the example sizes too (a size
    divisible by 16, for a U-Net's poolings) is a condition like any other. One over several
    symbols is then tried as the equalities of its symbols with equal example sizes
    (``mask.view(batch, -1)`` of a mask as large as the ids: the mask's dimensions are the ids');
    if that makes it true, they are taken to be equal (one name, and the check that the sizes
    are). Otherwise, as for a guard fxgen's grammar cannot write, its symbols are fixed at their
    example sizes (``x_dim1 * x_dim2 == 12``: static, and checked). A dimension that is an
    expression of symbols (``2 * s0``) fixes them too."""
    subst: dict[Any, Any] = {}
    why: dict[Any, str] = {}
    # the names the checks will likely use (``x_dim2``), so that a guard too long to write is known now
    named = {size: _dim_name(name, d) for name, shape in sizes.items() for d, size in enumerate(shape) if size.is_Symbol}

    def pin(expr: Any, line: str = "") -> None:
        for symbol in expr.free_symbols:
            if symbol not in subst:
                subst[symbol] = sympy.Integer(hints[symbol])
                if line:
                    why[symbol] = line

    for guard, line in zip(guards, lines, strict=True):
        guard = guard.xreplace(subst)
        if guard == sympy.true or not (isinstance(guard, sympy.Eq) or _writable(guard, named) is None):
            continue
        if _writable(guard, named) is not None and all(
            _true(guard.xreplace({s: sympy.Integer(hints[s] * k) for s in guard.free_symbols})) for k in (2, 3)
        ):
            continue  # holds beyond the example: written as a check
        symbols = sorted(guard.free_symbols, key=lambda s: order.get(s, len(order)))
        first: dict[int, Any] = {}
        trial = {s: first.setdefault(hints[s], s) for s in symbols}
        trial = {s: r for s, r in trial.items() if r != s}
        if trial and _true(guard.xreplace(trial)):
            for symbol, rep in trial.items():
                subst[symbol] = rep
            for symbol, value in list(subst.items()):
                subst[symbol] = value.xreplace(trial)
        else:
            pin(guard, line)
    for shape in sizes.values():
        for size in shape:
            size = size.xreplace(subst)
            if not size.is_Integer and not size.is_Symbol:
                pin(size)
    return subst, why


def _true(expr: Any) -> bool:
    if expr == sympy.true:
        return True
    try:
        return bool(sympy.simplify(expr) == sympy.true)
    except Exception:  # (sympy cannot decide it: not taken)
        return False


# Where torch computes an operator's fake result: a guard made there chose how that result is
# laid out (a convolution's memory format from its batch size), which the real operator decides
# again when the graph runs. The graph records the operator call, not that choice: such a guard
# is no assumption of the graph (its equalities are kept: they fixed sizes the graph then used).
_OPERATOR_FILES = tuple(
    str(Path(torch.__file__).parent / name)
    for name in ("_subclasses", "_meta_registrations.py", "_refs", "_prims", "_prims_common", "_decomp")
)


def _inside_an_operator(guard: Any) -> bool:
    where = getattr(guard.sloc, "framework_loc", None)
    filename = getattr(where, "filename", None)
    return (isinstance(filename, str) and filename.startswith(_OPERATOR_FILES)
            and not isinstance(guard.expr, sympy.Eq))  # fmt: skip


def _bound(guard: Any) -> Any:
    """An equality that is a bound written as one, as the bound: ``a == min(b, a)`` (a slice
    ``t[:a]`` of a table of ``b`` rows, as long as ``a``) is ``a <= b``; ``a == max(b, a)`` is
    ``a >= b``. Any other guard as it is."""
    if isinstance(guard, sympy.Eq):
        for a, other in (guard.args, guard.args[::-1]):
            kind = type(other).__name__
            if kind in ("Min", "Max") and len(other.args) == 2 and a in other.args:
                b = other.args[0] if other.args[1] == a else other.args[1]
                return sympy.Le(a, b) if kind == "Min" else sympy.Ge(a, b)
    return guard


def _expr(shape_env: Any, size: Any) -> Any:
    if isinstance(size, int):
        return sympy.Integer(size)
    return shape_env.simplify(size.node.expr)


def _fresh(name: str, taken: set[str]) -> str:
    out, n = name, 1
    while out in taken:
        n += 1
        out = f"{name}_{n}"
    taken.add(out)
    return out


_RELATIONS = {sympy.Eq: "==", sympy.Ne: "!=", sympy.Lt: "<", sympy.Le: "<=", sympy.Gt: ">", sympy.Ge: ">="}
_CALLS = {"Max": "max", "Min": "min"}


def _dim_name(name: str, d: int) -> str:
    """The name a dynamic dimension gets where the user gave none (``x_dim2``)."""
    return f"{name}_dim{d}"


def _writable(expr: Any, spelled: Mapping[Any, str]) -> Expr | None:
    """``_tree`` of a guard, or None also where the check it writes would be past what a spec's
    expression may hold (``fxgen.spec.expr``'s length and nesting limits: a size computed through
    many layers, EfficientNet's or ENet's padding, nests a floor division per layer)."""
    tree = _tree(expr, spelled)
    if tree is None:
        return None
    try:
        parse(render(tree))
    except ExprError:
        return None
    return tree


def _tree(expr: Any, spelled: Mapping[Any, str]) -> Expr | None:
    """``expr`` as a tree of fxgen's expression grammar (``fxgen.spec.expr``), or None when it
    holds anything the grammar cannot write. Symbols not in ``spelled`` are written as their own
    names (only to learn whether the expression can be written)."""
    if expr is sympy.true or expr is sympy.false:
        return ("bool", bool(expr))
    if expr.is_Integer:
        value = int(expr)
        return ("neg", ("num", -value)) if value < 0 else ("num", value)
    if expr.is_Symbol:
        return ("name", spelled.get(expr, str(expr)))
    kind = type(expr).__name__
    args = [_tree(a, spelled) for a in expr.args]
    if any(a is None for a in args):
        return None
    if type(expr) in _RELATIONS:
        return (_RELATIONS[type(expr)], args[0], args[1])
    if isinstance(expr, (sympy.And, sympy.Or)):
        return _chain("and" if isinstance(expr, sympy.And) else "or", args)
    if isinstance(expr, sympy.Not):
        return ("not", args[0])
    if isinstance(expr, sympy.Add):  # the positive terms first, then each negative one subtracted
        terms = sorted(zip(expr.args, args, strict=True), key=lambda t: t[0].could_extract_minus_sign())
        tree: Any = None
        for term, written in terms:
            if term.could_extract_minus_sign():
                positive = _tree(-term, spelled)
                tree = ("-", tree, positive) if tree is not None else ("neg", positive)
            else:
                tree = ("+", tree, written) if tree is not None else written
        return tree
    if isinstance(expr, sympy.Mul):
        if expr.args[0] == -1:
            return ("neg", _chain("*", args[1:]))
        return _chain("*", args)
    if kind in ("Mod", "PythonMod"):
        return ("%", args[0], args[1])
    if kind in ("FloorDiv", "CleanDiv"):
        return ("//", args[0], args[1])
    if kind in ("Pow", "PowByNatural") and expr.args[1].is_Integer and int(expr.args[1]) >= 0:
        return ("**", args[0], args[1])
    if kind in _CALLS:
        return ("call", _CALLS[kind], *args)
    return None


def _chain(op: str, args: list[Any]) -> Expr:
    tree = args[0]
    for arg in args[1:]:
        tree = (op, tree, arg)
    return tree
