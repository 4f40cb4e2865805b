"""A mutation fuzzer: broken variants of valid specs never crash fxgen.

Valid specs (random ones from ``strategies.spec_dicts`` and the ``model_specs/`` examples) are
mutated — fields dropped, duplicated, renamed, retyped; references dangled; nodes reordered;
values corrupted; names swapped for other valid-looking names; random Unicode injected; and,
for files, lines duplicated, dropped or cut — and then run through every entry point:
``validate_data``, ``load_spec`` on a written file, ``load``, ``generate`` and the CLI. Each
either succeeds or raises a ``FxgenError`` (SpecError, ExportError, WeightsError,
GenerateError); anything else is a bug. The CLI must exit 0 or 1 without an internal error,
leave no temporary files and write only files that parse.

``python -m pytest`` runs a small budget (profile ``dev``; ``ci``, derandomised, under CI=true),
CI's second step the derandomised ``thorough`` one. For a long run::

    HYPOTHESIS_PROFILE=long python -m pytest tests/test_fuzz.py
"""

from __future__ import annotations

import ast
import contextlib
import copy
import io
import json
import os
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from conftest import EXAMPLES, PROFILE
from helpers import property_budget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import (
    construct_specs,
    expression_specs,
    layer_table_specs,
    mode_specs,
    module_loop_specs,
    presence_specs,
    spec_dicts,
)

import fxgen
from fxgen._errors import FxgenError, SpecError
from fxgen.check.validate import validate_data
from fxgen.cli.main import main
from fxgen.read.reader import parse_text
from fxgen.spec import expr
from fxgen.spec.compact import fx_name
from fxgen.spec.layers import desugar_layers
from fxgen.spec.shorthand import desugar_declarations

EXAMPLE_DICTS = [parse_text(p.read_bytes(), str(p)).data for p in EXAMPLES]
BUDGET = settings.default.max_examples  # the profile's budget (dev and ci: 10, thorough: 60, long: 5000)

# Words that keep mutants close to valid specs, so they get past the schema into deeper checks.
VOCABULARY = [
    "fxgen", "name", "doc", "modules", "parameters", "buffers", "nodes", "op", "target", "args", "kwargs",
    "type", "default", "class", "shape", "dtype", "init", "value", "persistent", "requires_grad",
    "placeholder", "get_attr", "call_function", "call_method", "call_module", "output",
    "torch.relu", "torch.add", "operator.add", "operator.getitem", "getattr", "torch.load", "os.system",
    "torch.nn.Linear", "torch.nn.Identity", "torch.nn.LayerNorm", "torch.nn.functional.gelu", "view",
    "reshape", "numpy", "register_hook", "shape", "torch.Tensor", "typing.Optional[torch.Tensor]",
    "int", "float32", "int64", "bool", "zeros", "ones", "normal", "orthogonal", "dirac", "eye", "constant",
    "tuple", "slice", "ellipsis", "device", "memory_format", "layout", "float", "complex", "dict", "size",
    "cpu", "meta", "inf", "nan", "%x", "%%x", "x", "weight", "bias", "0", "layers.0", "self", "output",
    "data", "eJxjYGBgAAAABQAB", "eJxjYAAAAAEAAQ==", "AAAA", "block1-0", "(0, 0)", "a..b", "class",
    # format 2
    "classes", "arg", "module", "repeat", "BasicBlock", "DownBlock", "EncoderBlock", "width", "planes",
    "width * 2", "planes // 0", "(dim", "dim % 0", "-1", "torch.nn.Sequential", "torch.nn.ModuleList",
    "values", "hidden", "stem", "min(width, 2)", "ceil(width / 8) * 8", "width ** 99", "1e308 * 10", "a if b else",
    "width < depth < 1", "round(", "not width", "stem + 8 if stem < 0.9 * width else stem", "foo(width)",
    # example inputs, shape comments, passes
    "inputs", "shapes", "passes", "batch", "seq", "replace", "rewrite", "decompose", "fuse_conv_bn",
    "eliminate_dead_code", "fold_constants", "rules", "targets", "pattern", "replacement", "by", "relu",
    "silu", "torch.nn.BatchNorm2d", "torch.nn.Conv2d",
    # checks of the inputs
    "checks", "batch <= 64", "batch % 8 == 0", "batch * 2", "batch < seq < 9", "bacth != 1", "not batch",
    # the weights file's digest
    "weights_digest", "sha256:" + "0" * 64, "sha256:" + "f" * 63,
    # a module declared on a condition
    "if", "not tie", "tie", "lm_head",
    # classes from other files
    "imports", "from", "blocks.yaml", "../blocks.yaml", "https://example.org/b.yaml",
    # the compact node form
    "%", ".view", ".chunk", "a, b", "q, k, v", "model.0", "m.{i}", "fc", "gamma",
    # declaration shorthands
    "call", "torch.nn.Linear(4, 4)", "Conv(c, c, 3, s=2)", "torch.nn.Sequential(torch.nn.ReLU())", "bias=False",
    "'nearest'", "(", ")", "[", "]", "=", "n_layer", 12, 0.5, True,
]  # fmt: skip
_text = st.text(st.characters(codec="utf-8"), max_size=8)
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.sampled_from([0, 1, -1, 2, 4, 2**31, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True, width=64), _text, st.sampled_from(VOCABULARY),
)  # fmt: skip
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(VOCABULARY) | _text, inner, max_size=3),
    max_leaves=8,
)


