"""Export is exact in both modes (issue 33 item 1): a model is captured in eval and in train
mode (``fxgen.capture.modes``); where the graphs differ the spec says where the mode matters
(``fxgen.describe.modes``), and ``fxgen.load`` computes, seeded alike, exactly what the model
computes in each mode, switched by ``train()``/``eval()`` back and forth. Auto capture proves a
traced graph on the example inputs in both modes."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from helpers import import_source
from torch import nn

import fxgen
from fxgen._errors import ExportError
from fxgen.assemble.modes import ModeGraphModule
from fxgen.spec.model import IfNodes, Node, walk_nodes


class Head(nn.Module):  # functional dropout, as many classifier heads write it (issue 33)
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(F.dropout(x, 0.5, training=self.training))


class DropPath(nn.Module):  # stochastic depth, as most vision libraries write it (issue 33)
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if not self.training:
            return x + y
        keep = (torch.rand(x.shape[0], 1) >= 0.5).to(x.dtype)
        return x + y * keep / 0.5


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.norm = nn.BatchNorm1d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + F.dropout(torch.relu(self.norm(self.fc(x))), 0.25, self.training)


class Classifier(nn.Module):  # blocks with functional dropout, then a head
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.head = Head()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x))


class Stochastic(nn.Module):  # blocks of stochastic depth
    def __init__(self) -> None:
        super().__init__()
        self.a = DropPath()
        self.b = DropPath()
        self.norm = nn.BatchNorm1d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.b(self.a(x)))


class Normed(nn.Module):  # no Python reads the mode: BatchNorm switches itself
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.bn(self.fc(x)))


X = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))


def _export(model: nn.Module, **options: Any) -> fxgen.Spec:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fxgen.export(model, **options)


def _assert_exact_in_both_modes(model: nn.Module, gm: nn.Module) -> None:
    """Seeded alike, ``gm`` computes what ``model`` computes in train and eval mode, switched
    back and forth; batch-norm statistics stay equal after each train-mode forward."""
    gm.load_state_dict(model.state_dict(), strict=True)
    for mode in (True, False, True, True, False, True):
        model.train(mode)
        gm.train(mode)
        torch.manual_seed(7)
        want = model(X)
        torch.manual_seed(7)
        got = gm(X)
        assert torch.equal(want, got), f"{'train' if mode else 'eval'} mode differs by {(want - got).abs().max()}"
        for (name, a), b in zip(model.state_dict().items(), gm.state_dict().values(), strict=True):
            assert torch.equal(a, b), name


def _both(model: nn.Module, spec: fxgen.Spec, tmp_path: Path) -> None:
    """``fxgen.load(spec)`` and the generated class, each exact in both modes."""
    _assert_exact_in_both_modes(model, fxgen.load(spec))
    _assert_exact_in_both_modes(model, _generated(spec, tmp_path))


def _model(cls: type[nn.Module]) -> nn.Module:
    torch.manual_seed(0)
    return cls()


def test_functional_dropout_is_the_mode(tmp_path: Path) -> None:
    """issue 33's Head: captured in eval mode it was dropout(training=False) in both modes."""
    model = _model(Head).eval()
    spec = _export(model)
    (dropout,) = [n for n in spec.nodes if "dropout" in str(n.target)]
    assert dropout.kwargs["training"] == {"arg": "training"}
    assert isinstance(fxgen.load(spec), ModeGraphModule)
    _both(model, spec, tmp_path)
    assert "F.dropout(x, p=0.5, training=self.training, inplace=False)" in fxgen.generate(spec)


def test_stochastic_depth_is_an_if_training_group_in_its_block(tmp_path: Path) -> None:
    """issue 33's DropPath, in a model: the branch is in the block class, not in the model."""
    model = _model(Stochastic).eval()
    spec = _export(model, example_inputs=X)
    assert not any(isinstance(item, IfNodes) for item in spec.nodes)
    (group,) = [item for item in spec.classes["DropPath"].nodes if isinstance(item, IfNodes)]
    assert group.cond == "training" and [n.target for n in group.orelse] == ["operator.add"]
    assert "torch.rand" in [n.target for n in group.then]
    _both(model, spec, tmp_path)
    source = fxgen.generate(spec)
    assert source.count("if self.training:") == 1 and "else:\n            add = x + fc" in source


