"""Declaration shorthands (fxgen/spec/shorthand.py): a module written as a call string and an
argument declared by its default each desugar to exactly the canonical declaration, every later
error points at the text they were written in, and `fxgen expand` prints the canonical form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from helpers import diagnostics

import fxgen
from fxgen.check.checker import RESERVED_NAMES
from fxgen.cli.main import main
from fxgen.read.reader import parse_text
from fxgen.spec.compact import desugared
from fxgen.spec.shorthand import CallError, desugar_declarations, parse_call


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("torch.nn.ReLU()", {"class": "torch.nn.ReLU"}),
        ("torch.nn.Conv2d(cin, hidden, 1, stride=s, bias=False)",
         {"class": "torch.nn.Conv2d", "args": [{"arg": "cin"}, {"arg": "hidden"}, 1],
          "kwargs": {"stride": {"arg": "s"}, "bias": False}}),
        ("Conv(c1, 2 * c, (k - 1) // 2, e=-0.5, f=1e-3, g=-3,)",
         {"class": "Conv", "args": [{"arg": "c1"}, {"arg": "2 * c"}, {"arg": "(k - 1) // 2"}],
          "kwargs": {"e": -0.5, "f": 0.001, "g": -3}}),
        ("torch.nn.Upsample(None, 2, 'nearest', align_corners=True)",
         {"class": "torch.nn.Upsample", "args": [None, 2, "nearest"], "kwargs": {"align_corners": True}}),
        ('X("%x", "a, (b)", flag=x == y)', {"class": "X", "args": ["%%x", "a, (b)"], "kwargs": {"flag": {"arg": "x == y"}}}),
        ("X((1, c), (2,), [a, [3]], ())",
         {"class": "X", "args": [{"tuple": [1, {"arg": "c"}]}, {"tuple": [2]}, [{"arg": "a"}, [3]], {"tuple": []}]}),
        ("torch.nn.Sequential(Conv(c, c, 3), torch.nn.ReLU())",
         {"class": "torch.nn.Sequential", "args": [{"module": {"class": "Conv", "args": [{"arg": "c"}, {"arg": "c"}, 3]}},
                                                   {"module": {"class": "torch.nn.ReLU"}}]}),
        ("torch.nn.ModuleList([Block(c), Block(max(c, 8))])",
         {"class": "torch.nn.ModuleList", "args": [[{"module": {"class": "Block", "args": [{"arg": "c"}]}},
                                                    {"module": {"class": "Block", "args": [{"arg": "max(c, 8)"}]}}]]}),
    ],
)  # fmt: skip
def test_a_call_string_is_exactly_its_canonical_declaration(text: str, canonical: dict[str, Any]) -> None:
    assert parse_call(text) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("torch.nn.Linear", "is not a call"),
        ("torch.nn.Linear(4, 4) + 1", "is not a call"),
        ("min(4, 4)", "an expression's function"),
        ("X(a=1, 2)", "positional arguments come first"),
        ("X(a=1, a=2)", "given twice"),
        ("X(a, , b)", "missing between two commas"),
        ("X((a)", "a bracket is not closed"),
        ("X('a)", "a quote is not closed"),
        ("X(a])", "unbalanced"),
        ("X('a\\b')", "without backslashes"),
        ("X(torch.float16)", "'.' is not allowed"),
        ("X(a if b)", "expected 'else'"),
        ("X(" * 40 + ")" * 40, "nests more than 32 deep"),
        ("X(" + "1, " * 1000 + ")", "at most 2000 characters"),
    ],
)
def test_a_call_string_that_is_not_well_formed_says_what_is_allowed(text: str, message: str) -> None:
    with pytest.raises(CallError, match=None) as info:
        parse_call(text)
    assert message in str(info.value)


_SPEC = """\
fxgen: 2
name: Net
args: {c: 8, gain: 0.5, flag: true, kind: {type: int, default: 2}}
modules:
  fc: torch.nn.Linear(c, c, bias=flag)
  seq:
    class: torch.nn.Sequential
    args: [{repeat: kind, module: "torch.nn.Dropout(gain)"}, {module: torch.nn.ReLU()}]
  head: {call: "torch.nn.Linear(c, 2 * c)", init: {bias: zeros}, if: flag}
