"""Conditionals and repeats of nodes in generated code: ``if self.use_res:``, ``for m in
self.m:`` / ``for i, m in enumerate(self.m):`` / ``for i in range(...)``, ``hs.append(h)``, the
arguments ``forward`` reads kept as attributes by ``__init__``, ``training`` as
``self.training``; and the generated class computes exactly what ``fxgen.load`` computes, at
several argument values (its graph one instance's: the branch taken, the loops unrolled)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import generated_class, import_source

import fxgen
from fxgen.check.validate import validate_data

LINEAR = {"class": "torch.nn.Linear", "args": [{"arg": "dim"}, {"arg": "dim"}]}

SPEC: dict[str, Any] = {
    "fxgen": 2,
    "name": "Looped",
    "args": {"n": {"type": "int", "default": 3}, "dim": {"type": "int", "default": 8},
             "skip": {"type": "bool", "default": True}},
    "modules": {
        "layers": {"class": "torch.nn.ModuleList", "args": [[{"repeat": {"arg": "n"}, "module": LINEAR}]]},
        "extra": {"class": "torch.nn.ModuleList", "args": [[{"repeat": {"arg": "n + 1"}, "module": LINEAR}]]},
        "act": {"class": "torch.nn.ReLU"},
    },
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "alias", "name": "prev", "args": ["%x"]},
        {"for": "i", "in": "n", "nodes": [
            {"op": "call_module", "name": "y", "target": "layers.{i}", "args": ["%prev"]},
            {"if": "i % 2 == 0",
             "then": [{"op": "call_module", "name": "z", "target": "act", "args": ["%y"]}],
             "else": [{"op": "call_function", "name": "z", "target": "torch.mul", "args": ["%y", {"arg": "i + 1"}]}]},
        ], "carry": {"prev": "%z"}, "collect": "zs"},
        {"op": "call_function", "name": "parts", "target": "operator.add", "args": [["%x"], "%zs"]},
        {"op": "call_function", "name": "joined", "target": "torch.cat", "args": ["%parts"]},
        {"if": "skip",
         "then": [{"op": "call_function", "name": "out", "target": "operator.add", "args": ["%prev", "%x"]}],
         "else": [{"op": "alias", "name": "out", "args": ["%prev"]}]},
        {"op": "alias", "name": "acc", "args": ["%out"]},
        {"for": "j", "in": "n - 1 if n > 0 else 0", "nodes": [
            {"op": "call_module", "name": "e", "target": "extra.{j}", "args": ["%acc"]},
            {"op": "call_function", "name": "s", "target": "operator.sub", "args": ["%e", {"arg": "j * dim"}]},
        ], "carry": {"acc": "%s"}},
        {"op": "output", "args": [{"tuple": ["%acc", "%joined"]}]},
    ],
}  # fmt: skip


def test_the_forward_reads_as_a_person_writes_it() -> None:
    source, _ = generated_class(validate_data(SPEC))
    forward = source[source.index("    def forward") :]
    assert forward == '''    def forward(self, x: torch.Tensor):
        prev = x
        zs = []
        for i, layer in enumerate(self.layers):
            y = layer(prev)
            if i % 2 == 0:
                z = self.act(y)
            else:
                z = torch.mul(y, i + 1)
            prev = z
            zs.append(z)
        parts = [x] + zs
        joined = torch.cat(parts)
        if self.skip:
            out = prev + x
        else:
            out = prev
        acc = out
        for j in range(self.n - 1 if self.n > 0 else 0):
            e = self.extra[j](acc)
            s = e - (j * self.dim)
            acc = s
        return (acc, joined)
'''
    assert "        self.n = n\n        self.dim = dim\n        self.skip = skip\n        self.layers = " in source


@pytest.mark.parametrize("args", [{}, {"n": 0}, {"n": 1, "skip": False}, {"n": 4, "dim": 4}])
def test_the_generated_class_computes_what_load_computes(args: dict[str, Any]) -> None:
    spec = validate_data(SPEC)
    _, cls = generated_class(spec)
    torch.manual_seed(0)
    loaded = fxgen.load(spec, args=args)
    torch.manual_seed(0)
    made = cls(**args)
    assert list(made.state_dict()) == list(loaded.state_dict())
    for key, tensor in made.state_dict().items():
        assert torch.equal(tensor, loaded.state_dict()[key]), key
    x = torch.randn(2, args.get("dim", 8))
    for got, expected in zip(made(x), loaded(x), strict=True):
        assert torch.equal(got, expected)


def test_the_loaded_graph_is_one_instance() -> None:
    gm = fxgen.load(validate_data(SPEC), args={"n": 3})
    names = [node.name for node in gm.graph.nodes]
    assert names == ["x", "y_0", "z_0", "y_1", "z_1", "y_2", "z_2", "parts", "joined", "out", "e_0", "s_0", "e_1", "s_1",
                     "output"]  # fmt: skip
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == [
        "layers.0", "act", "layers.1", "layers.2", "act", "extra.0", "extra.1"]  # fmt: skip


def test_training_is_self_training_and_both_switch_with_the_mode() -> None:
    data = copy.deepcopy(SPEC)
    data["nodes"][-1] = {"op": "call_function", "name": "d", "target": "torch.nn.functional.dropout",
                         "args": ["%acc", 0.5], "kwargs": {"training": {"arg": "training"}}}  # fmt: skip
    data["nodes"].append({"op": "output", "args": ["%d"]})
    spec = validate_data(data)
    source, cls = generated_class(spec)
    assert "        d = F.dropout(acc, 0.5, training=self.training)\n" in source
    gm, generated = fxgen.load(spec), cls()  # (a GraphModule with one graph per mode: fxgen.assemble.modes)
    generated.load_state_dict(gm.state_dict(), strict=True)
    x = torch.randn(2, 8)
    for mode in (True, False, True):
        gm.train(mode)
        generated.train(mode)
        torch.manual_seed(0)
        want = gm(x)
        torch.manual_seed(0)
        got = generated(x)
        assert torch.equal(want, got)


TOP: dict[str, Any] = {
    "fxgen": 2,
    "name": "Top",
    "args": {"n": {"type": "int", "default": 2}},
    "modules": {"m": {"class": "torch.nn.ModuleList", "args": [[{"repeat": {"arg": "n"},
                                                                 "module": {"class": "torch.nn.Linear", "args": [4, 4]}}]]}},
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "call_function", "name": "y", "target": "torch.relu", "args": ["%x"]},
        {"for": "i", "in": "n", "nodes": [{"op": "call_module", "name": "h", "target": "m.{i}", "args": ["%y"]}],
         "collect": "hs"},
        {"op": "call_function", "name": "s", "target": "torch.stack", "args": ["%hs"]},
        {"op": "output", "args": ["%s"]},
    ],
    "inputs": {"x": {"shape": ["batch", 4]}},
}  # fmt: skip


def test_shape_comments_and_show_take_the_default_arguments_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A top class with a loop: shapes propagate through its graph at the default arguments; the
    comments go on the top-level statements, the table lists the unrolled nodes."""
    from fxgen.cli.main import main

    source = fxgen.generate(validate_data(TOP), shapes=True)
    assert "        y = torch.relu(x)  # float32[batch, 4]\n        hs = []\n        for m in self.m:\n" in source
    assert "        s = torch.stack(hs)  # float32[2, batch, 4]\n" in source
    path = tmp_path / "top.json"
    path.write_text(json.dumps(TOP))
    assert main(["show", "-q", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "h_0   m.0" in shown and "h_1   m.1" in shown


def test_nested_statements_are_black_exact() -> None:
    """Long conditions and long statements inside branches and loops are split as black splits
    them at their depth (headers wrapped in parentheses)."""
    import black

    from fxgen.blackstyle.formatter import MODE

    data = copy.deepcopy(SPEC)
    data["nodes"][5]["if"] = "skip and n > 1000000000 and n < 2000000000000 and n != 123456789 and n != 987654321"
    data["nodes"][2]["nodes"][1]["else"][0]["args"][1] = {
        "arg": "i + 1 + n * 100000000 + n * 200000000 + n * 300000000 + n * 400000000"}  # fmt: skip
    source, _ = generated_class(validate_data(data))
    assert "        if (\n            self.skip\n" in source
    assert black.format_str(source, mode=MODE) == source


HEADS: dict[str, Any] = {
    "fxgen": 2,
    "name": "Heads",
    "args": {"n": {"type": "int", "default": 3}, "dim": {"type": "int", "default": 4}},
    "modules": {
        "box": {"class": "torch.nn.ModuleList", "args": [[{"repeat": {"arg": "n"}, "module": LINEAR}]]},
        "cls": {"class": "torch.nn.ModuleList", "args": [[{"repeat": {"arg": "n"}, "module": LINEAR}]]},
    },
    "nodes": [
        {"op": "placeholder", "name": "xs", "type": "list[torch.Tensor]"},
        {"for": "i", "in": "n", "nodes": [
            {"op": "call_function", "name": "x", "target": "operator.getitem", "args": ["%xs", {"arg": "i"}]},
            {"op": "call_module", "name": "b", "target": "box.{i}", "args": ["%x"]},
            {"op": "call_module", "name": "c", "target": "cls.{i}", "args": ["%x"]},
            {"op": "call_function", "name": "level", "target": "torch.cat", "args": [{"tuple": ["%b", "%c"]}, 1]},
        ], "collect": "levels"},
        {"op": "output", "args": ["%levels"], "type": "list[torch.Tensor]"},
    ],
}  # fmt: skip


def test_a_loop_over_two_containers_zips_them_and_scripts(tmp_path: Path) -> None:
    """YOLOv8's Detect: each level calls the i-th item of two ModuleLists. ``self.box[i]``
    would not script (TorchScript indexes a ModuleList by a literal only); ``zip`` does."""
    spec = validate_data(copy.deepcopy(HEADS))
    source = fxgen.generate(spec)
    assert "        for i, (box, cls) in enumerate(zip(self.box, self.cls)):\n            x = xs[i]\n" in source
    torch.manual_seed(0)
    loaded = fxgen.load(spec)
    torch.manual_seed(0)
    made = import_source(source, "heads", tmp_path).Heads()  # from a file: TorchScript reads the source
    xs = [torch.randn(2, 4) for _ in range(3)]
    for got, expected in zip(torch.jit.script(made)(xs), loaded(xs), strict=True):
        assert torch.equal(got, expected)


def test_a_loop_walks_containers_whose_items_are_written_out() -> None:
    """As many items written out as a constant count says is the same walk as a repeat of them."""
    spec = copy.deepcopy(HEADS)
    spec["args"] = {"dim": {"type": "int", "default": 4}}
    for name in ("box", "cls"):
        spec["modules"][name]["args"] = [[{"module": LINEAR}] * 3]
    spec["nodes"][1]["in"] = 3
    assert "for i, (box, cls) in enumerate(zip(self.box, self.cls)):" in fxgen.generate(validate_data(spec))
    spec["nodes"][1]["in"] = 2  # fewer steps than items: indexed
    assert "b = self.box[i](x)" in fxgen.generate(validate_data(spec))


OPTIONAL = {
    "fxgen": 2,
    "name": "Optional",
    "args": {"downsample": {"type": "bool", "default": True}, "dim": {"type": "int", "default": 4}},
    "modules": {"fc": {"class": "torch.nn.Linear", "args": [{"arg": "dim"}, {"arg": "dim"}]},
                "downsample": {"class": "torch.nn.Linear", "args": [{"arg": "dim"}, {"arg": "dim"}], "if": "downsample"}},
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"if": "downsample",
         "then": [{"op": "call_module", "name": "identity", "target": "downsample", "args": ["%x"]}],
         "else": [{"op": "alias", "name": "identity", "args": ["%x"]}]},
        {"if": "not downsample", "then": [{"op": "call_function", "name": "y", "target": "torch.relu", "args": ["%x"]}],
         "else": [{"op": "alias", "name": "y", "args": ["%x"]}]},
        {"op": "call_module", "name": "fc", "target": "fc", "args": ["%y"]},
        {"op": "call_function", "name": "out", "target": "operator.add", "args": ["%fc", "%identity"]},
        {"op": "output", "args": ["%out"]},
    ],
}  # fmt: skip