def test_a_classifier_with_functional_dropout_in_its_blocks(tmp_path: Path) -> None:
    model = _model(Classifier).train()
    spec = _export(model)
    block = spec.classes["Block"]
    assert [n.kwargs.get("training", n.args[-1]) for n in walk_nodes(block.nodes) if "dropout" in str(n.target)] \
        == [{"arg": "training"}]  # fmt: skip
    _both(model, spec, tmp_path)
    assert model.training and all(m.training for m in model.modules())  # its mode put back


def test_a_graph_that_does_not_read_the_mode_is_one_graph_as_before(tmp_path: Path) -> None:
    """BatchNorm and nn.Dropout switch themselves: the spec is the one eval mode always gave,
    whatever mode the model is in, and the load is a plain GraphModule."""
    model = _model(Normed)
    spec = _export(model.eval())
    assert _export(model.train()) == spec
    assert model.training
    assert type(fxgen.load(spec)).__mro__[1] is torch.fx.GraphModule
    _both(model, spec, tmp_path)
    assert "training" not in fxgen.generate(spec)


class OwnTrain(Normed):  # a train() of its own may change more than the flag
    def train(self, mode: bool = True) -> OwnTrain:
        return super().train(mode)


def _traces(model: nn.Module, **options: Any) -> int:
    """How many times export traces ``model`` (``fxgen.capture.trace.trace``)."""
    import fxgen.capture.export as export

    calls = 0
    real = export.trace

    def counted(*args: Any, **kwargs: Any) -> torch.fx.GraphModule:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        patch.setattr(export, "trace", counted)
        fxgen.export(model, **options)
    return calls


def test_a_trace_that_reads_no_mode_is_made_once() -> None:
    """Traced in the other mode, a forward that reads no ``training`` flag runs the same code:
    one trace stands for both modes (``fxgen.capture.modes.ModeWatch``). A forward that reads
    the flag, or a class with a ``train()`` of its own, is traced in each mode."""
    assert _traces(_model(Normed)) == 1
    assert _traces(_model(Normed), capture="auto", example_inputs=torch.randn(4, 8)) == 1  # (proven in each mode)
    assert _traces(_model(Classifier)) == 2
    assert _traces(_model(Head)) == 2
    assert _traces(_model(OwnTrain)) == 2
    assert "training" not in vars(nn.Module)  # the watch's descriptor is gone


def test_the_mode_watch_keeps_the_flag_where_it_is() -> None:
    from fxgen.capture.modes import ModeWatch

    model = _model(Classifier)
    with ModeWatch(model) as watch:
        assert watch.independent
        model.eval()  # (setting the flag is no read)
        assert vars(model.head)["training"] is False and watch.independent
        assert not model.head.training and not watch.independent
        assert not hasattr(nn.Module, "training")
    assert "training" not in vars(nn.Module) and not model.training
    assert not ModeWatch(_model(OwnTrain)).independent


def test_each_submodules_mode_is_put_back() -> None:
    model = _model(Classifier).train()
    model.blocks[1].eval()
    model.head.eval()
    flags = [m.training for m in model.modules()]
    _export(model)
    assert [m.training for m in model.modules()] == flags


def test_a_mode_that_cannot_be_traced_without_examples_is_named_and_refused() -> None:
    """DropPath's train mode does not trace (``torch.rand(x.shape[0], 1)``): without example
    inputs the spec is eval mode's, a warning says so, and the spec refuses train mode with an
    error naming why instead of computing eval mode's graph there."""
    model = _model(DropPath).eval()
    with pytest.warns(UserWarning, match="train mode cannot be captured .*refuses train mode .*pass example inputs"):
        spec = fxgen.export(model)
    assert [item.cond for item in spec.nodes if isinstance(item, IfNodes)] == ["training"]
    module = fxgen.load(spec).eval()
    module.load_state_dict(model.state_dict())
    x = torch.randn(2, 8)
    assert torch.equal(module(x), model(x))
    with pytest.raises(AssertionError, match=r"exported in eval mode only: train mode cannot be captured .*\.eval\(\)"):
        module.train()(x)
    with pytest.raises(ExportError, match="cannot trace the module"):
        fxgen.export(model.train())  # the model's own mode is the one it must capture


