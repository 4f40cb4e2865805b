"""Shared test configuration: hypothesis profiles, the --update-golden flag, example fixtures."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import FAST_EXAMPLES, THOROUGH_EXAMPLES
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
# The tests of each stage live in a folder of their own; what they share (helpers, strategies,
# the modules they export and the invalid-spec catalogue) stays here, importable from all of them.
sys.path.insert(0, str(Path(__file__).resolve().parent))
EXAMPLES = sorted((ROOT / "model_specs").glob("*.yaml"))
# The examples whose whole-model checks take seconds each (GPT-2 small's 124M parameters, YOLOv8,
# MobileNetV2 and ResNet-18 at full size). A test that builds and runs every example whole
# parametrises over ``marked_examples()``: `python -m pytest` runs it on the other examples (UNet,
# ViT, the transformer block and the small ones among them), CI's second step on these too.
LARGE_EXAMPLES = frozenset({"gpt2", "yolov8", "mobilenet_v2", "resnet"})


def marked_examples() -> list[Any]:
    """Each spec in model_specs/ as a parameter, the large ones marked ``slow``."""
    return [pytest.param(p, id=p.stem, marks=[pytest.mark.slow] if p.stem in LARGE_EXAMPLES else []) for p in EXAMPLES]

# Hypothesis budgets. `python -m pytest` (the README's command) runs a small one ("dev"; "ci",
# derandomised, under CI=true); CI's second step runs every property test again at the budgets
# the tests are written for ("thorough", derandomised: helpers.property_budget);
# `HYPOTHESIS_PROFILE=long` is the maintainers' long run.
_QUIET = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("dev", max_examples=FAST_EXAMPLES, **_QUIET)
settings.register_profile("ci", derandomize=True, max_examples=FAST_EXAMPLES, **_QUIET)
settings.register_profile("thorough", derandomize=True, max_examples=THOROUGH_EXAMPLES, **_QUIET)
settings.register_profile("long", max_examples=5000, **_QUIET)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite the golden files (generated/*.py) from the current generator output",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(params=EXAMPLES, ids=[p.stem for p in EXAMPLES])
def example(request: pytest.FixtureRequest) -> Path:
    """Each spec in model_specs/."""
    return request.param
