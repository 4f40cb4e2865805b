"""``fxgen show``: a spec's graph as a table (like ``Graph.print_tabular``) plus parameter counts;
with declared inputs, every node's output shape and dtype and its FLOPs too. Also as JSON, and as
pictures (mermaid, dot, svg) drawn by ``fxgen.analysis.pictures``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from fxgen.spec.model import NO_DEFAULT, Spec, plain_nodes

if TYPE_CHECKING:
    from fxgen.analysis.shapes import Analysis

__all__ = ["show", "show_json"]


def _cell(value: object) -> str:
    """A value as one short, printable line: paths may hold any character (a line break, an
    escape sequence), which is shown escaped rather than sent to the terminal."""
    text = "" if value is None else str(value)
    if not text.isprintable():
        text = repr(text)[1:-1]
    return text if len(text) <= 60 else text[:57] + "..."


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _count(value: int | str) -> str:
    return f"{value:,}" if isinstance(value, int) else value


def _parameters(spec: Spec, allow: Iterable[str], analysis: Analysis | None) -> dict[str, int]:
    """Parameters per declared module and parameter, counted on the meta device."""
    if analysis is not None:
        return analysis.parameters
    from fxgen.assemble.module import build_module
    from fxgen.policy.policy import policy_for

    gm = build_module(spec, policy_for(tuple(allow)), device="meta")  # shapes only, no memory
    counts = {path: sum(p.numel() for p in gm.get_submodule(path).parameters()) for path in spec.modules}
    return counts | {path: gm.get_parameter(path).numel() for path in spec.parameters}


def show(spec: Spec, *, allow: Iterable[str] = (), analysis: Analysis | None = None) -> str:
    """The text ``fxgen show`` prints: nodes, then parameters per module/tensor and the total.
    With ``analysis`` (the spec declares inputs), each node's value and FLOPs, and the total."""
    head = ["opcode", "name", "target", "args", "kwargs"]
    rows = [[*head, "value", "flops"] if analysis else head]
    nodes = plain_nodes(spec.nodes)
    infos = analysis.nodes if analysis else [None] * len(nodes)
    for node, info in zip(nodes, infos, strict=True):
        args = node.args if node.op != "placeholder" or node.default is NO_DEFAULT else [node.default]
        row = [node.op, node.name or "", _cell(node.target), _cell(args or ""), _cell(node.kwargs or "")]
        if info is not None:
            row += [_cell(info.value), _count(info.flops) if info.flops else ""]
        rows.append(row)
    counts_by_path = _parameters(spec, allow, analysis)
    counts = [["attribute", "kind", "parameters"]]
    for path in spec.modules:
        counts.append([_cell(path), spec.modules[path].cls, f"{counts_by_path[path]:,}"])
    for path in spec.parameters:
        counts.append([_cell(path), "parameter", f"{counts_by_path[path]:,}"])
    for path in spec.buffers:
        counts.append([_cell(path), "buffer", "0"])
    total = sum(counts_by_path.values())
    out = [f"{spec.name}: {len(spec.nodes)} nodes", "", *_table(rows), ""]
    if len(counts) > 1:
        out += [*_table(counts), ""]
    out.append(f"total parameters: {total:,}")
    if analysis is not None:
        out.append(f"total FLOPs: {_count(analysis.flops)} (as torch.utils.flop_counter counts them)")
        if analysis.dims:
            shown = ", ".join(f"{name} (propagated as {size})" for name, size in analysis.dims.items())
            out.append(f"symbolic dimensions: {shown}")
    return "\n".join(out) + "\n"


def show_json(spec: Spec, analysis: Analysis | None, *, allow: Iterable[str] = ()) -> str:
    """``fxgen show --format json``: the same facts as the table, as data."""
    data: dict[str, Any] = {"name": spec.name, "nodes": []}
    nodes = plain_nodes(spec.nodes)
    infos = analysis.nodes if analysis else [None] * len(nodes)
    for node, info in zip(nodes, infos, strict=True):
        entry: dict[str, Any] = node.to_dict()
        if info is not None:
            entry.update(value=info.value, flops=info.flops, module=info.owner)
        data["nodes"].append(entry)
    data["parameters"] = _parameters(spec, allow, analysis)
    data["total_parameters"] = sum(data["parameters"].values())
    if analysis is not None:
        data["flops"] = analysis.flops
        data["dims"] = analysis.dims
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
