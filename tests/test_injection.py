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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fxgen
from fxgen._errors import FxgenError, SpecError
from fxgen.check.validate import validate_data
from fxgen.policy.tables import SAFE_BUILTINS
from fxgen.spec.init import INIT_SCHEMES

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
}
# Slots whose text must come out as a string literal, unchanged: values (after %% unescaping; a
# "%name" value is a reference, not a literal) and plain strings (as they are).
VALUE_SLOTS = {"module kwarg value", "placeholder default", "string argument", "literal string"}
LITERAL_SLOTS = VALUE_SLOTS | {"doc", "dict key", "device"}


# -- what the generated source may contain --------------------------------------------------------
STD_IMPORTS = {"import torch", "import torch.nn.functional as F", "from torch import nn", "import operator",
               "import math", "import typing", "import base64", "import sys", "import zlib"}
# What a file with packed tensors defines after its class: the template's helper, and the data.
_HELPER = ast.unparse(ast.parse((Path(fxgen.__file__).parent / "codegen" / "templates" / "module.py.jinja").read_text()
                                .split("{% if packed_lines %}")[1].split("{% for")[0]).body[0])
VALUE_CALLS = {"float", "complex", "slice", "torch.device", "torch.Size"}
INIT_CALLS = {"super", "super().__init__", "nn.Parameter", "torch.tensor", "torch.zeros", "torch.ones", "torch.full",
              "torch.empty", "nn.ModuleList", "nn.ModuleDict", "nn.Module"} | {f"nn.init.{s}_" for s in INIT_SCHEMES}