# -- structural mutations ---------------------------------------------------------------------------
def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*prefix, i))


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def _type_name(value: Any) -> str:
    return type(value).__name__


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    data = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(1, 4))):
        paths = list(_paths(data))[1:]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _get(data, path[:-1]), path[-1]
        kind = draw(st.sampled_from(["drop", "duplicate", "rename", "swap type", "dangle", "reorder", "corrupt",
                                     "inject", "vocabulary"]))
        if kind == "drop":
            del parent[key]
        elif kind == "duplicate":
            if isinstance(parent, list):
                parent.insert(draw(st.integers(0, len(parent))), copy.deepcopy(parent[key]))
            else:
                parent[draw(st.sampled_from(VOCABULARY))] = copy.deepcopy(parent[key])
        elif kind == "rename" and isinstance(parent, dict):
            new = draw(st.sampled_from(VOCABULARY) | _text)
            items = list(parent.items())
            parent.clear()
            parent.update((new if k == key else k, v) for k, v in items)
        elif kind == "swap type":
            old = parent[key]
            parent[key] = draw(json_values.filter(lambda v, old=old: _type_name(v) != _type_name(old)))
        elif kind == "dangle":
            refs = [p for p in _paths(data) if isinstance(_get(data, p), str) and _get(data, p).startswith("%")]
            if refs:
                ref = draw(st.sampled_from(refs))
                nodes = data.get("nodes") if isinstance(data.get("nodes"), list) else []
                names = [n["name"] for n in nodes if isinstance(n, dict) and isinstance(n.get("name"), str)]
                _get(data, ref[:-1])[ref[-1]] = "%" + draw(st.sampled_from([*names, "nowhere", "x"]) | _text)
        elif kind == "reorder" and isinstance(data.get("nodes"), list) and len(data["nodes"]) > 1:
            nodes = data["nodes"]
            data["nodes"] = draw(st.permutations(nodes)) if draw(st.booleans()) else _move(draw, nodes)
        elif kind == "corrupt":
            parent[key] = draw(json_values)
        elif kind == "inject" and isinstance(parent[key], str):
            text = parent[key]
            at = draw(st.integers(0, len(text)))
            parent[key] = text[:at] + draw(st.text(min_size=1, max_size=4)) + text[at:]
        elif kind == "vocabulary":
            parent[key] = draw(st.sampled_from(VOCABULARY))
    return data


def _move(draw: st.DrawFn, nodes: list[Any]) -> list[Any]:
    nodes = list(nodes)
    node = nodes.pop(draw(st.integers(0, len(nodes) - 1)))
    nodes.insert(draw(st.integers(0, len(nodes))), node)
    return nodes


# The examples with passes as well: mutants then reach the passes' checks and the transform.
_PASSES = ["eliminate_dead_code", {"replace": {"target": "torch.relu", "by": "torch.sigmoid"}},
           {"decompose": {"rules": ["relu", "silu"]}}, "fuse_conv_bn", "fold_constants"]  # fmt: skip