class TracedOtherwise(nn.Module):  # computes something else while torch.fx traces it
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.fx._symbolic_trace.is_fx_tracing():
            return self.fc(x) + 1
        return self.fc(x) * 2


class TracedOtherwiseUncapturable(TracedOtherwise):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.fx._symbolic_trace.is_fx_tracing():
            return self.fc(x) + 1
        torch._dynamo.graph_break()
        return self.fc(x) * 2


def test_auto_proves_the_traced_graph_on_the_example_and_captures_with_dynamo_otherwise(tmp_path: Path) -> None:
    model = _model(TracedOtherwise).eval()
    with pytest.warns(UserWarning, match=r"the traced graph is not the model: in eval mode output 0 \(node 'add'\)"):
        spec = fxgen.export(model, example_inputs=X)
    assert "TorchDynamo" in str(spec.doc)
    _both(model, spec, tmp_path)
    traced = _export(model)  # without examples nothing proves it: traced as before
    assert traced.doc is None


def test_auto_refuses_a_traced_graph_that_is_not_the_model_when_dynamo_fails_too() -> None:
    model = _model(TracedOtherwiseUncapturable).eval()
    with pytest.raises(ExportError, match=r"symbolic tracing computes something else: in eval mode output 0 "
                                          r"\(node 'add'\) .*differs.*TorchDynamo cannot capture it either"):  # fmt: skip
        _export(model, example_inputs=X)


class AuxiliaryHead(nn.Module):  # returns more in train mode (an auxiliary classifier)
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.aux = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> Any:
        y = self.fc(x)
        if self.training:
            return y, self.aux(y)
        return y


def test_a_model_returning_more_in_train_mode(tmp_path: Path) -> None:
    model = _model(AuxiliaryHead).eval()
    spec = _export(model)
    assert spec.nodes[-1].op == "output" and isinstance(spec.nodes[-2], IfNodes)
    assert "aux.weight" not in spec.parameters  # eval mode's declaration of the state it never reads: the module's
    for built in (fxgen.load(spec), _generated(spec, tmp_path)):
        built.load_state_dict(model.state_dict(), strict=True)
        for mode in (True, False):
            model.train(mode)
            built.train(mode)
            want, got = model(X), built(X)
            assert type(want) is type(got)
            assert all(torch.equal(a, b) for a, b in zip(want if mode else [want], got if mode else [got], strict=True))


def _generated(spec: fxgen.Spec, tmp_path: Path) -> nn.Module:
    return getattr(import_source(fxgen.generate(spec), f"gen_{spec.name.lower()}", tmp_path), spec.name)()


CLI_MODEL = '''\
import torch
import torch.nn.functional as F


class DropPath(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = F.dropout(self.fc(x), 0.5, training=self.training)
        if not self.training:
            return x + y
        keep = (torch.rand(x.shape[0], 1) >= 0.5).to(x.dtype)
        return x + y * keep / 0.5
'''


