"""The spec model: dict <-> YAML <-> JSON <-> files round trips, readable and stable YAML, and
spec -> GraphModule -> spec, on every example and on random specs (tests/strategies.py)."""

from __future__ import annotations

import builtins
import dataclasses
import keyword
import tempfile
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from conftest import EXAMPLES
from helpers import property_budget
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import inputs_for, spec_dicts

import fxgen
from fxgen.check.checker import RESERVED_NAMES
from fxgen.check.validate import validate_data, validate_document
from fxgen.policy.policy import DEFAULT_POLICY
from fxgen.read.reader import parse_text
from fxgen.spec.model import Spec
from fxgen.spec.values import decode, decode_kwargs, encode

WIDTH = 100


def example_specs() -> list[Spec]:
    return [fxgen.load_spec(p) for p in EXAMPLES]


def _usable_class_name(data: dict[str, Any]) -> bool:
    """spec_dicts draws class names like `F`, which would shadow `torch.nn.functional as F` in
    generated code; fxgen refuses those (tests/bad_specs/class_name_*.yaml)."""
    name = data["name"]
    return name not in RESERVED_NAMES and not hasattr(builtins, name) and not keyword.iskeyword(name)



@st.composite
def texty_spec_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """`spec_dicts` plus arbitrary text where a spec carries text: the docstring and a string
    default (any characters YAML and JSON can hold, including `%`, quotes, newlines, NEL)."""
    data = draw(spec_dicts(max_nodes=8, weights_digest=True).filter(_usable_class_name))
    if draw(st.booleans()):
        data["doc"] = draw(st.text(max_size=40) | st.text(st.characters(codec="utf-8"), min_size=100, max_size=300))
    if draw(st.booleans()):
        text = draw(st.text(max_size=20))
        last = max(i for i, n in enumerate(data["nodes"]) if n["op"] == "placeholder")
        data["nodes"].insert(last + 1, {"op": "placeholder", "name": "label_text", "type": "str",
                                        "default": encode(text)})  # fmt: skip
    return data


# -- the round trips, as one function applied to examples and random specs -----------------------
def assert_round_trips(spec: Spec, directory: Path) -> None:
    text = spec.to_yaml()
    from_yaml = validate_document(parse_text(text, "<yaml>"))
    assert from_yaml == spec
    assert validate_document(parse_text(spec.to_json(), "<json>", json_syntax=True)) == spec
    assert Spec.from_dict(spec.to_dict()) == spec
    for suffix in (".yaml", ".json"):
        path = directory / f"spec{suffix}"
        spec.to_file(path)
        assert fxgen.load_spec(path) == spec
    assert (directory / "spec.yaml").read_text(encoding="utf-8") == text
    # stable: the same bytes every time, and a fixed point of read -> write
    assert spec.to_yaml() == text
    assert from_yaml.to_yaml() == text
    assert_readable(spec, spec.to_yaml(compact=False))  # (the compact text: tests/spec/test_compacting.py)
    assert max(map(len, text.splitlines())) <= WIDTH or max(map(len, spec.to_yaml(compact=False).splitlines())) > WIDTH


def assert_readable(spec: Spec, text: str) -> None:
    """Each node is one `  - {...}` line when that fits in WIDTH columns, and that line alone
    reads back as the node."""
    lines = text.splitlines()
    start = lines.index("nodes:") + 1
    node_lines = [line for line in lines[start:] if line.startswith("  - ")]
    assert len(node_lines) == len(spec.nodes)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml escapes what it deems unprintable
    for node, line in zip(spec.nodes, node_lines, strict=True):
        one_line = "  - " + yaml.dump(node.to_dict(), Dumper=dumper, default_flow_style=True, width=10**9,
                                      allow_unicode=True, sort_keys=False).strip()  # fmt: skip
        if len(one_line) <= WIDTH and "\n" not in one_line:
            assert len(line) <= WIDTH, line
            assert parse_text(line.removeprefix("  - ")).data == node.to_dict()


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[p.stem for p in EXAMPLES])
def test_examples_round_trip(index: int, tmp_path: Path) -> None:
    assert_round_trips(example_specs()[index], tmp_path)


def assert_graph_round_trip(data: dict[str, Any], spec: Spec) -> None:
    """spec -> fxgen.load -> fxgen.to_spec gives the spec back; the GraphModule holds exactly
    the declared state, and runs."""
    gm = fxgen.load(spec)
    assert fxgen.to_spec(gm) == dataclasses.replace(spec, weights_digest=None)  # the model does not carry it
    assert set(gm.state_dict()) == declared_state_keys(data)
    gm.eval()
    with torch.no_grad():
        gm(*inputs_for(data))


# One property for all round trips: drawing a spec costs more than checking it.
@settings(max_examples=property_budget(30))
@given(texty_spec_dicts())
def test_random_specs_round_trip(data: dict[str, Any]) -> None:
    spec = validate_data(data)
    with tempfile.TemporaryDirectory() as directory:
        assert_round_trips(spec, Path(directory))
    assert_graph_round_trip(data, spec)


