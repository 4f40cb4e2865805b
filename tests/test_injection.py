"""Injection-proof generation: hostile text in any name, key or string of a spec.

Each case either fails validation with a SpecError, or produces source whose AST has exactly the
shape fxgen writes (imports from a fixed set, one class, ``__init__`` and ``forward``, one
statement per node), calls nothing but what the spec's nodes and declarations require, names
nothing but the spec's own names, and whose string literals are the spec's strings, unchanged.
No other exception may escape (an ``UnsafeName`` from the renderer means validation missed a
name). The same spec must also build a GraphModule (torch.fx writes and ``exec``s its own code).
"""

from __future__ import annotations

import ast
import base64
import contextlib
import copy
import inspect
import io
import re
import tokenize
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import torch
from helpers import property_budget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fxgen
from fxgen._api import pass_arguments
from fxgen._errors import FxgenError, SpecError
from fxgen.check.validate import validate_data
from fxgen.codegen.render import declared_classes
from fxgen.policy.tables import SAFE_BUILTINS
from fxgen.spec.check_bounds import size_limit
from fxgen.spec.checks import shape_checks
from fxgen.spec.compact import fx_name
from fxgen.spec.expr import parse
from fxgen.spec.file_names import PACKED_HELPER_SOURCE
from fxgen.spec.init import INIT_SCHEMES
from fxgen.spec.layers import desugar_layers
from fxgen.spec.model import walk_loops, walk_nodes
from fxgen.spec.resolve import is_module_loop, loop_names, needs_resolution
from fxgen.spec.shorthand import desugar_declarations
from fxgen.spec.values import iter_refs

PACKED = base64.b64encode(zlib.compress(b"\x00\x3c\x00\xc0")).decode()  # float16 [1.0, -2.0]
BASE: dict[str, Any] = {
    "fxgen": 1,
    "name": "Victim",
    "doc": "A victim model.",
    "modules": {
        "enc.0": {"class": "torch.nn.Linear", "args": [4, 4], "kwargs": {"bias": True}},
        "act": {"class": "torch.nn.GELU", "kwargs": {"approximate": "tanh"}},
    },
    "parameters": {"scale": {"shape": [4], "init": {"normal": {"std": 0.02}}}},
    "buffers": {
        "table": {"value": [1.0, 2.0, 3.0, 4.0]},
        "stats.mean": {"shape": [4], "persistent": False},
        "stats.packed": {"shape": [2], "dtype": "float16", "persistent": False, "data": PACKED},
    },
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "placeholder", "name": "mode", "type": "str", "default": "fast"},
        {"op": "call_module", "name": "h", "target": "enc.0", "args": ["%x"]},
        {"op": "call_module", "name": "a", "target": "act", "args": ["%h"]},
        {"op": "get_attr", "name": "s", "target": "scale"},
        {"op": "get_attr", "name": "t", "target": "table"},
        {"op": "call_function", "name": "m", "target": "operator.mul", "args": ["%a", "%s"]},
        {"op": "call_function", "name": "c", "target": "torch.clamp", "args": ["%m"], "kwargs": {"min": -1.0}},
        {"op": "call_method", "name": "v", "target": "view", "args": ["%c", -1]},
        {"op": "call_function", "name": "e", "target": "torch.einsum", "args": ["i,i->i", "%v", "%t"]},
        {"op": "call_method", "name": "d", "target": "to", "args": ["%e"], "kwargs": {"device": {"device": "cpu"}}},
        {"op": "call_function", "name": "sh", "target": "getattr", "args": ["%d", "shape"]},
        {
            "op": "output",
            "args": [{"dict": {"out": "%d", "label": "%%literal", "mode": "%mode", "shape": "%sh"}}],
            "type": "dict[str, typing.Any]",
        },
    ],
}

NASTY = [
    '"', "'", '"""', "'''", "\\", "\\n", "\n", "\r", "\r\n", "\u2028", "\u2029", "\x00", "\x0b", "\x0c", "\x85",
    "\x1b[2J", "#", "# comment", "x\n", "\nx", "x\nimport os", "x; import os", "x)\nimport os\n(",
    "__import__('os').system('touch /tmp/fxgen-pwned')", "'); import os; ('", '"); import os; ("',
    '"""); import os; ("""', "__class__", "__init__", "__dict__", "__builtins__", "self", "None", "True",
    "class", "def", "lambda", "import", "match", "case", "type", "_", "__", "%", "%%", "%x", "%%x", "%__import__",
    "${x}", "{{x}}", "{% raw %}", "{#", "#}", "{0.__class__}", "\t", " ", "", "0", "01", "1e5", "é", "\u210c",
    "\uff58", "\ud800", "x" * 120, "a.b", "a..b", ".a", "a.", "torch.load", "os.system", "getattr", "eval",
    "F", "nn", "torch", "operator", "forward", "__doc__", "super", "\U0001f600", "\\x00", "a b",
]  # fmt: skip
_CHARS = st.sampled_from([c for c in NASTY if len(c) == 1]) | st.characters(codec="utf-8") | st.characters()
hostile = st.one_of(
    st.sampled_from(NASTY),
    st.text(_CHARS, max_size=12),
    st.builds(lambda a, b, c: a + b + c, st.sampled_from(["", "x", "a.", "%", "%%"]), st.sampled_from(NASTY),
              st.sampled_from(["", "x", ".b", "\n"])),
)


# -- slots: every name, key and string field of BASE --------------------------------------------
def _rename_key(table: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    return {(new if k == old else k): v for k, v in table.items()}


def _retarget(d: dict[str, Any], old: str, new: str) -> None:
    for node in d["nodes"]:
        if node.get("target") == old and node["op"] in ("get_attr", "call_module"):
            node["target"] = new


def _rename_node(d: dict[str, Any], old: str, new: str) -> None:
    def fix(value: Any) -> Any:
        if value == f"%{old}":
            return f"%{new}"
        if isinstance(value, list):
            return [fix(v) for v in value]
        if isinstance(value, dict):
            return {k: fix(v) for k, v in value.items()}
        return value

    for node in d["nodes"]:
        if node.get("name") == old:
            node["name"] = new
        for field in ("args", "kwargs"):
            if field in node:
                node[field] = fix(node[field])


def _node(d: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in d["nodes"] if n.get("name") == name)


def _path(table: str, old: str) -> Callable[[dict[str, Any], str], None]:
    def apply(d: dict[str, Any], s: str) -> None:
        d[table] = _rename_key(d[table], old, s)
        _retarget(d, old, s)

    return apply


def _segment(table: str, old: str, index: int) -> Callable[[dict[str, Any], str], None]:
    def apply(d: dict[str, Any], s: str) -> None:
        parts = old.split(".")
        parts[index] = s
        _path(table, old)(d, ".".join(parts))

    return apply


def _set(name: str, field: str, value: Callable[[str], Any] = lambda s: s) -> Callable[[dict[str, Any], str], None]:
    def apply(d: dict[str, Any], s: str) -> None:
        _node(d, name)[field] = value(s)

    return apply


def _output_dict(d: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = d["nodes"][-1]["args"][0]["dict"]
    return body


def _set_output_key(d: dict[str, Any], s: str) -> None:
    d["nodes"][-1]["args"][0]["dict"] = _rename_key(_output_dict(d), "out", s)


def _set_output_literal(d: dict[str, Any], s: str) -> None:
    _output_dict(d)["label"] = s


def _set_output_type(d: dict[str, Any], s: str) -> None:
    d["nodes"][-1]["type"] = s


def _module_kwarg_key(d: dict[str, Any], s: str) -> None:
    d["modules"]["act"]["kwargs"] = {s: "tanh"}


def _module_kwarg_value(d: dict[str, Any], s: str) -> None:
    d["modules"]["act"]["kwargs"]["approximate"] = s


def _node_kwarg_key(d: dict[str, Any], s: str) -> None:
    _node(d, "c")["kwargs"] = {s: -1.0}


def _init_name(d: dict[str, Any], s: str) -> None:
    d["parameters"]["scale"]["init"] = {s: {"std": 0.02}}


def _init_kwarg(d: dict[str, Any], s: str) -> None:
    d["parameters"]["scale"]["init"] = {"normal": {s: 0.02}}


def _init_plain(d: dict[str, Any], s: str) -> None:
    d["parameters"]["scale"]["init"] = s


def _device(d: dict[str, Any], s: str) -> None:
    _node(d, "d")["kwargs"] = {"device": {"device": s}}


def _dtype(d: dict[str, Any], s: str) -> None:
    d["buffers"]["table"]["dtype"] = s


def _packed(d: dict[str, Any], s: str) -> None:
    d["buffers"]["stats.packed"]["data"] = s


SLOTS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "class name": lambda d, s: d.__setitem__("name", s),
    "doc": lambda d, s: d.__setitem__("doc", s),
    "module path": _path("modules", "enc.0"),
    "module path segment": _segment("modules", "enc.0", 0),
    "module path index": _segment("modules", "enc.0", 1),
    "module path (plain)": _path("modules", "act"),
    "module class": lambda d, s: d["modules"]["act"].__setitem__("class", s),
    "module kwarg key": _module_kwarg_key,
    "module kwarg value": _module_kwarg_value,
    "parameter path": _path("parameters", "scale"),
    "buffer path": _path("buffers", "table"),
    "buffer path segment": _segment("buffers", "stats.mean", 1),
    "buffer dtype": _dtype,
    "buffer data": _packed,
    "packed buffer path": _path("buffers", "stats.packed"),
    "init name": _init_name,
    "init plain name": _init_plain,
    "init kwarg": _init_kwarg,
    "node name": lambda d, s: _rename_node(d, "h", s),
    "placeholder name": lambda d, s: _rename_node(d, "mode", s),
    "placeholder type": _set("x", "type"),
    "placeholder default": _set("mode", "default"),
    "function target": _set("c", "target"),
    "method target": _set("v", "target"),
    "get_attr target": _set("s", "target"),
    "call_module target": _set("a", "target"),
    "string argument": _set("e", "args", lambda s: [s, "%v", "%t"]),
    "reference": _set("e", "args", lambda s: ["i,i->i", "%" + s, "%t"]),
    "getattr name": _set("sh", "args", lambda s: ["%d", s]),
    "node kwarg key": _node_kwarg_key,
    "device": _device,
    "dict key": _set_output_key,
    "literal string": _set_output_literal,
    "output type": _set_output_type,
    "weights digest": lambda d, s: d.__setitem__("weights_digest", s),
}
# Slots whose text must come out as a string literal, unchanged: values (after %% unescaping; a
# "%name" value is a reference, not a literal) and plain strings (as they are).
VALUE_SLOTS = {"module kwarg value", "placeholder default", "string argument", "literal string"}
LITERAL_SLOTS = VALUE_SLOTS | {"doc", "dict key", "device"}


# -- what the generated source may contain --------------------------------------------------------
STD_IMPORTS = {"import torch", "import torch.nn.functional as F", "from torch import nn", "import operator",
               "import math", "import typing", "import base64", "import sys", "import zlib"}
# What a file with packed tensors defines after its class: the helper, and the data.
_HELPER = ast.unparse(ast.parse(PACKED_HELPER_SOURCE).body[0])
VALUE_CALLS = {"float", "complex", "slice", "torch.device", "torch.Size"}
# What an expression of ``{arg: ...}`` or ``values:`` may call, and the syntax it is written in.
EXPRESSION_CALLS = {"min", "max", "round", "int", "abs", "math.ceil", "math.floor", "math.sqrt"}
EXPRESSION_NODES = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
                    ast.Attribute, ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)  # fmt: skip
