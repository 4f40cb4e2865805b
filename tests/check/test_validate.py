"""Semantic checks (fxgen.check.validate) beyond the one-flaw catalogue: several errors at once,
names that slip past the schema's patterns, reserved names, and no cascading diagnostics."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import torch
from helpers import import_source

import fxgen
from fxgen.check.checker import RESERVED_NAMES
from fxgen.check.validate import validate_data, validate_document
from fxgen.read.reader import parse_text
from fxgen.read.schema import load_schema
from fxgen.spec.model import FORMAT_VERSION, Spec

BASE: dict[str, Any] = {
    "fxgen": 1,
    "name": "Tiny",
    "modules": {"fc": {"class": "torch.nn.Linear", "args": [4, 4]}},
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "call_module", "name": "y", "target": "fc", "args": ["%x"]},
        {"op": "output", "args": ["%y"]},
    ],
}


def spec(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data.update(changes)
    return data


def with_node(node: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """BASE with ``node`` inserted before the output."""
    data = spec(**changes)
    data["nodes"].insert(-1, node)
    return data


def messages(data: dict[str, Any]) -> list[str]:
    with pytest.raises(fxgen.SpecError) as info:
        validate_data(data)
    return [d.message for d in info.value.diagnostics]


def yaml_errors(text: str) -> list[tuple[int, int, str]]:
    with pytest.raises(fxgen.SpecError) as info:
        validate_document(parse_text(text, "s.yaml"))
    return [(d.location.line, d.location.column, d.message) for d in info.value.diagnostics]


def test_base_is_valid() -> None:
    assert isinstance(validate_data(BASE), Spec)


# -- everything at once ----------------------------------------------------------------------------
def test_several_semantic_errors_are_reported_together_in_file_order() -> None:
    text = """\
fxgen: 1
name: Many
modules:
  forward: {class: torch.nn.Linear, args: [4, 4]}
parameters:
  p: {shape: [4], dtype: int64}
nodes:
  - {op: placeholder, name: x, default: null}
  - {op: placeholder, name: input}
  - {op: call_function, name: y, target: torch.no_such_fn, args: ["%x"]}
  - {op: call_method, name: z, target: register_hook, args: ["%y", "%later"]}
  - {op: output, args: ["%z"]}
"""
    found = yaml_errors(text)
    assert [(line, col) for line, col, _ in found] == [(4, 3), (6, 3), (9, 29), (9, 29), (10, 42), (11, 40), (11, 68)]
    text_of = " | ".join(m for _, _, m in found)
    for fragment in ["nn.Module attribute", "cannot require gradients", "has no default but follows 'x'",
                     "shadow the builtin 'input'", "no_such_fn", "register_hook", "%later: node 'later' is not defined"]:
        assert fragment in text_of  # fmt: skip


def test_several_schema_errors_are_reported_together() -> None:
    data = spec(name=5, extra=True)
    data["nodes"][1]["op"] = "call"
    data["nodes"][2]["bogus"] = 1
    found = messages(data)
    assert len(found) == 4
    assert any("unknown key 'extra'" in m for m in found)
    assert any("unknown key 'bogus'" in m for m in found)


def test_a_newer_format_version_is_the_only_error_reported() -> None:
    for version in (FORMAT_VERSION + 1, FORMAT_VERSION + 1.0, 99):
        found = messages(spec(fxgen=version, name=5))
        assert len(found) == 1 and "upgrade fxgen" in found[0]
    assert "fxgen: 0 is not one of: 1, 2" in messages(spec(fxgen=0))[0]


# -- `$` matches before a trailing newline: fullmatch in the semantic checks ----------------------
def test_the_schema_alone_lets_a_trailing_newline_through() -> None:
    """Why the semantic checks re-test names: Python's `re.search` with `$` accepts "x\\n"."""
    pattern = load_schema()["$defs"]["identifier"]["pattern"]
    assert re.search(pattern, "x\n")
    jsonschema.validate("x\n", {"pattern": pattern})


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda d: d.update(name="Tiny\n"), "class name 'Tiny\\n' is not an identifier"),
        (lambda d: d["nodes"][0].update(name="x\n"), "node name 'x\\n' is not an identifier"),
        (lambda d: d["modules"]["fc"].update(kwargs={"bias\n": False}), "keyword argument 'bias\\n'"),
        (lambda d: d["nodes"][1].update(kwargs={"k\n": 1}), "keyword argument 'k\\n'"),
        (lambda d: d["modules"]["fc"].update(kwargs={"device": {"device": "cpu\n"}}), "invalid device 'cpu\\n'"),
        (lambda d: d["nodes"].insert(2, {"op": "call_method", "name": "r", "target": "relu\n", "args": ["%y"]}),
         "method name 'relu\\n' is not an identifier"),
    ],
)
def test_trailing_newlines_are_refused(change: Any, fragment: str) -> None:
    data = spec()
    change(data)
    found = messages(data)
    assert any(fragment in m for m in found), found


