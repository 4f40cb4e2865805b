"""The example specs in model_specs/: valid for fxgen and for the JSON Schema, runnable, with the
output each one is documented to produce, and stable through load -> to_spec."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import EXAMPLES, ROOT, marked_examples
from helpers import HANG_WATCHDOG, example_graph, example_inputs

import fxgen
from fxgen.cli.show import show


@dataclass(frozen=True)
class T:
    """An expected tensor: its shape and dtype."""

    shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32


# What each example returns for its `# input:` lines, worked out from the spec by hand.
EXPECTED: dict[str, Any] = {
    "dtypes_devices": {
        "shifted": T((2, 3, 8, 4), torch.float64),  # einsum over channels, then Linear(8, 4) in float64
        "is_channels_last": True,
        "framed": T((3, 8, 8)),
        "counts": T((2, 3, 8, 8), torch.int64),
        "inf_norm": T((2, 3)),
        "masked": T((2, 3, 8, 8)),
        "magnitude": T((2, 3, 8, 8)),  # abs of complex64 is float32
        "number_format": "%.3f",
    },
    "indexing": [
        T((2, 4, 24)),  # x[:, 0:2, ..., None] reshaped to [2, 96], unflattened to [2, 4, 24]
        T((2, 4, 6, 2)),  # x[..., -4::2]
        T((2, 96)),  # x[:, [0, 3]] flattened from dim 1
        T((1, 6, 8)),  # x[-1, 0][None]
        T((2, 4, 6)),  # x.new_ones(x.shape[:-1])
    ],
    "mlp": T((4, 16)),
    "multi_io": (T((2, 4, 16)), T((2, 4, 1))),
    "resnet": T((1, 1000)),  # format 2: ResNet-18 on a 64x64 image
    "resnet_block": T((2, 8, 16, 16)),
    "unet": T((1, 2, 64, 64)),  # format 2: a mask per class, at the input's resolution
    "vit": T((2, 10)),  # format 2: the class token's logits
    "width_net": T((2, 10)),  # format 2: values scale the widths and the depth
    "family_net": T((2, 10)),  # format 2: an if and a for with carry and collect in its blocks
    "mobilenet_v2": T((1, 1000)),  # format 2: torchvision's MobileNetV2 at width 1.0
    "yolov8": [T((1, 144, 8, 8)), T((1, 144, 4, 4)), T((1, 144, 2, 2))],  # Detect's levels: 64 box bins + 80 classes
    "transformer_block": T((2, 8, 32)),
    "gpt2": T((2, 16, 50257)),  # format 2: logits over GPT-2's vocabulary at each position
}


def assert_structure(got: Any, expected: Any, where: str = "output") -> None:
    if isinstance(expected, T):
        assert isinstance(got, torch.Tensor), f"{where}: {type(got).__name__}, expected a tensor"
        assert tuple(got.shape) == expected.shape, f"{where}: shape {tuple(got.shape)}, expected {expected.shape}"
        assert got.dtype == expected.dtype, f"{where}: dtype {got.dtype}, expected {expected.dtype}"
        if got.is_floating_point() or got.is_complex():
            assert torch.isfinite(got).all(), f"{where}: non-finite values"
    elif isinstance(expected, (dict, list, tuple)):
        assert type(got) is type(expected), f"{where}: {type(got).__name__}, expected {type(expected).__name__}"
        assert len(got) == len(expected), f"{where}: {len(got)} items, expected {len(expected)}"
        if isinstance(expected, dict):
            assert list(got) == list(expected), f"{where}: keys {list(got)}, expected {list(expected)}"
            for key in expected:
                assert_structure(got[key], expected[key], f"{where}[{key!r}]")
        else:
            for i, (g, e) in enumerate(zip(got, expected, strict=True)):
                assert_structure(g, e, f"{where}[{i}]")
    else:
        assert type(got) is type(expected) and got == expected, f"{where}: {got!r}, expected {expected!r}"


def test_every_example_has_an_expectation() -> None:
    assert sorted(EXPECTED) == sorted(p.stem for p in EXAMPLES)
    assert len(EXAMPLES) >= 9


def test_structure_check_can_fail() -> None:
    with pytest.raises(AssertionError, match="shape"):
        assert_structure(torch.zeros(2, 3), T((3, 2)))
    with pytest.raises(AssertionError, match="dtype"):
        assert_structure(torch.zeros(2), T((2,), torch.int64))
    with pytest.raises(AssertionError, match="expected tuple"):
        assert_structure([torch.zeros(2)], (T((2,)),))
    with pytest.raises(AssertionError, match="keys"):
        assert_structure({"b": 1, "a": 2}, {"a": 2, "b": 1})


@pytest.mark.parametrize("example", marked_examples())  # the large examples: CI's second step
def test_example_runs_with_the_expected_outputs(example: Path) -> None:
    spec = fxgen.load_spec(example)
    gm = fxgen.load(spec)
    gm.eval()
    inputs = example_inputs(example)
    assert inputs, f"{example.name} has no `# input:` lines"
    with torch.no_grad():
        out = gm(**inputs)
    assert_structure(out, EXPECTED[example.stem])
    assert type(gm).__name__ == spec.name


@pytest.mark.parametrize("example", marked_examples())  # the large examples: CI's second step
def test_example_round_trips_through_a_graph_module(example: Path) -> None:
    spec = fxgen.load_spec(example)
    back = fxgen.to_spec(fxgen.load(spec))
    assert back == spec
    assert back.to_yaml() == spec.to_yaml()


def test_show_lists_every_node(example: Path) -> None:
    spec = example_graph(example)  # what the CLI shows: the graph at the default arguments
    text = show(spec)
    words = set(re.findall(r"\w+", text))
    names = [node.name for node in spec.nodes if node.name is not None]
    assert names
    assert [n for n in names if n not in words] == []
    assert f"{spec.name}: {len(spec.nodes)} nodes" in text


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), cwd=ROOT, capture_output=True, text=True, timeout=HANG_WATCHDOG)


def test_cli_validates_the_examples() -> None:
    result = _run(sys.executable, "-m", "fxgen", "validate", "model_specs")
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == f"fxgen: {len(EXAMPLES)} specs valid"


def test_check_jsonschema_accepts_the_examples() -> None:
    """The schema alone (as editors and CI use it, with a YAML 1.2 reader) accepts every example."""
    files = [str(p.relative_to(ROOT)) for p in EXAMPLES]
    result = _run("check-jsonschema", "--schemafile", "schemas/fxgen.schema.json", *files)
    assert result.returncode == 0, result.stdout + result.stderr


def test_each_example_names_the_schema_for_editors(example: Path) -> None:
    """The first line is the YAML language server's `$schema`, a path from the spec to the schema."""
    first = example.read_text().splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema="), first
    assert (example.parent / first.split("=", 1)[1]).resolve() == ROOT / "schemas" / "fxgen.schema.json", first


def test_check_jsonschema_metaschema() -> None:
    result = _run("check-jsonschema", "--check-metaschema", "schemas/fxgen.schema.json")
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_jsonschema_refuses_a_shape_error() -> None:
    """The same tool fails on a spec the schema refuses, so the two tests above can fail."""
    result = _run("check-jsonschema", "--schemafile", "schemas/fxgen.schema.json",
                  "tests/bad_specs/unknown_top_level_key.yaml")  # fmt: skip
    assert result.returncode == 1
    assert "version" in result.stdout + result.stderr