INIT_CALLS = {"super", "super().__init__", "nn.Parameter", "torch.tensor", "torch.zeros", "torch.ones", "torch.full",
              "torch.empty", "nn.ModuleList", "nn.ModuleDict", "nn.Module"} | {f"nn.init.{s}_" for s in INIT_SCHEMES}
NAMES = {"self", "cls", "classmethod", "super", "torch", "nn", "F", "operator", "math", "typing", "float", "complex", "slice", "None", "ValueError",
         "getattr", "int", "str", "bool", "tuple", "list", "dict", "__doc__", *SAFE_BUILTINS}


def _strings(value: Any) -> set[str]:
    """Every string in the spec data (keys and values), with ``%%`` escapes undone, and path parts."""
    out: set[str] = set()
    if isinstance(value, str):
        out |= {value, value[1:] if value.startswith("%%") else value, *value.split(".")}
    elif isinstance(value, list):
        for item in value:
            out |= _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            out |= _strings(key) | _strings(item)
    return out


def _on_self(expr: ast.expr, roots: frozenset[str] | set[str] = frozenset({"self"})) -> bool:
    """``self.a[0].b`` or ``getattr(self, "0")``: an attribute path under ``self`` (or under a
    local that forward bound to such a path, when ``roots`` names them)."""
    while True:
        if isinstance(expr, (ast.Attribute, ast.Subscript)):
            expr = expr.value
        elif isinstance(expr, ast.Call) and ast.unparse(expr.func) == "getattr" and len(expr.args) == 2:
            if not (isinstance(expr.args[1], ast.Constant) and isinstance(expr.args[1].value, str)):
                return False
            expr = expr.args[0]
        else:
            return isinstance(expr, ast.Name) and expr.id in roots


def _qualified_forms(target: str, aliases: dict[str, str]) -> set[str]:
    forms = {target}
    if target.startswith("torch.nn.functional."):
        forms.add("F." + target.removeprefix("torch.nn.functional."))
    if target.startswith("torch.nn."):
        forms.add("nn." + target.removeprefix("torch.nn."))
    for alias, name in aliases.items():
        if target == name or target.startswith(name + "."):
            forms.add(alias + target[len(name) :])
    return forms


def _bodies(spec: fxgen.Spec) -> list[fxgen.Spec]:
    """The spec's classes (format 2's blocks, then its own), each as a Spec."""
    return [spec.block(name) for name in spec.classes] + [spec]


def _used_names(spec: fxgen.Spec) -> set[str]:
    """Every qualified name the spec's declarations and nodes use."""
    used: set[str] = set()
    for body in _bodies(spec):
        for module in body.modules.values():
            used |= set(declared_classes(module))
        used |= {n.target for n in walk_nodes(body.nodes) if n.op == "call_function" and n.target}
        types = [n.type for n in walk_nodes(body.nodes) if n.type] + [a.type for a in body.args.values()]
        used |= {w for t in types for w in re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", t)}
    return used


def _aliases(spec: fxgen.Spec, tree: ast.Module) -> dict[str, str]:
    """``from M import A as B`` -> ``{"B": "M.A"}``, each a prefix of a name the spec uses."""
    used = _used_names(spec)
    out: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module != "torch":
            for name in stmt.names:
                qualified = f"{stmt.module}.{name.name}"
                assert any(u == qualified or u.startswith(qualified + ".") for u in used if u), qualified
                out[name.asname or name.name] = qualified
    return out


CONTAINER_DOC = re.compile(r"A container of ([A-Za-z_][A-Za-z0-9_]*): its attributes are set by \1\.__init__\.")


def check_source(data: dict[str, Any], spec: fxgen.Spec, source: str) -> None:
    """The generated file has fxgen's fixed shape and nothing a spec could have smuggled in."""
    # header: three comment lines, nothing else before the code
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    head = [t for t in tokens if t.start[0] <= 3]
    assert all(t.type in (tokenize.COMMENT, tokenize.NL) for t in head), head
    rest = source.split("\n", 3)[3]
    if data.get("passes"):  # one more line names the passes: validated identifiers only
        line, _, rest = rest.partition("\n")
        names = ", ".join(p if isinstance(p, str) else next(iter(p)) for p in data["passes"])
        assert line == f"# Transformed by the spec's passes: {names}. The code is the transformed spec's.", line
    assert rest.startswith("\n"), "the header must be exactly three lines (and the passes line)"
    tree = ast.parse(source)

    imports = {ast.unparse(s) for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))}
    aliases = _aliases(spec, tree)  # from-imports of names the spec uses: alias -> qualified name
    assert imports - {s for s in imports if s.startswith("from ") and "torch" not in s} <= STD_IMPORTS, imports
    classes = [s for s in tree.body if isinstance(s, ast.ClassDef)]
    functions = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name in spec.functions]
    assert tree.body[len(imports) : len(imports) + len(functions)] == functions
    assert [f.name for f in functions] == list(spec.functions)
    for function in functions:
        _check_function(function, spec)
    packed: dict[Any, str] = {}
    for body in _bodies(spec):
        packed |= {(p if body is spec else (body.name, p)): b.data for p, b in body.buffers.items() if b.data is not None}
    start = len(imports) + len(functions)
    tail = tree.body[start + len(classes) :]
    assert tree.body[start : start + len(classes)] == classes and len(tail) == (2 if packed else 0)
    if packed:
        assert ast.unparse(tail[0]) == _HELPER
        table = tail[1]
        assert isinstance(table, ast.Assign) and ast.unparse(table.targets[0]) == "_PACKED"
        assert isinstance(table.value, ast.Dict)
        keys = [ast.literal_eval(k) for k in table.value.keys if k is not None]
        values = [v.value for v in table.value.values if isinstance(v, ast.Constant)]
        assert dict(zip(keys, values, strict=True)) == packed

    # the classes: typed containers (``_Name``: a docstring and annotations), then each block
    # after the blocks it uses, the spec's own class last
    models = {body.name: body for body in _bodies(spec)}
    containers = [c for c in classes if c.name not in models]
    assert [c.name for c in classes if c.name in models][-1] == spec.name
    assert sorted(c.name for c in classes if c.name in models) == sorted(models)
    for cls in classes:
        assert not cls.decorator_list and not cls.keywords
        assert [ast.unparse(b) for b in cls.bases] == ["nn.Module"]
    for cls in containers:
        assert re.fullmatch(r"_[A-Za-z0-9_]+", cls.name), cls.name
        doc, *rest = cls.body
        assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
        found = CONTAINER_DOC.fullmatch(doc.value.value)
        assert found and found.group(1) in models, doc.value.value
        assert len(rest) <= 1 and _type_checking_fields(rest[0] if rest else None) is not None
    docs: set[ast.AST] = set()
    bound: set[str] = set()
    for cls in classes:
        if cls.name in models:
            docs |= _check_class(cls, models[cls.name], spec, aliases, bool(packed), bound)
        else:
            docs.add(cls.body[0])

    # module-level names: each bound once, and no method's argument or local is one
    imported = {a.asname or a.name.split(".")[0] for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom)) for a in s.names}
    defined = [s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))]
    defined += [t.id for s in tree.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)]
    assert len(set(defined)) == len(defined) and not imported & set(defined), (sorted(imported), defined)
    for method in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        local = {a.arg for a in ast.walk(method.args) if isinstance(a, ast.arg)}
        local |= {n.id for n in ast.walk(method) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        assert not local & (imported | set(defined)), (method.name, sorted(local & (imported | set(defined))))

    # names: the spec's own and the fixed ones
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    own = {c.name for c in classes} | {"range", "enumerate", "_"}
    for body in _bodies(spec):
        nodes = walk_nodes(body.nodes)
        own |= {n.name for n in nodes if n.name} | set(body.args) | set(body.values)
        own |= {name for loop in walk_loops(body.nodes) for name in (loop.var, loop.collect) if name}
        own |= {name.split(".")[0] for m in body.modules.values() for name in declared_classes(m)}
        own |= {name for m in body.modules.values() for name in _module_loop_names([m.args, m.kwargs])}
        own |= {n.target.split(".")[0] for n in nodes if n.op == "call_function" and n.target}
        types = [n.type for n in nodes if n.type] + [a.type for a in body.args.values()]
        own |= {word for t in types for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", t)}
    own |= bound  # forward's locals for containers and subscripted callees
    for name, function in spec.functions.items():  # the module-level defs: their names, arguments and values
        own |= {name, *function.args, *function.values}
    fields = {f.target.id for f in ast.walk(tree) if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)}
    segments = {part for body in _bodies(spec) for table in (body.modules, body.parameters, body.buffers)
                for path in table for part in path.split(".")}  # fmt: skip
    assert fields <= segments, fields - segments  # the class bodies declare attributes the spec declares
    own |= fields
    own |= set(aliases) | ({"_unpack", "_PACKED", "base64", "zlib", "sys", "bytearray"} if packed else set())
    if packed:  # the helper's own parameters and locals
        own |= {n.id for n in ast.walk(tail[0]) if isinstance(n, ast.Name)}
    assert names <= NAMES | own, names - NAMES - own

    # string literals: each is one of the spec's strings, unchanged
    spec_strings = _strings(data) | {"inf", "-inf", "nan"}
    helper = set(ast.walk(tail[0])) if packed else set()
    docs = {getattr(d, "value", None) for d in docs}
    for constant in (n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)):
        if constant in docs or constant in helper:
            continue  # the docstrings, the template's own text ("big", the docstring)
        assert constant.value in spec_strings, constant.value


