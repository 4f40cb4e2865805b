"""The compact node form written (fxgen.spec.compacting, issue 32): every spec fxgen writes as YAML
(``Spec.to_yaml``, ``fxgen export``) says its nodes compactly wherever that desugars to exactly the
same nodes, so the text loads as the same Spec and generates the same file."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import torch
from helpers import property_budget
from hypothesis import given, settings
from strategies import spec_dicts

import fxgen
from fxgen.check.validate import as_spec, validate_document
from fxgen.policy.policy import policy_for
from fxgen.read.reader import parse_text
from fxgen.spec.compacting import compacted
from fxgen.spec.model import Spec

ROOT = Path(__file__).resolve().parents[2]


def _read(text: str) -> Spec:
    return validate_document(parse_text(text, "<written>"))


def assert_round_trips(spec: Spec) -> str:
    """The compact text and the canonical one load as ``spec``, and generate the same file."""
    text = spec.to_yaml()
    assert _read(text) == spec
    assert _read(spec.to_yaml(compact=False)) == spec
    # the same file but for the header's spec label and digest (the text's own)
    assert fxgen.generate(_read(text)).split("\n")[2:] == fxgen.generate(spec).split("\n")[2:]
    assert spec.to_yaml() == text  # deterministic
    return text


def test_examples_write_compactly_and_load_as_themselves(example: Path) -> None:
    spec = fxgen.load_spec(example)
    text = assert_round_trips(spec)
    assert len(text.splitlines()) < len(spec.to_yaml(compact=False).splitlines())


def test_the_generated_examples_export_compactly(example: Path) -> None:
    """Export the class each example generates (generated/*.py, traced as a user's model is)."""
    path = ROOT / "generated" / f"{example.stem}.py"
    module_spec = importlib.util.spec_from_file_location(f"fxgen_compacting_{example.stem}", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    try:
        module_spec.loader.exec_module(module)
        spec = fxgen.load_spec(example)
        exported = fxgen.export(getattr(module, spec.name)().eval())
    finally:
        del sys.modules[module_spec.name]
    text = assert_round_trips(exported)
    assert "op: call_module" not in text  # every module call says its op by its target


@settings(max_examples=property_budget(60), deadline=None)
@given(spec_dicts())
def test_random_specs_write_compactly_and_load_as_themselves(data: dict) -> None:
    assert_round_trips(as_spec(data, policy_for(None)))


CHAIN = textwrap.dedent("""\
    fxgen: 2
    name: Chain
    modules:
      fc: {class: torch.nn.Linear, args: [4, 4]}
    parameters:
      scale: {shape: [4]}
    nodes:
      - {op: placeholder, name: x, type: torch.Tensor}
      - {op: call_module, name: fc, target: fc, args: ['%x']}
      - {op: call_function, name: relu, target: torch.relu, args: ['%fc']}
      - {op: get_attr, name: fc_weight, target: fc.weight}
      - {op: get_attr, name: s, target: scale}
      - {op: call_function, name: mul, target: operator.mul, args: ['%relu', '%s']}
      - {op: call_method, name: sum_1, target: sum, args: ['%mul'], kwargs: {dim: -1, keepdim: true}}
      - {op: call_function, name: add, target: operator.add, args: ['%sum_1', '%fc_weight']}
      - {op: call_function, name: y, target: torch.add, args: ['%add', '%x']}
      - {op: alias, name: z, args: ['%y']}
      - {op: output, args: ['%z'], type: torch.Tensor}
    """)


def test_each_node_is_written_as_the_shortest_item_that_says_it() -> None:
    spec = _read(CHAIN)
    assert compacted(spec.to_dict())["nodes"] == [
        "fc",  # takes the implied input x as the previous value; unnamed: torch.fx names it fc
        {"relu": "torch.relu"},  # the next node does not read it
        {"op": "get_attr", "name": "fc_weight", "target": "fc.weight"},  # a module's tensor: a call_module target
        {"s": "scale"},
        {"mul": ["operator.mul", "%relu", "%"]},
        {"name": "sum_1", "target": ".sum", "args": ["%"], "kwargs": {"dim": -1, "keepdim": True}},
        {"add": ["operator.add", "%", "%fc_weight"]},  # read by the next step, but named as torch.fx would not
        {"y": ["torch.add", "%", "%x"]},
        {"z": "%y"},  # the implied output returns it
    ]
    assert_round_trips(spec)


def test_a_node_the_compact_form_cannot_say_stays_canonical() -> None:
    """A default, the input of a graph of several, an output of a tuple: canonical, mixed with
    compact steps."""
    text = textwrap.dedent("""\
        fxgen: 1
        name: Mixed
        nodes:
          - {op: placeholder, name: x, type: torch.Tensor}
          - {op: placeholder, name: scale, default: 2.0}
          - {op: call_function, name: relu, target: torch.relu, args: ['%x']}
          - {op: call_function, name: mul, target: operator.mul, args: ['%relu', '%scale']}
          - {op: output, args: [{tuple: ['%mul', '%relu']}]}
        """)
    spec = _read(text)
    assert compacted(spec.to_dict())["nodes"] == [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "placeholder", "name": "scale", "default": 2.0},
        {"relu": ["torch.relu", "%x"]},
        {"mul": ["operator.mul", "%", "%scale"]},
        {"op": "output", "args": [{"tuple": ["%mul", "%relu"]}]},
    ]
    assert_round_trips(spec)


def test_a_step_torch_fx_would_name_otherwise_stays_named() -> None:
    """``relu_1`` with no ``relu`` before it: desugared unnamed it would be ``relu``; the
    desugaring's check keeps its name."""
    text = CHAIN.replace("name: relu,", "name: relu_1,").replace("'%relu'", "'%relu_1'")
    spec = _read(text)
    nodes = compacted(spec.to_dict())["nodes"]
    assert nodes[1] == {"relu_1": "torch.relu"}
    assert_round_trips(spec)


class Chainy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.norm = torch.nn.LayerNorm(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.fc(x))) + x


def test_fxgen_export_writes_the_compact_form(tmp_path: Path) -> None:
    """``fxgen export`` writes the compact text, which loads as the spec ``fxgen.export`` gives."""
    from fxgen.cli.main import main

    out = tmp_path / "m.yaml"
    assert main(["export", f"{__name__}:Chainy", "--out", str(out), "--quiet"]) == 0
    text = out.read_text()
    assert text.endswith("nodes:\n  - fc\n  - norm\n  - torch.relu\n  - add: [operator.add, '%', '%x']\n")
    assert fxgen.load_spec(out) == fxgen.export(Chainy())


@settings(max_examples=property_budget(60), deadline=None)
@given(spec_dicts())
def test_random_specs_with_inputs_leave_their_placeholders_to_them(data: dict) -> None:
    """With ``inputs:`` declaring every placeholder (none has a default), a compact list writes
    none of them; with a default among them, every one is written."""
    placeholders = [node for node in data["nodes"] if node["op"] == "placeholder"]
    spec = as_spec({**data, "inputs": {node["name"]: {"shape": [2, 4]} for node in placeholders
                                      if "default" not in node}}, policy_for(None))  # fmt: skip
    text = assert_round_trips(spec)
    nodes = parse_text(text).data["nodes"]
    written = [item for item in nodes if isinstance(item, dict) and item.get("op") == "placeholder"]
    compact = any(not (isinstance(item, dict) and "op" in item) for item in nodes)
    assert written == ([] if compact and all("default" not in node for node in placeholders) else placeholders)


def test_the_placeholders_inputs_imply_are_left_to_them_in_their_order() -> None:
    text = CHAIN.replace("  - {op: placeholder, name: x, type: torch.Tensor}\n",
                         "  - {op: placeholder, name: x, type: torch.Tensor}\n"
                         "  - {op: placeholder, name: m, type: torch.Tensor}\n")  # fmt: skip
    text = text.replace("'%add', '%x'", "'%add', '%m'") + "inputs: {x: {shape: [2, 4]}, m: {shape: [2, 4]}}\n"
    nodes = compacted(_read(text).to_dict())["nodes"]
    assert nodes[:2] == ["fc", {"relu": "torch.relu"}]  # fc takes the first input, x
    assert nodes[-2] == {"y": ["torch.add", "%", "%m"]}
    assert_round_trips(_read(text))
    # the inputs in another order than the placeholders: they are written
    swapped = text.replace("inputs: {x: {shape: [2, 4]}, m: {shape: [2, 4]}}", "inputs: {m: {shape: [2, 4]}, x: {shape: [2, 4]}}")
    assert compacted(_read(swapped).to_dict())["nodes"][:3] == [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"}, {"op": "placeholder", "name": "m", "type": "torch.Tensor"},
        {"fc": ["fc", "%x"]}]  # fmt: skip
    assert_round_trips(_read(swapped))


def test_a_body_whose_nodes_run_its_modules_in_order_is_written_without_nodes() -> None:
    spec = fxgen.load_spec(ROOT / "model_specs" / "mobilenet_v2.yaml")
    text = assert_round_trips(spec)
    block = text[text.index("  Conv2dNormActivation:") : text.index("  InvertedResidual:")]
    assert "nodes" not in block and "'2': {class: torch.nn.ReLU6" in block
    assert "nodes:" in text[text.index("  InvertedResidual:") :]  # a conditional: written