WITH_PASSES = [{**d, "passes": copy.deepcopy(_PASSES)} for d in EXAMPLE_DICTS if d["fxgen"] == 1]
# The examples with named values, one expression drawn from every form of the grammar.
# (canonical: the strategy edits module declarations, which the examples may write as call strings)
# the examples with named values, their declarations canonical (a layer table's Sequential declared under `modules:`)
WITH_VALUES = [desugar_declarations(desugar_layers(d, lambda path: fx_name("call_module", path))[0])[0]
               for d in EXAMPLE_DICTS if d.get("values")]  # fmt: skip


def _checks(data: dict[str, Any]) -> list[str]:
    """Conditions over the named dimensions of an example's ``inputs:`` (every form a capture writes)."""
    dims = list(dict.fromkeys(d for i in data["inputs"].values() for d in i["shape"] if isinstance(d, str)))
    first = dims[0]
    return [f"{first} <= 4096", f"(8 - {first} % 8) % 8 != 0 or {first} >= 1", f"min(4096, {first}) == {first}",
            *(f"{d} != 1" for d in dims[1:])]  # fmt: skip


# The examples with named dimensions, with checks of them: the forward checks its inputs.
WITH_CHECKS = [{**d, "checks": _checks(d)} for d in EXAMPLE_DICTS
               if any(isinstance(s, str) for i in d.get("inputs", {}).values() for s in i["shape"])]  # fmt: skip
# A module declared on a condition (GPT-2's untied head), small: the GPT-2 example is 124M parameters.
WITH_DECLARATION_CONDITIONS = [{
    "fxgen": 2, "name": "Head",
    "args": {"vocab": {"type": "int", "default": 11}, "dim": {"type": "int", "default": 8},
             "tie": {"type": "bool", "default": False}},
    "modules": {"wte": {"class": "torch.nn.Embedding", "args": [{"arg": "vocab"}, {"arg": "dim"}]},
                "lm_head": {"class": "torch.nn.Linear", "args": [{"arg": "dim"}, {"arg": "vocab"}], "if": "not tie"}},
    "nodes": [{"op": "placeholder", "name": "idx"}, {"op": "call_module", "name": "x", "target": "wte", "args": ["%idx"]},
              {"if": "tie", "then": [{"op": "get_attr", "name": "w", "target": "wte.weight"},
                                     {"op": "call_function", "name": "logits", "target": "torch.nn.functional.linear",
                                      "args": ["%x", "%w"]}],
               "else": [{"op": "call_module", "name": "logits", "target": "lm_head", "args": ["%x"]}]},
              {"op": "output", "args": ["%logits"]}],
    "inputs": {"idx": {"shape": [2, 3], "dtype": "int64"}},
}]  # fmt: skip
bases = st.one_of(spec_dicts(max_nodes=6, weights_digest=True), st.sampled_from(EXAMPLE_DICTS), st.sampled_from(WITH_PASSES),
                  st.sampled_from(WITH_VALUES).flatmap(expression_specs), st.sampled_from(WITH_CHECKS), mode_specs(),
                  st.sampled_from(WITH_DECLARATION_CONDITIONS), presence_specs())  # fmt: skip
mutants = mutated(bases)