def _module_loop_names(value: Any) -> set[str]:
    """The names the ``for`` items over module declarations inside a declaration value bind
    (the generated comprehension's targets)."""
    if isinstance(value, list):
        return {name for item in value for name in _module_loop_names(item)}
    if not isinstance(value, dict):
        return set()
    own = set(loop_names(value)) if is_module_loop(value) else set()
    return own | {name for item in value.values() for name in _module_loop_names(item)}


def _check_class(
    cls: ast.ClassDef, body: fxgen.Spec, spec: fxgen.Spec, aliases: dict[str, str], packed: bool, bound: set[str]
) -> set[ast.AST]:
    """One model class: its docstring, buffer annotations, ``__init__`` and ``forward``; returns
    its docstring node (if any). ``bound`` collects forward's locals."""
    statements = list(cls.body)
    doc_node = statements[0] if statements and isinstance(statements[0], (ast.Expr, ast.Assign)) else None
    if body.doc:
        assert doc_node is not None
        if isinstance(doc_node, ast.Expr):
            assert isinstance(doc_node.value, ast.Constant)
            assert inspect.cleandoc(doc_node.value.value) == body.doc
        else:
            assert ast.unparse(doc_node.targets[0]) == "__doc__"
            assert isinstance(doc_node.value, ast.Constant) and doc_node.value.value == body.doc
        statements = statements[1:]
    else:
        doc_node = None
    fields = [s for s in statements if isinstance(s, ast.AnnAssign)]
    assert all(s.value is None and ast.unparse(s.annotation) == "torch.Tensor" for s in fields)
    assert {ast.unparse(s.target) for s in fields} <= set(body.buffers)
    statements = statements[len(fields) :]
    if isinstance(statements[0], ast.If):  # for type checkers: lists whose items forward reaches into
        checked_only = _type_checking_fields(statements.pop(0))
        assert checked_only and all(ast.unparse(f.annotation) == "typing.Any" for f in checked_only)
    assert [type(s) for s in statements] == [ast.FunctionDef] * (2 + len(body.variants))
    init, *variants, forward = statements
    for method, (name, values) in zip(variants, body.variants.items(), strict=True):
        _check_variant(method, name, values, body)
    assert isinstance(init, ast.FunctionDef) and isinstance(forward, ast.FunctionDef)
    assert (init.name, forward.name) == ("__init__", "forward")
    assert not init.decorator_list and not forward.decorator_list
    assert [a.arg for a in init.args.args] == ["self", *body.args]
    placeholders = [n.name for n in walk_nodes(body.nodes) if n.op == "placeholder"]
    assert [a.arg for a in forward.args.args] == ["self", *placeholders]
    messages = _input_checks(forward, body if body.name == spec.name else None)

    # __init__: super().__init__(), the named values (``hidden = <expression>``, in the order
    # written), then assignments to self... and registration calls
    assert ast.unparse(init.body[0]) == "super().__init__()"
    values = init.body[1 : 1 + len(body.values)]
    assert [ast.unparse(s.targets[0]) for s in values if isinstance(s, ast.Assign)] == list(body.values)
    for stmt in values:
        assert isinstance(stmt, ast.Assign)
        _check_expression(stmt.value, {*body.args, *body.values}, spec.functions)
    for stmt in init.body[1 + len(body.values) :]:
        conditional = isinstance(stmt, ast.If)  # a module declared on a condition: `if <expression>:` around it
        if conditional:
            assert not stmt.orelse and stmt.body, ast.unparse(stmt)
            _check_expression(stmt.test, {*body.args, *body.values}, spec.functions)
        for inner in stmt.body if conditional else [stmt]:
            if isinstance(inner, ast.Assign):
                assert len(inner.targets) == 1 and _on_self(inner.targets[0]), ast.unparse(inner)
                if isinstance(inner.value, ast.Name):  # an argument or value forward reads: self.n = n
                    assert ast.unparse(inner.targets[0]) == f"self.{inner.value.id}" and inner.value.id in {*body.args, *body.values}
            else:
                assert isinstance(inner, ast.Expr) and isinstance(inner.value, ast.Call), ast.unparse(inner)
    if needs_resolution(body.nodes):
        _check_constructs(forward, body, aliases, bound)
        return {doc_node} if doc_node is not None else set()

    # forward: one statement per non-placeholder node, the last a return, besides the statements
    # binding a container or a subscripted callee to a local (``blocks_0 = self.blocks[0]``)
    node_names = {n.name for n in body.nodes}
    locals_, statements = {"self"}, []
    for stmt in forward.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id not in (*node_names, "_") and _on_self(_uncast(stmt.value), locals_):
            locals_.add(target.id)
        else:
            statements.append(stmt)
    bound |= locals_
    computed = [n for n in body.nodes if n.op != "placeholder"]
    assert len(statements) == len(computed)
    used = {ref for n in body.nodes for value in (n.args, n.kwargs) for _, ref in iter_refs(value)}
    for stmt, node in zip(statements, computed, strict=True):
        if node.op == "output":
            assert isinstance(stmt, ast.Return)
        elif node.name in used:
            assert isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == [node.name]
        elif node.op == "call_function" and node.target == "operator.setitem" and isinstance(stmt, ast.Assign):
            assert len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript)  # x[key] = value
        else:  # a result nothing reads: a bare call, or an operator's value thrown away
            assert isinstance(stmt, ast.Expr) or [ast.unparse(t) for t in stmt.targets] == ["_"]

    # calls: only what declarations and nodes require
    allowed = set(INIT_CALLS | VALUE_CALLS | EXPRESSION_CALLS | {"getattr", "range"} | ({"_unpack"} if packed else set()))
    allowed |= set(spec.functions)
    allowed |= {c for c in spec.classes} | {n for n in _container_names(cls, spec)}
    for module in body.modules.values():
        for name in declared_classes(module):
            allowed |= _qualified_forms(name, aliases)
    node_calls = 0
    for node in body.nodes:
        if node.op == "call_function":
            allowed |= _qualified_forms(node.target or "", aliases)
            node_calls += 1
        elif node.op in ("call_method", "call_module"):
            node_calls += 1
    methods = {n.target for n in body.nodes if n.op == "call_method"}
    for call in (n for n in ast.walk(init) if isinstance(n, ast.Call)):
        callee = ast.unparse(call.func)
        registers = isinstance(call.func, ast.Attribute) and call.func.attr in (
            "register_buffer", "register_parameter", "add_module", "get_parameter", "get_buffer") and _on_self(call.func.value)
        assert callee in allowed or registers, callee
    forward_calls = 0
    for call in (n for n in ast.walk(forward) if isinstance(n, ast.Call)):
        callee = ast.unparse(call.func)
        if callee in VALUE_CALLS or callee == "typing.cast":
            continue
        if callee == "getattr" and _on_self(call, locals_):
            continue  # getattr(self, "0"): a module path, not a call a node makes
        forward_calls += 1
        is_method = isinstance(call.func, ast.Attribute) and call.func.attr in methods
        assert callee in allowed or _on_self(_uncast(call.func), locals_) or is_method, callee
    assert forward_calls <= node_calls
    return ({doc_node} if doc_node is not None else set()) | messages


def _input_checks(forward: ast.FunctionDef, top: fxgen.Spec | None) -> set[ast.AST]:
    """The checks of ``inputs:`` and ``checks:`` that begin the top class's forward, taken off
    its body: one per rule of ``fxgen.spec.checks`` and per condition, each exactly
    ``if <sizes, numbers, operators, the expression functions>: raise ValueError(f"...")``
    whose f-string shows sizes only. Returns their message parts (text made of spec strings)."""
    expected = 0
    if top is not None and top.checks is not None:
        expected = len(list(shape_checks([(n, i.shape) for n, i in top.inputs.items()]))) + len(top.checks)
        expected += sum(size_limit(parse(text)) is not None for text in top.checks)  # a size limit's own if
    inputs = set(top.inputs) if top is not None else set()
    taken: set[ast.AST] = set()
    for _ in range(expected):
        stmt = forward.body.pop(0)
        assert isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1, ast.unparse(stmt)
        raised = stmt.body[0]
        assert isinstance(raised, ast.Raise) and raised.cause is None and isinstance(raised.exc, ast.Call)
        assert ast.unparse(raised.exc.func) == "ValueError" and not raised.exc.keywords
        (message,) = raised.exc.args
        assert isinstance(message, ast.JoinedStr)
        for part in message.values:
            if isinstance(part, ast.FormattedValue):
                assert part.conversion == -1 and part.format_spec is None
                _check_size(part.value, inputs)
            else:
                assert isinstance(part, ast.Constant) and isinstance(part.value, str)
                taken.add(ast.Expr(value=part))
        for node in ast.walk(stmt.test):
            assert isinstance(node, EXPRESSION_NODES), ast.dump(node)
            if isinstance(node, ast.Call) and ast.unparse(node.func) not in EXPRESSION_CALLS:
                _check_size(node, inputs)
            elif isinstance(node, ast.Constant):
                assert type(node.value) in (int, float, bool), node.value
            elif isinstance(node, ast.Name):
                assert node.id in inputs | {"math", *EXPRESSION_CALLS}, node.id
    return taken


