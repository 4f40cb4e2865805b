"""Constructor recovery for leaf modules (fxgen.describe.recover).

Every recovered call is checked independently of fxgen's own check: rebuilt on the CPU, it
must have the same repr and state-dict layout, and -- with the original's weights loaded --
compute the same outputs.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
from helpers import counting_rebuilds
from torch import nn

from fxgen._errors import ExportError
from fxgen.describe.rebuild import check_rebuild
from fxgen.describe.recover import (
    class_name,
    recover_and_check,
    recover_constructor,
    register_constructor,
)

# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------

_PLAIN_LEAVES = (type(None), bool, int, float, complex, str, torch.dtype, torch.device)


def assert_spec_value(value: Any) -> None:
    """Only what a spec can encode: scalars, dtype/device/Size, slices, containers of them."""
    if isinstance(value, torch.Size) or type(value) in _PLAIN_LEAVES:
        return
    if type(value) in (tuple, list):
        for item in value:
            assert_spec_value(item)
    elif type(value) is dict:
        for key, item in value.items():
            assert type(key) is str
            assert_spec_value(item)
    elif type(value) is slice:
        for item in (value.start, value.stop, value.step):
            assert_spec_value(item)
    else:
        raise AssertionError(f"{value!r} ({type(value).__qualname__}) cannot be written in a spec")


def layout(module: nn.Module) -> dict[str, tuple[Any, ...]]:
    """State-dict keys with shapes/dtypes, plus requires_grad of parameters."""
    state = {k: (tuple(v.shape), v.dtype) for k, v in module.state_dict().items()}
    grads = {f"{k}.requires_grad": (p.requires_grad,) for k, p in module.named_parameters()}
    return state | grads


def rebuild(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> nn.Module:
    """The rebuild a generated model would make: on the CPU, with the original's weights."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rebuilt = type(module)(*args, **kwargs)
    assert repr(rebuilt) == repr(module)
    assert layout(rebuilt) == layout(module)
    rebuilt.load_state_dict(module.state_dict())
    return rebuilt


def assert_same_outputs(a: Any, b: Any) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor)
        assert a.shape == b.shape and a.dtype == b.dtype
        assert torch.allclose(a, b, atol=1e-6, rtol=1e-5, equal_nan=True)
    elif isinstance(a, tuple | list):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same_outputs(x, y)
    else:
        assert a == b


def quiet(factory: Callable[[], nn.Module]) -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return factory()


def r(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype)


def idx(*shape: int, high: int = 10) -> torch.Tensor:
    return torch.randint(0, high, shape)


# --------------------------------------------------------------------------------------
# the table: real modules with non-default arguments
# --------------------------------------------------------------------------------------

Inputs = Callable[[], tuple[Any, ...]] | None
D64 = torch.float64

