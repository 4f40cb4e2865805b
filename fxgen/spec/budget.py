"""What one whole spec may make, counted over every instance of every block.

Each container count has a cap of its own (``MAX_REPEAT`` copies, ``MAX_NODES`` per class graph,
``MAX_CALLS`` per evaluation), but blocks multiply them: a block of 100 blocks of 100 blocks ...
stands for 10**8 modules in a few lines, and a block called in a loop by a block called in a loop
runs its graph as often as both loops' counts multiplied. The check counts what the model's
construction makes, and the graph nodes one call of its forward runs (validation runs it on the
declared inputs),
each instance as often as the model holds it (the check looks at each distinct instance once and
charges the others what it counted then), into one ``Budget``, and stops with a ``BudgetError``
(the check locates it) as soon as a count goes beyond its cap. Expressions charge the budget in
force while they are evaluated (``counting``), so every place that evaluates one is counted.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

__all__ = ["CAPS", "MAX_MODULES", "MAX_RUNS", "MAX_STEPS", "MAX_TOTAL_NODES", "Budget", "BudgetError", "counting", "current"]

MAX_MODULES = 100_000  # modules a model builds, blocks and their items included: ten times a large exported model's
MAX_TOTAL_NODES = 1_000_000  # graph nodes of every class instance (and mode) together: what a flat file holds at most
MAX_STEPS = 2_000_000  # steps of expression evaluation (operators, names, calls), all instances told: seconds
MAX_RUNS = 1_000_000  # graph nodes one call of the model's forward runs, every block call opened (validation runs it)

CAPS = {"modules": MAX_MODULES, "nodes": MAX_TOTAL_NODES, "steps": MAX_STEPS, "runs": MAX_RUNS}
_NAMES = {"modules": "MAX_MODULES", "nodes": "MAX_TOTAL_NODES", "steps": "MAX_STEPS", "runs": "MAX_RUNS"}
_WHAT = {"modules": "builds {count:,} modules", "nodes": "has {count:,} graph nodes",
         "steps": "takes {count:,} steps to evaluate its expressions",
         "runs": "runs {count:,} graph nodes in one call of its forward"}  # fmt: skip


class BudgetError(Exception):
    """A count of the whole spec beyond its cap. Not an ``ExprError``: nothing on the way down
    reports it as that expression's problem; the check locates it (``at``) and reports it once."""

    def __init__(self, kind: str, count: int) -> None:
        self.kind, self.count = kind, count
        self.at: tuple[str | int, ...] | None = None  # a JSON path of the spec, set by the check
        super().__init__(
            f"the model {_WHAT[kind].format(count=count)} by here, counted over every instance of every block, more "
            f"than the {CAPS[kind]:,} a spec may (fxgen.spec.budget.{_NAMES[kind]}); build fewer or smaller block "
            "instances, or fewer loop steps"
        )


class Budget:
    """The counts so far of one model's check."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(CAPS, 0)

    def charge(self, kind: str, n: int = 1) -> None:
        count = self.counts[kind] = self.counts[kind] + n
        if count > CAPS[kind]:
            raise BudgetError(kind, count)

    def snapshot(self) -> dict[str, int]:
        return dict(self.counts)

    def since(self, snapshot: dict[str, int]) -> dict[str, int]:
        """What was charged since ``snapshot``: an instance's cost, to charge again for its copies."""
        return {kind: self.counts[kind] - snapshot[kind] for kind in CAPS}

    def charge_all(self, cost: dict[str, int]) -> None:
        for kind, n in cost.items():
            self.charge(kind, n)


_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("fxgen_budget", default=None)


def current() -> Budget | None:
    """The budget expressions evaluated now charge, or None (outside a check)."""
    return _CURRENT.get()


@contextlib.contextmanager
def counting(budget: Budget) -> Iterator[Budget]:
    """Expressions evaluated inside charge ``budget``."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)