nodes: [fc, seq]
"""


def test_arguments_by_default_and_modules_as_calls_desugar_to_the_canonical_declarations() -> None:
    data, sources, problems = desugar_declarations(parse_text(_SPEC).data)
    assert not problems and sources
    assert data["args"] == {"c": {"type": "int", "default": 8}, "gain": {"type": "float", "default": 0.5},
                            "flag": {"type": "bool", "default": True}, "kind": {"type": "int", "default": 2}}  # fmt: skip
    block = {"classes": {"B": {"args": {"c": "int", "k": 3}, "nodes": []}}}
    assert desugar_declarations(block)[0]["classes"]["B"]["args"] == {"c": "int", "k": {"type": "int", "default": 3}}
    assert data["modules"] == {
        "fc": {"class": "torch.nn.Linear", "args": [{"arg": "c"}, {"arg": "c"}], "kwargs": {"bias": {"arg": "flag"}}},
        "seq": {"class": "torch.nn.Sequential", "args": [
            {"repeat": {"arg": "kind"}, "module": {"class": "torch.nn.Dropout", "args": [{"arg": "gain"}]}},
            {"module": {"class": "torch.nn.ReLU"}}]},
        "head": {"class": "torch.nn.Linear", "args": [{"arg": "c"}, {"arg": "2 * c"}], "init": {"bias": "zeros"}, "if": "flag"},
    }  # fmt: skip


def test_a_spec_without_shorthands_is_left_as_it_is() -> None:
    data = parse_text((ROOT / "model_specs" / "resnet.yaml").read_text()).data
    assert desugar_declarations(data) == (data, None, [])


@pytest.mark.parametrize(
    ("old", "new", "line", "column", "message"),
    [
        # errors found after desugaring point at the text the declaration was written in
        ("torch.nn.Linear(c, c, bias=flag)", "torch.nn.Nope(c)", 5, 7, "cannot resolve 'torch.nn.Nope'"),
        ("torch.nn.Linear(c, c, bias=flag)", "torch.nn.Linear(c, c * 0.5)", 5, 7, "out_features of torch.nn.Linear is an int"),
        ('"torch.nn.Dropout(gain)"', '"torch.nn.Dropout(nope)"', 8, 35, "'nope'"),
        ('"torch.nn.Linear(c, 2 * c)"', '"torch.nn.Linear(c, 2 * c, nope=1)"', 9, 9, "unexpected keyword argument 'nope'"),
        ("init: {bias: zeros}", "init: {nope: zeros}", 9, 58, "nope"),
        ("gain: 0.5", "gain: 2", 7, 5, "dropout probability has to be between 0 and 1"),
        ("torch.nn.Linear(c, c, bias=flag)", "torch.nn.Sequential(__import__('os'))", 5, 7, "no block '__import__'"),
    ],
)
def test_errors_after_desugaring_point_at_the_shorthand(old: str, new: str, line: int, column: int, message: str) -> None:
    assert old in _SPEC
    found = diagnostics(_SPEC.replace(old, new))
    assert len(found) == 1 and found[0][:2] == (line, column) and message in found[0][2], found


def test_shorthand_and_compact_problems_are_reported_together() -> None:
    text = _SPEC.replace("torch.nn.Linear(c, c, bias=flag)", "torch.nn.Linear(c,, c)").replace("nodes: [fc, seq]",
                                                                                                "nodes: [fc, {a: 1, b: 2}]")  # fmt: skip
    with pytest.raises(fxgen.SpecError) as info:
        desugared(parse_text(text), RESERVED_NAMES)
    assert [(d.location.line, d.location.column) for d in info.value.diagnostics] == [(5, 7), (10, 13)]


def test_the_three_families_are_written_with_the_shorthands() -> None:
    for name in ("mobilenet_v2.yaml", "yolov8.yaml", "gpt2.yaml"):
        data = parse_text((ROOT / "model_specs" / name).read_bytes()).data
        assert desugar_declarations(data)[1], name


def test_expand_prints_canonical_declarations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "net.yaml"
    spec.write_text(_SPEC)
    assert main(["expand", str(spec)]) == 0
    canonical = tmp_path / "canonical.yaml"
    canonical.write_text(capsys.readouterr().out)
    data = parse_text(canonical.read_bytes()).data
    assert desugar_declarations(data)[1] is None and all(isinstance(d, dict) and "class" in d for d in data["modules"].values())
    assert fxgen.load_spec(canonical) == fxgen.load_spec(spec)
    assert fxgen.generate(canonical).split("\n", 3)[3] == fxgen.generate(spec).split("\n", 3)[3]


def test_a_class_imported_from_a_file_brings_the_classes_its_calls_build(tmp_path: Path) -> None:
    (tmp_path / ".fxgen-root").write_text("")
    (tmp_path / "blocks.yaml").write_text(
        "fxgen: 2\nname: Blocks\nclasses:\n"
        "  Inner:\n    args: {c: int}\n    modules: {fc: 'torch.nn.Linear(c, c)'}\n    nodes: [fc]\n"
        "  Leaf:\n    args: {c: int}\n    modules: {fc: 'torch.nn.Linear(c, c)'}\n    nodes: [fc]\n"
        "  Outer:\n    args: {c: int}\n"
        "    modules:\n      body: torch.nn.Sequential(Inner(c), torch.nn.ReLU())\n"
        "      tail: {class: torch.nn.Sequential, args: [{module: Leaf(c)}]}\n"
        "    nodes: [body, tail]\n"
        "nodes: [torch.relu]\n"
    )  # fmt: skip
    net = tmp_path / "net.yaml"
    net.write_text("fxgen: 2\nname: Net\nimports:\n  - {from: blocks.yaml, classes: [Outer]}\n"
                   "modules:\n  body: Outer(8)\nnodes: [body]\n")  # fmt: skip
    spec = fxgen.load_spec(net)
    assert list(spec.classes) == ["Inner", "Leaf", "Outer"]


_SEQUENTIAL = """\
fxgen: 2
name: Net
args: {d: 4, n: 2}
modules:
  body:
    - torch.nn.Linear(d, d)
    - {repeat: n, module: torch.nn.ReLU()}
    - ["torch.nn.Linear(d, 2 * d)", {class: torch.nn.Tanh}]
    - {for: k, in: [1, 2], module: "torch.nn.Linear(d * k, 2 * d * k)"}