def test_examples_yaml_keeps_nodes_on_one_line() -> None:
    """The examples' own short nodes come out one per line (what the readable check relies on)."""
    spec = example_specs()[[p.stem for p in EXAMPLES].index("resnet_block")]
    lines = spec.to_yaml(compact=False).splitlines()
    assert "  - {op: placeholder, name: x, type: torch.Tensor}" in lines
    assert '  - {op: call_module, name: c1, target: conv1, args: ["%x"]}' in lines or \
        "  - {op: call_module, name: c1, target: conv1, args: ['%x']}" in lines  # fmt: skip
    assert max(map(len, lines)) <= WIDTH


def test_long_nodes_are_split_into_block_fields() -> None:
    long_target = "torch.nn.functional.scaled_dot_product_attention"
    node = {"op": "call_function", "name": "attended", "target": long_target,
            "args": ["%x", "%x", "%x"], "kwargs": {"attn_mask": None, "dropout_p": 0.0, "is_causal": False}}
    data = {"fxgen": 1, "name": "Long", "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"}, node, {"op": "output", "args": ["%attended"]}]}
    for compact, head in ((False, "  - op: call_function\n    name: attended\n"), (True, "  - name: attended\n")):
        text = validate_data(data).to_yaml(compact=compact)
        assert head in text
        assert max(map(len, text.splitlines())) <= WIDTH
        assert validate_document(parse_text(text)).to_dict() == data


def test_strings_that_yaml_12_reads_as_numbers_stay_strings() -> None:
    """PyYAML's dumper only knows YAML 1.1; fxgen reads YAML 1.2, where 1e5 is a float."""
    data = {"fxgen": 1, "name": "Quoted", "doc": "1e5", "nodes": [
        {"op": "placeholder", "name": "x", "default": {"tuple": ["1e5", "0o17", "-.5e3", "yes", "010", "~"]}},
        {"op": "output", "args": ["%x"]}]}  # fmt: skip
    spec = validate_data(data)
    again = validate_document(parse_text(spec.to_yaml()))
    assert again == spec
    assert again.doc == "1e5"


AWKWARD = ["\n", "a\nb", "x" * 1500, "k: v", "\u2028", "a\u2029b", "\x85", "\r\n", "'", "- a", "? q", "#c",
           "x\n" * 60, "long " * 50 + "\u2028 tail " * 5, "  padded  ", "\t", "\ufeff", "%", "é" * 120]  # fmt: skip


@pytest.mark.parametrize("text", AWKWARD, ids=[repr(t)[:20] for t in AWKWARD])
def test_awkward_strings_as_keys_and_values(text: str) -> None:
    """Line breaks YAML knows (\\n, \\r, NEL, U+2028/9) in keys and values, keys longer than
    YAML's 1024-character limit for implicit keys: the YAML must still read back the same."""
    data = {"fxgen": 1, "name": "Awkward", "doc": text, "nodes": [
        {"op": "placeholder", "name": "x", "default": {"dict": {text: [1, encode(text)], "b": encode(text)}}},
        {"op": "output", "args": ["%x"]}]}  # fmt: skip
    spec = validate_data(data)
    text_form = spec.to_yaml()
    again = validate_document(parse_text(text_form))
    assert again == spec
    assert again.to_yaml() == text_form


# -- spec -> GraphModule -> spec -----------------------------------------------------------------
def declared_state_keys(data: dict[str, Any]) -> set[str]:
    """state_dict() keys a spec declares: its parameters, persistent buffers, and the modules'
    own state (each declared module built on its own, prefixed with its path)."""
    keys = set(data.get("parameters", {}))
    keys |= {path for path, b in data.get("buffers", {}).items() if b.get("persistent", True)}
    for path, entry in data.get("modules", {}).items():
        cls = DEFAULT_POLICY.resolve_module_class(entry["class"])
        module = cls(*decode(entry.get("args", []), _no_ref), **decode_kwargs(entry.get("kwargs", {}), _no_ref))
        keys |= {f"{path}.{key}" for key in module.state_dict()}
    return keys


def _no_ref(name: str) -> Any:
    raise AssertionError(name)


def test_state_keys_include_module_state() -> None:
    data = {"fxgen": 1, "name": "Keys",
            "modules": {"blocks.0.norm": {"class": "torch.nn.LayerNorm", "args": [4]}},
            "parameters": {"scale": {"shape": [4]}},
            "buffers": {"stats.mean": {"shape": [4]}, "scratch": {"shape": [4], "persistent": False}},
            "nodes": [{"op": "placeholder", "name": "x"}, {"op": "output", "args": ["%x"]}]}  # fmt: skip
    assert declared_state_keys(data) == {"scale", "stats.mean", "blocks.0.norm.weight", "blocks.0.norm.bias"}
    assert set(fxgen.load(data).state_dict()) == declared_state_keys(data)


def test_to_dict_leaves_defaults_out() -> None:
    data = {"fxgen": 1, "name": "Defaults",
            "parameters": {"w": {"shape": [2], "dtype": "float32", "init": "zeros", "requires_grad": True}},
            "buffers": {"b": {"shape": [2], "persistent": True}},
            "nodes": [{"op": "placeholder", "name": "x"}, {"op": "output", "args": ["%x"]}]}  # fmt: skip
    out = validate_data(data).to_dict()
    assert out["parameters"] == {"w": {"shape": [2]}}
    assert out["buffers"] == {"b": {"shape": [2]}}
    assert list(out) == ["fxgen", "name", "parameters", "buffers", "nodes"]