# -- names -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["class", "lambda", "match", "case", "_"])
def test_keywords_and_soft_keywords_are_not_node_names(name: str) -> None:
    assert "Python keyword" in messages(with_node({"op": "call_function", "name": name, "target": "torch.relu",
                                                   "args": ["%y"]}))[0]  # fmt: skip


@pytest.mark.parametrize("name", [*sorted(RESERVED_NAMES), "input", "len", "print", "id"])
def test_reserved_and_builtin_names(name: str) -> None:
    found = messages(with_node({"op": "call_function", "name": name, "target": "torch.relu", "args": ["%y"]}))
    assert len(found) == 1 and ("reserved" in found[0] or "builtin" in found[0])


def test_names_of_imported_packages_are_reserved() -> None:
    node = {"op": "call_function", "name": "operator", "target": "operator.neg", "args": ["%y"]}
    assert "reserved" in messages(with_node(node))[0]


@pytest.mark.parametrize("name", ["class", "F", "nn", "torch", "len", "Tiny\n", "_"])
def test_class_names(name: str) -> None:
    assert messages(spec(name=name))[0].startswith(f"class name {name!r}")


def test_output_name() -> None:
    data = spec()
    data["nodes"][2]["name"] = "output"
    assert validate_data(data).nodes[2].name is None  # torch.fx's own name: left out, as to_spec does
    data["nodes"][2]["name"] = "result"
    assert validate_data(data).nodes[2].name == "result"
    data["nodes"][1]["name"] = "output"
    data["nodes"][2]["args"] = ["%output"]
    assert messages(data) == ["node name 'output' is reserved for the output node; choose another name"]


def test_a_refused_name_does_not_cascade_into_reference_errors() -> None:
    data = spec()
    data["nodes"][1]["name"] = "len"
    data["nodes"][2]["args"] = ["%len"]
    assert len(messages(data)) == 1


def test_soft_keywords_are_fine_as_keyword_arguments() -> None:
    validate_data(with_node({"op": "call_function", "name": "s", "target": "torch.sum", "args": ["%y"],
                             "kwargs": {"type": None, "match": None}}))  # fmt: skip
    assert "Python keyword" in messages(with_node({"op": "call_function", "name": "s", "target": "torch.sum",
                                                   "args": ["%y"], "kwargs": {"from": 1}}))[0]  # fmt: skip


def test_a_keyword_argument_named_size_is_not_a_size_tag() -> None:
    """``kwargs: {size: ...}`` passes ``size=`` (torch.zeros(size=(2, 3))); only a ``{size: [...]}``
    value inside the arguments is the torch.Size tag that node arguments cannot hold."""
    zeros = {"op": "call_function", "name": "z", "target": "torch.zeros", "kwargs": {"size": {"tuple": [2, 3]}}}
    validate_data(with_node(zeros))
    tagged = {**zeros, "kwargs": {"size": {"size": [2, 3]}}}
    assert "torch.Size arguments as tuples" in messages(with_node(tagged))[0]