nodes: [out: body]
"""


def test_a_list_of_modules_is_a_sequential_of_them() -> None:
    doc = desugared(parse_text(_SEQUENTIAL, "net.yaml"), RESERVED_NAMES)
    linear = {"class": "torch.nn.Linear", "args": [{"arg": "d"}, {"arg": "2 * d"}]}
    assert doc.data["modules"]["body"] == {
        "class": "torch.nn.Sequential",
        "args": [
            {"module": {"class": "torch.nn.Linear", "args": [{"arg": "d"}, {"arg": "d"}]}},
            {"repeat": {"arg": "n"}, "module": {"class": "torch.nn.ReLU"}},
            {"module": {"class": "torch.nn.Sequential", "args": [{"module": linear}, {"module": {"class": "torch.nn.Tanh"}}]}},
            {"for": "k", "in": [1, 2], "module": {"class": "torch.nn.Linear", "args": [{"arg": "d * k"}, {"arg": "2 * d * k"}]}},
        ],
    }
    # each item, however deep, is located where it is written
    assert doc.locate(("modules", "body", "args", 2, "module", "args", 0, "module")).line == 8
    assert doc.locate(("modules", "body", "args", 3, "module")).line == 9
    assert doc.locate(("modules", "body", "args", 1, "repeat")).line == 7
    assert fxgen.generate(parse_text(_SEQUENTIAL).data).count("nn.Sequential(") == 2


@pytest.mark.parametrize(
    ("old", "new", "line", "column", "message"),
    [
        ('["torch.nn.Linear(d, 2 * d)"', "[torch.nn.Linear(d, 2 * d)", 8, 8,
         "'torch.nn.Linear(d' is not a call: its parentheses do not close. YAML cuts an unquoted call inside [...]"),
        ("{class: torch.nn.Tanh}", "3", 8, 37, "3 is not a module: a list of modules is a torch.nn.Sequential of them"),
        ("{repeat: n,", '{repeat: "n +",', 7, 16, "a repeat count is an integer or an expression"),
        ("{class: torch.nn.Tanh}", "torch.nn.Tanh(e)", 8, 37, "'e' is not an argument of class 'Net'"),
    ],
)  # fmt: skip
def test_a_bad_item_of_a_list_of_modules_is_one_error_at_that_item(old: str, new: str, line: int, column: int, message: str) -> None:
    assert old in _SEQUENTIAL
    found = diagnostics(_SEQUENTIAL.replace(old, new))
    assert len(found) == 1 and found[0][:2] == (line, column) and message in found[0][2], found


def test_a_repeat_or_for_declared_as_a_module_is_a_module_list() -> None:
    text = """\
fxgen: 2
name: Net
args: {d: 4, n: 2}
modules:
  blocks: {repeat: n, module: "torch.nn.Linear(d, d)"}
  levels: {for: c, in: [d, 2 * d], module: "torch.nn.Linear(c, d)"}
nodes:
  - {for: i, in: n, nodes: [h: "blocks.{i}"], carry: {x: "%h"}}
  - out: [levels.0, "%x"]
"""
    doc = desugared(parse_text(text, "net.yaml"), RESERVED_NAMES)
    assert doc.data["modules"] == {
        "blocks": {"class": "torch.nn.ModuleList",
                   "args": [[{"repeat": {"arg": "n"}, "module": {"class": "torch.nn.Linear", "args": [{"arg": "d"}, {"arg": "d"}]}}]]},
        "levels": {"class": "torch.nn.ModuleList",
                   "args": [[{"for": "c", "in": [{"arg": "d"}, {"arg": "2 * d"}],
                              "module": {"class": "torch.nn.Linear", "args": [{"arg": "c"}, {"arg": "d"}]}}]]},
    }  # fmt: skip
    assert doc.locate(("modules", "levels", "args", 0, 0, "module")).column == 44
    assert doc.locate(("modules", "blocks", "class")).line == 5
    source = fxgen.generate(parse_text(text).data)
    assert "self.blocks = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])" in source
    found = diagnostics(text.replace("2 * d]", "2 * e]"))
    assert found[0][:2] == (6, 28) and "'e' is not an argument" in found[0][2]