@pytest.mark.parametrize("downsample", [True, False])
def test_a_bool_that_declares_the_module_of_its_name_asks_the_module(downsample: bool) -> None:
    """``downsample: bool`` declaring ``downsample`` (``if: downsample``), as export writes
    ResNet's BasicBlock: ``__init__`` sets the attribute to None before the module may take its
    place, and ``forward`` asks ``self.downsample is not None`` (``is None`` for ``not``); no
    bool kept under the module's name. The class computes what ``fxgen.load`` computes."""
    spec = validate_data(OPTIONAL)
    source, cls = generated_class(spec)
    assert "        self.downsample: nn.Linear | None = None\n        self.fc = " in source
    assert "        if downsample:\n            self.downsample = nn.Linear(dim, dim)\n" in source
    assert "        if self.downsample is not None:\n            identity = self.downsample(x)\n" in source
    assert "        if self.downsample is None:\n            y = torch.relu(x)\n" in source
    torch.manual_seed(0)
    loaded = fxgen.load(spec, args={"downsample": downsample})
    torch.manual_seed(0)
    made = cls(downsample=downsample)
    assert list(made.state_dict()) == list(loaded.state_dict())
    made.load_state_dict(loaded.state_dict(), strict=True)
    x = torch.randn(2, 4)
    assert torch.equal(made(x), loaded(x))