# -- paths ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["graph", "code", "meta", "recompile", "training", "forward", "_parameters",
                                  "blocks.training", "blocks.forward", "a..b", ".a", "a."])  # fmt: skip
def test_paths_that_collide_with_module_attributes(path: str) -> None:
    found = messages(spec(parameters={path: {"shape": [1]}}))
    assert len(found) == 1 and path.split(".")[-1] in found[0]


# Any name nn.Module accepts: real checkpoints carry keys like these (a Sequential built from an
# OrderedDict with dashes, a ModuleDict keyed by tuples' text, a submodule called `class`).
ODD_SEGMENTS = ["block1-0", "(0, 0)", "class", "match", "__dunder", "01", "a b", 'q"uote\\', "fc\n", "é", "\x00"]


@pytest.mark.parametrize("path", ["blocks.graph", "blocks.code", "layers.0", "_private", "a._b", "x_1.y2",
                                  *(f"a.{s}" for s in ODD_SEGMENTS), *ODD_SEGMENTS])  # fmt: skip
def test_fine_paths(path: str, tmp_path: Path) -> None:
    data = spec(parameters={path: {"shape": [1]}})
    data["nodes"].insert(2, {"op": "get_attr", "name": "g", "target": path})
    gm = fxgen.load(validate_data(data))
    assert path in gm.state_dict()
    generated = import_source(fxgen.generate(validate_data(data)), f"fine_path_{abs(hash(path))}", tmp_path)
    assert list(generated.Tiny().state_dict()) == list(gm.state_dict())


def test_every_declaration_collision_is_reported() -> None:
    found = messages(spec(parameters={"fc": {"shape": [1]}, "fc.extra": {"shape": [1]}},
                          buffers={"fc": {"shape": [1]}, "p.q": {"shape": [1]}, "p": {"shape": [1]}}))  # fmt: skip
    assert len(found) == 4
    assert sum("already declared" in m for m in found) == 2
    assert sum("inside module 'fc'" in m for m in found) == 1
    assert sum("inside buffer 'p'" in m for m in found) == 1


# -- placeholders -------------------------------------------------------------------------------------
def test_placeholder_defaults_must_come_last() -> None:
    data = spec()
    data["nodes"][:1] = [
        {"op": "placeholder", "name": "a", "default": 1},
        {"op": "placeholder", "name": "x"},
        {"op": "placeholder", "name": "b", "default": None},
        {"op": "placeholder", "name": "c"},
    ]
    found = messages(data)
    assert found == [
        "placeholder 'x' has no default but follows 'a', which has one; give it a default or move it before 'a'",
        "placeholder 'c' has no default but follows 'a', which has one; give it a default or move it before 'a'",
    ]


def test_placeholders_with_defaults_build_a_callable_forward() -> None:
    data = spec()
    data["nodes"][1:1] = [{"op": "placeholder", "name": "s", "type": "float", "default": 2.0}]
    gm = fxgen.load(validate_data(data))
    import torch

    assert gm(torch.zeros(1, 4)).shape == (1, 4)


# -- tensors ------------------------------------------------------------------------------------------
def test_integer_tensors() -> None:
    found = messages(spec(parameters={"steps": {"shape": [2], "dtype": "int64"}}))
    assert "requires_grad: false" in found[0]
    validate_data(spec(parameters={"steps": {"shape": [2], "dtype": "int64", "requires_grad": False}}))
    validate_data(spec(buffers={"mask": {"shape": [2], "dtype": "bool"}}))
    validate_data(spec(parameters={"z": {"shape": [2], "dtype": "complex64"}}))