CASES: list[tuple[str, Callable[[], nn.Module], Inputs]] = [
    # convolutions
    (
        "conv1d",
        lambda: nn.Conv1d(4, 8, 5, stride=2, padding=2, groups=2, bias=False),
        lambda: (r(2, 4, 16),),
    ),
    (
        "conv2d",
        lambda: nn.Conv2d(
            3, 8, 3, stride=2, padding=1, bias=False, groups=1, dilation=2, padding_mode="reflect"
        ),
        lambda: (r(2, 3, 16, 16),),
    ),
    (
        "conv2d_same",
        lambda: nn.Conv2d(4, 8, (3, 1), padding="same", padding_mode="circular"),
        lambda: (r(1, 4, 8, 8),),
    ),
    (
        "conv3d_f64",
        lambda: nn.Conv3d(2, 4, 3, padding=(1, 0, 1), dtype=D64),
        lambda: (r(1, 2, 6, 6, 6, dtype=D64),),
    ),
    (
        "convtranspose2d",
        lambda: nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1, output_padding=1, groups=2),
        lambda: (r(1, 8, 5, 5),),
    ),
    (
        "convtranspose1d",
        lambda: nn.ConvTranspose1d(4, 2, 3, stride=3, bias=False),
        lambda: (r(1, 4, 7),),
    ),
    (
        "convtranspose3d",
        lambda: nn.ConvTranspose3d(2, 2, 2, stride=2, dilation=2),
        lambda: (r(1, 2, 3, 3, 3),),
    ),
    # linear
    ("linear", lambda: nn.Linear(16, 4, bias=False), lambda: (r(3, 16),)),
    ("linear_f16", lambda: nn.Linear(4, 2).half(), None),
    ("bilinear", lambda: nn.Bilinear(3, 4, 5, bias=False), lambda: (r(2, 3), r(2, 4))),
    ("identity", lambda: nn.Identity(7, foo="bar"), lambda: (r(2, 3),)),
    # norms
    ("batchnorm1d", lambda: nn.BatchNorm1d(8, eps=1e-3, momentum=None), lambda: (r(4, 8),)),
    (
        "batchnorm2d",
        lambda: nn.BatchNorm2d(6, affine=False, track_running_stats=False),
        lambda: (r(2, 6, 4, 4),),
    ),
    ("batchnorm3d", lambda: nn.BatchNorm3d(4, bias=False), lambda: (r(2, 4, 2, 2, 2),)),
    ("syncbatchnorm", lambda: nn.SyncBatchNorm(4, momentum=0.2), None),
    (
        "instancenorm1d",
        lambda: nn.InstanceNorm1d(4, affine=True, track_running_stats=True),
        lambda: (r(2, 4, 10),),
    ),
    ("instancenorm2d", lambda: nn.InstanceNorm2d(3, eps=1e-3), lambda: (r(2, 3, 5, 5),)),
    (
        "instancenorm3d",
        lambda: nn.InstanceNorm3d(2, momentum=0.3, affine=True, bias=False),
        lambda: (r(1, 2, 3, 3, 3),),
    ),
    ("groupnorm", lambda: nn.GroupNorm(2, 8, eps=1e-4, affine=False), lambda: (r(2, 8, 3),)),
    ("layernorm_2d", lambda: nn.LayerNorm((4, 5), eps=1e-6, bias=False), lambda: (r(2, 4, 5),)),
    ("layernorm_plain", lambda: nn.LayerNorm(6, elementwise_affine=False), lambda: (r(3, 6),)),
    (
        "localresponsenorm",
        lambda: nn.LocalResponseNorm(3, alpha=1e-3, beta=0.5, k=2.0),
        lambda: (r(1, 6, 4, 4),),
    ),
    ("rmsnorm", lambda: nn.RMSNorm([2, 8], eps=1e-6), lambda: (r(3, 2, 8),)),
    # activations
    ("relu_inplace", lambda: nn.ReLU(inplace=True), lambda: (r(4, 4),)),
    ("leakyrelu", lambda: nn.LeakyReLU(0.2), lambda: (r(4, 4),)),
    ("prelu", lambda: nn.PReLU(4, init=0.1), lambda: (r(2, 4, 3),)),
    ("elu", lambda: nn.ELU(alpha=0.5), lambda: (r(4),)),
    ("celu", lambda: nn.CELU(alpha=2.0, inplace=True), lambda: (r(4),)),
    ("gelu_tanh", lambda: nn.GELU(approximate="tanh"), lambda: (r(4),)),
    ("hardtanh", lambda: nn.Hardtanh(-0.5, 0.5), lambda: (r(8),)),
    ("relu6", lambda: nn.ReLU6(inplace=True), lambda: (r(8),)),
    ("softplus", lambda: nn.Softplus(beta=2.0, threshold=10.0), lambda: (r(8),)),
    ("softmax", lambda: nn.Softmax(dim=1), lambda: (r(2, 5),)),
    ("logsoftmax", lambda: nn.LogSoftmax(dim=-1), lambda: (r(2, 5),)),
    ("threshold", lambda: nn.Threshold(0.1, 20.0), lambda: (r(8),)),
    ("rrelu", lambda: nn.RReLU(0.1, 0.2), lambda: (r(8),)),
    ("silu", lambda: nn.SiLU(inplace=True), lambda: (r(8),)),
    ("hardswish", lambda: nn.Hardswish(), lambda: (r(8),)),
    ("glu", lambda: nn.GLU(dim=1), lambda: (r(2, 4),)),
    ("softshrink", lambda: nn.Softshrink(0.3), lambda: (r(8),)),
    ("tanh", lambda: nn.Tanh(), lambda: (r(8),)),
    # attention and recurrent layers
    (
        "mha",
        lambda: nn.MultiheadAttention(16, 4, dropout=0.1, batch_first=True),
        lambda: (r(2, 3, 16),) * 3,
    ),
    (
        "mha_kv",
        lambda: nn.MultiheadAttention(
            16, 2, bias=False, add_bias_kv=True, add_zero_attn=True, kdim=8, vdim=6
        ),
        lambda: (r(3, 2, 16), r(5, 2, 8), r(5, 2, 6)),
    ),
    (
        "lstm",
        lambda: nn.LSTM(
            8, 16, num_layers=2, batch_first=True, bidirectional=True, proj_size=4, dropout=0.1
        ),
        lambda: (r(2, 5, 8),),
    ),
    ("gru", lambda: nn.GRU(4, 6, bias=False), lambda: (r(5, 2, 4),)),
    ("rnn_relu", lambda: nn.RNN(4, 6, 2, "relu"), lambda: (r(5, 2, 4),)),
    ("lstmcell", lambda: nn.LSTMCell(4, 6, bias=False), lambda: (r(2, 4),)),
    ("grucell", lambda: nn.GRUCell(4, 6), lambda: (r(2, 4),)),
    ("rnncell", lambda: nn.RNNCell(4, 6, nonlinearity="relu"), lambda: (r(2, 4),)),
    # embeddings
    (
        "embedding",
        lambda: nn.Embedding(
            20, 6, padding_idx=-1, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True
        ),
        lambda: (idx(3, 4, high=20),),
    ),
    ("embedding_sparse", lambda: nn.Embedding(10, 4, sparse=True), lambda: (idx(5),)),
    (
        "embedding_pretrained",
        lambda: nn.Embedding.from_pretrained(torch.randn(10, 3), freeze=True, padding_idx=1),
        lambda: (idx(4),),
    ),
    (
        "embeddingbag",
        lambda: nn.EmbeddingBag(20, 4, mode="max", include_last_offset=True, padding_idx=0),
        lambda: (idx(7, high=20), torch.tensor([0, 3, 7])),
    ),
    # pooling
    (
        "maxpool2d",
        lambda: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
        lambda: (r(1, 2, 9, 9),),
    ),
    ("maxpool1d_indices", lambda: nn.MaxPool1d(2, return_indices=True), lambda: (r(1, 2, 8),)),
    ("maxpool3d", lambda: nn.MaxPool3d((2, 1, 2), dilation=(1, 2, 1)), lambda: (r(1, 1, 4, 5, 4),)),
    (
        "avgpool2d",
        lambda: nn.AvgPool2d(
            (2, 3),
            stride=(1, 2),
            padding=1,
            ceil_mode=True,
            count_include_pad=False,
            divisor_override=2,
        ),
        lambda: (r(1, 2, 6, 7),),
    ),
    ("avgpool1d", lambda: nn.AvgPool1d(3, stride=2, padding=1), lambda: (r(1, 2, 9),)),
    ("avgpool3d", lambda: nn.AvgPool3d(2), lambda: (r(1, 1, 4, 4, 4),)),
    ("adaptiveavgpool2d", lambda: nn.AdaptiveAvgPool2d((3, None)), lambda: (r(1, 2, 7, 5),)),
    (
        "adaptivemaxpool1d",
        lambda: nn.AdaptiveMaxPool1d(4, return_indices=True),
        lambda: (r(1, 2, 9),),
    ),
    ("lppool2d", lambda: nn.LPPool2d(2.0, 3, stride=2, ceil_mode=True), lambda: (r(1, 2, 7, 7),)),
    ("maxunpool2d", lambda: nn.MaxUnpool2d(2, stride=2), None),
    ("fractionalmaxpool2d", lambda: nn.FractionalMaxPool2d(2, output_size=3), None),
    ("fractionalmaxpool3d", lambda: nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.5, 0.75)), None),
    # padding
    ("zeropad2d", lambda: nn.ZeroPad2d((1, 2, 0, 3)), lambda: (r(1, 1, 3, 3),)),
    ("reflectionpad1d", lambda: nn.ReflectionPad1d(2), lambda: (r(1, 2, 5),)),
    ("replicationpad3d", lambda: nn.ReplicationPad3d(1), lambda: (r(1, 1, 2, 2, 2),)),
    ("constantpad2d", lambda: nn.ConstantPad2d((1, 1, 2, 0), -1.5), lambda: (r(1, 1, 3, 3),)),
    ("circularpad2d", lambda: nn.CircularPad2d(1), lambda: (r(1, 1, 3, 3),)),
    # resampling and reshaping
    (
        "upsample_bilinear",
        lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
        lambda: (r(1, 2, 3, 3),),
    ),
    ("upsample_size", lambda: nn.Upsample(size=(5, 7)), lambda: (r(1, 2, 3, 3),)),
    (
        "upsample_bicubic",
        lambda: nn.Upsample(scale_factor=(2.0, 1.5), mode="bicubic", recompute_scale_factor=True),
        lambda: (r(1, 1, 4, 4),),
    ),
    (
        "upsamplingnearest2d",
        lambda: nn.UpsamplingNearest2d(scale_factor=2),
        lambda: (r(1, 1, 2, 2),),
    ),
    ("flatten", lambda: nn.Flatten(0, -2), lambda: (r(2, 3, 4),)),
    ("unflatten", lambda: nn.Unflatten(1, (2, 4)), lambda: (r(3, 8),)),
    ("pixelshuffle", lambda: nn.PixelShuffle(2), lambda: (r(1, 8, 3, 3),)),
    ("pixelunshuffle", lambda: nn.PixelUnshuffle(2), lambda: (r(1, 2, 4, 4),)),
    ("channelshuffle", lambda: nn.ChannelShuffle(2), lambda: (r(1, 4, 2, 2),)),
    ("fold", lambda: nn.Fold(output_size=(4, 5), kernel_size=2), lambda: (r(1, 8, 12),)),
    ("unfold", lambda: nn.Unfold(kernel_size=(2, 3), stride=2), lambda: (r(1, 2, 6, 7),)),
    # dropout (identity in eval mode)
    ("dropout", lambda: nn.Dropout(0.2, inplace=True), lambda: (r(8),)),
    ("dropout2d", lambda: nn.Dropout2d(0.3), lambda: (r(1, 2, 3, 3),)),
    ("alphadropout", lambda: nn.AlphaDropout(0.1), lambda: (r(8),)),
    ("featurealphadropout", lambda: nn.FeatureAlphaDropout(0.4), lambda: (r(1, 2, 3),)),
    # transformers
    (
        "transformer_encoder_layer",
        lambda: nn.TransformerEncoderLayer(
            16,
            4,
            32,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
            layer_norm_eps=1e-6,
        ),
        lambda: (r(2, 5, 16),),
    ),
    (
        "transformer_decoder_layer",
        lambda: nn.TransformerDecoderLayer(16, 2, 24, bias=False),
        lambda: (r(4, 2, 16), r(3, 2, 16)),
    ),
    (
        "transformer",
        lambda: nn.Transformer(
            d_model=16,
            nhead=2,
            num_encoder_layers=1,
            num_decoder_layers=2,
            dim_feedforward=32,
            batch_first=True,
        ),
        lambda: (r(2, 3, 16), r(2, 4, 16)),
    ),
    # distances, losses, empty containers
    ("cosinesimilarity", lambda: nn.CosineSimilarity(dim=0, eps=1e-6), lambda: (r(4, 3), r(4, 3))),
    (
        "pairwisedistance",
        lambda: nn.PairwiseDistance(p=1.0, keepdim=True),
        lambda: (r(4, 3), r(4, 3)),
    ),
    (
        "crossentropyloss",
        lambda: nn.CrossEntropyLoss(ignore_index=3, label_smoothing=0.1, reduction="sum"),
        lambda: (r(4, 5), idx(4, high=5)),
    ),
    (
        "adaptivelogsoftmax",
        lambda: nn.AdaptiveLogSoftmaxWithLoss(16, 20, [5, 10], div_value=2.0),
        None,
    ),
    ("sequential_empty", lambda: nn.Sequential(), lambda: (r(3),)),
]


