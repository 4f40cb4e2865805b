"""``fxgen transform`` and ``fxgen generate --shapes`` from the command line (in-process)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
import torch

import fxgen
from fxgen.cli.main import main
from fxgen.read.weights import read_weights
from fxgen.write.weights import write_weights

SPEC = textwrap.dedent("""\
    fxgen: 1
    name: Small
    modules:
      conv: {class: torch.nn.Conv2d, args: [3, 8, 3], kwargs: {bias: false}}
      bn: {class: torch.nn.BatchNorm2d, args: [8]}
      fc: {class: torch.nn.Linear, args: [8, 4]}
    nodes:
      - {op: placeholder, name: x}
      - {op: call_module, name: c, target: conv, args: ["%x"]}
      - {op: call_module, name: b, target: bn, args: ["%c"]}
      - {op: call_function, name: r, target: torch.relu, args: ["%b"]}
      - {op: call_method, name: m, target: mean, args: ["%r", {tuple: [2, 3]}]}
      - {op: call_module, name: y, target: fc, args: ["%m"]}
      - {op: call_function, name: z, target: operator.add, args: ["%y", 1.0]}
      - {op: output, args: ["%z"]}
    inputs:
      x: {shape: [batch, 3, 16, 16]}
    """)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "small.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_transform_writes_the_transformed_spec_and_weights(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch.manual_seed(0)
    state = {k: torch.randn_like(v) if v.is_floating_point() else v
             for k, v in fxgen.load("specs/small.yaml").state_dict().items()}  # fmt: skip
    state["bn.running_var"] = state["bn.running_var"].abs() + 0.5
    write_weights("w.safetensors", state)
    argv = ["transform", "specs/small.yaml", "--pass", "fuse_conv_bn",
            "--pass", "replace:{target: operator.add, by: operator.sub}", "--pass", "decompose:{rules: [relu]}",
            "-o", "out.yaml", "--weights", "w.safetensors", "--out-weights", "out.safetensors"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "--pass 1:1:1: note: fuse_conv_bn: folded 1 batch norm into the layer before it (bn)" in err
    assert "--pass 2:1:1: note: replace: operator.add -> operator.sub in 1 node (z)" in err
    spec = fxgen.load_spec("out.yaml")
    assert "bn" not in spec.modules and spec.inputs["x"].shape == ["batch", 3, 16, 16] and not spec.passes
    x = torch.randn(2, 3, 16, 16)
    before = fxgen.load("specs/small.yaml", weights="w.safetensors").eval()
    after = fxgen.load("out.yaml", weights="out.safetensors").eval()
    with torch.no_grad():
        want = before(x) - 2.0  # (y + 1) -> (y - 1)
        got = after(x)
    torch.testing.assert_close(got, want, rtol=2**-19, atol=2**-19 * want.abs().max().item())
    assert set(read_weights("out.safetensors")) == {"conv.weight", "conv.bias", "fc.weight", "fc.bias"}


def test_a_bad_pass_is_located_in_its_option_and_nothing_is_written(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["transform", "specs/small.yaml", "--pass", "eliminate_dead_code",
            "--pass", "replace:{target: operator.add, by: operator.mull}", "--pass", "fuse", "-o", "out.yaml"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("--pass 2:1:36: error: pass 'replace': cannot resolve 'operator.mull'")
    assert err[1].startswith("--pass 3:1:1: error: unknown pass 'fuse'")
    assert not (project / "out.yaml").exists()


def test_a_rule_that_does_not_fit_is_reported_and_options_are_checked(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rule whose placeholders cannot take a matching node's arguments leaves the node as it is
    and says so; --out-weights without --weights is refused."""
    bad = "decompose:{rules: [{targets: [torch.relu], nodes: [{op: placeholder, name: x}, {op: placeholder, name: y}, {op: output, args: ['%y']}]}]}"
    assert main(["transform", "specs/small.yaml", "--pass", bad, "-o", "out.yaml"]) == 0  # relu(b) cannot bind (x, y)
    assert "does not take the arguments of node 'r'" in capsys.readouterr().err
    assert main(["transform", "specs/small.yaml", "--pass", "fuse_conv_bn", "-o", "out.yaml",
                 "--out-weights", "o.safetensors"]) == 1  # fmt: skip
    assert "--out-weights needs --weights" in capsys.readouterr().err


def test_passes_from_pyproject_are_trusted_configuration(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "mypasses.py").write_text(textwrap.dedent("""\
        import torch

        def negate(gm, args, context):
            out = next(n for n in gm.graph.nodes if n.op == "output")
            with gm.graph.inserting_before(out):
                neg = gm.graph.call_function(torch.neg, (out.args[0],))
            out.args = (neg,)
            gm.recompile()
            context.note("negated the output")
            return gm

        def broken(gm, args, context):
            raise RuntimeError("this pass always fails")
        """))
    (project / "pyproject.toml").write_text(
        '[tool.fxgen]\npasses = {negate = "mypasses:negate", broken = "mypasses:broken"}\n'
    )
    import sys

    sys.path.insert(0, str(project))
    try:
        assert main(["transform", "specs/small.yaml", "--pass", "broken", "-o", "out.yaml"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("--pass 1:1:1: error: pass 'broken' failed: RuntimeError: this pass always fails")
        assert not (project / "out.yaml").exists()
        assert main(["transform", "specs/small.yaml", "--pass", "negate", "-o", "out.yaml"]) == 0
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("mypasses", None)
        from fxgen.passes import registry

        registry._REGISTERED.pop("negate", None)
        registry._REGISTERED.pop("broken", None)
    assert "note: negated the output" in capsys.readouterr().err
    assert fxgen.load_spec("out.yaml").nodes[-2].target == "torch.neg"


def test_generate_shapes_annotates_forward(project: Path) -> None:
    assert main(["generate", "--shapes", "specs"]) == 0
    source = (project / "generated" / "small.py").read_text()
    assert "        c = self.conv(x)  # float32[batch, 8, 14, 14]\n" in source
    assert "        return z  # float32[batch, 4]\n" in source
    ast.parse(source)
    assert main(["generate", "--check", "--shapes", "specs"]) == 0
    assert main(["generate", "--check", "specs"]) == 1  # without --shapes the file would differ


def test_long_commented_statements_are_what_black_makes(project: Path) -> None:
    import black

    long = SPEC.replace("name: m, target: mean", "name: a_rather_long_name_for_the_mean_of_the_features_over_space, target: mean")
    long = long.replace('args: ["%m"]', 'args: ["%a_rather_long_name_for_the_mean_of_the_features_over_space"]')
    long = long.replace("shape: [batch, 3, 16, 16]", "shape: [batch_size_of_the_images, 3, 16, 16]")
    (project / "specs" / "small.yaml").write_text(long)
    source = fxgen.generate("specs/small.yaml", shapes=True)
    assert any(len(line) > 100 for line in long.splitlines())
    assert black.format_str(source, mode=black.Mode(line_length=100)) == source
    assert "# float32[batch_size_of_the_images, 8]" in source


def test_shapes_true_in_a_spec(project: Path) -> None:
    (project / "specs" / "small.yaml").write_text(SPEC + "shapes: true\n")
    assert main(["generate", "specs"]) == 0
    assert "# float32[batch, 4]" in (project / "generated" / "small.py").read_text()
