"""Synthetic fxgen specs of a given size, in three shapes, written as YAML text.

* ``chain``    -- one long sequential chain of elementwise ops (short lines, one live value);
* ``fan``      -- a wide fan-out from the input, gathered by ``torch.cat`` in groups of eight
                  (lines longer than black's limit) and summed by a balanced tree of adds
                  (many values live at once);
* ``residual`` -- a stack of residual blocks ``h + relu(fc(ln(h))) * scale`` with
                  ``call_module`` on ``blocks.N.ln`` / ``blocks.N.fc`` (LayerNorm and Linear)
                  and ``get_attr`` of the parameter ``blocks.N.scale``.

Node counts are close to the requested size (``count_nodes`` gives the exact figure). The
text is written directly (one flow mapping per node, like the examples in ``model_specs/``)
so generating a 100,000-node spec takes well under a second and does not go through fxgen.
Every spec takes one input ``x`` of shape ``[BATCH, WIDTH]`` (see the ``# input:`` line).

The weight-heavy specs (loading with weights as the file grows to 2 GiB) are in ``bench/heavy.py``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BATCH", "SHAPES", "WIDTH", "count_nodes", "make_spec", "write_spec"]

BATCH = 4
WIDTH = 8
SHAPES = ("chain", "fan", "residual")

_HEAD = "# input: x float32[{b}, {w}]\nfxgen: 1\nname: {name}\n"


def _node(op: str, name: str | None, target: str | None = None, args: str | None = None,
          kwargs: str | None = None, type_: str | None = None) -> str:  # fmt: skip
    parts = [f"op: {op}"]
    if name is not None:
        parts.append(f"name: {name}")
    if target is not None:
        parts.append(f"target: {target}")
    if args is not None:
        parts.append(f"args: [{args}]")
    if kwargs is not None:
        parts.append(f"kwargs: {{{kwargs}}}")
    if type_ is not None:
        parts.append(f"type: {type_}")
    return "  - {" + ", ".join(parts) + "}\n"


def _chain(n: int) -> str:
    lines = [_node("placeholder", "x", type_="torch.Tensor")]
    prev = "x"
    for i in range(max(n - 2, 1)):
        name = f"n{i}"
        kind = i % 4
        if kind == 0:
            lines.append(_node("call_function", name, "torch.relu", f'"%{prev}"'))
        elif kind == 1:
            lines.append(_node("call_function", name, "operator.add", f'"%{prev}", 1.0'))
        elif kind == 2:
            lines.append(_node("call_method", name, "mul", f'"%{prev}", 0.5'))
        else:
            lines.append(_node("call_function", name, "torch.tanh", f'"%{prev}"'))
        prev = name
    lines.append(_node("output", None, args=f'"%{prev}"', type_="torch.Tensor"))
    return "nodes:\n" + "".join(lines)


def _fan(n: int) -> str:
    # nodes = 1 + W + W/8 + (W/8 - 1) + 1 = 1.25 W + 1
    groups = max(1, round((n - 1) / 1.25 / 8))
    width = groups * 8
    lines = [_node("placeholder", "x", type_="torch.Tensor")]
    for i in range(width):
        name = f"branch_{i}"
        kind = i % 3
        if kind == 0:
            lines.append(_node("call_function", name, "operator.mul", f'"%x", {0.5 + i % 7}'))
        elif kind == 1:
            lines.append(_node("call_function", name, "torch.sin", '"%x"'))
        else:
            lines.append(_node("call_method", name, "cos", '"%x"'))
    level = []
    for g in range(groups):
        refs = ", ".join(f'"%branch_{g * 8 + k}"' for k in range(8))
        name = f"gathered_{g}"
        lines.append(_node("call_function", name, "torch.cat", f"[{refs}]", kwargs="dim: 1"))
        level.append(name)
    count = 0
    while len(level) > 1:  # a balanced tree of adds
        nxt = []
        for a, b in zip(level[0::2], level[1::2], strict=False):
            name = f"sum_{count}"
            count += 1
            lines.append(_node("call_function", name, "operator.add", f'"%{a}", "%{b}"'))
            nxt.append(name)
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    lines.append(_node("output", None, args=f'"%{level[0]}"', type_="torch.Tensor"))
    return "nodes:\n" + "".join(lines)


def _residual(n: int) -> str:
    blocks = max(1, round((n - 2) / 6))
    modules = []
    params = []
    lines = [_node("placeholder", "x", type_="torch.Tensor")]
    prev = "x"
    for i in range(blocks):
        modules.append(f"  blocks.{i}.ln: {{class: torch.nn.LayerNorm, args: [{WIDTH}]}}\n")
        modules.append(f"  blocks.{i}.fc: {{class: torch.nn.Linear, args: [{WIDTH}, {WIDTH}]}}\n")
        params.append(f"  blocks.{i}.scale: {{shape: [{WIDTH}], init: ones}}\n")
        lines.append(_node("call_module", f"ln_{i}", f"blocks.{i}.ln", f'"%{prev}"'))
        lines.append(_node("call_module", f"fc_{i}", f"blocks.{i}.fc", f'"%ln_{i}"'))
        lines.append(_node("call_function", f"act_{i}", "torch.relu", f'"%fc_{i}"'))
        lines.append(_node("get_attr", f"scale_{i}", f"blocks.{i}.scale"))
        lines.append(_node("call_function", f"scaled_{i}", "operator.mul", f'"%act_{i}", "%scale_{i}"'))
        lines.append(_node("call_function", f"h_{i}", "operator.add", f'"%{prev}", "%scaled_{i}"'))
        prev = f"h_{i}"
    lines.append(_node("output", None, args=f'"%{prev}"', type_="torch.Tensor"))
    return "modules:\n" + "".join(modules) + "parameters:\n" + "".join(params) + "nodes:\n" + "".join(lines)


_BUILDERS = {"chain": _chain, "fan": _fan, "residual": _residual}


def make_spec(shape: str, n: int) -> str:
    """YAML text of a ``shape`` spec with about ``n`` nodes."""
    name = f"{shape.capitalize()}{n}"
    return _HEAD.format(b=BATCH, w=WIDTH, name=name) + _BUILDERS[shape](n)


def count_nodes(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith("  - {op: "))


def write_spec(directory: Path, shape: str, n: int) -> Path:
    """Write the spec to ``directory/<shape>_<n>.yaml`` and return its path."""
    path = directory / f"{shape}_{n}.yaml"
    path.write_text(make_spec(shape, n), encoding="utf-8")
    return path