@pytest.mark.parametrize(("factory", "inputs"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_recovery_rebuilds_equivalent_module(
    factory: Callable[[], nn.Module], inputs: Inputs
) -> None:
    torch.manual_seed(0)
    module = quiet(factory)
    args, kwargs = recover_and_check("model.layer", module)

    assert type(args) is tuple and type(kwargs) is dict
    for value in (*args, *kwargs.values()):
        assert_spec_value(value)
    # Determinism: keywords come in signature order.
    names = list(inspect.signature(type(module).__init__).parameters)
    if all(k in names for k in kwargs):
        assert list(kwargs) == sorted(kwargs, key=names.index)

    rebuilt = rebuild(module, args, kwargs)
    if inputs is not None:
        module.eval()
        rebuilt.eval()
        with warnings.catch_warnings():
            warnings.simplefilter(
                "ignore"
            )  # e.g. "LSTM with projections is not supported with oneDNN"
            torch.manual_seed(1)
            expected = module(*inputs())
            torch.manual_seed(1)
            actual = rebuilt(*inputs())
        assert_same_outputs(expected, actual)


# The exact calls for a few classes, so that exported specs keep reading like hand-written code.
EXPECTED: list[tuple[Callable[[], nn.Module], tuple[Any, ...], dict[str, Any]]] = [
    (
        lambda: nn.Conv2d(16, 32, 3, padding=1, bias=False),
        (16, 32, 3),
        {"padding": 1, "bias": False},
    ),
    (
        lambda: nn.Conv2d(
            3, 8, 3, stride=2, padding=1, bias=False, groups=1, dilation=2, padding_mode="reflect"
        ),
        (3, 8, 3),
        {"stride": 2, "padding": 1, "dilation": 2, "bias": False, "padding_mode": "reflect"},
    ),
    (lambda: nn.Conv2d(4, 8, (3, 1), padding="same"), (4, 8, (3, 1)), {"padding": "same"}),
    (lambda: nn.Linear(128, 10), (128, 10), {}),
    (
        lambda: nn.Linear(4, 2, bias=False, dtype=torch.float64),
        (4, 2),
        {"bias": False, "dtype": torch.float64},
    ),
    (lambda: nn.LayerNorm(64, eps=1e-6), (64,), {"eps": 1e-6}),
    (
        lambda: nn.LayerNorm([8, 8], elementwise_affine=False),
        ((8, 8),),
        {"elementwise_affine": False},
    ),
    (
        lambda: nn.BatchNorm2d(32, momentum=0.01, affine=False),
        (32,),
        {"momentum": 0.01, "affine": False},
    ),
    (lambda: nn.BatchNorm2d(32), (32,), {}),
    (
        lambda: nn.MultiheadAttention(64, 8, dropout=0.1, batch_first=True),
        (64, 8),
        {"dropout": 0.1, "batch_first": True},
    ),
    (
        lambda: nn.MultiheadAttention(64, 8, bias=False, add_bias_kv=True, kdim=32, vdim=64),
        (64, 8),
        {"bias": False, "add_bias_kv": True, "kdim": 32},
    ),
    (
        lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
        (),
        {"scale_factor": 2.0, "mode": "bilinear", "align_corners": False},
    ),
    (lambda: nn.MaxPool2d(2), (2,), {}),
    (lambda: nn.ZeroPad2d(2), (2,), {}),
    (lambda: nn.LSTM(8, 16, 2, batch_first=True), (8, 16), {"num_layers": 2, "batch_first": True}),
    (lambda: nn.Embedding(100, 16, padding_idx=0), (100, 16), {"padding_idx": 0}),
    (
        lambda: nn.TransformerEncoderLayer(32, 4, 64, activation="gelu", batch_first=True),
        (32, 4),
        {"dim_feedforward": 64, "activation": "gelu", "batch_first": True},
    ),
    (lambda: nn.Identity(3, unused=True), (), {}),
]


@pytest.mark.parametrize(
    ("factory", "args", "kwargs"), EXPECTED, ids=[str(i) for i in range(len(EXPECTED))]
)
def test_recovered_call_reads_like_handwritten_code(
    factory: Callable[[], nn.Module], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    recovered = recover_and_check("m", factory())
    assert recovered == (args, kwargs)
    assert [type(a) for a in recovered[0]] == [type(a) for a in args]  # 64, not 64.0 or (64,)
    assert list(recovered[1]) == list(kwargs)


# --------------------------------------------------------------------------------------
# sweep over every class torch.nn exports
# --------------------------------------------------------------------------------------

NN_CLASSES = sorted(
    (c for c in vars(nn).values() if isinstance(c, type) and issubclass(c, nn.Module)),
    key=lambda c: c.__name__,
)
ARGSETS: list[tuple[Any, ...]] = [
    (),
    (4,),
    (4, 8),
    (4, 8, 3),
    (2, 4),
    (4, 2),
    (0.5,),
    (2.0, 3),
    (1, (2, 4)),
    (4, 6, [2]),
]
# Classes whose smallest instance needs more than a few scalars (or is large by default).
BASE: dict[str, Callable[[], nn.Module]] = {
    "Transformer": lambda: nn.Transformer(8, 2, 1, 1, 16),
    "TransformerEncoder": lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 2),
    "TransformerDecoder": lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8), 1),
    "DataParallel": lambda: nn.DataParallel(nn.Linear(2, 2)),
    "Sequential": lambda: nn.Sequential(nn.ReLU()),
    "ModuleList": lambda: nn.ModuleList([nn.ReLU()]),
    "ModuleDict": lambda: nn.ModuleDict({"a": nn.ReLU()}),
    "ParameterList": lambda: nn.ParameterList([nn.Parameter(torch.ones(2))]),
    "ParameterDict": lambda: nn.ParameterDict({"a": nn.Parameter(torch.ones(2))}),
}
# Classes that are refused on purpose (their base instance raises ExportError).
REFUSED = {
    "DataParallel",  # a wrapper, not a layer
    "TransformerEncoder",  # takes module instances
    "TransformerDecoder",
    "Sequential",  # containers with children
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
} | {c.__name__ for c in NN_CLASSES if c.__name__.startswith("Lazy")}  # shapes unknown
ALTERNATIVE_STRINGS = {
    "padding_mode": ["reflect", "circular"],
    "mode": ["bilinear", "sum", "max"],
    "approximate": ["tanh"],
    "reduction": ["sum", "none"],
    "nonlinearity": ["relu"],
    "activation": ["gelu"],
}


