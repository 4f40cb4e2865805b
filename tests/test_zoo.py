"""Checkpoint parity on the CI subset of the real-model zoo (bench/zoo_report.py runs all of it),
its TorchDynamo captures included."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from zoo_models import ZOO
from zoo_report import LIMITATIONS, round_trip

FAST = [z for z in ZOO if z.fast]


@pytest.mark.parametrize("zm", FAST, ids=[z.name for z in FAST])
def test_zoo_model_round_trips_exactly(zm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for package in zm.requires:
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed (pip install -c constraints.txt -e '.[dev]')")
    result = round_trip(zm, tmp_path)
    assert result.passed, result.problem
    assert result.capture == ("trace" if zm.traceable else "dynamo")


def test_ci_subset_is_representative() -> None:
    """The subset covers each class of model export once got wrong (docs/export.md)."""
    assert len(FAST) >= 5 and not any(z.name in LIMITATIONS for z in FAST)
    covered = set().union(*(z.features for z in FAST))
    needed = {"non_persistent_buffers", "tensor_constants", "non_identifier_keys", "unused_state", "huggingface"}
    assert needed <= covered, needed - covered
    assert len({z.library for z in FAST}) >= 3
    only_dynamo = {z.library for z in FAST if not z.traceable}  # captured with TorchDynamo (capture="auto")
    assert {"monai", "hf_decoders"} <= only_dynamo, only_dynamo
