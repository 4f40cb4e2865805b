"""Round trip 2 on the CI subset of the real-model zoo (bench/zoo_report.py runs all of it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from zoo_models import ZOO
from zoo_report import TOLERANCE, round_trip

FAST = [z for z in ZOO if z.fast]


@pytest.mark.parametrize("zm", FAST, ids=[z.name for z in FAST])
def test_zoo_model_round_trips(zm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for package in zm.requires:
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed (pip install -c constraints.txt -e '.[zoo]')")
    result = round_trip(zm, tmp_path)
    assert result.problem == "", result.problem
    assert result.traceable and result.exported and result.generated
    assert result.error is not None and result.error <= TOLERANCE, result.error


def test_ci_subset_is_representative() -> None:
    assert len(FAST) >= 5
    assert {"monai.UNet", "monai.ViT"} <= {z.name for z in FAST}
