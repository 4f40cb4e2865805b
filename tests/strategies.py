"""Hypothesis strategies: random *valid* spec dicts whose graphs run on float32 [2, 4] inputs.

Every value flowing through the graph is a float tensor of shape [2, 4] (or a bool mask of the
same shape, used only by `torch.where`), so any node may consume any earlier node.
"""

from __future__ import annotations

import builtins
import keyword
from typing import Any

import torch
from hypothesis import strategies as st

from fxgen.check.checker import RESERVED_NAMES

RESERVED = {*RESERVED_NAMES, "output"}  # names valid specs avoid; tests/test_injection.py tries them


_MODULE_ATTRS = frozenset(dir(torch.nn.Module))


def _ok_name(name: str) -> bool:
    """Valid as a node name, class name and path segment alike."""
    return not keyword.iskeyword(name) and not keyword.issoftkeyword(name) and not hasattr(builtins, name) \
        and name not in RESERVED and name not in _MODULE_ATTRS  # fmt: skip


def words(first: str, rest: str, max_size: int, min_size: int = 0) -> st.SearchStrategy[str]:
    """``[first][rest]{min_size,max_size}``: what ``st.from_regex`` draws, many times faster."""
    return st.tuples(st.sampled_from(first), st.text(rest, min_size=min_size, max_size=max_size)).map("".join)


_LOWER, _UPPER, _DIGITS = "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789"
names = words(_LOWER, _LOWER + _DIGITS + "_", 7).filter(_ok_name)
class_names = words(_UPPER, _UPPER + _LOWER + _DIGITS, 10).filter(_ok_name)

MODULES: list[dict[str, Any]] = [
    {"class": "torch.nn.Linear", "args": [4, 4]},
    {"class": "torch.nn.Linear", "args": [4, 4], "kwargs": {"bias": False}},
    {"class": "torch.nn.LayerNorm", "args": [4]},
    {"class": "torch.nn.LayerNorm", "args": [{"tuple": [4]}], "kwargs": {"eps": 1e-3}},
    {"class": "torch.nn.ReLU"},
    {"class": "torch.nn.GELU", "kwargs": {"approximate": "tanh"}},
    {"class": "torch.nn.Dropout", "kwargs": {"p": 0.0}},
    {"class": "torch.nn.Identity"},
]
PARAMS: list[dict[str, Any]] = [
    {"shape": [4]},
    {"shape": [4], "init": "ones"},
    {"shape": [2, 4], "init": {"normal": {"std": 0.02}}},
    {"shape": [4], "init": {"constant": {"val": 0.5}}},
    {"shape": [2, 4], "init": {"xavier_uniform": {"gain": 1.0}}},
]
def _packed(values: list[Any], dtype: str) -> dict[str, Any]:
    """A data-form buffer (packed exact bytes, as export writes large tensors)."""
    from fxgen.spec.packed import pack

    tensor = torch.tensor(values, dtype=getattr(torch, dtype))
    return {"shape": list(tensor.shape), "dtype": dtype, "persistent": False, "data": pack(tensor)}