def instantiate(cls: type[nn.Module]) -> nn.Module | None:
    if cls.__name__ in BASE:
        return quiet(BASE[cls.__name__])
    for args in ARGSETS:
        try:
            return quiet(lambda args=args: cls(*args))  # type: ignore[misc]
        except Exception:
            continue
    return None


def variants(cls: type[nn.Module], base: nn.Module) -> list[nn.Module]:
    """The base instance plus instances with one default argument changed at a time."""
    if cls.__name__ in BASE:
        return [base]
    args = next(a for a in ARGSETS if _builds(cls, a, {}))
    changes: list[dict[str, Any]] = [{"dtype": torch.float64}]
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        d = p.default
        if p.name in ("device", "dtype") or d is inspect.Parameter.empty:
            continue
        if isinstance(d, bool):
            changes.append({p.name: not d})
        elif isinstance(d, int):
            changes += [{p.name: d + 1}, {p.name: 2}]
        elif isinstance(d, float):
            changes.append({p.name: d / 2 if d else 0.25})
        elif d is None:
            changes += [{p.name: 2}, {p.name: True}, {p.name: 0.5}, {p.name: (2, 3)}]
        elif isinstance(d, str):
            changes += [{p.name: s} for s in ALTERNATIVE_STRINGS.get(p.name, [])]
    out = [base]
    for change in changes:
        if _builds(cls, args, change):
            out.append(quiet(lambda change=change: cls(*args, **change)))  # type: ignore[misc]
    return out