def _check_size(call: ast.expr, inputs: set[str]) -> None:
    """``x.size(2)`` or ``x.dim()`` of an input ``x``."""
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute), ast.unparse(call)
    assert isinstance(call.func.value, ast.Name) and call.func.value.id in inputs, ast.unparse(call)
    if call.func.attr == "size":
        assert len(call.args) == 1 and isinstance(call.args[0], ast.Constant) and type(call.args[0].value) is int
    else:
        assert call.func.attr == "dim" and not call.args, ast.unparse(call)


def _check_variant(method: ast.stmt, name: str, values: dict[str, Any], body: fxgen.Spec) -> None:
    """A variant's classmethod: ``@classmethod def NAME(cls) -> "Class": return cls(arg=LITERAL, ...)``."""
    assert isinstance(method, ast.FunctionDef) and method.name == name
    assert [ast.unparse(d) for d in method.decorator_list] == ["classmethod"]
    assert [a.arg for a in method.args.args] == ["cls"] and not method.args.kwonlyargs and not method.args.vararg
    assert isinstance(method.returns, ast.Constant) and method.returns.value == body.name
    (statement,) = method.body
    assert isinstance(statement, ast.Return) and isinstance(statement.value, ast.Call)
    call = statement.value
    assert ast.unparse(call.func) == "cls" and not call.args
    assert [k.arg for k in call.keywords] == list(values) and set(values) <= set(body.args)
    for keyword_ in call.keywords:
        ast.literal_eval(keyword_.value)  # a literal, nothing else


def _check_constructs(forward: ast.FunctionDef, body: fxgen.Spec, aliases: dict[str, str], bound: set[str]) -> None:
    """A forward with conditionals and loops: only assignments, calls, returns, ``if`` on an
    expression of ``self.ARG``/``self.training``/loop indices, ``for`` over ``range``,
    ``enumerate`` or a ``self`` path; calls only of what the nodes call, ``X.append`` for a
    collected list, a loop's item; locals only the spec's names and those the loops bind."""
    loops = walk_loops(body.nodes)
    indices = {loop.var for loop in loops}
    collects = {loop.collect for loop in loops if loop.collect}
    nodes = walk_nodes(body.nodes)
    allowed = {"range", "enumerate", *(f"{c}.append" for c in collects)}
    for node in nodes:
        if node.op == "call_function":
            allowed |= _qualified_forms(node.target or "", aliases)
    methods = {n.target for n in nodes if n.op == "call_method"}
    optional = {str(n.name) for n in nodes if n.op == "placeholder" and n.default is None}
    for stmt in ast.walk(forward):
        if not isinstance(stmt, ast.stmt) or stmt is forward:
            continue
        assert isinstance(stmt, (ast.Assign, ast.Expr, ast.Return, ast.If, ast.For, ast.Pass)), ast.unparse(stmt)
        if isinstance(stmt, ast.If):
            _check_expression(_unpresence(_unself(stmt.test), optional), {*body.args, *body.values, *indices, "training"})
        elif isinstance(stmt, ast.For):
            names = [stmt.target] if isinstance(stmt.target, ast.Name) else getattr(stmt.target, "elts", [])
            assert all(isinstance(n, ast.Name) for n in names), ast.unparse(stmt.target)
            bound |= {n.id for n in names if isinstance(n, ast.Name)} - indices
            callee = ast.unparse(stmt.iter.func) if isinstance(stmt.iter, ast.Call) else None
            assert callee in ("range", "enumerate") or _on_self(stmt.iter), ast.unparse(stmt.iter)
    for call in (n for n in ast.walk(forward) if isinstance(n, ast.Call)):
        callee = ast.unparse(call.func)
        if callee in VALUE_CALLS or callee in EXPRESSION_CALLS or callee == "getattr":
            continue
        is_method = isinstance(call.func, ast.Attribute) and call.func.attr in methods
        local = isinstance(call.func, ast.Name) and call.func.id in bound  # a loop's item: `m(prev)`
        assert callee in allowed or _on_self(_uncast(call.func), {"self"} | bound) or is_method or local, callee


def _unpresence(expr: ast.expr, optional: set[str]) -> ast.expr:
    """``mask is None`` -> ``True``, for an input ``mask`` whose default is None: the one form in
    which a condition reads an input (whether the call gave it)."""

    class Strip(ast.NodeTransformer):
        def visit_Compare(self, node: ast.Compare) -> ast.AST:
            if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
                assert isinstance(node.left, ast.Name) and node.left.id in optional, ast.unparse(node)
                (right,) = node.comparators
                assert isinstance(right, ast.Constant) and right.value is None, ast.unparse(node)
                return ast.Constant(value=True)
            return self.generic_visit(node)

    return Strip().visit(copy.deepcopy(expr))  # type: ignore[no-any-return]