BUFFERS: list[dict[str, Any]] = [
    {"shape": [4], "init": "ones"},
    {"shape": [4], "persistent": False},
    {"value": [0.5, -1.0, 2.0, 0.25]},
    {"value": [[1.0, 2.0, 3.0, 4.0], [0.0, -1.0, 0.5, 1.5]]},
    {"value": 0.5},
    _packed([1.5, -0.0, 3e38, 1e-45], "float32"),
    _packed([[0.1, 0.2, 0.3, 0.4], [-1.0, 2.0, -3.0, 4.0]], "float32"),
    {**_packed([0.5, 0.25, -2.0, 7.0], "float32"), "persistent": True},
]
# Path segments nn.Module accepts that are not identifiers: checkpoints carry names like these.
ODD_SEGMENTS = ["block1-0", "(0, 0)", "class", "a b", 'q"t', "__x", "01", "é", "in"]
# Unary ops: (op, target, extra args, kwargs)
UNARY: list[tuple[str, str, list[Any], dict[str, Any]]] = [
    ("call_function", "torch.relu", [], {}),
    ("call_function", "torch.tanh", [], {}),
    ("call_function", "torch.sigmoid", [], {}),
    ("call_function", "torch.nn.functional.gelu", [], {}),
    ("call_function", "torch.nn.functional.leaky_relu", [], {"negative_slope": 0.1}),
    ("call_function", "operator.neg", [], {}),
    ("call_function", "operator.mul", [2.5], {}),
    ("call_function", "operator.add", [-1], {}),
    ("call_function", "operator.truediv", [4.0], {}),
    ("call_function", "operator.pow", [2], {}),
    ("call_function", "operator.getitem", [{"tuple": [{"slice": [None, None, None]}, {"slice": [0, 4, None]}]}], {}),
    ("call_function", "operator.getitem", [{"tuple": [{"ellipsis": None}, {"slice": [None, None, 1]}]}], {}),
    ("call_function", "torch.clamp", [], {"min": -1.0, "max": {"float": "inf"}}),
    ("call_function", "torch.nan_to_num", [], {"nan": 0.0, "posinf": 1.0, "neginf": -1.0}),
    ("call_method", "relu", [], {}),
    ("call_method", "clamp", [], {"min": -0.5, "max": 0.5}),
    ("call_method", "to", [{"dtype": "float32"}], {}),
    ("call_method", "contiguous", [], {"memory_format": {"memory_format": "contiguous_format"}}),
    ("call_method", "reshape", [{"tuple": [2, 4]}], {}),
    ("call_method", "view", [2, -1], {}),
    ("call_method", "softmax", [], {"dim": -1}),
]
BINARY: list[tuple[str, str, dict[str, Any]]] = [
    ("call_function", "operator.add", {}),
    ("call_function", "operator.sub", {}),
    ("call_function", "operator.mul", {}),
    ("call_function", "torch.add", {"alpha": 0.5}),
    ("call_function", "torch.maximum", {}),
    ("call_method", "add", {}),
    ("call_method", "mul", {}),
]


