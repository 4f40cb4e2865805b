"""Shared test configuration: hypothesis profiles, the --update-golden flag, example fixtures."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers import FAST_EXAMPLES, THOROUGH_EXAMPLES
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
# The tests of each stage live in a folder of their own; what they share (helpers, strategies,
# the modules they export and the invalid-spec catalogue) stays here, importable from all of them.
sys.path.insert(0, str(Path(__file__).resolve().parent))
EXAMPLES = sorted((ROOT / "model_specs").glob("*.yaml"))

# Hypothesis budgets. `python -m pytest` (the README's command) runs a small one ("dev"; "ci",
# derandomised, under CI=true); CI's second step runs every property test again at the budgets
# the tests are written for ("thorough", derandomised: helpers.property_budget);
# `HYPOTHESIS_PROFILE=long` is the maintainers' long run.
_QUIET = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("dev", max_examples=FAST_EXAMPLES, **_QUIET)
settings.register_profile("ci", derandomize=True, max_examples=FAST_EXAMPLES, **_QUIET)
settings.register_profile("thorough", derandomize=True, max_examples=THOROUGH_EXAMPLES, **_QUIET)
settings.register_profile("long", max_examples=5000, **_QUIET)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


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
