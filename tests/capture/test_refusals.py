"""Names export writes and refusals it gives are true (issue 33 items 8 and 9): a function by its
public name, a class name ``load_spec`` takes, and refusals that say what is wrong and what to do."""

from __future__ import annotations

import builtins
import keyword
import tempfile
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from helpers import property_budget
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import fxgen
from fxgen.check.checker import RESERVED_NAMES


class _PrivatePaths(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.threshold(x, 0.1, 0.0) + torch.meshgrid(x, x, indexing="ij")[0]


def test_a_function_reached_through_a_private_path_is_named_by_its_public_name() -> None:
    assert F.threshold is F._threshold
    targets = {n.target for n in fxgen.export(_PrivatePaths()).nodes}
    assert {"torch.nn.functional.threshold", "torch.meshgrid"} <= targets


def test_a_function_of_a_package_outside_the_policy_is_named_by_its_public_name() -> None:
    from fxgen.describe.to_spec import function_name

    assert torch.masked.sum is torch.masked._ops.sum
    assert function_name(torch.masked.sum) == "torch.masked.sum"


_NAMES = st.one_of(
    st.sampled_from(
        sorted({*RESERVED_NAMES, "str", "len", "input", "match", "class", "print", "Model"})
    ),
    st.sampled_from(keyword.kwlist + dir(builtins)[:40]),
    st.text(st.sampled_from("aZ_0é-. "), min_size=1, max_size=6),
)


@settings(max_examples=property_budget(30), deadline=None)
@given(top=_NAMES, block=_NAMES)
def test_load_spec_takes_every_spec_export_writes(top: str, block: str) -> None:
    inner = type(block, (nn.Module,), {"forward": lambda self, x: x * 2})

    def init(self: nn.Module) -> None:
        nn.Module.__init__(self)
        self.b = inner()

    outer = type(top, (nn.Module,), {"__init__": init, "forward": lambda self, x: self.b(x) + 1})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = fxgen.export(outer())
    with tempfile.TemporaryDirectory() as tmp:
        spec.to_file(Path(tmp) / "m.yaml")
        loaded = fxgen.load(fxgen.load_spec(Path(tmp) / "m.yaml"))
    x = torch.randn(2)
    assert torch.equal(loaded(x), outer()(x))


class _MeshgridOfList(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.meshgrid([x, x], indexing="ij")[
            0
        ]  # torch.meshgrid does not look into the list


def test_a_builtin_torch_records_behind_its_python_function_is_refused_with_the_way_out() -> None:
    with pytest.raises(fxgen.ExportError, match=r"internal builtin behind the Python function torch\.meshgrid.*"
                       r"pass them as separate arguments") as info:  # fmt: skip
        fxgen.export(_MeshgridOfList())
    assert "define it at module level" not in info.value.message


class _CompileRegion(nn.Module):
    @torch.compiler.nested_compile_region
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


@pytest.mark.parametrize("capture", ["auto", "trace", "dynamo"])
def test_a_forward_whose_decorator_hides_its_parameters_is_refused_saying_so(capture: str) -> None:
    with pytest.raises(
        fxgen.ExportError, match=r"forward takes only \(\*args, \*\*kwargs\).*remove the decorator"
    ) as info:
        fxgen.export(
            _CompileRegion(),
            capture=capture,
            example_inputs=torch.ones(2) if capture == "dynamo" else None,
        )
    assert (
        "positional parameters" not in info.value.message
        and "example_inputs" not in info.value.message
    )


@torch.fx.wrap
def _apply(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return module(x)


class _PassesAModule(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _apply(self.bn, x)


def test_a_module_passed_as_a_value_is_refused_as_a_module() -> None:
    with pytest.raises(fxgen.ExportError, match=r"passes module 'bn' \(BatchNorm1d\) itself as a value to _apply.*"
                       r"call the module") as info:  # fmt: skip
        fxgen.export(_PassesAModule().eval())
    assert "not a tensor or module" not in info.value.message


class _NeitherCapture(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for size in x.shape:  # symbolic tracing cannot iterate a shape
            x = x + size
        return torch.utils.checkpoint.checkpoint(
            self.bn, x, use_reentrant=False
        )  # Dynamo records a nested graph


def test_auto_capture_does_not_suggest_the_trace_that_failed() -> None:
    with pytest.raises(fxgen.ExportError, match=r"nested graph .*remove that wrapper.*symbolic tracing failed first: "
                       r".*iterates over a traced value") as info:  # fmt: skip
        fxgen.export(_NeitherCapture().eval(), example_inputs=torch.ones(2, 3))
    assert "capture='trace'" not in info.value.message