def _unself(expr: ast.expr) -> ast.expr:
    """``self.n > 0`` -> ``n > 0``: forward reads the class's arguments as attributes."""

    class Strip(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return ast.Name(id=node.attr, ctx=ast.Load())
            return self.generic_visit(node)

    return Strip().visit(copy.deepcopy(expr))  # type: ignore[no-any-return]


def _check_expression(expr: ast.expr, names: set[str], functions: Iterable[str] = ()) -> None:
    """A value's expression: names of the class's arguments and values, numbers and booleans,
    operators, and calls of the allowed functions and the spec's ``functions`` only."""
    calls = EXPRESSION_CALLS | set(functions)
    for node in ast.walk(expr):
        assert isinstance(node, EXPRESSION_NODES), ast.dump(node)
        if isinstance(node, ast.Constant):
            assert type(node.value) in (int, float, bool), node.value
        elif isinstance(node, ast.Call):
            assert ast.unparse(node.func) in calls and not node.keywords, ast.unparse(node)
        elif isinstance(node, ast.Attribute):
            assert ast.unparse(node) in ("math.ceil", "math.floor", "math.sqrt"), ast.unparse(node)
        elif isinstance(node, ast.Name):
            assert node.id in names | {"math"} | calls, node.id


def _check_function(function: ast.FunctionDef, spec: fxgen.Spec) -> None:
    """A spec's named function: ``def NAME(ARG: TYPE [= NUMBER], ...) -> TYPE:``, one assignment
    per named value, one return; expressions of its own arguments and values only."""
    declared = spec.functions[function.name]
    assert not function.decorator_list and not function.args.vararg and not function.args.kwarg
    assert not function.args.kwonlyargs and not function.args.posonlyargs
    assert [a.arg for a in function.args.args] == list(declared.args)
    assert [ast.unparse(a.annotation) if a.annotation else None for a in function.args.args] == \
           [a.type for a in declared.args.values()]  # fmt: skip
    assert all(isinstance(d, ast.Constant) and type(d.value) in (int, float, bool) for d in function.args.defaults)
    assert function.returns is not None and ast.unparse(function.returns) == declared.type in ("int", "float", "bool")
    *values, last = function.body
    assert [ast.unparse(s.targets[0]) for s in values if isinstance(s, ast.Assign)] == list(declared.values)
    known = set(declared.args)
    for stmt in values:
        assert isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        _check_expression(stmt.value, known, spec.functions)
        known.add(stmt.targets[0].id)
    assert isinstance(last, ast.Return) and last.value is not None
    _check_expression(last.value, known, spec.functions)


def _type_checking_fields(stmt: ast.stmt | None) -> list[ast.AnnAssign] | None:
    """The annotations of an ``if typing.TYPE_CHECKING:`` block (None if it is anything else)."""
    if stmt is None:
        return []
    if not (isinstance(stmt, ast.If) and ast.unparse(stmt.test) == "typing.TYPE_CHECKING" and not stmt.orelse):
        return None
    fields = [f for f in stmt.body if isinstance(f, ast.AnnAssign) and f.value is None and isinstance(f.target, ast.Name)]
    return fields if len(fields) == len(stmt.body) else None


def _container_names(cls: ast.ClassDef, spec: fxgen.Spec) -> set[str]:
    """The typed container classes ``cls``'s ``__init__`` may create (``_Name()``)."""
    return {n.func.id for n in ast.walk(cls) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id.startswith("_") and not n.args and not n.keywords}  # fmt: skip


def _uncast(expr: ast.expr) -> ast.expr:
    """``typing.cast(T, x)`` -> ``x``, inside an attribute path too (how forward types a list item)."""
    if isinstance(expr, ast.Call) and ast.unparse(expr.func) == "typing.cast" and len(expr.args) == 2:
        return _uncast(expr.args[1])
    if isinstance(expr, ast.Attribute):
        return ast.Attribute(value=_uncast(expr.value), attr=expr.attr)
    if isinstance(expr, ast.Subscript):
        return ast.Subscript(value=_uncast(expr.value), slice=expr.slice)
    if isinstance(expr, ast.Call) and ast.unparse(expr.func) == "getattr" and len(expr.args) == 2:
        return ast.Call(func=expr.func, args=[_uncast(expr.args[0]), expr.args[1]], keywords=[])
    return expr


def _generated_class(source: str, name: str) -> type[torch.nn.Module]:
    namespace: dict[str, Any] = {"__name__": "fxgen_injection_check"}
    exec(compile(source, "<generated>", "exec", dont_inherit=True), namespace)
    cls: type[torch.nn.Module] = namespace[name]
    return cls


def run_case(data: dict[str, Any]) -> fxgen.Spec | None:
    """validate -> generate (+ AST checks) -> load; only FxgenErrors may escape fxgen."""
    try:
        spec = validate_data(data)
    except SpecError:
        return None
    source = fxgen.generate(spec)
    check_source(_canonical(data), spec, source)
    try:
        gm = fxgen.load(spec)
    except FxgenError:
        return spec  # e.g. a constructor that refuses its arguments: reported, not crashed
    cls = _generated_class(source, spec.name)
    assert list(cls().state_dict()) == list(gm.state_dict())
    for variant in spec.variants:  # each classmethod builds what a load of its variant builds
        assert list(getattr(cls, variant)().state_dict()) == list(fxgen.load(spec, variant=variant).state_dict())
    return spec


def _canonical(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its declaration shorthands desugared: a string a call string quotes
    (``'nearest'``) reaches the code as that string, each a part of the call's text. A layer
    table adds only its container's class, the paths of its items and their torch.fx names."""
    layered, _, problems = desugar_layers(data, lambda path: fx_name("call_module", path))
    assert not problems
    tables = [table for body in (data, *data.get("classes", {}).values()) for table in body.get("layers", {}).items()]
    made = {text for c, rows in tables for i in range(len(rows))
            for text in (str(i), f"{c}.{i}", fx_name("call_module", f"{c}.{i}"), "%" + fx_name("call_module", f"{c}.{i}"))}
    assert _strings(layered) - _strings(data) <= _strings([*made, "torch.nn.Sequential", "modules", "module"])
    canonical, _, problems = desugar_declarations(layered)
    assert not problems
    quoted = set(_values(canonical)) - _strings(layered)
    assert all(any(text.removeprefix("%") in raw for raw in _strings(data)) for text in quoted), quoted
    return cast(dict[str, Any], canonical)


def _values(value: Any) -> Iterator[str]:
    """The string values in spec data (not keys, not the types an argument's default implies)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | dict):
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            if key != "type":
                yield from _values(item)


def test_the_base_spec_is_valid() -> None:
    assert run_case(copy.deepcopy(BASE)) is not None


# -- format 2: blocks, arguments, module values and repeats ----------------------------------------
BASE2: dict[str, Any] = {
    "fxgen": 2,
    "name": "Victim",
    "doc": "A victim model of blocks.",
    "args": {"width": {"type": "int", "default": 4}, "label": {"type": "str", "default": "tanh"}},
    "values": {"w": "min(width, 2**6) if label != label else max(width, -1)"},
    "functions": {"grow": {"args": {"v": "int", "k": {"type": "int", "default": 2}}, "values": {"u": "v * k"},
                           "return": "max(u // k, 1)", "type": "int"}},
    "variants": {"small": {"width": 2, "label": "none"}, "wide": {}},
    "classes": {
        "Block": {
            "doc": "A victim block.",
            "args": {"dim": "int", "mode": {"type": "str", "default": "none"}},
            "values": {"wide": "grow(dim) * 2", "out": "int(ceil(wide / 2)) if wide > 0 and not False else dim"},
            "modules": {
                "fc": {"class": "torch.nn.Linear", "args": [{"arg": "dim"}, {"arg": "dim * 2 // 2"}],
                       "init": {"weight": {"normal": {"std": {"arg": "1 / sqrt(dim)"}}}, "bias": "zeros"}},
                "act": {"class": "torch.nn.GELU", "kwargs": {"approximate": {"arg": "mode"}}},
            },
            "parameters": {"gain": {"shape": [{"arg": "out"}], "init": "ones"}},
            "nodes": [
                {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
                {"op": "call_module", "name": "h", "target": "fc", "args": ["%x"]},
                {"op": "call_module", "name": "a", "target": "act", "args": ["%h"]},
                {"op": "get_attr", "name": "g", "target": "gain"},
                {"op": "call_function", "name": "y", "target": "operator.mul", "args": ["%a", "%g"]},
                {"op": "output", "args": ["%y"], "type": "torch.Tensor"},
            ],
        },
    },
    "modules": {
        "body": {"class": "torch.nn.Sequential", "args": [
            {"repeat": {"arg": "width // 2"}, "module": {"class": "Block", "args": [{"arg": "w"}]}},
            {"module": {"class": "torch.nn.Identity"}},
        ]},
        "head": {"class": "Block", "args": [{"arg": "width"}], "kwargs": {"mode": {"arg": "label"}}},
    },
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "call_module", "name": "b", "target": "body", "args": ["%x"]},
        {"op": "call_module", "name": "h", "target": "head", "args": ["%b"]},
        {"op": "output", "args": ["%h"], "type": "torch.Tensor"},
    ],
}  # fmt: skip


def _rename_block(d: dict[str, Any], s: str) -> None:
    d["classes"] = _rename_key(d["classes"], "Block", s)
    d["modules"]["body"]["args"][0]["module"]["class"] = s
    d["modules"]["head"]["class"] = s


def _rename_top_arg(d: dict[str, Any], s: str) -> None:
    d["args"] = _rename_key(d["args"], "width", s)
    d["modules"]["head"]["args"] = [{"arg": s}]


def _rename_block_arg(d: dict[str, Any], s: str) -> None:
    block = d["classes"]["Block"]
    block["args"] = _rename_key(block["args"], "dim", s)
    block["modules"]["fc"]["args"][0] = {"arg": s}


def _rename_value(d: dict[str, Any], s: str) -> None:
    block = d["classes"]["Block"]
    block["values"] = _rename_key(block["values"], "wide", s)
    block["values"]["out"] = f"int(ceil({s} / 2))"


def _rename_top_value(d: dict[str, Any], s: str) -> None:
    d["values"] = _rename_key(d["values"], "w", s)
    d["modules"]["body"]["args"][0]["module"]["args"] = [{"arg": s}]


def _rename_function(d: dict[str, Any], s: str) -> None:
    d["functions"] = _rename_key(d["functions"], "grow", s)
    d["classes"]["Block"]["values"]["wide"] = f"{s}(dim) * 2"


def _rename_function_arg(d: dict[str, Any], s: str) -> None:
    grow = d["functions"]["grow"]
    grow["args"] = _rename_key(grow["args"], "v", s)
    grow["values"]["u"] = f"{s} * k"


def _rename_function_value(d: dict[str, Any], s: str) -> None:
    grow = d["functions"]["grow"]
    grow["values"] = _rename_key(grow["values"], "u", s)
    grow["return"] = f"max({s} // k, 1)"


SLOTS2: dict[str, Callable[[dict[str, Any], str], None]] = {
    "block name": _rename_block,
    "block doc": lambda d, s: d["classes"]["Block"].__setitem__("doc", s),
    "top argument name": _rename_top_arg,
    "block argument name": _rename_block_arg,
    "argument type": lambda d, s: d["classes"]["Block"]["args"].__setitem__("dim", s),
    "argument default": lambda d, s: d["args"]["label"].__setitem__("default", s),
    "expression": lambda d, s: d["classes"]["Block"]["modules"]["fc"]["args"].__setitem__(1, {"arg": s}),
    "repeat count": lambda d, s: d["modules"]["body"]["args"][0].__setitem__("repeat", {"arg": s}),
    "module value class": lambda d, s: d["modules"]["body"]["args"][1]["module"].__setitem__("class", s),
    "module value kwarg key": lambda d, s: d["modules"]["body"]["args"][1]["module"].__setitem__("kwargs", {s: 1}),
    "block module path": lambda d, s: _path("modules", "fc")(d["classes"]["Block"], s),
    "block parameter path": lambda d, s: _path("parameters", "gain")(d["classes"]["Block"], s),
    "value name": _rename_value,
    "value expression": lambda d, s: d["classes"]["Block"]["values"].__setitem__("out", s),
    "top value name": _rename_top_value,
    "top value expression": lambda d, s: d["values"].__setitem__("w", s),
    "variant name": lambda d, s: d.__setitem__("variants", _rename_key(d["variants"], "small", s)),
    "variant argument": lambda d, s: d["variants"].__setitem__("small", _rename_key(d["variants"]["small"], "width", s)),
    "variant value": lambda d, s: d["variants"]["small"].__setitem__("label", s),
    "module init path": lambda d, s: d["classes"]["Block"]["modules"]["fc"].__setitem__(
        "init", _rename_key(d["classes"]["Block"]["modules"]["fc"]["init"], "weight", s)),
    "init expression": lambda d, s: d["classes"]["Block"]["modules"]["fc"]["init"].__setitem__("weight", {"normal": {"std": {"arg": s}}}),
    "declaration condition": lambda d, s: d["classes"]["Block"]["modules"]["act"].__setitem__("if", s),
    "function name": _rename_function,
    "function argument name": _rename_function_arg,
    "function argument type": lambda d, s: d["functions"]["grow"]["args"].__setitem__("v", s),
    "function argument default": lambda d, s: d["functions"]["grow"]["args"]["k"].__setitem__("default", s),
    "function value name": _rename_function_value,
    "function value expression": lambda d, s: d["functions"]["grow"]["values"].__setitem__("u", s),
    "function return": lambda d, s: d["functions"]["grow"].__setitem__("return", s),
    "function type": lambda d, s: d["functions"]["grow"].__setitem__("type", s),
    "function call": lambda d, s: d["classes"]["Block"]["values"].__setitem__("wide", f"grow({s}) * 2"),
}


def test_the_format_2_base_spec_is_valid() -> None:
    spec = run_case(copy.deepcopy(BASE2))
    assert spec is not None and spec.classes


@pytest.mark.parametrize("slot", sorted(SLOTS2))
def test_every_nasty_string_in_every_format_2_slot(slot: str) -> None:
    failures = []
    for text in NASTY_CORE:
        data = copy.deepcopy(BASE2)
        SLOTS2[slot](data, text)
        try:
            spec = run_case(data)
            if spec is not None and slot in ("block doc", "argument default"):
                source = fxgen.generate(spec)
                constants = {n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant)}
                assert text in constants or slot == "block doc" or text.startswith("%"), (slot, text)
        except Exception as exc:  # collect them all: one slot, every string
            failures.append(f"{text!r}: {type(exc).__name__}: {str(exc)[:300]}")
    assert not failures, f"slot {slot!r}:\n" + "\n".join(failures)


# The generated file's own module-level names, read off what fxgen writes (the imports above, the
# helper: the name it defines and the globals it reads, and its table), not off fxgen's list of
# them: a name the helper comes to use is tried here at once.
_HELPER_DEF = cast(ast.FunctionDef, ast.parse(_HELPER).body[0])
_HELPER_LOCALS = {a.arg for a in _HELPER_DEF.args.args} | {
    n.id for n in ast.walk(_HELPER_DEF) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
FILE_NAMES = sorted({s.split()[-1] for s in STD_IMPORTS} | {_HELPER_DEF.name, "_PACKED"} | {
    n.id for n in ast.walk(_HELPER_DEF) if isinstance(n, ast.Name) and n.id not in _HELPER_LOCALS and n.id not in dir(__builtins__)})
NAME_SLOTS = {"class name", "node name", "placeholder name"}
NAME_SLOTS2 = {"block name", "top argument name", "block argument name", "value name", "top value name", "function name",
               "function argument name", "function value name"}  # fmt: skip


@pytest.mark.parametrize("name", FILE_NAMES)
def test_no_spec_name_can_take_a_name_the_generated_file_binds(name: str) -> None:
    """A class, block, function, argument, value or node named as one of the file's imports or
    the packed-tensor helper and table is refused, or generates a file that still works."""
    assert {"zlib", "base64", "sys", "_unpack", "_PACKED", "torch", "nn", "F", "math"} <= set(FILE_NAMES)
    packed = {"packed": {"shape": [2], "dtype": "float16", "persistent": False, "data": PACKED}}
    base2 = copy.deepcopy(BASE2)
    base2["buffers"] = copy.deepcopy(packed)
    base2["classes"]["Block"]["buffers"] = copy.deepcopy(packed)
    failures = []
    for base, slots in ((BASE, {s: SLOTS[s] for s in NAME_SLOTS}), (base2, {s: SLOTS2[s] for s in NAME_SLOTS2})):
        for slot, edit in slots.items():
            data = copy.deepcopy(base)
            edit(data, name)
            try:
                run_case(data)
            except Exception as exc:  # collect them all
                failures.append(f"{slot}: {type(exc).__name__}: {str(exc)[:300]}")
    assert not failures, f"name {name!r}:\n" + "\n".join(failures)


# Expressions that try to leave the grammar: each is refused, or generates only validated names,
# numbers, operators and the allowed functions (``_check_expression``).
EXPRESSIONS = [
    "__import__('os')", "dim.__class__", "dim; import os", "dim\nimport os", "dim # x", "dim if 1 else __import__",
    "(lambda: 1)()", "'a'", "dim[0]", "dim**-dim", "dim ** 64", "min(dim, *dim)", "min(dim, x=1)", "ceil", "math.ceil(dim)",
    "round(dim, -2) + abs(-dim)", "dim if dim < 2 else (dim if not dim else -dim)", "True and dim or False", "1_000",
    "0x10", "1e5", "dim == dim != dim", "dim // 0 if False else dim", "int(1e30) * 0 + dim", "out", "dim if dim else out",
    "grow(dim)", "grow(dim, 3) + grow(dim)", "grow(dim, 1, 2)", "grow", "nope(dim)", "eval(dim)", "getattr(dim, dim)",
    "__builtins__(dim)", "grow(__import__)", "self(dim)", "torch(dim)", "exec(dim)", "grow(grow(grow(dim)))",
]  # fmt: skip


@pytest.mark.parametrize("slot", ["expression", "value expression", "top value expression", "repeat count",
                                  "declaration condition", "function value expression", "function return",
                                  "function call"])
def test_hostile_expressions(slot: str) -> None:
    accepted = 0
    scope = {"expression": "dim", "value expression": "(wide // 2)", "declaration condition": "dim > 0",
             "function value expression": "v", "function return": "(u // k)", "function call": "dim"}.get(slot, "width")
    for text in EXPRESSIONS:
        data = copy.deepcopy(BASE2)
        SLOTS2[slot](data, text.replace("dim", scope))
        accepted += run_case(data) is not None
    assert accepted  # some are valid: the check above looked at generated expressions


@settings(max_examples=property_budget(60), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(sorted(SLOTS2)), hostile), min_size=1, max_size=3))
def test_hostile_text_anywhere_in_format_2(edits: list[tuple[str, str]]) -> None:
    data = copy.deepcopy(BASE2)
    for slot, text in edits:
        with contextlib.suppress(KeyError, StopIteration, TypeError, AttributeError, IndexError):
            SLOTS2[slot](data, text)
    run_case(data)


# -- format 2: conditionals, repeats and aliases of nodes -----------------------------------------
BASE_FLOW: dict[str, Any] = {
    "fxgen": 2,
    "name": "Victim",
    "args": {"n": {"type": "int", "default": 2}, "skip": {"type": "bool", "default": True}},
    "modules": {
        "m": {"class": "torch.nn.ModuleList", "args": [[{"repeat": {"arg": "n"},
                                                         "module": {"class": "torch.nn.Linear", "args": [4, 4]}}]]},
        "act": {"class": "torch.nn.ReLU"},
    },
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "alias", "name": "prev", "args": ["%x"]},
        {"for": "i", "in": "n", "nodes": [
            {"op": "call_module", "name": "h", "target": "m.{i}", "args": ["%prev"]},
            {"op": "call_function", "name": "k", "target": "torch.mul", "args": ["%h", {"arg": "i + 1"}]},
        ], "carry": {"prev": "%k"}, "collect": "hs"},
        {"if": "skip and n > 0",
         "then": [{"op": "call_module", "name": "out", "target": "act", "args": ["%prev"]}],
         "else": [{"op": "alias", "name": "out", "args": ["%x"]}]},
        {"op": "call_function", "name": "cat", "target": "torch.cat", "args": [{"tuple": ["%out", "%hs"]}]},
        {"op": "output", "args": ["%out"]},
    ],
}  # fmt: skip


def _rename_index(d: dict[str, Any], s: str) -> None:
    loop = d["nodes"][2]
    loop["for"] = s
    loop["nodes"][0]["target"] = "m.{" + s + "}"
    loop["nodes"][1]["args"][1] = {"arg": f"{s} + 1"}


def _rename_alias(d: dict[str, Any], s: str) -> None:
    d["nodes"][1]["name"] = s
    d["nodes"][2]["nodes"][0]["args"] = ["%" + s]
    d["nodes"][2]["carry"] = {s: "%k"}
    d["nodes"][3]["then"][0]["args"] = ["%" + s]


def _rename_collect(d: dict[str, Any], s: str) -> None:
    d["nodes"][2]["collect"] = s
    d["nodes"][4]["args"] = [{"tuple": ["%out", "%" + s]}]


SLOTS_FLOW: dict[str, Callable[[dict[str, Any], str], None]] = {
    "loop index": _rename_index,
    "alias and carry name": _rename_alias,
    "collect name": _rename_collect,
    "carry value": lambda d, s: d["nodes"][2].__setitem__("carry", {"prev": s}),
    "condition": lambda d, s: d["nodes"][3].__setitem__("if", s),
    "loop count": lambda d, s: d["nodes"][2].__setitem__("in", s),
    "node expression": lambda d, s: d["nodes"][2]["nodes"][1]["args"].__setitem__(1, {"arg": s}),
    "loop target": lambda d, s: d["nodes"][2]["nodes"][0].__setitem__("target", s),
    "loop target index": lambda d, s: d["nodes"][2]["nodes"][0].__setitem__("target", "m.{" + s + "}"),
    "body node name": lambda d, s: _set_body_name(d, s),
}


def _set_body_name(d: dict[str, Any], s: str) -> None:
    body = d["nodes"][2]["nodes"]
    body[0]["name"] = s
    body[1]["args"][0] = "%" + s


def test_the_constructs_base_spec_is_valid() -> None:
    assert run_case(copy.deepcopy(BASE_FLOW)) is not None


# An `if:` asking whether an optional input was given (`mask is None`).
BASE_PRESENCE: dict[str, Any] = {
    "fxgen": 2,
    "name": "Victim",
    "modules": {"fc": {"class": "torch.nn.Linear", "args": [4, 4]}},
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "placeholder", "name": "mask", "default": None},
        {"op": "call_module", "name": "y", "target": "fc", "args": ["%x"]},
        {"if": "mask is None", "then": [{"op": "alias", "name": "out", "args": ["%y"]}],
         "else": [{"op": "call_function", "name": "out", "target": "operator.mul", "args": ["%y", "%mask"]}]},
        {"op": "output", "args": ["%out"]},
    ],
}  # fmt: skip


def _rename_optional(d: dict[str, Any], s: str) -> None:
    d["nodes"][1]["name"] = s
    d["nodes"][3]["if"] = f"{s} is None"
    d["nodes"][3]["else"][0]["args"][1] = "%" + s


SLOTS_PRESENCE: dict[str, Callable[[dict[str, Any], str], None]] = {
    "presence condition": lambda d, s: d["nodes"][3].__setitem__("if", s),
    "presence test": lambda d, s: d["nodes"][3].__setitem__("if", f"{s} is not None"),
    "optional input name": _rename_optional,
}


def test_the_presence_base_spec_is_valid() -> None:
    assert run_case(copy.deepcopy(BASE_PRESENCE)) is not None


@pytest.mark.parametrize("slot", sorted(SLOTS_PRESENCE))
def test_every_nasty_string_in_every_presence_slot(slot: str) -> None:
    _grid(BASE_PRESENCE, SLOTS_PRESENCE, slot, [*NASTY_CORE, *EXPRESSIONS, "mask is None or x is None",
                                                  "not mask is not None", "mask is None is None"], run_case)


@pytest.mark.parametrize("slot", sorted(SLOTS_FLOW))
def test_every_nasty_string_in_every_construct_slot(slot: str) -> None:
    _grid(BASE_FLOW, SLOTS_FLOW, slot, [*NASTY_CORE, *EXPRESSIONS], run_case)


# -- the compact node form: steps, named steps, list and unpacking forms, nodes without op ------------
BASE_COMPACT: dict[str, Any] = {
    "fxgen": 2,
    "name": "Victim",
    "modules": {"fc": {"class": "torch.nn.Linear", "args": [4, 4]}, "act": {"class": "torch.nn.ReLU"}},
    "parameters": {"gain": {"shape": [4]}},
    "nodes": [
        "fc",
        {"h": "act"},
        {"y": ["torch.mul", "%", 2.0]},
        [{"a, b": [".chunk", "%", 2]}, {"z": "%a"}],
        {"g": "gain"},
        {"name": "s", "target": "torch.sum", "args": [["%z", "%b"]], "kwargs": {"dim": 0}},
        {"target": "torch.add", "args": ["%s", "%g"]},
    ],
}  # fmt: skip


SLOTS_COMPACT: dict[str, Callable[[dict[str, Any], str], None]] = {
    "step target": lambda d, s: d["nodes"].__setitem__(0, s),
    "step name": lambda d, s: d["nodes"].__setitem__(1, {s: "act"}),
    "step value": lambda d, s: d["nodes"].__setitem__(1, {"h": s}),
    "list target": lambda d, s: d["nodes"][2]["y"].__setitem__(0, s),
    "list argument": lambda d, s: d["nodes"][2]["y"].__setitem__(2, s),
    "unpacked names": lambda d, s: d["nodes"][3].__setitem__(0, {s: [".chunk", "%", 2]}),
    "method target": lambda d, s: d["nodes"][3][0]["a, b"].__setitem__(0, "." + s),
    "alias value": lambda d, s: d["nodes"][3].__setitem__(1, {"z": s}),
    "node without op name": lambda d, s: d["nodes"][5].__setitem__("name", s),
    "node without op target": lambda d, s: d["nodes"][6].__setitem__("target", s),
    "node without op kwarg": lambda d, s: d["nodes"][5].__setitem__("kwargs", {s: 0}),
    "input implied as a placeholder": lambda d, s: d.__setitem__("inputs", {s: {"shape": [2, 4]}}),
}


def test_the_compact_base_spec_is_valid() -> None:
    assert run_case(copy.deepcopy(BASE_COMPACT)) is not None


@pytest.mark.parametrize("slot", sorted(SLOTS_COMPACT))
def test_every_nasty_string_in_every_compact_slot(slot: str) -> None:
    _grid(BASE_COMPACT, SLOTS_COMPACT, slot, NASTY_CORE, run_case)


# -- declaration shorthands: modules as call strings, arguments by their defaults ------------------
BASE_SHORTHAND: dict[str, Any] = {
    "fxgen": 2,
    "name": "Victim",
    "args": {"width": 4, "gain": 0.5, "flag": True},
    "modules": {
        "fc": "torch.nn.Linear(width, width * 2 // 2, bias=flag)",
        "up": "torch.nn.Upsample(None, 2, 'nearest')",
        "seq": {"class": "torch.nn.Sequential", "args": [{"repeat": "width // 2", "module": "torch.nn.Dropout(gain)"}]},
        "head": {"call": "torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU())", "init": {"0.bias": "zeros"}},
        "levels": {"class": "torch.nn.ModuleList", "args": [[{"for": "c", "in": ["width", "width * 2"],
                                                              "module": "torch.nn.Linear(c, width)"}]]},
        "stages": {"class": "torch.nn.Sequential", "args": [{"for": ["k", "n"], "in": [[1, 2], ["width // 4", 1]],
                   "module": {"for": "i", "in": "n", "module": "torch.nn.Conv2d(width, width, k + i)"}}]},
        "listed": ["torch.nn.ReLU()", ["torch.nn.Dropout(gain)", {"class": "torch.nn.Identity"}]],
        "chain": "Chain(width)",
        "repeated": {"repeat": "width // 2", "module": "torch.nn.Linear(width, width)"},
        "looped": {"for": "c", "in": ["width", "width * 2"], "module": "torch.nn.Linear(c, width)"},
    },
    "classes": {"Chain": {"args": {"w": "int"}, "modules": {"a": "torch.nn.Linear(w, w)", "b": "torch.nn.ReLU()"}}},
    "nodes": ["fc", "seq", "head", "listed", "chain"],
}  # fmt: skip


def _set_module(name: str, text: str) -> Callable[[dict[str, Any], str], None]:
    return lambda d, s: d["modules"].__setitem__(name, text.replace("SLOT", s))


SLOTS_SHORTHAND: dict[str, Callable[[dict[str, Any], str], None]] = {
    "call string": _set_module("fc", "SLOT"),
    "call class": _set_module("fc", "SLOT(width, width)"),
    "call argument": _set_module("fc", "torch.nn.Linear(width, SLOT)"),
    "call keyword name": _set_module("fc", "torch.nn.Linear(width, width, SLOT=True)"),
    "call keyword value": _set_module("fc", "torch.nn.Linear(width, width, bias=SLOT)"),
    "call quoted string": _set_module("up", "torch.nn.Upsample(None, 2, 'SLOT')"),
    "call double-quoted string": _set_module("up", 'torch.nn.Upsample(None, 2, "SLOT")'),
    "nested call": _set_module("head", "torch.nn.Sequential(SLOT)"),
    "list argument": _set_module("head", "torch.nn.ModuleList([torch.nn.ReLU(), SLOT])"),
    "call beside init": lambda d, s: d["modules"]["head"].__setitem__("call", s),
    "repeat count": lambda d, s: d["modules"]["seq"]["args"][0].__setitem__("repeat", s),
    "repeated call": lambda d, s: d["modules"]["seq"]["args"][0].__setitem__("module", s),
    "argument default": lambda d, s: d["args"].__setitem__("width", s),
    "for name": lambda d, s: d["modules"]["levels"]["args"][0][0].__setitem__("for", s),
    "for names": lambda d, s: d["modules"]["stages"]["args"][0]["for"].__setitem__(0, s),
    "for row value": lambda d, s: d["modules"]["levels"]["args"][0][0]["in"].__setitem__(1, s),
    "for row in a table": lambda d, s: d["modules"]["stages"]["args"][0]["in"][1].__setitem__(0, s),
    "for count": lambda d, s: d["modules"]["stages"]["args"][0]["module"].__setitem__("in", s),
    "for module": lambda d, s: d["modules"]["levels"]["args"][0][0].__setitem__("module", s),
    "list item": lambda d, s: d["modules"]["listed"].__setitem__(0, s),
    "nested list item": lambda d, s: d["modules"]["listed"][1].__setitem__(0, s),
    "chain module name": lambda d, s: d["classes"]["Chain"].__setitem__("modules", {"a": "torch.nn.Linear(w, w)", s: "torch.nn.ReLU()"}),
    "chain module": lambda d, s: d["classes"]["Chain"]["modules"].__setitem__("b", s),
    "module list count": lambda d, s: d["modules"]["repeated"].__setitem__("repeat", s),
    "module list module": lambda d, s: d["modules"]["repeated"].__setitem__("module", s),
    "module list for name": lambda d, s: d["modules"]["looped"].__setitem__("for", s),
    "module list for row": lambda d, s: d["modules"]["looped"]["in"].__setitem__(1, s),
}


def test_the_shorthand_base_spec_is_valid() -> None:
    assert run_case(copy.deepcopy(BASE_SHORTHAND)) is not None


@pytest.mark.parametrize("slot", sorted(SLOTS_SHORTHAND))
def test_every_nasty_string_in_every_shorthand_slot(slot: str) -> None:
    _grid(BASE_SHORTHAND, SLOTS_SHORTHAND, slot, [*NASTY_CORE, *EXPRESSIONS], run_case)


# -- the layer table: a container's rows, [FROM, MODULE] ----------------------------------------------
BASE_LAYERS: dict[str, Any] = {
    "fxgen": 2,
    "name": "Victim",
    "args": {"width": 4},
    "classes": {"Cat": {"nodes": [{"op": "placeholder", "name": "x", "type": "list[torch.Tensor]"},
                                  {"out": ["torch.cat", "%", -1]}]},
                "Pair": {"args": {"c": "int"}, "layers": {"body": [[-1, "torch.nn.Linear(c, c)"], [[0, -1], "Cat()"]]}}},
    "layers": {"model": [[-1, "torch.nn.Linear(width, width)"], [-1, {"class": "torch.nn.ReLU"}], [[-2, 1], "Cat()"],
                         [-1, "Pair(width * 2)"]]},
    "nodes": [{"op": "output", "args": [["%model_3", "%model_1"]], "type": "list[torch.Tensor]"}],
}  # fmt: skip


def _set_row(row: int, index: int, text: str = "SLOT") -> Callable[[dict[str, Any], str], None]:
    return lambda d, s: d["layers"]["model"][row].__setitem__(index, text.replace("SLOT", s))


SLOTS_LAYERS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "container name": lambda d, s: d.__setitem__("layers", {s: d["layers"]["model"]}),
    "class container name": lambda d, s: d["classes"]["Pair"].__setitem__("layers", {s: [[-1, "torch.nn.ReLU()"]]}),
    "row module": _set_row(0, 1),
    "row class": _set_row(0, 1, "SLOT(width, width)"),
    "row argument": _set_row(0, 1, "torch.nn.Linear(width, SLOT)"),
    "row mapping class": lambda d, s: d["layers"]["model"][1].__setitem__(1, {"class": s}),
    "row from": _set_row(1, 0),
    "row from in a list": lambda d, s: d["layers"]["model"][2][0].__setitem__(0, s),
    "reference to a row": lambda d, s: d["nodes"][0]["args"][0].__setitem__(0, "%" + s),
}


def test_the_layers_base_spec_is_valid() -> None:
    assert run_case(copy.deepcopy(BASE_LAYERS)) is not None


@pytest.mark.parametrize("slot", sorted(SLOTS_LAYERS))
def test_every_nasty_string_in_every_layers_slot(slot: str) -> None:
    _grid(BASE_LAYERS, SLOTS_LAYERS, slot, [*NASTY_CORE, *EXPRESSIONS], run_case)


def _grid(base: dict[str, Any], slots: dict[str, Any], slot: str, texts: list[str], run: Callable[..., Any]) -> None:
    """Every text in one slot of ``base``: ``run`` refuses it or generates safely, never crashes."""
    failures = []
    for text in texts:
        data = copy.deepcopy(base)
        slots[slot](data, text)
        try:
            run(data)
        except Exception as exc:  # collect them all: one slot, every string
            failures.append(f"{text!r}: {type(exc).__name__}: {str(exc)[:300]}")
    assert not failures, f"slot {slot!r}:\n" + "\n".join(failures)


# The grid runs every slot against these; the property test below draws from all of NASTY.
NASTY_CORE = [
    '"', "'", '"""', "\\", "\n", "\r", "\u2028", "\x00", "\x85", "#", "x\n", "x\nimport os", "x)\nimport os\n(",
    "__import__('os').system('touch /tmp/fxgen-pwned')", '"); import os; ("', "__class__", "self", "None", "class",
    "match", "_", "%", "%%", "%x", "%%x", "{{x}}", "{0.__class__}", "", "0", "01", "é", "\uff58", "\ud800", "a.b",
    "torch.load", "F", "x" * 120,
]  # fmt: skip


@pytest.mark.parametrize("slot", sorted(SLOTS))
def test_every_nasty_string_in_every_slot(slot: str) -> None:
    failures = []
    for text in NASTY_CORE:
        data = copy.deepcopy(BASE)
        SLOTS[slot](data, text)
        try:
            spec = run_case(data)
            if spec is not None and slot in LITERAL_SLOTS:
                _assert_literal_survives(data, spec, slot, text)
        except Exception as exc:  # collect them all: one slot, every string
            failures.append(f"{text!r}: {type(exc).__name__}: {str(exc)[:300]}")
    assert not failures, f"slot {slot!r}:\n" + "\n".join(failures)


def _assert_literal_survives(data: dict[str, Any], spec: fxgen.Spec, slot: str, text: str) -> None:
    source = fxgen.generate(spec)
    tree = ast.parse(source)
    wanted = text
    if slot in VALUE_SLOTS and text.startswith("%"):
        if not text.startswith("%%"):
            return  # a node reference
        wanted = text[1:]
    constants = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    if slot == "doc":
        if not text:
            return
        cls = _generated_class(source, spec.name)
        assert cls.__doc__ == text or inspect.cleandoc(cls.__doc__ or "") == text
    else:
        assert wanted in constants, (slot, text)


@settings(max_examples=property_budget(80), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(sorted(SLOTS)), hostile), min_size=1, max_size=4))
def test_hostile_text_anywhere(edits: list[tuple[str, str]]) -> None:
    data = copy.deepcopy(BASE)
    for slot, text in edits:
        with contextlib.suppress(KeyError, StopIteration, TypeError, AttributeError):
            SLOTS[slot](data, text)  # (fails when an earlier edit removed what this one edits)
    spec = run_case(data)
    if spec is not None and len(edits) == 1 and edits[0][0] in LITERAL_SLOTS:
        _assert_literal_survives(data, spec, *edits[0])