def _builds(cls: type[nn.Module], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    try:
        quiet(lambda: cls(*args, **kwargs))
    except Exception:
        return False
    return True


@pytest.mark.parametrize("cls", NN_CLASSES, ids=[c.__name__ for c in NN_CLASSES])
def test_every_torch_nn_class_recovers_or_raises_export_error(cls: type[nn.Module]) -> None:
    base = instantiate(cls)
    if base is None:
        assert cls.__name__ in {"RNNBase", "RNNCellBase"}, f"no way to instantiate {cls.__name__}"
        return
    for i, module in enumerate(variants(cls, base)):
        try:
            args, kwargs = recover_and_check("sweep", module)
        except ExportError as exc:
            assert "'sweep'" in str(exc) and cls.__name__ in str(exc)
            assert i > 0 or cls.__name__ in REFUSED, f"{cls.__name__} base instance refused: {exc}"
            continue
        assert i > 0 or cls.__name__ not in REFUSED, f"{cls.__name__} should have been refused"
        for value in (*args, *kwargs.values()):
            assert_spec_value(value)
        rebuild(module, args, kwargs)


# --------------------------------------------------------------------------------------
# user classes
# --------------------------------------------------------------------------------------


class Scale(nn.Module):
    """A user layer: a learned per-channel scale."""

    def __init__(self, channels: int, init: float = 1.0) -> None:
        super().__init__()
        self.channels = channels
        self.weight = nn.Parameter(torch.full((channels,), init))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


class Unregistered(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)


def test_registered_user_class() -> None:
    register_constructor(Scale, lambda m: ((m.channels,), {}))
    module = Scale(4, init=0.5)
    args, kwargs = recover_and_check("head.scale", module)
    assert (args, kwargs) == ((4,), {})
    rebuilt = rebuild(module, args, kwargs)
    x = r(2, 4)
    assert torch.equal(module(x), rebuilt(x))


def test_unregistered_user_class_names_the_class() -> None:
    with pytest.raises(ExportError, match=r"Unregistered") as info:
        recover_constructor(Unregistered(3))
    assert "register_constructor" in str(info.value)
    with pytest.raises(ExportError, match=r"module 'blocks\.1'.*Unregistered"):
        recover_and_check("blocks.1", Unregistered(3))


def test_class_name_must_import_back_to_the_class() -> None:
    assert class_name(nn.Conv2d) == "torch.nn.Conv2d"
    assert class_name(Unregistered) == f"{Unregistered.__module__}.Unregistered"

    class Local(nn.Module):
        pass

    with pytest.raises(ExportError, match=r"<locals>\.Local.*defined inside a function"):
        class_name(Local)
    Local.__qualname__ = "NoSuchClass"
    with pytest.raises(ExportError, match=r"NoSuchClass'.*nothing is found"):
        class_name(Local)
    Local.__qualname__ = "Unregistered"
    with pytest.raises(ExportError, match=r"Unregistered'.*imports another object"):
        class_name(Local)


def test_subclass_of_torch_class_is_not_recovered_implicitly() -> None:
    class MyConv(nn.Conv2d):
        pass

    with pytest.raises(ExportError, match=r"MyConv.*derives from torch\.nn\.Conv2d"):
        recover_and_check("stem", MyConv(3, 8, 3))


def test_wrong_registered_recovery_is_caught_by_the_check() -> None:
    class Gain(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            self.channels = channels
            self.gain = nn.Parameter(torch.ones(channels))

    def wrong(module: nn.Module) -> tuple[tuple[Any, ...], dict[str, Any]]:
        assert isinstance(module, Gain)
        return (module.channels * 2,), {}

    register_constructor(Gain, wrong)
    with pytest.raises(
        ExportError, match=r"module 'blocks\.0\.gain'.*Gain.*parameter 'gain' is \(3,\)"
    ):
        recover_and_check("blocks.0.gain", Gain(3))


def test_non_persistent_buffer_values_are_checked() -> None:
    class Positions(nn.Module):
        def __init__(self, length: int, base: float = 10000.0) -> None:
            super().__init__()
            self.length = length
            self.register_buffer("freqs", base ** -torch.arange(length) / length, persistent=False)

    register_constructor(Positions, lambda m: ((m.length,), {}))  # forgets `base`
    recover_and_check("pos", Positions(4))
    with pytest.raises(ExportError, match=r"non-persistent buffer 'freqs' has different values"):
        recover_and_check("pos", Positions(4, base=100.0))


def test_registered_recovery_must_return_spec_values() -> None:
    class Holder(nn.Module):
        def __init__(self, table: torch.Tensor) -> None:
            super().__init__()
            self.register_buffer("table", table)

    register_constructor(Holder, lambda m: ((m.table,), {}))
    with pytest.raises(ExportError, match=r"module 'h'.*args\[0\] is a tensor"):
        recover_and_check("h", Holder(torch.ones(2)))

    def broken(module: nn.Module) -> Any:
        raise KeyError("oops")

    register_constructor(Holder, broken)
    with pytest.raises(ExportError, match=r"raised KeyError"):
        recover_and_check("h", Holder(torch.ones(2)))
    with pytest.raises(TypeError):
        register_constructor(int, broken)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# refusals and mismatches of torch.nn modules
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (
            lambda: nn.Sequential(nn.Linear(2, 2), nn.ReLU()),
            r"'encoder' \(torch\.nn\.Sequential\) was traced as a leaf.*trace through it",
        ),
        (
            lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2),
            r"module instances \(encoder_layer",
        ),
        (lambda: nn.LazyLinear(4), r"lazy modules.*torch\.nn\.Linear"),
        (lambda: nn.CrossEntropyLoss(weight=torch.ones(3)), r"argument 'weight' is a tensor"),
        (
            lambda: nn.TransformerEncoderLayer(8, 2, 16, activation=torch.tanh),
            r"activation is the callable torch\.tanh",
        ),
        (
            lambda: nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU()),
            r"activation is the module GELU",
        ),
        (
            lambda: nn.Transformer(8, 2, 1, 1, 16, custom_encoder=nn.Identity()),
            r"custom torch\.nn\.Identity \(custom_encoder=\.\.\.\)",
        ),
        (lambda: nn.Linear(3, 3).requires_grad_(False), r"requires_grad=False.*frozen parameters"),
        (lambda: nn.utils.parametrizations.weight_norm(nn.Linear(3, 3)), r"parametrizations"),
        (lambda: nn.DataParallel(nn.Linear(2, 2)), r"export model\.module instead"),
    ],
    ids=[
        "sequential",
        "transformer_encoder",
        "lazy",
        "tensor_arg",
        "activation_fn",
        "activation_module",
        "custom_encoder",
        "frozen",
        "parametrized",
        "data_parallel",
    ],
)
def test_unrecoverable_modules_raise_export_error(
    factory: Callable[[], nn.Module], message: str
) -> None:
    with pytest.raises(ExportError, match=message) as info:
        recover_and_check("encoder", quiet(factory))
    assert "'encoder'" in str(info.value)


