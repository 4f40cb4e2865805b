"""Each built-in pass, checked against the untransformed model's outputs.

Where the pass keeps the arithmetic (dead code, constant folding, decomposing ``relu``, a rewrite
into the same operations) the outputs are compared with ``torch.equal``; where it changes what is
computed on purpose (``replace``), with the untransformed model's own intermediate values; for
fusion, numerically (see ``test_fuse_conv_bn_with_weights_is_numerically_the_same``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import HANG_WATCHDOG

import fxgen
from fxgen._errors import SpecError
from fxgen.write.weights import write_weights

SPEC = textwrap.dedent("""\
    fxgen: 1
    name: Small
    modules:
      conv: {class: torch.nn.Conv2d, args: [3, 8, 3], kwargs: {bias: false}}
      bn: {class: torch.nn.BatchNorm2d, args: [8]}
      fc: {class: torch.nn.Linear, args: [8, 4]}
      unused: {class: torch.nn.Linear, args: [8, 4]}
    buffers:
      scale: {value: [1.0, 2.0, 3.0, 4.0]}
    nodes:
      - {op: placeholder, name: x}
      - {op: call_module, name: c, target: conv, args: ["%x"]}
      - {op: call_module, name: b, target: bn, args: ["%c"]}
      - {op: call_function, name: r, target: torch.relu, args: ["%b"]}
      - {op: call_method, name: m, target: mean, args: ["%r", {tuple: [2, 3]}]}
      - {op: call_module, name: y, target: fc, args: ["%m"]}
      - {op: call_module, name: dead, target: unused, args: ["%m"]}
      - {op: get_attr, name: s, target: scale}
      - {op: call_function, name: s2, target: operator.mul, args: ["%s", 2.0]}
      - {op: call_function, name: z, target: operator.add, args: ["%y", "%s2"]}
      - {op: output, args: ["%z"]}
    inputs:
      x: {shape: [batch, 3, 16, 16]}
    """)


@pytest.fixture
def spec_path(tmp_path: Path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(SPEC)
    return path


def _weights(tmp_path: Path, spec_path: Path) -> tuple[Path, dict[str, torch.Tensor]]:
    """A trained-looking checkpoint: random values, batch norm statistics far from 0 and 1."""
    torch.manual_seed(1)
    gm = fxgen.load(spec_path)
    state = {k: torch.randn_like(v) if v.is_floating_point() else v for k, v in gm.state_dict().items()}
    state["bn.running_var"] = state["bn.running_var"].abs() + 0.5
    path = tmp_path / "small.safetensors"
    write_weights(path, state)
    return path, state


def _run(spec: Any, weights: Any, x: torch.Tensor) -> torch.Tensor:
    if isinstance(weights, dict):
        gm = fxgen.load(spec)
        gm.load_state_dict(weights, strict=True)
    else:
        gm = fxgen.load(spec, weights=weights)
    gm.eval()
    with torch.no_grad():
        return gm(x)


X = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))


def _transformed(spec_path: Path, weights: Path, passes: list[Any]) -> tuple[fxgen.Spec, dict[str, torch.Tensor]]:
    result = fxgen.transform(spec_path, passes, weights=weights)
    assert isinstance(result, tuple)
    return result


def test_eliminate_dead_code_removes_the_unused_call_and_module(tmp_path: Path, spec_path: Path) -> None:
    weights, _ = _weights(tmp_path, spec_path)
    spec, tensors = _transformed(spec_path, weights, ["eliminate_dead_code"])
    assert [n.name for n in spec.nodes if n.name == "dead"] == [] and "unused" not in spec.modules
    assert not any(k.startswith("unused.") for k in tensors)
    assert torch.equal(_run(spec, tensors, X), _run(spec_path, weights, X))


def test_replace_calls_the_other_function(tmp_path: Path, spec_path: Path) -> None:
    weights, _ = _weights(tmp_path, spec_path)
    spec, tensors = _transformed(spec_path, weights, [{"replace": {"target": "operator.add", "by": "operator.mul"}}])
    assert [n.target for n in spec.nodes if n.name == "z"] == ["operator.mul"]
    gm = fxgen.load(spec_path, weights=weights).eval()
    recorded: dict[str, torch.Tensor] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            recorded[n.name] = out = super().run_node(n)
            return out

    with torch.no_grad():
        Recorder(gm).run(X)
    assert torch.equal(_run(spec, tensors, X), recorded["y"] * recorded["s2"])


def test_decompose_relu_is_exactly_relu(tmp_path: Path, spec_path: Path) -> None:
    weights, _ = _weights(tmp_path, spec_path)
    notes: list[str] = []
    result = fxgen.transform(spec_path, [{"decompose": {"rules": ["relu"]}}], weights=weights, notes=notes)
    assert isinstance(result, tuple)
    spec, tensors = result
    targets = [n.target for n in spec.nodes if n.op == "call_function"]
    assert "torch.relu" not in targets and targets[:2] == ["operator.gt", "operator.mul"]
    assert torch.equal(_run(spec, tensors, X), _run(spec_path, weights, X))
    assert notes == ["<passes>:3:3: note: decompose: relu in r"]


@pytest.mark.parametrize("rule", ["relu6", "silu", "hardsigmoid", "hardswish", "mish"])
def test_the_library_rules_compute_their_function(rule: str) -> None:
    """Each library rule against the function it replaces, on values that reach every branch
    (clamps' bounds included). relu6/hardsigmoid/hardswish are the same arithmetic as torch's
    kernels (torch.equal); silu and mish are computed with other roundings by torch's fused
    kernels: within 4 float32 ulps of the output's magnitude."""
    fn = {"relu6": "torch.nn.functional.relu6", "silu": "torch.nn.functional.silu",
          "hardsigmoid": "torch.nn.functional.hardsigmoid", "hardswish": "torch.nn.functional.hardswish",
          "mish": "torch.nn.functional.mish"}[rule]  # fmt: skip
    data = {"fxgen": 1, "name": "M", "nodes": [
        {"op": "placeholder", "name": "x"},
        {"op": "call_function", "name": "y", "target": fn, "args": ["%x"]},
        {"op": "output", "args": ["%y"]}]}  # fmt: skip
    spec = fxgen.transform(data, [{"decompose": {"rules": [rule]}}])
    assert isinstance(spec, fxgen.Spec)
    assert fn not in [n.target for n in spec.nodes]
    x = torch.cat([torch.linspace(-8, 8, 4001), torch.tensor([-3.0, 3.0, 0.0, -0.0, 6.0])])
    got, want = fxgen.load(spec)(x), fxgen.load(data)(x)
    if rule in ("silu", "mish"):
        torch.testing.assert_close(got, want, rtol=4 * 2**-23, atol=4 * 2**-23)
    else:
        assert torch.equal(got, want)


def test_decompose_with_a_rule_of_the_spec(tmp_path: Path, spec_path: Path) -> None:
    """A rule written in place: relu(x) -> clamp(x, min=0), traced in place of the call."""
    weights, _ = _weights(tmp_path, spec_path)
    rule = {"targets": ["torch.relu"], "nodes": [
        {"op": "placeholder", "name": "x"},
        {"op": "call_function", "name": "out", "target": "torch.clamp", "args": ["%x"], "kwargs": {"min": 0.0}},
        {"op": "output", "args": ["%out"]}]}  # fmt: skip
    spec, tensors = _transformed(spec_path, weights, [{"decompose": {"rules": [rule]}}])
    assert "torch.clamp" in [n.target for n in spec.nodes]
    assert torch.equal(_run(spec, tensors, X), _run(spec_path, weights, X))


def test_rewrite_replaces_the_pattern_and_says_where(tmp_path: Path, spec_path: Path) -> None:
    weights, _ = _weights(tmp_path, spec_path)
    pattern = {"nodes": [{"op": "placeholder", "name": "a"},
                         {"op": "call_function", "name": "o", "target": "operator.mul", "args": ["%a", 2.0]},
                         {"op": "output", "args": ["%o"]}]}  # fmt: skip
    replacement = {"nodes": [{"op": "placeholder", "name": "a"},
                             {"op": "call_function", "name": "o", "target": "operator.add", "args": ["%a", "%a"]},
                             {"op": "output", "args": ["%o"]}]}  # fmt: skip
    notes: list[str] = []
    result = fxgen.transform(spec_path, [{"rewrite": {"pattern": pattern, "replacement": replacement}}],
                             weights=weights, notes=notes)  # fmt: skip
    assert isinstance(result, tuple)
    spec, tensors = result
    assert "s2" not in [n.name for n in spec.nodes]
    assert torch.equal(_run(spec, tensors, X), _run(spec_path, weights, X))  # s * 2 == s + s exactly
    assert notes == [f"{spec_path}:19:5: note: rewrite matched s2; replaced by o"]


def test_fold_constants_computes_the_constant_part_ahead(tmp_path: Path, spec_path: Path) -> None:
    assert fxgen.transform(spec_path, ["fold_constants"]).buffers["folded_s2"].value == [2.0, 4.0, 6.0, 8.0]  # type: ignore[union-attr]
    weights, state = _weights(tmp_path, spec_path)
    spec, tensors = _transformed(spec_path, weights, ["fold_constants"])
    assert torch.equal(torch.tensor(spec.buffers["folded_s2"].value), state["scale"] * 2)  # the model's constant
    assert "s2" not in [n.name for n in spec.nodes] and "dead" in [n.name for n in spec.nodes]
    assert torch.equal(_run(spec, tensors, X), _run(spec_path, weights, X))


def test_fold_constants_leaves_parameters_and_random_values(tmp_path: Path) -> None:
    data = {"fxgen": 1, "name": "M", "parameters": {"w": {"shape": [3], "init": "ones"}},
            "buffers": {"c": {"value": [1.0, 2.0, 3.0]}}, "nodes": [
        {"op": "placeholder", "name": "x"}, {"op": "get_attr", "name": "w", "target": "w"},
        {"op": "call_function", "name": "w2", "target": "operator.mul", "args": ["%w", 2.0]},
        {"op": "get_attr", "name": "c", "target": "c"},
        {"op": "call_function", "name": "noise", "target": "torch.rand_like", "args": ["%c"]},
        {"op": "call_function", "name": "a", "target": "operator.add", "args": ["%x", "%w2"]},
        {"op": "call_function", "name": "b", "target": "operator.add", "args": ["%a", "%noise"]},
        {"op": "output", "args": ["%b"]}]}  # fmt: skip
    spec = fxgen.transform(data, ["fold_constants"])
    assert isinstance(spec, fxgen.Spec)
    assert [n.name for n in spec.nodes] == [n["name"] for n in data["nodes"][:-1]] + [None]


FOLD_BOMB = textwrap.dedent("""\
    fxgen: 1
    name: FoldBomb
    buffers:
      c: {value: [[1.0]]}
    nodes:
      - {op: placeholder, name: x}
      - {op: get_attr, name: c, target: c}
      - {op: call_method, name: big, target: expand, args: ["%c", SIZE, SIZE]}
      - {op: call_function, name: f, target: FUNCTION, args: ["%big", "%big"]}
      - {op: call_function, name: y, target: operator.add, args: ["%x", "%f"]}
      - {op: output, args: ["%y"]}
    passes: [fold_constants]
    """)


@pytest.mark.parametrize(("n", "function", "cap"), [(5000, "torch.add", "FOLD_BYTES"), (2048, "torch.matmul", "FOLD_FLOPS")])
def test_fold_constants_is_bounded_before_it_computes(tmp_path: Path, n: int, function: str, cap: str) -> None:
    """The spec chooses what its constant part computes: a 4-byte constant expanded to 5000 x
    5000 and added to itself (100 MB allocated, 300 MB read and written), or a 2048 x 2048
    matmul of views (1.7e10 operations). Counted on meta tensors first, the fold stops at the
    node that goes beyond the cap, before it allocates or computes anything."""
    path = tmp_path / "bomb.yaml"
    path.write_text(FOLD_BOMB.replace("SIZE", str(n)).replace("FUNCTION", function))
    for run in (fxgen.generate, fxgen.load):
        with pytest.raises(SpecError) as info:
            run(path)
        (diagnostic,) = info.value.diagnostics
        assert (diagnostic.location.line, diagnostic.location.column) == (9, 5)  # the node `f`
        assert f"fxgen.passes.fold_constants.{cap}" in diagnostic.message and "node 'f'" in diagnostic.message
    done = subprocess.run([sys.executable, "-m", "fxgen", "validate", str(path)], capture_output=True, text=True,
                          timeout=HANG_WATCHDOG, check=False)  # fmt: skip
    assert done.returncode == 1 and f"{path}:9:5: error: fold_constants: with node 'f'" in done.stderr


def test_fold_constants_leaves_what_meta_tensors_cannot_tell_to_run_time() -> None:
    """``nonzero``'s size depends on the values: it is not folded (nor what uses it), so its
    cost is never computed ahead unbounded."""
    data = {"fxgen": 1, "name": "M", "buffers": {"c": {"value": [0.0, 2.0, 3.0]}, "d": {"value": [1.0]}}, "nodes": [
        {"op": "placeholder", "name": "x"}, {"op": "get_attr", "name": "c", "target": "c"},
        {"op": "get_attr", "name": "d", "target": "d"},
        {"op": "call_function", "name": "d2", "target": "operator.mul", "args": ["%d", 2.0]},
        {"op": "call_function", "name": "nz", "target": "torch.nonzero", "args": ["%c"]},
        {"op": "call_method", "name": "n", "target": "float", "args": ["%nz"]},
        {"op": "call_function", "name": "a", "target": "operator.add", "args": ["%x", "%n"]},
        {"op": "call_function", "name": "b", "target": "operator.add", "args": ["%a", "%d2"]},
        {"op": "output", "args": ["%b"]}]}  # fmt: skip
    spec = fxgen.transform(data, ["fold_constants"])
    assert isinstance(spec, fxgen.Spec)
    names = [n.name for n in spec.nodes]
    assert "nz" in names and "n" in names and "d2" not in names and "folded_d2" in spec.buffers


def test_fuse_conv_bn_with_weights_is_numerically_the_same(tmp_path: Path, spec_path: Path) -> None:
    """Fusion folds batch norm's scale gamma/sqrt(var + eps) into the convolution's weights and
    its shift into a bias: the fused weights are rounded once more (a float32 rounding each,
    2**-24 relative), and the convolution then sums 27 products of them (3x3x3), so outputs
    differ from the unfused model's by a few ulps of the products' magnitude. The tolerance,
    32 ulps (2**-19 relative) of the output's scale, covers 27 terms each off by about one ulp."""
    weights, _ = _weights(tmp_path, spec_path)
    spec, tensors = _transformed(spec_path, weights, ["fuse_conv_bn"])
    assert "bn" not in spec.modules and spec.modules["conv"].kwargs.get("bias", True) is True
    assert not any(k.startswith("bn.") for k in tensors) and "conv.bias" in tensors
    got, want = _run(spec, tensors, X), _run(spec_path, weights, X)
    scale = want.abs().max().item()
    assert not torch.equal(got, want)  # the fused weights really are other numbers
    torch.testing.assert_close(got, want, rtol=2**-19, atol=2**-19 * scale)


def test_linear_and_batch_norm_fuse_too(tmp_path: Path) -> None:
    data = {"fxgen": 1, "name": "M", "modules": {"fc": {"class": "torch.nn.Linear", "args": [6, 5]},
                                                 "bn": {"class": "torch.nn.BatchNorm1d", "args": [5]}},
            "nodes": [{"op": "placeholder", "name": "x"},
                      {"op": "call_module", "name": "h", "target": "fc", "args": ["%x"]},
                      {"op": "call_module", "name": "y", "target": "bn", "args": ["%h"]},
                      {"op": "output", "args": ["%y"]}]}  # fmt: skip
    torch.manual_seed(0)
    state = {k: torch.randn_like(v) if v.is_floating_point() else v for k, v in fxgen.load(data).state_dict().items()}
    state["bn.running_var"] = state["bn.running_var"].abs() + 0.5
    result = fxgen.transform(data, ["fuse_conv_bn"], weights=state)
    assert isinstance(result, tuple)
    spec, tensors = result
    assert list(spec.modules) == ["fc"]
    x = torch.randn(4, 6)
    got, want = _run(spec, tensors, x), _run(data, state, x)
    torch.testing.assert_close(got, want, rtol=2**-19, atol=2**-19 * want.abs().max().item())


def test_passes_in_a_spec_apply_when_loaded_and_generated(tmp_path: Path, spec_path: Path) -> None:
    text = SPEC + "passes:\n  - eliminate_dead_code\n  - {decompose: {rules: [relu]}}\n"
    path = tmp_path / "with_passes.yaml"
    path.write_text(text)
    torch.manual_seed(3)
    plain = fxgen.load(spec_path).eval()
    torch.manual_seed(3)
    transformed = fxgen.load(path).eval()
    assert "unused" not in dict(transformed.named_children())
    assert "torch.relu" not in str(transformed.code) and "> 0" in transformed.code
    with torch.no_grad():
        assert torch.equal(transformed(X), plain(X))  # the same random draws, the same outputs
    source = fxgen.generate(path)
    assert source.splitlines()[3] == ("# Transformed by the spec's passes: eliminate_dead_code, decompose. "
                                      "The code is the transformed spec's.")  # fmt: skip
    assert "torch.relu" not in source and "self.unused" not in source


def test_transforms_are_deterministic(spec_path: Path) -> None:
    passes = ["eliminate_dead_code", {"decompose": {"rules": ["relu"]}}, "fuse_conv_bn", "fold_constants"]
    first = fxgen.transform(spec_path, passes)
    assert isinstance(first, fxgen.Spec)
    assert all(fxgen.transform(spec_path, passes).to_yaml() == first.to_yaml() for _ in range(2))  # type: ignore[union-attr]


def test_an_unknown_pass_or_bad_argument_is_located(spec_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        fxgen.transform(spec_path, ["fuse_conv_bm", {"replace": {"target": "operator.add", "by": "os.system"}}])
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("<passes>:3:3: error: unknown pass 'fuse_conv_bm'; did you mean 'fuse_conv_bn'?")
    assert lines[1].startswith("<passes>:7:11: error: pass 'replace': target 'os.system' is not allowed")


def test_registered_passes_run_from_code_and_never_from_a_spec(tmp_path: Path, spec_path: Path) -> None:
    from fxgen.passes import registry

    def negate(gm: torch.fx.GraphModule, args: Any, context: Any) -> torch.fx.GraphModule:
        out = next(n for n in gm.graph.nodes if n.op == "output")
        with gm.graph.inserting_before(out):
            neg = gm.graph.call_function(torch.neg, (out.args[0],))
        out.args = (neg,)
        gm.recompile()
        return gm

    fxgen.register_pass("negate", negate)
    try:
        weights, _ = _weights(tmp_path, spec_path)
        spec, tensors = _transformed(spec_path, weights, ["negate"])
        assert torch.equal(_run(spec, tensors, X), -_run(spec_path, weights, X))
        path = tmp_path / "evil.yaml"
        path.write_text(SPEC + "passes: [negate]\n")
        with pytest.raises(SpecError, match="unknown pass 'negate'"):
            fxgen.load_spec(path)
    finally:
        registry._REGISTERED.pop("negate")
    with pytest.raises(ValueError, match="built-in"):
        fxgen.register_pass("replace", negate)


_NEW_PASS = textwrap.dedent("""\
    \"\"\"A built-in pass as one module: ``negate_output`` negates the output, ``times`` times.\"\"\"

    import torch

    from fxgen.check.passes import PassArguments
    from fxgen.passes.registry import BuiltinPass


    def negate_output(gm, args, context):
        out = next(n for n in gm.graph.nodes if n.op == "output")
        value = out.args[0]
        with gm.graph.inserting_before(out):
            for _ in range(args["times"]):
                value = gm.graph.call_function(torch.neg, (value,))
        out.args = (value,)
        gm.recompile()
        context.note(f"negated {args['times']} times")
        return gm


    def _check(checker, at, args, body):
        if "times" in args and not isinstance(args["times"], int):
            checker.error((*at, "times"), "negate_output: `times` is an integer")


    PASS = BuiltinPass("negate_output", negate_output, PassArguments(frozenset({"times"}), frozenset({"times"}), _check))
    """)


def test_a_built_in_pass_is_one_module(tmp_path: Path, spec_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module of fxgen.passes that declares ``PASS`` is a built-in pass: validation checks its
    arguments as it declares them, and transform runs it; nothing else names it."""
    import sys

    import fxgen.passes
    from fxgen.passes.registry import builtin_passes

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "negate_output.py").write_text(_NEW_PASS)
    monkeypatch.setattr(fxgen.passes, "__path__", [*fxgen.passes.__path__, str(tmp_path / "pkg")])
    builtin_passes.cache_clear()
    try:
        assert "negate_output" in builtin_passes()
        notes: list[str] = []
        spec = fxgen.transform(spec_path, [{"negate_output": {"times": 3}}], notes=notes)
        assert isinstance(spec, fxgen.Spec)
        assert [n.target for n in spec.nodes if n.op == "call_function"][-3:] == ["torch.neg"] * 3
        assert notes[-1].endswith("note: negated 3 times")
        path = tmp_path / "spec.yaml"
        path.write_text(SPEC + "passes: [{negate_output: {times: three}}, {negate_output: {}}]\n")
        with pytest.raises(SpecError) as caught:
            fxgen.load_spec(path)
        lines = str(caught.value).splitlines()
        assert lines[0].endswith("spec.yaml:24:34: error: negate_output: `times` is an integer"), lines
        assert lines[1].endswith("spec.yaml:24:44: error: pass 'negate_output' needs the argument 'times'"), lines
    finally:
        monkeypatch.undo()
        sys.modules.pop(f"{fxgen.passes.__name__}.negate_output", None)
        builtin_passes.cache_clear()
    assert "negate_output" not in builtin_passes()


ROOT = Path(__file__).parents[2]
FLATTEN = {"targets": ["torch.flatten"], "nodes": [
    {"op": "placeholder", "name": "x"}, {"op": "placeholder", "name": "start_dim"},
    {"op": "call_method", "name": "out", "target": "flatten", "args": ["%x", "%start_dim"]},
    {"op": "output", "args": ["%out"]}]}  # fmt: skip


def test_format_2_top_graphs_are_transformed_and_blocks_kept(tmp_path: Path) -> None:
    """resnet.yaml (blocks): torch.flatten(x, 1) decomposed into x.flatten(1) in the top graph,
    the blocks and every declaration kept as written; the same random draws, the same outputs."""
    path = ROOT / "model_specs" / "resnet.yaml"
    original = fxgen.load_spec(path)
    spec = fxgen.transform(path, [{"decompose": {"rules": [FLATTEN]}}])
    assert isinstance(spec, fxgen.Spec) and spec.fxgen == 2
    assert spec.classes == original.classes and spec.modules == original.modules and spec.inputs == original.inputs
    assert "torch.flatten" not in [n.target for n in spec.nodes] and "flatten" in [n.target for n in spec.nodes]
    x = torch.randn(2, 3, 64, 64)
    torch.manual_seed(5)
    want = fxgen.load(path).eval()(x)
    torch.manual_seed(5)
    got = fxgen.load(spec).eval()(x)
    assert torch.equal(got, want)
    with_passes = tmp_path / "resnet.yaml"
    with_passes.write_text(path.read_text() + "passes: [{decompose: {rules: [{targets: [torch.flatten], nodes: "
                           "[{op: placeholder, name: x}, {op: placeholder, name: s}, {op: call_method, name: o, "
                           "target: flatten, args: ['%x', '%s']}, {op: output, args: ['%o']}]}]}}]\n")  # fmt: skip
    torch.manual_seed(5)
    assert torch.equal(fxgen.load(with_passes).eval()(x), want)
    assert "torch.flatten" not in fxgen.generate(with_passes)


def test_format_2_dead_code_drops_unused_declarations() -> None:
    data = {"fxgen": 2, "name": "M", "classes": {"Block": {"modules": {"fc": {"class": "torch.nn.Linear",
                                                                               "args": [4, 4]}},
            "nodes": [{"op": "placeholder", "name": "x"}, {"op": "call_module", "name": "y", "target": "fc",
                                                            "args": ["%x"]}, {"op": "output", "args": ["%y"]}]}},
            "modules": {"used": {"class": "Block"}, "unused": {"class": "Block"}},
            "nodes": [{"op": "placeholder", "name": "x"},
                      {"op": "call_module", "name": "a", "target": "used", "args": ["%x"]},
                      {"op": "call_module", "name": "b", "target": "unused", "args": ["%x"]},
                      {"op": "output", "args": ["%a"]}]}  # fmt: skip
    result = fxgen.transform(data, ["eliminate_dead_code"], weights=dict(fxgen.load(data).state_dict()))
    assert isinstance(result, tuple)
    spec, tensors = result
    assert list(spec.modules) == ["used"] and set(tensors) == {"used.fc.weight", "used.fc.bias"}
    gm = fxgen.load(spec)
    gm.load_state_dict(tensors, strict=True)
    x = torch.randn(3, 4)
    torch.manual_seed(0)
    before = fxgen.load(data)
    before.load_state_dict({**dict(before.state_dict()), **tensors})
    assert torch.equal(gm(x), before(x))


def test_format_2_refuses_passes_that_replace_modules() -> None:
    with pytest.raises(SpecError, match="the passes replaced module 'conv1'; a format-2 spec keeps its declarations"):
        fxgen.transform(ROOT / "model_specs" / "resnet.yaml", ["fuse_conv_bn"])


def test_load_with_weights_runs_the_specs_passes_on_the_files_tensors(tmp_path: Path, spec_path: Path) -> None:
    """A spec whose passes fuse: fxgen.load with the untransformed model's weights file returns
    the fused model holding the fused tensors (numerically the unfused model, as above)."""
    weights, _ = _weights(tmp_path, spec_path)
    fused = tmp_path / "fused.yaml"
    fused.write_text(SPEC + "passes: [fuse_conv_bn]\n")
    gm = fxgen.load(fused, weights=weights).eval()
    assert "bn" not in dict(gm.named_children()) and gm.conv.bias is not None
    with torch.no_grad():
        got = gm(X)
    want = _run(spec_path, weights, X)
    torch.testing.assert_close(got, want, rtol=2**-19, atol=2**-19 * want.abs().max().item())


def test_the_generated_code_of_a_spec_with_passes_computes_the_transformed_model(
    tmp_path: Path, spec_path: Path
) -> None:
    """The generated file is plain code of the transformed spec, shape comments included: given
    the transformed model's tensors, it computes what fxgen.load of the spec computes."""
    from tests.helpers import import_source

    path = tmp_path / "with_passes.yaml"
    path.write_text(SPEC + "shapes: true\npasses: [eliminate_dead_code, {decompose: {rules: [relu]}}, fold_constants]\n")
    source = fxgen.generate(path)
    assert "  # float32[batch, 8, 14, 14]" in source and "torch.relu" not in source
    module = import_source(source, "with_passes", tmp_path)
    generated = module.Small()
    gm = fxgen.load(path)
    generated.load_state_dict(gm.state_dict(), strict=True)
    generated.eval()
    gm.eval()
    with torch.no_grad():
        assert torch.equal(generated(X), gm(X))


def test_fusion_is_checked_on_the_declared_inputs(
    tmp_path: Path, spec_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `inputs:`, the pass compares the fused model with the unfused one itself: a fusion
    that computed the weights wrong (here: off by one part in 10**4) is an error at the pass."""
    import copy as copying

    import torch.fx.experimental.optimization as optimization

    weights, _ = _weights(tmp_path, spec_path)
    notes: list[str] = []
    fxgen.transform(spec_path, ["fuse_conv_bn"], weights=weights, notes=notes)
    assert notes[0].startswith("<passes>:3:3: note: fuse_conv_bn: folded 1 batch norm into the layer before it "
                               "(bn); checked on the declared inputs: largest difference ")  # fmt: skip
    right = optimization.fuse_conv_bn_eval

    def wrong(conv: torch.nn.Module, bn: torch.nn.Module) -> torch.nn.Module:
        fused = copying.deepcopy(right(conv, bn))
        with torch.no_grad():
            fused.weight.mul_(1.0001)
        return fused

    monkeypatch.setattr(optimization, "fuse_conv_bn_eval", wrong)
    with pytest.raises(SpecError, match=r"<passes>:3:3: error: fuse_conv_bn: the fused model computes other values"):
        fxgen.transform(spec_path, ["fuse_conv_bn"], weights=weights)


def test_a_model_failing_while_fuse_conv_bn_checks_it_prints_no_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    """fuse_conv_bn runs the model on the declared inputs; a model that fails there is a located
    error, and torch.fx's own traceback print (GraphModule.__call__) does not reach stderr."""
    data = {"fxgen": 1, "name": "M", "passes": ["fuse_conv_bn"], "inputs": {"x": {"shape": [2, 4]}},
            "nodes": [{"op": "placeholder", "name": "x"},
                      {"op": "call_function", "name": "y", "target": "torch.nn.functional.linear"},
                      {"op": "output", "args": ["%y"]}]}  # fmt: skip
    with pytest.raises(fxgen.SpecError, match="pass 'fuse_conv_bn' failed: TypeError"):
        fxgen.load(data)
    assert "Traceback" not in capsys.readouterr().err


HUGE = textwrap.dedent("""\
    fxgen: 1
    name: Huge
    modules:
      conv: {class: torch.nn.Conv2d, args: [1, 1, 1]}
      bn: {class: torch.nn.BatchNorm2d, args: [1]}
      fc: {class: torch.nn.Linear, args: [1048576, 1048576]}
    nodes:
      - {op: placeholder, name: x}
      - {op: call_module, name: c, target: conv, args: ["%x"]}
      - {op: call_module, name: b, target: bn, args: ["%c"]}
      - {op: call_module, name: y, target: fc, args: ["%b"]}
      - {op: output, args: ["%y"]}
    inputs:
      x: {shape: [1, 1, 1048576, 1048576]}
    passes: [fuse_conv_bn]
    """)


def test_validating_and_generating_run_the_passes_on_meta_tensors(tmp_path: Path) -> None:
    """Validation and generation want the spec the passes make, never tensors of the declared
    sizes: a 4 TiB input and a 4 TiB parameter (no machine allocates either, so a real one would
    fail at once) validate and generate. Loading is running the model, and does allocate."""
    path = tmp_path / "huge.yaml"
    path.write_text(HUGE)
    done = subprocess.run([sys.executable, "-m", "fxgen", "validate", str(path)], capture_output=True, text=True,
                          timeout=HANG_WATCHDOG, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    source = fxgen.generate(path)
    assert "self.bn" not in source and "nn.Linear(1048576, 1048576)" in source


def test_a_meta_model_gives_the_spec_a_real_one_does(spec_path: Path) -> None:
    """Generating transforms the model on the meta device (but for the spec's constant buffers,
    which fold_constants computes from): the spec it renders is the one a real model gives."""
    from fxgen._api import transformed
    from fxgen.policy.policy import policy_for

    passes = ["eliminate_dead_code", {"decompose": {"rules": ["relu"]}}, "fuse_conv_bn", "fold_constants"]
    spec = fxgen.load_spec(spec_path)
    spec.passes = passes
    real, meta = transformed(spec, policy_for(None)), transformed(spec, policy_for(None), meta=True)
    assert real is not None and meta is not None
    assert meta.spec.to_dict() == real.spec.to_dict()
    assert {path for path, t in meta.tensors.items() if not t.is_meta} == {"scale"}  # its constant buffer