def test_integral_floats_are_not_shapes_or_sizes() -> None:
    assert "write 4, not 4.0" in messages(spec(parameters={"p": {"shape": [2, 4.0]}}))[0]
    assert "groups is an integer" in messages(spec(parameters={"p": {"shape": [2, 2, 3], "init": {"dirac": {"groups": 1.0}}}}))[0]
    unflatten = {"class": "torch.nn.Unflatten", "args": [1, {"size": [2, 2.0]}]}
    assert "torch.Size entries are integers" in messages(spec(modules={"fc": BASE["modules"]["fc"], "u": unflatten}))[0]


# -- targets -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["fc.weight", "fc.bias"])
def test_get_attr_of_a_module_attribute(target: str) -> None:
    """Accepted, kept, and read from the module: the loaded graph returns the attribute itself."""
    data = with_node({"op": "get_attr", "name": "w", "target": target})
    data["nodes"][-1]["args"] = [["%y", "%w"]]
    checked = validate_data(data)
    assert [(n.op, n.name, n.target) for n in checked.nodes if n.op == "get_attr"] == [("get_attr", "w", target)]
    gm = fxgen.load(checked)
    _, read = gm(torch.randn(2, 4))
    assert read is gm.get_parameter(target)


def test_get_attr_inside_a_container_module() -> None:
    seq = {"class": "torch.nn.Sequential", "args": []}
    data = with_node({"op": "get_attr", "name": "w", "target": "fc.missing"})
    found = messages(data)
    assert found == ["module 'fc' (Linear) has no attribute 'missing'; it has weight, bias"]
    data = spec(modules={**BASE["modules"], "norm": {"class": "torch.nn.LayerNorm", "args": [4]}, "seq": seq})
    data["nodes"].insert(2, {"op": "get_attr", "name": "w", "target": "norm.weight"})
    validate_data(data)


def test_get_attr_of_an_invalid_module_is_not_reported_twice() -> None:
    data = with_node({"op": "get_attr", "name": "w", "target": "fc.weight"})
    data["modules"]["fc"]["args"] = [4, 4, 4, 4, 4, 4]
    found = messages(data)
    assert len(found) == 1 and "arguments do not fit" in found[0] and "Linear(in_features" in found[0]


def test_all_node_references_in_module_arguments_are_reported() -> None:
    data = spec()
    data["modules"]["fc"]["args"] = ["%x", "%y"]
    found = messages(data)
    assert len(found) == 2 and all("module arguments are constants" in m for m in found)


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:0", "cuda:12", "meta", "mps"])
def test_devices_accepted(device: str) -> None:
    """Accepted and kept: the graph calls ``.to`` with that ``torch.device``."""
    checked = validate_data(with_node({"op": "call_method", "name": "moved", "target": "to", "args": ["%y"],
                                       "kwargs": {"device": {"device": device}}}))  # fmt: skip
    moved = next(n for n in checked.nodes if n.name == "moved")
    assert (moved.op, moved.target, moved.args, moved.kwargs) == ("call_method", "to", ["%y"], {"device": {"device": device}})
    calls = [n for n in fxgen.load(checked).graph.nodes if n.op == "call_method"]
    assert [(n.target, n.kwargs) for n in calls] == [("to", {"device": torch.device(device)})]


@pytest.mark.parametrize("device", ["nonsense", "nonsense:0", "cuda:x", "cpu\n", "cuda:0:1"])
def test_devices_refused(device: str) -> None:
    found = messages(with_node({"op": "call_method", "name": "moved", "target": "to",
                                "args": ["%y", {"tuple": [{"device": device}]}]}))  # fmt: skip
    assert len(found) == 1 and ("device" in found[0])


def test_size_in_node_values_is_refused_everywhere() -> None:
    data = with_node({"op": "call_method", "name": "v", "target": "view", "args": ["%y", {"size": [4]}],
                      "kwargs": {"k": [{"size": [1]}]}})  # fmt: skip
    data["nodes"][0]["default"] = {"tuple": [{"size": []}]}
    found = messages(data)
    assert len(found) == 3 and all("write {tuple: [...]}" in m for m in found)