# -- the spec's path in the header comment ---------------------------------------------------------
LABELS = ["a\nimport os", "a\rimport os", "a\r\nimport os", "a\u2028import os", "a\x85b", "a\x0cb", "a\x0bb",
          "a\x00b", "\x1b[31mred", "a\udcffb", "a\\\nb", "x" * 500, "", "#", "a.yaml\n# fxgen-body-sha256: 0"]


@pytest.mark.parametrize("label", LABELS, ids=[repr(x)[:16] for x in LABELS])
def test_header_label_cannot_leave_the_comment(label: str) -> None:
    spec = validate_data(copy.deepcopy(BASE))
    source = fxgen.generate(spec, label=label)
    check_source(BASE, spec, source)


def test_spec_file_named_with_a_newline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "evil\nimport os\n#\u2028.json"
    path.write_text(json.dumps(BASE))
    source = fxgen.generate(path)
    check_source(BASE, fxgen.load_spec(path), source)
    assert "import os" not in source.split("\n", 3)[3]


# -- inputs, shapes and passes: text that reaches comments and the transformed code ----------------
BASE3: dict[str, Any] = {
    **copy.deepcopy(BASE),
    # `v` keeps the batch dimension: [batch, 4] * [4] once einsum is decomposed into a product
    "nodes": [{**n, "args": ["%c", -1, 4]} if n.get("name") == "v" else n for n in copy.deepcopy(BASE["nodes"])],
    "inputs": {"x": {"shape": ["batch", 4], "dtype": "float32"}},
    "checks": ["batch <= 64", "batch % 2 == 0 or batch < 8"],
    "shapes": True,
    "passes": [
        "eliminate_dead_code",
        {"replace": {"target": "torch.clamp", "by": "torch.clamp"}},
        {"decompose": {"rules": ["relu", {"targets": ["torch.einsum"], "nodes": [
            {"op": "placeholder", "name": "eq"}, {"op": "placeholder", "name": "a"},
            {"op": "placeholder", "name": "b"},
            {"op": "call_function", "name": "prod", "target": "operator.mul", "args": ["%a", "%b"]},
            {"op": "output", "args": ["%prod"]}]}]}},
        {"rewrite": {"pattern": {"nodes": [
            {"op": "placeholder", "name": "p"},
            {"op": "call_method", "name": "flat", "target": "view", "args": ["%p", -1, 4]},
            {"op": "output", "args": ["%flat"]}]},
            "replacement": {"nodes": [
            {"op": "placeholder", "name": "p"},
            {"op": "call_method", "name": "flat", "target": "reshape", "args": ["%p", -1, 4]},
            {"op": "output", "args": ["%flat"]}]}}},
    ],
}  # fmt: skip