def test_state_the_constructor_cannot_express_is_caught() -> None:
    hooked = nn.Linear(3, 3)
    hooked.register_forward_hook(lambda module, inputs, output: output * 2)
    with pytest.raises(ExportError, match=r"module 'fc'.*forward hooks"):
        recover_and_check("fc", hooked)

    patched = nn.Conv2d(2, 2, 1)
    patched._reversed_padding_repeated_twice = [1, 1, 1, 1]  # set by __init__, changed after: real
    with pytest.raises(ExportError, match=r"attribute '_reversed_padding_repeated_twice' is \[1, 1, 1, 1\]"):
        recover_and_check("conv", patched)
    patched = nn.Conv2d(2, 2, 1)
    patched.extra_scale = 3.0  # attached after construction by someone else: not compared
    recover_and_check("conv", patched)

    mixed = nn.Linear(2, 2)
    mixed.bias.data = mixed.bias.data.double()
    with pytest.raises(ExportError, match=r"parameter '(weight|bias)' is \(2,?\d?\) float"):
        recover_and_check("fc", mixed)


def test_check_rebuild_rejects_a_wrong_call() -> None:
    module = nn.Conv2d(3, 8, 3, padding=1)
    check_rebuild("stem.conv", module, (3, 8, 3), {"padding": 1})
    with pytest.raises(ExportError, match=r"module 'stem\.conv' \(torch\.nn\.Conv2d\).*padding"):
        check_rebuild("stem.conv", module, (3, 8, 3), {})
    with pytest.raises(ExportError, match=r"stem\.conv.*raised"):
        check_rebuild("stem.conv", module, (3, 8), {"nonsense": 1})