def test_the_cli_exports_both_modes_and_its_weights_load_with_the_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fxgen export`` puts the model in eval mode, and the spec is exact in both modes anyway."""
    from fxgen.cli.main import main

    (tmp_path / "modes_model.py").write_text(CLI_MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["export", "modes_model:DropPath", "--out", "s.yaml", "--weights", "w.safetensors", "--quiet",
            "--example-input", "x=float32[4,8]"]  # fmt: skip
    assert main(args) == 0
    assert "symbolic tracing fails in train mode: captured with TorchDynamo" in capsys.readouterr().err
    import modes_model  # type: ignore[import-not-found]

    torch.manual_seed(0)
    model = modes_model.DropPath()
    model.load_state_dict(fxgen.load("s.yaml", weights="w.safetensors").state_dict())
    _assert_exact_in_both_modes(model, fxgen.load("s.yaml", weights="w.safetensors"))
    assert "if self.training:" in fxgen.generate("s.yaml")


class Output(dict):  # as a model output class is (Hugging Face's ModelOutput is an OrderedDict)
    pass


class ReturnsOutput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> Output:
        return Output(y=F.dropout(self.fc(x), 0.5, self.training))


def test_the_proof_compares_the_tensors_an_output_class_holds() -> None:
    """The traced graph returns a plain dict where the model returns its output class: the same
    tensors, so the traced graph is kept (as bench/parity.py compares them)."""
    model = _model(ReturnsOutput).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = fxgen.export(model, example_inputs=X)
    assert spec.doc is None  # traced, not captured with TorchDynamo


class Neither(TracedOtherwise):  # train mode does not trace, TorchDynamo fails, and eval's trace is wrong
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch._dynamo.graph_break()
        if self.training:
            return self.fc(x) * torch.rand(x.shape[0], 1)
        return super().forward(x)


def test_a_wrong_traced_mode_is_refused_when_the_other_does_not_trace_and_dynamo_fails() -> None:
    model = _model(Neither).eval()
    with pytest.raises(ExportError, match=r"symbolic tracing computes something else: in eval mode output 0"):
        _export(model, example_inputs=X)


class UsesTwo(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y if self.training else x * 2


class CallsWithTwo(nn.Module):  # its block reads its second input in train mode only
    def __init__(self) -> None:
        super().__init__()
        self.inner = UsesTwo()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x, x.sin())


def test_a_block_taking_other_inputs_in_each_mode_takes_them_all(tmp_path: Path) -> None:
    """The block keeps its class, taking the inputs of both modes; its call passes sin in both
    (eval mode has it too, and the block does not read it there)."""
    model = _model(CallsWithTwo).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "one graph per mode"
        spec = fxgen.export(model)
    assert [n.name for n in spec.classes["UsesTwo"].nodes if isinstance(n, Node) and n.op == "placeholder"] == ["x", "y"]
    assert "inner = self.inner(x, sin)" in fxgen.generate(spec)
    _both(model, spec, tmp_path)


class MaskedLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        s = self.fc(h)
        return h + (s if mask is None else s + mask)


class Decoder(nn.Module):  # as transformers' sdpa attention leaves the causal mask out when training
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(MaskedLayer() for _ in range(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = None if self.training else torch.zeros_like(x)
        for layer in self.layers:
            x = layer(x, mask)
        return x


@pytest.mark.parametrize("capture", ["trace", "dynamo"])
def test_a_block_given_an_input_in_eval_mode_only_keeps_its_class(capture: str, tmp_path: Path) -> None:
    model = _model(Decoder).eval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = fxgen.export(model, capture=capture, example_inputs=X)
    assert not [w for w in caught if "one graph per mode" in str(w.message)]
    assert list(spec.classes) == ["MaskedLayer"]
    assert "(x, None)" in fxgen.generate(spec)  # (train mode has no mask to pass)
    _both(model, spec, tmp_path)


class PinsInTrain(nn.Module):  # train mode needs the batch size eval mode does not (kornia's KeyNet)
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > 2:
            x = x * 2
        return self.fc(x.view(4, 8)) if self.training else self.fc(x)


def test_inputs_are_what_both_modes_captures_assumed(tmp_path: Path) -> None:
    model = _model(PinsInTrain).eval()
    spec = _export(model, capture="dynamo", example_inputs=X)
    assert spec.inputs["x"].shape == [4, 8] and spec.checks == []  # (x_dim0 > 2 holds at 4)
    _both(model, spec, tmp_path)
    with pytest.raises(ValueError, match="dimension 0 is 5; the model was exported for 4"):
        fxgen.load(spec)(torch.randn(5, 8))