@st.composite
def spec_dicts(draw: st.DrawFn, *, max_nodes: int = 12, weights_digest: bool = False) -> dict[str, Any]:
    """A random valid spec dict (names unique, refs backwards, every tensor [2, 4] float32);
    with ``weights_digest``, sometimes the digest of a weights file exported with it (which the
    model itself does not carry: ``to_spec`` and ``export`` of it give none)."""
    used: set[str] = set()

    def fresh() -> str:
        name = draw(names)
        while name in used:
            name += "_"
        used.add(name)
        return name

    def path() -> str:
        depth = draw(st.integers(1, 3))
        segments = [fresh()]
        for _ in range(depth - 1):
            segments.append(draw(st.sampled_from(["0", "1", "2", fresh(), *ODD_SEGMENTS])))
        return ".".join(segments)

    modules: dict[str, Any] = {}
    parameters: dict[str, Any] = {}
    buffers: dict[str, Any] = {}
    prefixes: set[str] = set()

    def claim(p: str) -> bool:
        parts = p.split(".")
        pre = {".".join(parts[:i]) for i in range(1, len(parts))}
        if p in prefixes or any(q in modules or q in parameters or q in buffers for q in pre) or \
                any(k.startswith(p + ".") for k in (*modules, *parameters, *buffers)) or \
                p in modules or p in parameters or p in buffers:  # fmt: skip
            return False
        prefixes.update(pre)
        return True

    for _ in range(draw(st.integers(0, 3))):
        p = path()
        if claim(p):
            modules[p] = dict(draw(st.sampled_from(MODULES)))
    for _ in range(draw(st.integers(0, 2))):
        p = path()
        if claim(p):
            parameters[p] = dict(draw(st.sampled_from(PARAMS)))
    for _ in range(draw(st.integers(0, 2))):
        p = path()
        if claim(p):
            buffers[p] = dict(draw(st.sampled_from(BUFFERS)))

    nodes: list[dict[str, Any]] = []
    values: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        name = fresh()
        nodes.append({"op": "placeholder", "name": name, "type": "torch.Tensor"})
        values.append(name)
    if draw(st.booleans()):
        scale = fresh()
        nodes.append({"op": "placeholder", "name": scale, "type": "float", "default": 1.5})
        node = fresh()
        nodes.append({"op": "call_function", "name": node, "target": "operator.mul", "args": [f"%{values[0]}", f"%{scale}"]})
        values.append(node)
    for _ in range(draw(st.integers(1, max_nodes))):
        kind = draw(st.sampled_from(["unary", "binary", "module", "attr", "where"]))
        name = fresh()
        src = f"%{draw(st.sampled_from(values))}"
        if kind == "module" and modules:
            target = draw(st.sampled_from(sorted(modules)))
            nodes.append({"op": "call_module", "name": name, "target": target, "args": [src]})
        elif kind == "attr" and (parameters or buffers):
            target = draw(st.sampled_from(sorted({**parameters, **buffers})))
            attr = fresh()
            nodes.append({"op": "get_attr", "name": attr, "target": target})
            nodes.append({"op": "call_function", "name": name, "target": "operator.add", "args": [src, f"%{attr}"]})
        elif kind == "binary":
            op, target, kwargs = draw(st.sampled_from(BINARY))
            other = f"%{draw(st.sampled_from(values))}"
            node = {"op": op, "name": name, "target": target, "args": [src, other]}
            if kwargs:
                node["kwargs"] = kwargs
            nodes.append(node)
        elif kind == "where":
            mask = fresh()
            other = f"%{draw(st.sampled_from(values))}"
            nodes.append({"op": "call_function", "name": mask, "target": "operator.gt", "args": [src, other]})
            nodes.append({"op": "call_function", "name": name, "target": "torch.where", "args": [f"%{mask}", src, other]})
        else:
            op, target, extra, kwargs = draw(st.sampled_from(UNARY))
            node = {"op": op, "name": name, "target": target, "args": [src, *extra]}
            if kwargs:
                node["kwargs"] = kwargs
            nodes.append(node)
        values.append(name)
    outs = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3, unique=True))
    shape = draw(st.sampled_from(["single", "tuple", "list", "dict"]))
    if shape == "single" or len(outs) == 1:
        out: Any = f"%{outs[-1]}"
    elif shape == "tuple":
        out = {"tuple": [f"%{o}" for o in outs]}
    elif shape == "list":
        out = [f"%{o}" for o in outs]
    else:
        out = {"dict": {o: f"%{o}" for o in outs}}
    nodes.append({"op": "output", "args": [out]})
    class_name = draw(class_names)
    spec: dict[str, Any] = {"fxgen": 1, "name": class_name, "nodes": nodes}
    if draw(st.booleans()):
        spec["doc"] = draw(st.sampled_from(["A random model.", "Line one.\n\nLine two.", "quote's \"here\"", "  padded  "]))
    for key, table in (("modules", modules), ("parameters", parameters), ("buffers", buffers)):
        if table:
            spec[key] = table
    if weights_digest and draw(st.booleans()):
        spec["weights_digest"] = "sha256:" + draw(st.text("0123456789abcdef", min_size=64, max_size=64))
    return spec


