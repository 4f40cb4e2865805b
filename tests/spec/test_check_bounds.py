"""``checks:`` are computed alike by ``fxgen.load`` and the generated forward on every input:
each up to its ``fxgen.spec.check_bounds.size_limit`` (where fxgen's bounded arithmetic and
Python's agree), an input with a larger size refused by both with the same message."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import expressions

import fxgen
from fxgen.check.validate import validate_data
from fxgen.spec.check_bounds import MAX_SIZE, size_limit
from fxgen.spec.expr import parse


@pytest.mark.parametrize(("text", "limit"), [
    ("n * n * n > 0", 2**21), ("2 ** n > 0", 63), ("n * m <= 4096", 3037000499), ("seq <= 512", None),
    ("(8 - height % 8) % 8 != 0", None), ("2 * (x_dim2 // 2) == x_dim2", None), ("ceil(n / 3) * 3 == n", None),
    ("(n > 1) + 1 > 0", -1),
])  # fmt: skip
def test_the_size_limit_of_a_check(text: str, limit: int | None) -> None:
    assert size_limit(parse(text)) == limit


def test_a_check_computed_at_no_size_is_refused() -> None:
    with pytest.raises(fxgen.SpecError, match="cannot be computed alike by"):
        validate_data(_spec("(n > 1) + 1 > 0"))


def _spec(condition: str) -> dict[str, Any]:
    return {"fxgen": 1, "name": "Checked", "inputs": {"x": {"shape": ["n", 0]}, "y": {"shape": ["m", 0]}},
            "checks": [condition],
            "nodes": [{"op": "placeholder", "name": "x", "type": "torch.Tensor"},
                      {"op": "placeholder", "name": "y", "type": "torch.Tensor"},
                      {"op": "output", "args": [{"tuple": ["%x", "%y"]}]}]}  # fmt: skip


@functools.lru_cache(maxsize=64)
def _both(condition: str) -> tuple[torch.nn.Module, torch.nn.Module]:
    """``fxgen.load`` of the spec checking ``condition``, and the generated class's instance."""
    data = _spec(condition)
    namespace: dict[str, Any] = {}
    exec(compile(fxgen.generate(data), "<generated>", "exec"), namespace)
    return fxgen.load(data), namespace["Checked"]()


def _outcome(module: torch.nn.Module, n: int, m: int) -> str:
    """Accepted, or the error: a message of the checks' own whole, another error by its type."""
    try:
        module(torch.empty(n, 0), torch.empty(m, 0))  # a dimension of 0: any size costs nothing
    except ValueError as exc:
        return str(exc) if str(exc).startswith("input ") else "refused"
    except ArithmeticError:  # a division by zero: fxgen's is a ValueError, Python's a ZeroDivisionError
        return "refused"
    return "accepted"


def _agree(condition: str, n: int, m: int) -> None:
    loaded, generated = _both(condition)
    assert _outcome(loaded, n, m) == _outcome(generated, n, m), (condition, n, m)


def test_the_issue_s_check_is_refused_alike_past_its_limit() -> None:
    loaded, generated = _both("n * n * n > 0")
    for n in (2**21, 2**21 + 1):
        _agree("n * n * n > 0", n, 1)
    message = "input 'x' dimension 0 (n) is 2097153: the model was exported for n * n * n > 0, computed for sizes of at most 2097152"
    assert _outcome(loaded, 2**21 + 1, 1) == message
    assert _outcome(generated, 2**21, 1) == "accepted"


CHECKS = ["n * n * n > 0", "2 ** n > m", "n * m <= 4096", "n ** 3 // (m + 1) > 1", "n * 1.5 * m > 2", "round(n / 3) * m > 0",
          "n // m > 0 or m > 5", "sqrt(n * m) >= 1", "abs(n - m) ** 2 > 4", "max(n, m) * min(n, m) * 64 != 0"]  # fmt: skip


def _sizes(limit: int | None) -> st.SearchStrategy[int]:
    near = [] if limit is None or limit < 0 else [st.integers(max(limit - 2, 0), limit + 2)]
    return st.one_of(*near, st.integers(0, 70), st.integers(0, MAX_SIZE), st.sampled_from([2**21, 2**21 + 1, 2**31, MAX_SIZE]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_load_and_the_generated_forward_refuse_the_same_inputs_at_the_bound(data: st.DataObject) -> None:
    condition = data.draw(st.sampled_from(CHECKS))
    limit = size_limit(parse(condition))
    _agree(condition, data.draw(_sizes(limit)), data.draw(_sizes(limit)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data())
def test_random_checks_are_computed_alike(data: st.DataObject) -> None:
    condition = f"{data.draw(expressions(['n', 'm'], depth=3))} > 0"
    try:
        tree = parse(condition)
        _both(condition)
    except (fxgen.SpecError, ValueError):
        assume(False)
    limit = size_limit(tree)
    for _ in range(4):
        _agree(condition, data.draw(_sizes(limit)), data.draw(_sizes(limit)))
