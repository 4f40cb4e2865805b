"""A layer table (``layers:``), desugared to a Sequential and the compact nodes that route it.

Ultralytics' yaml, darknet's cfgs and RT-DETR write each layer once, with the layers whose
outputs it takes (the ``from`` column); ``parse_model`` builds the ``nn.Sequential`` and
``_predict_once`` derives the routing. A body (the top level or a class) may say the same:

    layers:
      model:                              # one container name -> its rows, [FROM, MODULE]
        - [-1, "Conv(3, c64, 3, 2)"]
        - [[-1, 0], "Concat(1)"]

stands for exactly ``modules: {model: {class: torch.nn.Sequential, args: [{module: MODULE},
...]}}`` (after the body's own modules) and one compact node item per row, put before
the body's own nodes (after their placeholders, if they begin with some): row i is
``{model_i: [model.i, FROM]}``, named as torch.fx names that call, its argument the value FROM
names. FROM -1 is the previous row's value (row 0's is the previous value of the compact form:
the class's input), j >= 0 row j's (j < i), another -k the value k rows back, a list of them a
list argument. ``compact`` then desugars those items like any others (an implied input, the
last row's value returned when the body has no nodes of its own), and ``shorthand`` the rows'
call strings. A pure function of the data, run before both; each produced declaration and node
is located at its row, so every later error names the row's line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fxgen.read.yaml_events import KEY, JsonPath
from fxgen.spec.shorthand import Source, with_classes

__all__ = ["FROM_ALLOWED", "desugar_layers"]

Problem = tuple[JsonPath, str]

FROM_ALLOWED = (
    "a row's FROM is -1 (the previous row's value; row 0's: the class's input), an earlier row's index j >= 0, "
    "-k (the value k rows back), or a non-empty list of these (a list argument)"
)

_ROW_ALLOWED = (
    "`layers:` maps one container name to its rows, each [FROM, MODULE]: MODULE a module written as a call "
    "string or a module declaration mapping, FROM the layers whose values it takes"
)


def desugar_layers(
    data: Any, node_name: Callable[[str], str]
) -> tuple[Any, dict[JsonPath, Source] | None, list[Problem]]:
    """The data of ``data`` with each body's ``layers:`` written out as its module and nodes,
    where each produced path comes from (None when no body has ``layers``: ``data`` is then
    returned as it is), and the problems found. ``node_name``: the name torch.fx gives the call
    of a module path (``model.0``: ``model_0``)."""
    if not isinstance(data, dict):
        return data, None, []
    table = _Table(node_name)
    out = with_classes(table.body(data, ()), data, table.body)
    if out is data:
        return data, None, []
    return out, table.sources, table.problems


class _Table:
    """The layer tables of one spec desugared: their bodies, the produced paths' sources, the problems."""

    def __init__(self, node_name: Callable[[str], str]) -> None:
        self.node_name = node_name
        self.sources: dict[JsonPath, Source] = {}
        self.problems: list[Problem] = []

    def body(self, body: dict[str, Any], where: JsonPath) -> dict[str, Any]:
        """``body`` with its ``layers:`` desugared (``body`` itself when it has none)."""
        if "layers" not in body:
            return body
        return {key: value for key, value in self.table(body, where).items() if key != "layers"}

    def table(self, body: dict[str, Any], where: JsonPath) -> dict[str, Any]:
        """``body`` with the module and the nodes its ``layers:`` stands for (``body`` itself
        when the table is not well formed: the problems say why)."""
        at = (*where, "layers")
        table = body["layers"]
        out = body
        if not isinstance(table, dict) or len(table) != 1 or not isinstance(next(iter(table)), str):
            self.problems.append((at, _ROW_ALLOWED))
            return out
        name, rows = next(iter(table.items()))
        here = (*at, name)
        modules = body.get("modules", {})
        if not isinstance(modules, dict):
            return out  # the schema says what `modules:` is
        if name in modules:
            self.problems.append(((*here, KEY), f"`layers:` declares the container {name!r}, which `modules:` "
                                                 "declares too; declare it once (remove it from `modules:` or rename "
                                                 "the table)"))  # fmt: skip
            return out
        if not isinstance(rows, list) or not rows:
            self.problems.append((here, f"the rows of {name!r} are a non-empty list; {_ROW_ALLOWED}"))
            return out
        bad = [i for i, row in enumerate(rows) if not (isinstance(row, list) and len(row) == 2 and isinstance(row[1], str | dict))]
        for i in bad:
            self.problems.append(((*here, i), f"row {i} of {name!r} is not [FROM, MODULE]; {_ROW_ALLOWED}"))
        if bad:
            return out
        path = (*where, "modules", name)
        out = _in_place(out, "modules", {**modules, name: {"class": "torch.nn.Sequential",
                                                            "args": [{"module": row[1]} for row in rows]}})  # fmt: skip
        self.sources[path] = (here, False)
        for i in range(len(rows)):
            self.sources[(*path, "args", i)] = ((*here, i), False)
            self.sources[(*path, "args", i, "module")] = ((*here, i, 1), True)
        names = [self.node_name(f"{name}.{i}") for i in range(len(rows))]
        steps = []
        for i, row in enumerate(rows):
            source = self.source(row[0], i, names, (*here, i, 0))
            if source is not None:
                steps.append((i, {names[i]: [f"{name}.{i}", source]}))
        own = body.get("nodes", [])
        if not isinstance(own, list):
            return out  # the schema says what `nodes:` is
        start = next((k for k, item in enumerate(own) if not _placeholder(item)), len(own))
        out = _in_place(out, "nodes", [*own[:start], *(step for _, step in steps), *own[start:]])
        nodes = (*where, "nodes")
        if "nodes" not in body:
            self.sources[nodes] = (here, False)
        for k in range(start, len(own)):
            self.sources[(*nodes, k + len(steps))] = ((*nodes, k), True)
        for k, (i, _) in enumerate(steps):
            step = (*nodes, start + k)
            self.sources[step] = ((*here, i), False)
            self.sources[(*step, names[i], 0)] = ((*here, i, 1), True)
            self.sources[(*step, names[i], 1)] = ((*here, i, 0), True)
        return out

    def source(self, written: Any, i: int, names: list[str], at: JsonPath) -> Any:
        """The argument FROM ``written`` stands for in row ``i`` (``"%"``: the previous value, as
        the compact form reads it), or None and a problem."""
        if isinstance(written, list) and written and not any(isinstance(item, list) for item in written):
            found = [self.source(item, i, names, (*at, k)) for k, item in enumerate(written)]
            return None if any(item is None for item in found) else found
        if not isinstance(written, int) or isinstance(written, bool):
            self.problems.append((at, f"{written!r} is no FROM of row {i}; {FROM_ALLOWED}"))
            return None
        if written == -1 and i == 0:
            return "%"
        j = i + written if written < 0 else written
        if j >= i:
            self.problems.append((at, f"row {i} takes row {j}'s value, which is not computed yet; {FROM_ALLOWED}"))
            return None
        if j < 0:
            self.problems.append((at, f"row {i} takes the value {-written} rows back, before row 0; {FROM_ALLOWED}"))
            return None
        return f"%{names[j]}"


def _in_place(body: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``body`` with ``key`` set to ``value``, where it is, else just before ``layers`` (so
    ``fxgen expand`` prints the Sequential and the nodes where the table was written)."""
    if key in body:
        return {**body, key: value}
    out: dict[str, Any] = {}
    for k, v in body.items():
        if k == "layers":
            out[key] = value
        out[k] = v
    return out


def _placeholder(item: Any) -> bool:
    return isinstance(item, dict) and item.get("op") == "placeholder"