def inputs_for(spec: dict[str, Any], seed: int = 0) -> list[Any]:
    """Positional tensors for the required placeholders of a `spec_dicts` spec."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    return [
        torch.randn(2, 4, generator=gen)
        for n in spec["nodes"]
        if n.get("op") == "placeholder" and "default" not in n
    ]


# -- expressions (format 2's {arg: ...} and values:) ----------------------------------------------
_EXPRESSION_FUNCTIONS = {"min": 2, "max": 3, "round": 1, "int": 1, "ceil": 1, "floor": 1, "abs": 1, "sqrt": 1}
_EXPRESSION_OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "<", "<=", ">", ">=", "==", "!=", "and", "or"]
# Near misses: text the grammar refuses, each with its own message.
_EXPRESSION_NEAR_MISSES = ["foo(", "x.y", "a < b < c", "min(", ")", "lambda", "9" * 25, "1e999", "-" * 40, "'s'",
                           "__import__('os')", ",", "if", "else", "**", "[0]", "not"]  # fmt: skip


@st.composite
def expressions(draw: st.DrawFn, names: list[str], depth: int = 3) -> str:
    """Expression text over ``names``: every form of the grammar (numbers, floats, booleans,
    operators, comparisons, and/or/not, conditionals, the functions), sometimes with a near miss
    spliced in."""
    text = _expression(draw, names, depth)
    if draw(st.integers(0, 4)) == 0:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(_EXPRESSION_NEAR_MISSES)) + text[at:]
    return text


def _expression(draw: st.DrawFn, names: list[str], depth: int) -> str:
    kind = draw(st.sampled_from(["leaf", "leaf", "binary", "unary", "call", "if", "parens"] if depth else ["leaf"]))
    if kind == "leaf":
        return draw(st.one_of(
            st.sampled_from(names), st.integers(0, 2**64).map(str), st.integers(0, 64).map(str),
            st.floats(0, 1e300, allow_nan=False).map(repr), st.sampled_from(["True", "False", "0.9", "0.5", "1e-3"]),
        ))  # fmt: skip
    inner = lambda: _expression(draw, names, depth - 1)  # noqa: E731
    if kind == "binary":
        return f"{inner()} {draw(st.sampled_from(_EXPRESSION_OPERATORS))} {inner()}"
    if kind == "unary":
        return f"{draw(st.sampled_from(['-', 'not ']))}{inner()}"
    if kind == "call":
        function = draw(st.sampled_from(sorted(_EXPRESSION_FUNCTIONS)))
        return f"{function}({', '.join(inner() for _ in range(_EXPRESSION_FUNCTIONS[function]))})"
    if kind == "if":
        return f"{inner()} if {inner()} else {inner()}"
    return f"({inner()})"


@st.composite
def expression_specs(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """A format-2 spec with ``values:`` (``base``, e.g. model_specs/width_net.yaml) with one of
    its named values, or one declaration's ``{arg: ...}``, replaced by a drawn expression (or by
    a call of a drawn function, ``functions:``)."""
    import copy

    data = copy.deepcopy(base)
    names = [*data.get("args", {}), *data.get("values", {})]
    text = draw(expressions(names))
    where = draw(st.sampled_from(["value", "declaration", "variant", "init", "function"]))
    if where == "function":  # a function of drawn arguments, values and return, called where a value goes
        if draw(st.booleans()):  # anything the schema takes
            kinds = st.sampled_from(["int", "float", "bool", "str", 2, 0.5, True, {"type": "int", "default": 1.5}])
            args = {"v": draw(kinds), **({"k": draw(kinds)} if draw(st.booleans()) else {})}
            function = {"args": args, "values": {"u": draw(expressions(list(args)))},
                        "return": draw(expressions([*args, "u"])), "type": draw(st.sampled_from(["int", "float", "bool", "str"]))}  # fmt: skip
        else:  # a channel rule of the kind specs write: mostly valid
            function = {"args": {"v": "float", "k": 8}, "values": {"u": draw(st.sampled_from(["v * 2", "v + k / 2", "abs(v)"]))},
                        "return": draw(st.sampled_from(["max(k, int(u) // k * k)", "ceil(u / k) * k", "round(u)"])),
                        "type": "int"}  # fmt: skip
        data["functions"] = {**data.get("functions", {}), "fz": function}
        given = [draw(expressions(names, depth=1)) for _ in range(draw(st.sampled_from([1, 1, 2, 2, 3])))]
        text = f"fz({', '.join(given)})"
        where = draw(st.sampled_from(["value", "declaration"]))
    if where == "variant":  # a variant: known and unknown arguments, values of every type, odd names
        arguments = st.sampled_from([*data.get("args", {}), "widht", "_x"])
        values = st.one_of(st.integers(-4, 300), st.floats(-2, 4, allow_nan=False), st.booleans(), st.text(max_size=4))
        name = draw(st.sampled_from(["s", "xl", "train", "_p", "fc", "class", "n2"]))
        data.setdefault("variants", {})[name] = draw(st.dictionaries(arguments, values, max_size=3))
        return data
    if where == "init":  # a module's init with a drawn argument
        path = draw(st.sampled_from(sorted(data["modules"])))
        tensor = draw(st.sampled_from(["weight", "bias", "running_var", "0.weight", "nope"]))
        scheme = draw(st.sampled_from(["normal", "uniform", "constant", "trunc_normal"]))
        key = {"normal": "std", "uniform": "b", "constant": "val", "trunc_normal": "std"}[scheme]
        data["modules"][path]["init"] = {tensor: {scheme: {key: {"arg": text}}}}
        return data
    if where == "value" and data.get("values"):
        data["values"][draw(st.sampled_from(sorted(data["values"])))] = text
    else:
        path = draw(st.sampled_from(sorted(p for p, m in data["modules"].items() if m.get("args"))))
        args = data["modules"][path]["args"]
        args[draw(st.integers(0, len(args) - 1))] = {"arg": text}
    return data


# -- a `for` over module declarations ------------------------------------------------------------------
@st.composite
def module_loop_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A format-2 spec whose ModuleList is a ``for`` over module declarations, perhaps nested:
    drawn names (some shadowing an argument, each other or a builtin), rows (some of the wrong
    length, some drawn expressions) or a count, and a Linear whose widths use the names."""
    args = {"w": {"type": "int", "default": draw(st.integers(1, 6))}, "k": {"type": "int", "default": draw(st.integers(0, 3))}}
    pool = ["a", "b", "i", "w", "range", "nn", "Linear"]
    outer = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
    scope = [*args, *outer]
    value = st.one_of(st.integers(-1, 5), expressions(scope[:2], depth=2), st.sampled_from(["w", "k + 1", "w * 2"]))
    if len(outer) == 1 and draw(st.booleans()):
        names: Any = outer[0]
        rows: Any = draw(st.one_of(st.lists(value, max_size=4), st.sampled_from([3, "k", "w - 7", -1])))
    else:
        names = outer
        width = st.sampled_from([len(outer)] * 4 + [len(outer) + 1, max(len(outer) - 1, 0)])
        rows = draw(st.lists(width.flatmap(lambda n: st.lists(value, min_size=n, max_size=n)), max_size=3))
    used = draw(st.sampled_from(scope))
    linear = f"torch.nn.Linear({draw(st.sampled_from(['w', used, f'max({used}, 1)']))}, max({used}, 1))"
    module: Any = linear
    if draw(st.booleans()):
        module = {"for": draw(st.sampled_from(["j", "a", "w"])), "in": draw(st.sampled_from([2, "k", f"max({used}, 0)"])),
                  "module": linear}  # fmt: skip
    return {
        "fxgen": 2, "name": "Loops", "args": args,
        "modules": {"m": {"class": "torch.nn.ModuleList", "args": [[{"for": names, "in": rows, "module": module}]]}},
        "nodes": [{"op": "placeholder", "name": "x", "type": "torch.Tensor"}, {"op": "output", "args": ["%x"]}],
    }  # fmt: skip