SLOTS3: dict[str, Callable[[dict[str, Any], str], None]] = {
    "input name": lambda d, s: d.__setitem__("inputs", _rename_key(d["inputs"], "x", s)),
    "symbolic dimension": lambda d, s: d["inputs"]["x"].__setitem__("shape", [s, 4]),
    "input dtype": lambda d, s: d["inputs"]["x"].__setitem__("dtype", s),
    "check": lambda d, s: d["checks"].__setitem__(0, s),
    "check dimension": lambda d, s: (d["inputs"]["x"].__setitem__("shape", [s, 4]),
                                     d["checks"].__setitem__(0, f"{s} <= 64")),
    "pass name": lambda d, s: d["passes"].__setitem__(0, s),
    "pass argument key": lambda d, s: d["passes"][1]["replace"].__setitem__(s, "torch.clamp"),
    "replace target": lambda d, s: d["passes"][1]["replace"].__setitem__("by", s),
    "library rule": lambda d, s: d["passes"][2]["decompose"]["rules"].__setitem__(0, s),
    "rule node name": lambda d, s: _rename_node(d["passes"][2]["decompose"]["rules"][1], "prod", s),
    "rule placeholder name": lambda d, s: _rename_node(d["passes"][2]["decompose"]["rules"][1], "eq", s),
    "rule target": lambda d, s: d["passes"][2]["decompose"]["rules"][1]["targets"].__setitem__(0, s),
    "pattern method": lambda d, s: d["passes"][3]["rewrite"]["replacement"]["nodes"][1].__setitem__("target", s),
}
_SHAPE_COMMENT = re.compile(r"# [A-Za-z0-9_\[\], ().*+\-/{}':]*")