def test_materialised_lazy_module_is_a_regular_module() -> None:
    lazy = nn.LazyLinear(4)
    lazy(torch.randn(2, 6))
    assert recover_and_check("fc", lazy) == ((6, 4), {})


def test_frozen_pretrained_embedding_is_rebuilt_frozen() -> None:
    emb = nn.Embedding.from_pretrained(torch.randn(5, 3))
    assert recover_and_check("emb", emb) == ((5, 3), {"_freeze": True})


# --------------------------------------------------------------------------------------
# many modules (cost is measured in bench/, not asserted here)
# --------------------------------------------------------------------------------------


def test_hundreds_of_modules_recover() -> None:
    blocks = []
    for i in range(60):
        width = 32 + 8 * (i % 4)
        blocks += [
            nn.Conv2d(width, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Linear(width * 16, width * 16),
            nn.LayerNorm(width),
        ]
    blocks += [nn.Embedding(30_000, 256), nn.MultiheadAttention(512, 8), nn.LSTM(256, 512, 2)]
    for i, module in enumerate(blocks):
        args, kwargs = recover_and_check(f"blocks.{i}", module)
        assert type(module)(*args, **kwargs).__repr__() == repr(module)


# --------------------------------------------------------------------------------------
# the rebuild cache: identical calls are built once, every module is still compared
# --------------------------------------------------------------------------------------


class _Table(nn.Module):
    """A non-persistent buffer: its values can only come from the constructor."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.register_buffer("table", torch.arange(n, dtype=torch.float32), persistent=False)


def test_identical_constructor_calls_share_one_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    from fxgen.describe.rebuild import RebuildCache

    built = counting_rebuilds(monkeypatch)
    cache = RebuildCache()
    for i in range(5):
        assert recover_and_check(f"blocks.{i}", nn.Linear(4, 4), cache=cache) == ((4, 4), {})
    assert recover_and_check("head", nn.Linear(4, 5), cache=cache) == ((4, 5), {})
    assert recover_and_check("tail", nn.Linear(4, 4, bias=False), cache=cache) == ((4, 4), {"bias": False})
    assert built == [("Linear", False)] * 3
    assert (cache.misses, cache.hits) == (3, 4)
    # without a cache every call is rebuilt
    recover_and_check("x", nn.Linear(4, 4))
    recover_and_check("y", nn.Linear(4, 4))
    assert len(built) == 5


def test_cache_keys_keep_argument_types_apart() -> None:
    from fxgen.describe.rebuild import _freeze

    keys = [_freeze(v) for v in (1, 1.0, True, -0.0, 0.0, "1", (1,), [1], None, torch.float32, (1.0,))]
    assert len(set(keys)) == len(keys)
    assert _freeze(float("nan")) == _freeze(float("nan"))
    assert _freeze({"a": (1, 2)}) == _freeze({"a": (1, 2)}) != _freeze({"a": [1, 2]})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.register_forward_hook(lambda *a: None), r"forward hooks"),
        (lambda m: m.weight.requires_grad_(False), r"requires_grad=False"),
        (lambda m: setattr(m, "weight", nn.Parameter(torch.zeros(4, 3))), r"parameter 'weight' is \(4, 3\)"),
        (lambda m: m.register_buffer("extra", torch.zeros(2)), r"buffer 'extra' is missing"),
        (lambda m: m.add_module("child", nn.ReLU()), r"submodule 'child' is missing"),
    ],
    ids=["hook", "frozen", "parameter", "buffer", "submodule"],
)
def test_a_sibling_changed_after_construction_is_caught(change: Callable[[nn.Module], Any], message: str) -> None:
    """Identical siblings share a rebuild, but each one is compared with it: a block whose state
    was changed after construction fails even when its siblings (same call) passed first."""
    from fxgen.describe.rebuild import RebuildCache

    siblings = [nn.Linear(4, 4) for _ in range(4)]
    change(siblings[2])
    cache = RebuildCache()
    recover_and_check("blocks.0", siblings[0], cache=cache)
    recover_and_check("blocks.1", siblings[1], cache=cache)
    with pytest.raises(ExportError, match=message) as info:
        recover_and_check("blocks.2", siblings[2], cache=cache)
    assert "'blocks.2'" in str(info.value)
    recover_and_check("blocks.3", siblings[3], cache=cache)
    assert cache.misses == 1


def test_a_sibling_with_different_unsaved_values_is_caught() -> None:
    from fxgen.describe.rebuild import RebuildCache

    register_constructor(_Table, lambda m: ((m.table.numel(),), {}))
    siblings = [_Table(5) for _ in range(3)]
    siblings[1].table[0] = 99.0
    cache = RebuildCache()
    recover_and_check("t0", siblings[0], cache=cache)
    with pytest.raises(ExportError, match=r"non-persistent buffer 'table' has different values"):
        recover_and_check("t1", siblings[1], cache=cache)
    recover_and_check("t2", siblings[2], cache=cache)


def test_export_of_repeated_blocks_catches_the_odd_one_out() -> None:
    import fxgen

    model = nn.Sequential(*[nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8), nn.ReLU()) for _ in range(6)])
    spec = fxgen.export(model)
    assert [m.args for p, m in spec.modules.items() if p.endswith(".1")] == [[8, 8]] * 6
    model[4][1].register_forward_pre_hook(lambda *a: None)
    with pytest.raises(ExportError, match=r"module '4\.1' \(torch\.nn\.Linear\).*forward pre hooks"):
        fxgen.export(model)
    model = nn.Sequential(*[nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8)) for _ in range(6)])
    model[5][0].eps = 1e-3  # a recovered argument: its own (verified) call, not an error
    spec = fxgen.export(model)
    assert spec.modules["5.0"].kwargs == {"eps": 0.001} and spec.modules["4.0"].kwargs == {}


def test_small_modules_are_rebuilt_for_real_large_ones_on_meta(monkeypatch: pytest.MonkeyPatch) -> None:
    from fxgen.construct.modules import SMALL_MODULE

    built = counting_rebuilds(monkeypatch)
    recover_and_check("small", nn.Linear(8, 8))
    recover_and_check("large", nn.Linear(256, 256))
    assert SMALL_MODULE < 256 * 257
    assert built == [("Linear", False), ("Linear", True)]


def test_rebuilding_leaves_the_random_generator_alone() -> None:
    modules = [nn.Linear(8, 8), nn.Conv2d(3, 4, 3), nn.Embedding(10, 4), nn.Linear(256, 256)]
    torch.manual_seed(7)
    expected = torch.rand(4)
    torch.manual_seed(7)
    for i, module in enumerate(modules):
        recover_and_check(f"m{i}", module)
    assert torch.equal(torch.rand(4), expected)