# -- the layer table ---------------------------------------------------------------------------------
@st.composite
def layer_table_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A format-2 spec whose top level is a layer table (``layers: {CONTAINER: [[FROM, MODULE],
    ...]}``) of 1 to 6 rows over ``x`` [2, 4]: each FROM drawn from -1, other indices (some
    forward, some before row 0), lists of them and things that are no FROM; a list argument goes
    to ``Cat`` (torch.cat along dim 0, so every value stays [n, 4]), a single one to a ReLU,
    Identity or Linear(4, 4). Sometimes the body's own nodes return a list of some rows' values."""
    container = draw(st.sampled_from(["model", "layers", "m", "body2"]))
    index = st.integers(-4, 6)
    source = st.one_of(st.just(-1), index, st.lists(index, min_size=1, max_size=3),
                       st.sampled_from(["a", True, 1.5, [], [[0]], None]))  # fmt: skip
    rows: list[Any] = []
    for _ in range(draw(st.integers(1, 6))):
        written = draw(source)
        single = draw(st.sampled_from(["torch.nn.ReLU()", "torch.nn.Identity()", "torch.nn.Linear(4, 4)",
                                       {"class": "torch.nn.Linear", "args": [4, 4], "kwargs": {"bias": False}}]))  # fmt: skip
        rows.append([written, "Cat()" if isinstance(written, list) else single])
    data: dict[str, Any] = {
        "fxgen": 2, "name": "Table",
        "classes": {"Cat": {"nodes": [{"op": "placeholder", "name": "x", "type": "list[torch.Tensor]"},
                                      {"out": ["torch.cat", "%", 0]}]}},
        "layers": {container: rows},
    }  # fmt: skip
    if draw(st.booleans()):
        picked = draw(st.lists(st.integers(0, len(rows) - 1), min_size=1, max_size=3))
        data["nodes"] = [{"op": "output", "args": [[f"%{container}_{i}" for i in picked]], "type": "list[torch.Tensor]"}]
    return data


# -- conditionals and repeats of nodes -----------------------------------------------------------------
@st.composite
def construct_specs(draw: st.DrawFn, max_items: int = 6) -> dict[str, Any]:
    """A format-2 spec whose graph has conditionals, repeats (carry, collect), aliases and
    ``{arg: ...}`` values, nested at random, over ``x`` of shape [2, 4] and a ModuleList ``m`` of
    ``n`` Linear(4, 4) (``n`` an argument); mostly valid, sometimes not (a drawn condition that is
    no bool, a count that is negative or a float, a target past the list's end)."""
    counter = iter(range(10**6))
    loops: list[str] = []

    def fresh(prefix: str = "v") -> str:
        return f"{prefix}{next(counter)}"

    def value_of(visible: list[str]) -> str:
        return "%" + draw(st.sampled_from(visible))

    def node(visible: list[str]) -> dict[str, Any]:
        name = fresh()
        kind = draw(st.sampled_from(["act", "add", "scale", "item"] if loops else ["act", "add", "scale"]))
        if kind == "act":
            return {"op": "call_module", "name": name, "target": "act", "args": [value_of(visible)]}
        if kind == "add":
            return {"op": "call_function", "name": name, "target": "operator.add",
                    "args": [value_of(visible), value_of(visible)]}  # fmt: skip
        if kind == "scale":
            factor = draw(expressions(["n", *loops], depth=1)) if draw(st.booleans()) else "n + 1"
            return {"op": "call_function", "name": name, "target": "torch.mul", "args": [value_of(visible), {"arg": factor}]}
        return {"op": "call_module", "name": name, "target": f"m.{{{draw(st.sampled_from(loops))}}}",
                "args": [value_of(visible)]}  # fmt: skip

    def items(visible: list[str], depth: int, count: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for _ in range(count):
            kind = draw(st.sampled_from(["node", "node", "alias", "if", "for"] if depth < 3 else ["node"]))
            if kind == "node":
                out.append(node(visible))
                visible.append(out[-1]["name"])
            elif kind == "alias":
                out.append({"op": "alias", "name": fresh("a"), "args": [value_of(visible)]})
                visible.append(out[-1]["name"])
            elif kind == "if":
                joined = fresh("j")
                branches = []
                for _ in range(2):
                    inner = list(visible)
                    body = items(inner, depth + 1, draw(st.integers(0, 2)))
                    body.append({"op": "alias", "name": joined, "args": [value_of(inner)]})
                    branches.append(body)
                drawn = draw(expressions(["n", *loops], depth=1))  # mostly not a bool: refused
                cond = draw(st.sampled_from(["n > 1", "n % 2 == 0", "True", drawn]))
                out.append({"if": cond, "then": branches[0], "else": branches[1]})
                visible.append(joined)
            else:
                var = fresh("i")
                carried = fresh("c")
                out.append({"op": "alias", "name": carried, "args": [value_of(visible)]})
                visible.append(carried)
                loops.append(var)
                inner = list(visible)
                body = items(inner, depth + 1, draw(st.integers(0, 2)))
                body.append({"op": "call_module", "name": fresh("h"), "target": f"m.{{{var}}}", "args": ["%" + carried]})
                loops.pop()
                loop: dict[str, Any] = {"for": var, "in": draw(st.sampled_from(["n", "n - 1", 0, 1, "n // 2", "n / 2"])),
                                        "nodes": body, "carry": {carried: "%" + body[-1]["name"]}}  # fmt: skip
                out.append(loop)
                if draw(st.booleans()):  # the carried value and every step's, summed
                    loop["collect"] = fresh("l")
                    joined, summed = fresh("t"), fresh("z")
                    out.append({"op": "call_function", "name": joined, "target": "operator.add",
                                "args": [["%" + carried], "%" + loop["collect"]]})  # fmt: skip
                    out.append({"op": "call_function", "name": summed, "target": "sum", "args": ["%" + joined]})
                    visible.append(summed)
        return out

    visible = ["x"]
    nodes = [{"op": "placeholder", "name": "x", "type": "torch.Tensor"},
             *items(visible, 0, draw(st.integers(1, max_items))),
             {"op": "output", "args": ["%" + visible[-1]]}]  # fmt: skip
    linear = {"class": "torch.nn.Linear", "args": [4, 4]}
    return {
        "fxgen": 2, "name": "Drawn",
        "args": {"n": {"type": "int", "default": draw(st.integers(0, 4))}},
        "modules": {"m": {"class": "torch.nn.ModuleList", "args": [[{"repeat": {"arg": "n"}, "module": linear}]]},
                    "act": {"class": "torch.nn.Tanh"}},
        "nodes": nodes,
    }  # fmt: skip


# -- the mode (format 2's `if: training` and {arg: training}) -----------------------------------
@st.composite
def mode_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A ``spec_dicts`` spec made format 2 with its graph depending on the mode: a run of its
    nodes taken in train mode only (eval mode names each of them after the first input, with
    ``alias``), and sometimes a functional dropout whose ``training`` is the mode."""
    import copy

    data = copy.deepcopy(draw(spec_dicts(max_nodes=6)))
    data["fxgen"] = 2
    nodes = data["nodes"]
    first = next(n["name"] for n in nodes if n["op"] == "placeholder")
    body = [i for i, n in enumerate(nodes) if n["op"] not in ("placeholder", "output")]
    start = draw(st.sampled_from(body))
    end = draw(st.integers(start + 1, body[-1] + 1))
    run = nodes[start:end]
    if any(n["op"] == "placeholder" for n in run):
        run = [n for n in run if n["op"] != "placeholder"]
    mask = next((k for k, n in enumerate(run) if n.get("target") == "operator.gt"), None)
    if mask is not None:  # (its value is a mask: `torch.where` after it would take the first input as one)
        end = start + mask
        run = run[:mask]
    if not run:
        run, end = nodes[start:start], start
    aliases = [{"op": "alias", "name": n["name"], "args": [f"%{first}"]} for n in run]
    if not run:  # a group of one node of its own, read by nothing
        run = [{"op": "call_function", "name": "mode_" + first, "target": "torch.relu", "args": [f"%{first}"]}]
        aliases = [{"op": "alias", "name": "mode_" + first, "args": [f"%{first}"]}]
    then, orelse = (run, aliases) if draw(st.booleans()) else (aliases, run)
    group = {"if": "training" if then is run else "not training", "then": then, "else": orelse}
    data["nodes"] = [*nodes[:start], group, *nodes[end:]]
    if draw(st.booleans()):
        out = data["nodes"][-1]
        name = "dropped_" + first
        data["nodes"].insert(-1, {"op": "call_function", "name": name, "target": "torch.nn.functional.dropout",
                                  "args": [f"%{first}"], "kwargs": {"p": 0.5, "training": {"arg": "training"}}})
        out["args"] = [{"tuple": [out["args"][0], f"%{name}"]}]
    return data


# -- optional inputs (format 2's `if: NAME is None`) ---------------------------------------------
@st.composite
def presence_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A ``mode_specs`` spec whose group asks whether an optional input was given: an input with
    default None after the others, and the group's condition that input's presence (or the mode
    and its presence: one graph per mode and per input left out)."""
    data = draw(mode_specs())
    nodes = data["nodes"]
    last = max(k for k, n in enumerate(nodes) if n.get("op") == "placeholder")
    name = "opt_" + nodes[0]["name"]
    nodes.insert(last + 1, {"op": "placeholder", "name": name, "default": None})
    group = next(n for n in nodes if "if" in n)
    test = f"{name} is None" if group["if"] == "training" else f"{name} is not None"
    group["if"] = draw(st.sampled_from([test, f"{group['if']} and {test}", f"{test} or {group['if']}"]))
    return data
