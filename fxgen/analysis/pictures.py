"""Pictures of a spec's graph: mermaid (renders in GitHub and GitLab markdown) and Graphviz dot.

Nodes are grouped by the module they belong to (a module call in the box of the module holding
it: ``layer1.0.conv1`` in ``layer1`` > ``layer1.0``), and with an ``Analysis`` each edge carries
the shape and dtype of the value flowing along it. Node identifiers are generated (``n0``,
``n1``...); spec text (names, targets, paths) reaches a picture only as escaped label text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from fxgen.analysis.shapes import Analysis, owner
from fxgen.spec.model import Node, Spec, plain_nodes
from fxgen.spec.values import decode, decode_kwargs

__all__ = ["dot", "mermaid"]


@dataclass
class _Box:
    """A module's box: its own nodes and the boxes of its submodules."""

    path: str
    nodes: list[int] = field(default_factory=list)
    boxes: dict[str, _Box] = field(default_factory=dict)


@dataclass
class _Graph:
    labels: list[str]  # node index -> label
    edges: list[tuple[int, int, str | None]]  # (from, to, shape)
    root: _Box
    kinds: list[str]  # node index -> op


def _label(spec: Spec, nodes: list[Node], index: int) -> str:
    node = nodes[index]
    if node.op == "placeholder":
        return f"input {node.name}"
    if node.op == "output":
        return "output"
    if node.op == "call_module" and node.target in spec.modules:
        cls = spec.modules[node.target].cls.rpartition(".")[2]
        return f"{node.name}: {cls}"
    if node.op == "call_method":
        return f"{node.name}: .{node.target}()"
    return f"{node.name}: {node.target}"


def _reads(node: Node, names: dict[str, int]) -> list[int]:
    """The nodes ``node`` reads (by index), in order, each once."""
    used: dict[int, None] = {}

    def ref(name: str) -> None:
        if name in names:
            used[names[name]] = None

    if node.op != "placeholder":
        decode(node.args, ref)
        decode_kwargs(node.kwargs, ref)
    return list(used)


def _graph(spec: Spec, analysis: Analysis | None) -> _Graph:
    nodes = plain_nodes(spec.nodes)
    names = {node.name: i for i, node in enumerate(nodes) if node.name is not None}
    values = {info.index: info.value for info in analysis.nodes} if analysis else {}
    edges = []
    root = _Box("")
    for i, node in enumerate(nodes):
        edges += [(j, i, values.get(j)) for j in _reads(node, names)]
        where = owner(node.op, node.target or "") if node.op != "output" else ""
        container = where.rpartition(".")[0] if node.op == "call_module" else where
        box = root
        parts = container.split(".") if container else []
        for k in range(len(parts)):
            path = ".".join(parts[: k + 1])
            box = box.boxes.setdefault(path, _Box(path))
        box.nodes.append(i)
    return _Graph([_label(spec, nodes, i) for i in range(len(nodes))], edges, root, [n.op for n in nodes])


def _outline(box: _Box, depth: int = 1) -> Iterator[tuple[int, int | _Box | None]]:
    """What a picture draws, in order, with its nesting depth: a node (its index), a box opened
    (the box; its contents follow one level deeper) and closed (None). Both formats draw it."""
    for i in box.nodes:
        yield depth, i
    for sub in box.boxes.values():
        yield depth, sub
        yield from _outline(sub, depth + 1)
        yield depth, None


def _mermaid_text(text: str) -> str:
    """Label text for a quoted mermaid label: entity codes for what mermaid would read."""
    out = []
    for ch in text:
        if ch.isalnum() or ch in " _.,:[]()*+-/=<>":
            out.append(ch if ch not in "<>" else f"#{ord(ch)};")
        else:
            out.append(f"#{ord(ch)};")
    return "".join(out)


def mermaid(spec: Spec, analysis: Analysis | None = None) -> str:
    """A ``flowchart TD`` of the spec's graph."""
    graph = _graph(spec, analysis)
    lines = ["flowchart TD"]
    opened = 0
    for depth, item in _outline(graph.root):
        pad = "    " * depth
        if isinstance(item, int):
            start, end = ('(["', '"])') if graph.kinds[item] in ("placeholder", "output") else ('["', '"]')
            lines.append(f"{pad}n{item}{start}{_mermaid_text(graph.labels[item])}{end}")
        elif item is None:
            lines.append(f"{pad}end")
        else:
            opened += 1
            lines.append(f'{pad}subgraph m{opened}["{_mermaid_text(item.path)}"]')
    for a, b, shape in graph.edges:
        label = f'|"{_mermaid_text(shape)}"|' if shape else ""
        lines.append(f"    n{a} -->{label} n{b}")
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    """A double-quoted dot string: backslashes and quotes escaped, control characters dropped."""
    return "".join(ch for ch in text if ch.isprintable()).replace("\\", "\\\\").replace('"', '\\"')


def dot(spec: Spec, analysis: Analysis | None = None) -> str:
    """A Graphviz ``digraph`` of the spec's graph."""
    graph = _graph(spec, analysis)
    lines = [f'digraph "{_dot_text(spec.name)}" {{', "    rankdir=TB;",
             '    node [shape=box, style="rounded", fontname="Helvetica"];',
             '    edge [fontname="Helvetica", fontsize=10];']  # fmt: skip
    opened = 0
    for depth, item in _outline(graph.root):
        pad = "    " * depth
        if isinstance(item, int):
            extra = ", shape=oval" if graph.kinds[item] in ("placeholder", "output") else ""
            lines.append(f'{pad}n{item} [label="{_dot_text(graph.labels[item])}"{extra}];')
        elif item is None:
            lines.append(f"{pad}}}")
        else:
            opened += 1
            lines.append(f"{pad}subgraph cluster_{opened} {{")
            lines.append(f'{pad}    label="{_dot_text(item.path)}";')
    for a, b, shape in graph.edges:
        label = f' [label="{_dot_text(shape)}"]' if shape else ""
        lines.append(f"    n{a} -> n{b}{label};")
    lines.append("}")
    return "\n".join(lines) + "\n"