NAMES = {"self", "super", "torch", "nn", "F", "operator", "math", "typing", "float", "complex", "slice", "None",
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


def _aliases(spec: fxgen.Spec, tree: ast.Module) -> dict[str, str]:
    """``from M import A as B`` -> ``{"B": "M.A"}``, each a prefix of a name the spec uses."""
    used = {m.cls for m in spec.modules.values()} | {n.target for n in spec.nodes if n.op == "call_function"}
    used |= {w for n in spec.nodes if n.type for w in re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", n.type)}
    out: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module != "torch":
            for name in stmt.names:
                qualified = f"{stmt.module}.{name.name}"
                assert any(u == qualified or u.startswith(qualified + ".") for u in used if u), qualified
                out[name.asname or name.name] = qualified
    return out


def check_source(data: dict[str, Any], spec: fxgen.Spec, source: str) -> None:
    """The generated file has fxgen's fixed shape and nothing a spec could have smuggled in."""
    # header: three comment lines, nothing else before the code
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    head = [t for t in tokens if t.start[0] <= 3]
    assert all(t.type in (tokenize.COMMENT, tokenize.NL) for t in head), head
    assert source.split("\n", 3)[3].startswith("\n"), "the header must be exactly three lines"
    tree = ast.parse(source)

    imports = {ast.unparse(s) for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))}
    aliases = _aliases(spec, tree)  # from-imports of names the spec uses: alias -> qualified name
    assert imports - {s for s in imports if s.startswith("from ") and "torch" not in s} <= STD_IMPORTS, imports
    classes = [s for s in tree.body if isinstance(s, ast.ClassDef)]
    packed = {p: b.data for p, b in spec.buffers.items() if b.data is not None}
    tail = tree.body[len(imports) + 1 :]
    assert len(classes) == 1 and tree.body[len(imports)] is classes[0] and len(tail) == (2 if packed else 0)
    if packed:
        assert ast.unparse(tail[0]) == _HELPER
        table = tail[1]
        assert isinstance(table, ast.Assign) and ast.unparse(table.targets[0]) == "_PACKED"
        assert isinstance(table.value, ast.Dict)
        keys = [k.value for k in table.value.keys if isinstance(k, ast.Constant)]
        values = [v.value for v in table.value.values if isinstance(v, ast.Constant)]
        assert dict(zip(keys, values, strict=True)) == packed
    cls = classes[0]
    assert cls.name == spec.name and not cls.decorator_list and not cls.keywords
    assert [ast.unparse(b) for b in cls.bases] == ["nn.Module"]

    body = list(cls.body)
    doc_node = body[0] if body and isinstance(body[0], (ast.Expr, ast.Assign)) else None
    if spec.doc:
        assert doc_node is not None
        if isinstance(doc_node, ast.Expr):
            assert isinstance(doc_node.value, ast.Constant)
            assert inspect.cleandoc(doc_node.value.value) == spec.doc
        else:
            assert ast.unparse(doc_node.targets[0]) == "__doc__"
            assert isinstance(doc_node.value, ast.Constant) and doc_node.value.value == spec.doc
        body = body[1:]
    assert [type(s) for s in body] == [ast.FunctionDef, ast.FunctionDef]
    init, forward = body
    assert isinstance(init, ast.FunctionDef) and isinstance(forward, ast.FunctionDef)
    assert (init.name, forward.name) == ("__init__", "forward")
    assert not init.decorator_list and not forward.decorator_list
    assert [a.arg for a in init.args.args] == ["self"]
    placeholders = [n.name for n in spec.nodes if n.op == "placeholder"]
    assert [a.arg for a in forward.args.args] == ["self", *placeholders]

    # __init__: super().__init__(), then assignments to self... and registration calls
    assert ast.unparse(init.body[0]) == "super().__init__()"
    for stmt in init.body[1:]:
        if isinstance(stmt, ast.Assign):
            assert len(stmt.targets) == 1 and ast.unparse(stmt.targets[0]).startswith("self")
        else:
            assert isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call), ast.unparse(stmt)

    # forward: one statement per non-placeholder node, the last a return, besides the statements
    # binding a container or a subscripted callee to a local (``blocks_0 = self.blocks[0]``)
    node_names = {n.name for n in spec.nodes}
    bound, statements = {"self"}, []
    for stmt in forward.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id not in node_names and _on_self(stmt.value, bound):
            bound.add(target.id)
        else:
            statements.append(stmt)
    computed = [n for n in spec.nodes if n.op != "placeholder"]
    assert len(statements) == len(computed)
    for stmt, node in zip(statements, computed, strict=True):
        if node.op == "output":
            assert isinstance(stmt, ast.Return)
        elif node.name is not None:
            assert isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == [node.name]
        else:
            assert isinstance(stmt, ast.Expr)

    # calls: only what declarations and nodes require
    allowed = set(INIT_CALLS | VALUE_CALLS | {"getattr"} | ({"_unpack"} if packed else set()))
    for module in spec.modules.values():
        allowed |= _qualified_forms(module.cls, aliases)
    node_calls = 0
    for node in spec.nodes:
        if node.op == "call_function":
            allowed |= _qualified_forms(node.target or "", aliases)
            node_calls += 1
        elif node.op in ("call_method", "call_module"):
            node_calls += 1
    methods = {n.target for n in spec.nodes if n.op == "call_method"}
    for call in (n for n in ast.walk(init) if isinstance(n, ast.Call)):
        callee = ast.unparse(call.func)
        registers = isinstance(call.func, ast.Attribute) and call.func.attr in (
            "register_buffer", "register_parameter", "add_module") and _on_self(call.func.value)
        assert callee in allowed or registers, callee
    forward_calls = 0
    for call in (n for n in ast.walk(forward) if isinstance(n, ast.Call)):
        callee = ast.unparse(call.func)
        if callee in VALUE_CALLS:
            continue
        if callee == "getattr" and _on_self(call, bound):
            continue  # getattr(self, "0"): a module path, not a call a node makes
        forward_calls += 1
        is_method = isinstance(call.func, ast.Attribute) and call.func.attr in methods
        assert callee in allowed or _on_self(call.func, bound) or is_method, callee
    assert forward_calls <= node_calls

    # names: the spec's own and the fixed ones
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    own = {n.name for n in spec.nodes if n.name} | {m.cls.split(".")[0] for m in spec.modules.values()}
    own |= {n.target.split(".")[0] for n in spec.nodes if n.op == "call_function" and n.target}
    own |= {word for n in spec.nodes if n.type for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", n.type)}
    own |= bound  # forward's locals for containers and subscripted callees
    own |= set(aliases) | ({"_unpack", "_PACKED", "base64", "zlib", "sys", "bytearray"} if packed else set())
    if packed:  # the helper's own parameters and locals
        own |= {n.id for n in ast.walk(tail[0]) if isinstance(n, ast.Name)}
    assert names <= NAMES | own, names - NAMES - own

    # string literals: each is one of the spec's strings, unchanged
    spec_strings = _strings(data) | {"inf", "-inf", "nan"}
    helper = set(ast.walk(tail[0])) if packed else set()
    for constant in (n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)):
        if doc_node is not None and constant is getattr(doc_node, "value", None):
            continue
        if constant in helper:
            continue  # the template's own text ("big", the docstring)
        assert constant.value in spec_strings, constant.value


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
    check_source(data, spec, source)
    try:
        gm = fxgen.load(spec)
    except FxgenError:
        return spec  # e.g. a constructor that refuses its arguments: reported, not crashed
    generated = _generated_class(source, spec.name)()
    assert list(generated.state_dict()) == list(gm.state_dict())
    return spec


def test_the_base_spec_is_valid() -> None:
    assert run_case(copy.deepcopy(BASE)) is not None


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


@settings(max_examples=max(80, settings.default.max_examples), suppress_health_check=[HealthCheck.too_slow])
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
