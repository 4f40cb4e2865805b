"""``fxgen show``: a spec's graph as a table (like ``Graph.print_tabular``) plus parameter counts.
"""

from __future__ import annotations

from collections.abc import Iterable

from fxgen.spec.model import NO_DEFAULT, Spec

__all__ = ["show"]


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


def show(spec: Spec, *, allow: Iterable[str] = ()) -> str:
    """The text ``fxgen show`` prints: nodes, then parameters per module/tensor and the total."""
    from fxgen.assemble.module import build_module
    from fxgen.policy.policy import policy_for

    rows = [["opcode", "name", "target", "args", "kwargs"]]
    for node in spec.nodes:
        args = node.args if node.op != "placeholder" or node.default is NO_DEFAULT else [node.default]
        rows.append([node.op, node.name or "", _cell(node.target), _cell(args or ""), _cell(node.kwargs or "")])
    gm = build_module(spec, policy_for(tuple(allow)), device="meta")  # shapes only, no memory
    counts = [["attribute", "kind", "parameters"]]
    total = 0
    for path in spec.modules:
        n = sum(p.numel() for p in gm.get_submodule(path).parameters())
        counts.append([_cell(path), spec.modules[path].cls, f"{n:,}"])
        total += n
    for path in spec.parameters:
        n = gm.get_parameter(path).numel()
        counts.append([_cell(path), "parameter", f"{n:,}"])
        total += n
    for path in spec.buffers:
        counts.append([_cell(path), "buffer", "0"])
    out = [f"{spec.name}: {len(spec.nodes)} nodes", "", *_table(rows), ""]
    if len(counts) > 1:
        out += [*_table(counts), ""]
    out.append(f"total parameters: {total:,}")
    return "\n".join(out) + "\n"