@st.composite
def compacted(draw: st.DrawFn, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a valid canonical spec) with some of its nodes written compactly: no `op` where the
    target implies it, `.method` for a method, `"%"` for a reference to the named node before; and
    sometimes its inputs declared under `inputs:` (in both), and the placeholders left to it where
    none has a default (the first step's previous value is then the first input)."""
    out = copy.deepcopy(data)
    modules, tensors = set(out.get("modules", {})), set(out.get("parameters", {})) | set(out.get("buffers", {}))
    placeholders = [node for node in out["nodes"] if node.get("op") == "placeholder"]
    by_inputs = all("default" not in node for node in placeholders) and draw(st.booleans())
    previous = None
    for i, node in enumerate(out["nodes"]):
        op, target = node.get("op"), node.get("target")
        implied = ("call_module" if any(target == m or target.startswith(m + ".") for m in modules) else
                   "get_attr" if target in tensors else "call_function") if isinstance(target, str) else None  # fmt: skip
        if (op == "call_method" or op == implied) and draw(st.booleans()):
            item = {k: v for k, v in node.items() if k != "op"}
            item["target"] = "." + target if op == "call_method" else target
            if previous is not None and draw(st.booleans()):
                item["args"] = json.loads(json.dumps(item.get("args", [])).replace(json.dumps("%" + previous), '"%"'))
            out["nodes"][i] = item
        previous = node.get("name") if op != "output" else None
        if by_inputs and op == "placeholder":
            previous = placeholders[0]["name"]
    if by_inputs:
        out["inputs"] = {node["name"]: {"shape": [2, 4]} for node in placeholders}
        if any("op" not in item for item in out["nodes"]):  # a compact list: the inputs are its placeholders
            out["nodes"] = out["nodes"][len(placeholders) :]
    return out


@settings(max_examples=BUDGET, suppress_health_check=[HealthCheck.too_slow])
@given(spec_dicts(max_nodes=8).flatmap(lambda data: st.tuples(st.just(data), compacted(data))))
def test_compact_nodes_desugar_to_exactly_the_canonical_ones(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """A spec and the same spec partly written compactly validate to the same Spec."""
    canonical, compact = case
    if "inputs" in compact:
        canonical = {**canonical, "inputs": compact["inputs"]}
    assert validate_data(compact) == validate_data(canonical)


def _call_text(decl: Any) -> str | None:
    """A canonical module declaration written as a call string, or None where a call cannot
    say it (a value with no call syntax, init, if)."""
    if not isinstance(decl, dict) or set(decl) - {"class", "args", "kwargs"} or not isinstance(decl.get("class"), str):
        return None
    parts = [_argument_text(v) for v in decl.get("args", [])]
    for key, value in decl.get("kwargs", {}).items():
        text = _argument_text(value)
        parts.append(f"{key}={text}" if text is not None and isinstance(key, str) and key.isidentifier() else None)
    return None if None in parts else f"{decl['class']}({', '.join(parts)})"  # type: ignore[arg-type]


def _argument_text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int) and abs(value) <= 2**63:
        return repr(value)
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return repr(value)
    if isinstance(value, str) and not set(value) & set("'\"\\") and not value.startswith("%"):
        return repr(value)
    if isinstance(value, str) and value.startswith("%%") and not set(value) & set("'\"\\"):
        return repr(value[1:])
    if isinstance(value, list):
        items = [_argument_text(v) for v in value]
        return None if None in items else f"[{', '.join(items)}]"  # type: ignore[arg-type]
    if isinstance(value, dict) and set(value) == {"arg"} and isinstance(value["arg"], str):
        text = value["arg"]
        try:  # a call says a literal as itself ({arg: "3"} is not one), an expression as it is written
            tree = expr.parse(text)
        except expr.ExprError:
            return None
        literal = tree[0] in ("num", "bool") or (tree[0] == "neg" and tree[1][0] == "num")
        return text if text == text.strip() and not literal else None
    if isinstance(value, dict) and set(value) == {"module"}:
        return _call_text(value["module"])
    return None


def _listed(decl: Any) -> list[Any] | None:
    """A canonical Sequential declaration written as a list of its modules (each as a call where
    a call can say it), or None where a list cannot say it (init, if, a value that is no module)."""
    if not isinstance(decl, dict) or set(decl) - {"class", "args"} or decl.get("class") != "torch.nn.Sequential":
        return None
    items: list[Any] = []
    for item in decl.get("args", []):
        if isinstance(item, dict) and set(item) == {"module"}:
            module = item["module"]
            items.append(_call_text(module) or (module if isinstance(module, dict) and "class" in module else item))
        elif isinstance(item, dict) and ("repeat" in item or "for" in item):
            items.append(item)
        else:
            return None
    return items


def _module_list_item(decl: Any) -> dict[str, Any] | None:
    """A canonical ModuleList of one ``{repeat: ...}`` or ``{for: ...}`` written as that item
    (None where it is not one)."""
    if not isinstance(decl, dict) or set(decl) - {"class", "args"} or decl.get("class") != "torch.nn.ModuleList":
        return None
    args = decl.get("args")
    if not (isinstance(args, list) and len(args) == 1 and isinstance(args[0], list) and len(args[0]) == 1):
        return None
    item = args[0][0]
    return item if isinstance(item, dict) and "module" in item and ("repeat" in item or "for" in item) else None


@st.composite
def called(draw: st.DrawFn, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a valid canonical spec) with some module declarations written as call strings
    or (a Sequential) as a list of its modules, and some arguments declared by their defaults."""
    out = copy.deepcopy(data)
    for body in (out, *(b for b in out.get("classes", {}).values() if isinstance(b, dict))):
        for path, decl in body.get("modules", {}).items():
            text = _call_text(decl)
            if text is not None and draw(st.booleans()):
                body["modules"][path] = text
            elif _listed(decl) is not None and draw(st.booleans()):
                body["modules"][path] = _listed(decl)
            elif _module_list_item(decl) is not None and draw(st.booleans()):
                body["modules"][path] = _module_list_item(decl)
        for name, decl in body.get("args", {}).items():
            default = decl.get("default") if isinstance(decl, dict) and set(decl) == {"type", "default"} else None
            kind = {bool: "bool", int: "int", float: "float"}.get(type(default))
            if isinstance(decl, dict) and kind == decl.get("type") and draw(st.booleans()):
                body["args"][name] = default
    return out


@settings(max_examples=BUDGET, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(spec_dicts(max_nodes=6), st.sampled_from(EXAMPLE_DICTS), st.sampled_from(WITH_VALUES).flatmap(expression_specs))
       .flatmap(lambda data: st.tuples(st.just(data), called(data))))  # fmt: skip
def test_declaration_shorthands_desugar_to_exactly_the_canonical_ones(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """A spec and the same spec with module declarations written as calls and arguments by
    their defaults validate to the same Spec (or are refused alike)."""
    canonical, short = case
    try:
        expected = validate_data(canonical)
    except SpecError:
        with contextlib.suppress(SpecError):
            validate_data(short)
            raise AssertionError("the shorthand spec validates, the canonical one does not") from None
        return
    assert validate_data(short) == expected


# -- text mutations of spec files ---------------------------------------------------------------------
@st.composite
def spec_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """A mutated spec written as YAML or JSON, then perhaps mutated as text."""
    data = draw(mutants)
    suffix = draw(st.sampled_from([".yaml", ".json"]))
    try:
        text = json.dumps(data, indent=1, ensure_ascii=False) if suffix == ".json" else _yaml(data)
    except ValueError:
        text = "{}"
    lines = text.split("\n")
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["duplicate line", "drop line", "swap lines", "insert", "truncate"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "duplicate line":
            lines.insert(i, lines[i])
        elif op == "drop line" and len(lines) > 1:
            del lines[i]
        elif op == "swap lines":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "insert":
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(st.text(min_size=1, max_size=3)) + lines[i][at:]
        else:
            lines = lines[: i + 1]
    raw = "\n".join(lines).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:  # sometimes not even UTF-8
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.binary(min_size=1, max_size=3)) + raw[at:]
    return suffix, raw


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, default_flow_style=None, width=100)


# -- the pipeline --------------------------------------------------------------------------------------
def run_pipeline(data: Any) -> fxgen.Spec | None:
    """validate_data -> load -> generate; only FxgenErrors may come out, and the GraphModule's code
    and the generated file compile without a SyntaxWarning (Python's compiler warns on a
    subscript it knows fails, such as ``'abc'[None]``: validation refuses those)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", SyntaxWarning)  # compile() then raises SyntaxError
        try:
            spec = validate_data(data)
        except SpecError:
            return None
        with contextlib.suppress(FxgenError):
            fxgen.load(spec)
        try:
            source = fxgen.generate(spec)
        except FxgenError:
            return spec
        compile(source, "<generated>", "exec")
    return spec


@contextlib.contextmanager
def _workspace() -> Iterator[Path]:
    """A temporary directory as the working directory (no pyproject.toml above it applies)."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="fxgen-fuzz-") as tmp:
        os.chdir(tmp)
        try:
            yield Path(tmp)
        finally:
            os.chdir(old)


@settings(max_examples=2 * BUDGET, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mutants)
def test_mutated_specs_never_crash_the_api(data: dict[str, Any]) -> None:
    spec = run_pipeline(data)
    # the same data as a file takes the same decision
    with tempfile.TemporaryDirectory(prefix="fxgen-fuzz-") as tmp:
        path = Path(tmp) / "spec.json"
        try:
            text = json.dumps(data, ensure_ascii=False)
        except ValueError:
            return
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            from_file = fxgen.load_spec(path)
        except SpecError:
            from_file = None
    assert (spec is None) == (from_file is None), (spec, from_file)
    if spec is not None and from_file is not None:
        assert from_file == spec


@settings(max_examples=BUDGET, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.sampled_from(WITH_VALUES).flatmap(expression_specs), module_loop_specs()))
def test_drawn_expressions_never_crash(data: dict[str, Any]) -> None:
    """Every form of the grammar, unmutated otherwise, and ``for`` items over module
    declarations (drawn names, rows, counts, nesting): refused with a SpecError, or a spec whose
    build and generated class agree on every tensor's shape (both on the meta device: a drawn
    width may ask for terabytes)."""
    import torch

    from fxgen.assemble.module import build_module

    try:
        spec = validate_data(data)
    except SpecError:
        return
    try:
        gm = build_module(spec, device="meta")
    except FxgenError:
        return
    namespace: dict[str, Any] = {"__name__": "fxgen_fuzz_values"}
    exec(compile(fxgen.generate(spec), "<generated>", "exec"), namespace)
    with torch.device("meta"):
        generated = namespace[spec.name]()
    assert [(k, t.shape) for k, t in generated.state_dict().items()] == [(k, t.shape) for k, t in gm.state_dict().items()]
    from fxgen.check.arguments import choose
    from fxgen.spec.choice import Choice

    for variant in spec.variants:  # validated: each builds, and its classmethod builds the same
        built = build_module(choose(spec, Choice(variant)), device="meta")
        with torch.device("meta"):
            made = getattr(namespace[spec.name], variant)()
        assert [(k, t.shape) for k, t in made.state_dict().items()] == [(k, t.shape) for k, t in built.state_dict().items()]


def _routed(rows: list[Any]) -> list[Any] | None:
    """What each row of a layer table takes, by Ultralytics' rule (``_predict_once``: -1 the
    previous value, else ``y[f]`` in the list of the values so far, negative from its end), as
    ``"x"`` or a row index; None when a FROM is no int, a list of them, or indexes past ``y``."""
    taken: list[Any] = []
    for i, (written, _) in enumerate(rows):
        froms = written if isinstance(written, list) else [written]
        if not froms or any(not isinstance(f, int) or isinstance(f, bool) for f in froms):
            return None
        try:
            found = ["x" if f == -1 and i == 0 else i - 1 if f == -1 else list(range(i))[f] for f in froms]
        except IndexError:
            return None
        taken.append(found if isinstance(written, list) else found[0])
    return taken


@settings(max_examples=BUDGET, suppress_health_check=[HealthCheck.too_slow])
@given(layer_table_specs())
def test_drawn_layer_tables_route_as_ultralytics_and_run_as_generated(data: dict[str, Any]) -> None:
    """A layer table is refused exactly when Ultralytics' rule cannot route it; otherwise each
    row's node takes what that rule says, and fxgen.load and the generated class (same seed)
    compute the same, bit for bit."""
    import torch

    (container, rows), = data["layers"].items()
    expected = _routed(rows)
    try:
        spec = validate_data(data)
    except SpecError as exc:
        assert expected is None, exc
        return
    assert expected is not None
    ref = {"x": "%x", **{i: f"%{container}_{i}" for i in range(len(rows))}}
    calls = [n for n in spec.nodes if n.op == "call_module"]
    assert [(n.name, n.target, n.args) for n in calls] == [
        (f"{container}_{i}", f"{container}.{i}", [[ref[k] for k in taken] if isinstance(taken, list) else ref[taken]])
        for i, taken in enumerate(expected)
    ]
    namespace: dict[str, Any] = {"__name__": "fxgen_fuzz_layers"}
    exec(compile(fxgen.generate(spec), "<generated>", "exec"), namespace)
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(1)
    gm = fxgen.load(spec)
    torch.manual_seed(1)
    generated = namespace[spec.name]()
    out, again = gm(x), generated(x)
    flat = out if isinstance(out, list) else [out]
    assert all(torch.equal(a, b) for a, b in zip(flat, again if isinstance(again, list) else [again], strict=True))


@settings(max_examples=BUDGET, suppress_health_check=[HealthCheck.too_slow])
@given(construct_specs(), st.integers(0, 5))
def test_drawn_conditionals_and_repeats(data: dict[str, Any], n: int) -> None:
    """Conditionals, repeats, aliases and {arg: ...} values nested at random: refused with a
    SpecError, or fxgen.load and the generated class (same seed) compute the same, bit for bit,
    at the default argument and at another."""
    import torch

    try:
        spec = validate_data(data)
    except SpecError:
        return
    namespace: dict[str, Any] = {"__name__": "fxgen_fuzz_constructs"}
    exec(compile(fxgen.generate(spec), "<generated>", "exec"), namespace)
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(0))
    for args in ({}, {"n": n}):
        try:
            torch.manual_seed(0)
            gm = fxgen.load(spec, args=args)
        except SpecError:
            continue  # this instance does not resolve (a count the other argument makes negative)
        torch.manual_seed(0)
        generated = namespace[spec.name](**args)
        with torch.no_grad():
            expected, got = gm(x), generated(x)
        assert torch.equal(got, expected) or (torch.isnan(got).any() and torch.equal(got.nan_to_num(), expected.nan_to_num()))


@settings(max_examples=BUDGET, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(spec_files())
def test_mutated_spec_files_never_crash_the_reader(case: tuple[str, bytes]) -> None:
    suffix, raw = case
    with tempfile.TemporaryDirectory(prefix="fxgen-fuzz-") as tmp:
        path = Path(tmp) / f"spec{suffix}"
        path.write_bytes(raw)
        try:
            spec = fxgen.load_spec(path)
        except SpecError as exc:
            assert all(d.location.path == str(path) for d in exc.diagnostics)
            return
    run_pipeline(spec.to_dict())


@settings(max_examples=property_budget(15), suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.lists(spec_files(), min_size=1, max_size=4))
def test_mutated_specs_through_the_cli(files: list[tuple[str, bytes]]) -> None:
    with _workspace() as tmp:
        specs = tmp / "specs"
        specs.mkdir()
        for i, (suffix, raw) in enumerate(files):
            (specs / f"spec{i}{suffix}").write_bytes(raw)
        for argv in (["validate", "specs"], ["generate", "-j", "1", "--out-dir", "out", "specs"],
                     ["generate", "--check", "-j", "1", "--out-dir", "out", "specs"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main(argv)
            assert code in (0, 1), (argv, code, err.getvalue())
            assert "internal error" not in err.getvalue() and "Traceback" not in err.getvalue(), err.getvalue()
        out = tmp / "out"
        written = sorted(out.iterdir()) if out.exists() else []
        assert [p.name for p in written if p.suffix != ".py"] == []  # no temporary files left
        for generated in written:
            ast.parse(generated.read_text(encoding="utf-8"))
        assert written == sorted(out / f"{p.stem}.py" for p in specs.iterdir() if _generates(p))
        assert set(written) >= {out / f"{p.stem}.py" for p in specs.iterdir() if _valid(p)}


def _valid(path: Path) -> bool:
    """Does ``fxgen validate`` accept the file? (More than ``generate``: it also checks that the
    declared inputs flow through the model, which generating leaves to validate.)"""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return main(["validate", str(path)]) == 0


def _generates(path: Path) -> bool:
    """Does ``fxgen.generate`` accept the file (its checks and its own passes, on meta tensors)?"""
    try:
        fxgen.generate(path)
    except FxgenError:
        return False
    return True


def test_the_examples_with_checks_are_valid_and_check_their_inputs() -> None:
    """The bases the mutants of ``checks:`` start from are valid specs whose forward checks."""
    assert len(WITH_CHECKS) >= 3
    for data in WITH_CHECKS:
        spec = validate_data(copy.deepcopy(data))
        assert spec.checks and "raise ValueError(" in fxgen.generate(spec)


def test_a_property_budget_is_written_for_the_thorough_profile() -> None:
    """``property_budget(n)`` is n examples under CI's thorough profile (today's budgets), a sixth
    of them in the fast run (dev, ci), and at least the long profile's own under it."""
    try:
        for profile, expected in (("thorough", [400, 30, 10]), ("dev", [66, 5, 1]), ("ci", [66, 5, 1]),
                                  ("long", [5000, 5000, 5000])):  # fmt: skip
            settings.load_profile(profile)
            assert [property_budget(n) for n in (400, 30, 10)] == expected, profile
    finally:
        settings.load_profile(PROFILE)