def test_types_are_canonical() -> None:
    data = spec()
    data["nodes"][0]["type"] = "typing.Optional[torch.Tensor]"
    canonical = validate_data(data).nodes[0].type
    assert canonical is not None
    data["nodes"][0]["type"] = canonical
    assert validate_data(data).nodes[0].type == canonical


def test_validate_data_locates_errors_in_its_json_rendering() -> None:
    data = spec()
    data["nodes"][1]["target"] = "fc2"
    with pytest.raises(fxgen.SpecError) as info:
        validate_data(data, path="model")
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.location.path == "model" and diagnostic.location.line > 1


def test_an_explicit_name_may_not_take_torch_fx_s_name_for_an_earlier_unnamed_node() -> None:
    data = with_node({"op": "call_function", "target": "torch.relu", "args": ["%y"]})
    validate_data(data)  # unnamed: torch.fx calls it "relu"
    data["nodes"].insert(3, {"op": "call_function", "name": "relu", "target": "torch.tanh", "args": ["%y"]})
    assert messages(data) == ["node name 'relu' was already taken by an earlier unnamed node; "
                              "give that node an explicit name"]  # fmt: skip


def test_identical_constructor_calls_are_tried_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Models repeat blocks: each distinct constructor call is tried on the meta device once,
    and a failing call is still reported at every module that makes it."""
    from fxgen.check import declarations
    from fxgen.check import validate as validation
    calls: list[Any] = []
    real = declarations._meta_build
    monkeypatch.setattr(declarations, "_meta_build", lambda entry, cls: calls.append(entry) or real(entry, cls))
    good = {"class": "torch.nn.Linear", "args": [4, 4]}
    bad = {"class": "torch.nn.Linear", "args": [4, -5]}
    spec = {"fxgen": 1, "name": "Repeat",
            "modules": {**{f"ok.{i}": dict(good) for i in range(5)}, **{f"bad.{i}": dict(bad) for i in range(3)}},
            "nodes": [{"op": "placeholder", "name": "x"},
                      *({"op": "get_attr", "name": f"w{i}", "target": f"ok.{i}.weight"} for i in range(5)),
                      {"op": "get_attr", "name": "nope", "target": "ok.0.nope"},
                      {"op": "output", "args": ["%x"]}]}  # fmt: skip
    with pytest.raises(fxgen.SpecError) as info:
        validation.validate_data(spec)
    assert len(calls) == 2  # get_attr checks use the instances already built
    assert info.value.diagnostics[-1].message == "module 'ok.0' (Linear) has no attribute 'nope'; it has weight, bias"
    info.value.diagnostics.pop()
    assert [d.message.split(":")[0] for d in info.value.diagnostics] == [f"module 'bad.{i}'" for i in range(3)]


@pytest.mark.parametrize(
    ("args", "refused"),
    [
        (["%x", None], None),  # x[None] on a tensor: known only when it runs
        (["abc", "%x"], None),
        ([["%x", 1], 0], None),
        (["abc", {"slice": [0, 2, None]}], None),
        ([{"dict": {"a": 1}}, "a"], None),
        ([5, 0], "TypeError: 'int' object is not subscriptable"),
        (["abc", 5], "IndexError: string index out of range"),
        ([["%x"], 3], "IndexError: list index out of range"),
        ([{"dict": {"a": 1}}, "b"], "KeyError: 'b'"),
        ([{"tuple": [1, 2]}, "a"], "TypeError: tuple indices must be integers or slices, not str"),
    ],
)
def test_a_constant_subscript_must_succeed(args: list[Any], refused: str | None) -> None:
    data = with_node({"op": "call_function", "name": "g", "target": "operator.getitem", "args": args})
    if refused is None:
        validate_data(data)
    else:
        assert messages(data) == [f"node 'g': indexing the constant in args[0] with args[1] always fails "
                                  f"({refused}); index a node (such as '%x') or fix the index"]  # fmt: skip


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("module", {"class": "torch.nn.Linaer", "args": [4, 4]}, "; did you mean 'torch.nn.Linear'?"),
        ("module", {"class": "nn.Linear", "args": [4, 4]}, "a spec names things in full; write 'torch.nn.Linear'"),
        ("module", {"class": "torch.nn.Conv2d", "args": [4, 4], "kwargs": {"kernel": 3}},
         "got an unexpected keyword argument 'kernel' (did you mean 'kernel_size'?)"),
        ("function", "torch.reul", "torch has no attribute 'reul' (fxgen looks names up without importing "
         "anything); did you mean 'torch.relu'?"),
        ("function", "F.gelu", "write 'torch.nn.functional.gelu'"),
        ("method", "viwe", "method 'viwe' is not a tensor or container method; did you mean 'view'?"),
        # a real tensor method the policy refuses gets the way to allow it, not a look-alike
        ("method", "register_hook", "allow it from trusted code with --allow torch.Tensor.register_hook"),
        ("function", "torch.qqqqqq", "torch has no attribute 'qqqqqq' (fxgen looks names up without importing anything)"),
    ],
)  # fmt: skip
def test_misspelt_names_get_a_suggestion(where: str, value: Any, message: str) -> None:
    if where == "module":
        data = spec(modules={"fc": value})
    elif where == "function":
        data = with_node({"op": "call_function", "name": "f", "target": value, "args": ["%y"]})
    else:
        data = with_node({"op": "call_method", "name": "f", "target": value, "args": ["%y"]})
    (found,) = messages(data)
    assert message in found, found
    if "did you mean" not in message:
        assert "did you mean" not in found


def test_an_error_inside_a_block_names_each_instance_and_where_it_is_built() -> None:
    text = """\