def _check_comments(source: str) -> None:
    """Comments are the header's, the passes line and shape comments made of shape text only."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and token.start[0] > 4:
            assert _SHAPE_COMMENT.fullmatch(token.string), token.string


def run_case3(data: dict[str, Any]) -> fxgen.Spec | None:
    """``run_case`` for a spec with passes: the generated file is the transformed spec's, so its
    shape is checked against that spec (validated again by the transform), and the shape comments
    and the passes line are checked too."""
    try:
        spec = validate_data(data, passes=pass_arguments)  # the built-in passes, as fxgen's API hands them
    except SpecError:
        return None
    after = fxgen.transform(spec, [])
    assert isinstance(after, fxgen.Spec) and not after.passes
    source = fxgen.generate(spec)
    check_source({**after.to_dict(), "passes": data["passes"]}, after, source)
    _check_comments(source)
    gm = fxgen.load(spec)
    generated = _generated_class(source, spec.name)()
    assert list(generated.state_dict()) == list(gm.state_dict())
    return spec


@pytest.mark.parametrize("slot", sorted(SLOTS3))
def test_every_nasty_string_in_inputs_shapes_and_passes(slot: str) -> None:
    _grid(BASE3, SLOTS3, slot, NASTY_CORE, run_case3)


def test_the_inputs_and_passes_base_spec_is_valid_and_transformed() -> None:
    spec = run_case3(copy.deepcopy(BASE3))
    assert spec is not None
    source = fxgen.generate(spec)
    assert "# Transformed by the spec's passes: eliminate_dead_code, replace, decompose, rewrite." in source
    assert ".reshape(" in source and "torch.einsum" not in source and "  # float32[batch, 4]" in source
    assert "if x.size(0) > 64:" in source and "raise ValueError(" in source  # the checks, first
    with pytest.raises(ValueError, match=r"input 'x' dimension 0 \(batch\) is 65: the model was exported for batch <= 64"):
        fxgen.load(spec)(torch.randn(65, 4))
    _check_comments(source)
