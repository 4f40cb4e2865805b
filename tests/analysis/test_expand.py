"""``fxgen show --depth N``: blocks opened in place (fxgen.analysis.expand) are the same model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import ROOT, marked_examples

import fxgen
from fxgen.analysis.expand import expand_blocks
from fxgen.analysis.pictures import mermaid
from fxgen.analysis.shapes import analyse
from fxgen.assemble.modes import ModeGraphModule
from fxgen.assemble.module import default_instance
from fxgen.cli.main import main
from fxgen.policy.policy import DEFAULT_POLICY
from tests.analysis.test_pictures import _parse_mermaid
from tests.helpers import assert_same, example_inputs


@pytest.mark.parametrize("example", marked_examples())  # the large examples: CI's second step
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_an_opened_spec_is_the_same_model(example: Path, depth: int) -> None:
    spec = fxgen.load_spec(example)
    opened = expand_blocks(spec, depth)
    torch.manual_seed(0)
    model = fxgen.load(spec)
    same = fxgen.load(opened)
    same.load_state_dict(model.state_dict(), strict=True)  # the same tensors at the same paths
    if isinstance(model, ModeGraphModule):  # opened at its defaults: the eval-mode graph (default_instance)
        model.eval(), same.eval()
    inputs = example_inputs(example)
    torch.manual_seed(1)
    expected = model(**inputs)
    torch.manual_seed(1)  # dropout draws the same
    assert_same(same(**inputs), expected)
    if spec.inputs:
        before, after = analyse(default_instance(spec)[0], DEFAULT_POLICY), analyse(opened, DEFAULT_POLICY)
        assert (after.flops, sum(after.parameters.values())) == (before.flops, sum(before.parameters.values()))
    if not spec.classes:
        assert opened is spec


def test_blocks_open_level_by_level() -> None:
    spec = fxgen.load_spec(ROOT / "model_specs" / "resnet.yaml")
    targets = {depth: {n.target for n in expand_blocks(spec, depth).nodes if n.op == "call_module"} for depth in (1, 2)}
    assert "layer1" in {n.target for n in spec.nodes}
    assert {"layer1.0.conv1", "layer1.0.bn1", "layer2.0.downsample"} <= targets[1]  # a Sequential of blocks opens on the way
    assert "layer1" not in targets[1] and "layer2.0.downsample" not in targets[2]  # downsample is a Sequential of layers
    assert {"layer2.0.downsample.0", "layer2.0.downsample.1"} <= targets[2]


def test_pictures_of_opened_blocks_parse_and_box_each_instance() -> None:
    spec = expand_blocks(fxgen.load_spec(ROOT / "model_specs" / "resnet.yaml"), 2)
    parsed = _parse_mermaid(mermaid(spec, analyse(spec, DEFAULT_POLICY)))
    assert len(parsed["vertices"]) == len(spec.nodes)
    assert {"layer1", "layer1.0", "layer2.0.downsample"} <= {s["title"] for s in parsed["subgraphs"]}


def test_show_depth_from_the_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["show", "--depth", "1", str(ROOT / "model_specs" / "vit.yaml")]) == 0
    out = capsys.readouterr().out
    assert "encoder.0.self_attention" in out and "float32[batch" in out
    with pytest.raises(SystemExit):
        main(["show", "--depth", "-1", str(ROOT / "model_specs" / "vit.yaml")])
    assert "a depth is a whole number of levels" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"  # inputs that do not flow: the error names the spec's own line, as without --depth
    bad.write_text((ROOT / "model_specs" / "width_net.yaml").read_text().replace("[batch, 3, 32, 32]", "[batch, 4, 32, 32]"))
    assert main(["show", "--depth", "2", str(bad)]) == 1
    assert f"{bad}:" in capsys.readouterr().err