fxgen: 2
name: Net
classes:
  Attention:
    args: {dim: int, heads: int}
    modules:
      attn: {class: torch.nn.MultiheadAttention, args: [{arg: dim}, {arg: heads}]}
    nodes:
      - {op: placeholder, name: x}
      - {op: call_module, name: a, target: attn, args: ["%x", "%x", "%x"]}
      - {op: call_function, name: y, target: operator.getitem, args: ["%a", 0]}
      - {op: output, args: ["%y"]}
modules:
  ok: {class: Attention, args: [8, 2]}
  first: {class: Attention, args: [10, 3]}
  second: {class: Attention, args: [12, 5]}
nodes:
  - {op: placeholder, name: x}
  - {op: call_module, name: h, target: first, args: ["%x"]}
  - {op: call_module, name: y, target: second, args: ["%h"]}
  - {op: call_module, name: z, target: ok, args: ["%y"]}
  - {op: output, args: ["%z"]}
"""
    errors = yaml_errors(text)
    assert [(line, col) for line, col, _ in errors] == [(7, 13)]  # the class's own line, once for every instance
    assert ("(in Attention(dim=10, heads=3), built at s.yaml:15:10; also in Attention(dim=12, heads=5), built at "
            "s.yaml:16:11)") in errors[0][2]  # fmt: skip


def test_a_line_failing_in_many_instances_is_one_diagnostic_naming_two_and_counting_the_rest() -> None:
    text = """\
fxgen: 2
name: Net
classes:
  Blk:
    args: {c: int, t: int}
    modules:
      fc: {class: torch.nn.Sequential, args: [{repeat: "int(t != 1)", module: "torch.nn.Linear(c, c)"}]}
modules:
  a: Blk(4, 1)
  b: Blk(4, 6)
  c: Blk(8, 6)
  d: Blk(8, 1)
"""
    errors = yaml_errors(text)
    assert [(line, col) for line, col, _ in errors] == [(7, 11)]
    assert errors[0][2].endswith("(in Blk(c=4, t=1), built at s.yaml:9:6; also in Blk(c=4, t=6), built at s.yaml:10:6; "
                                 "also in Blk(c=8, t=6), built at s.yaml:11:6; and in 1 other instance)")  # fmt: skip
