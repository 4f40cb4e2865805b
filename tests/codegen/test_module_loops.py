"""A ``for`` over module declarations (``{for: NAMES, in: ROWS, module: DECL}`` in a container's
items): the generated ``__init__`` writes the list comprehension a person writes, ``fxgen.load``
builds the same modules with the same state-dict keys and, after the same seed, the same values
(the comprehension makes them in the order the rows are written, the outer ``for`` first)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import generated_class

import fxgen

SPEC = """\
fxgen: 2
name: Levels
args: {ch0: 4, ch1: 8, ch2: 16, c2: 8}
classes:
  Conv:
    args: {cin: int, cout: int, k: 1, s: 1}
    modules:
      conv: "torch.nn.Conv2d(cin, cout, k, s, k // 2, bias=False)"
    nodes: [out: conv]
modules:
  cv2:
    class: torch.nn.ModuleList
    args: [[{for: c, in: [ch0, ch1, ch2], module: "torch.nn.Sequential(Conv(c, c2, 3), torch.nn.Conv2d(c2, 4, 1))"}]]
  features:
    class: torch.nn.Sequential
    args:
      - {module: "Conv(3, ch0, 3, 2)"}
      - for: [t, cin, c, n, s]                     # a stage per row, n blocks each
        in: [[1, ch0, ch1, 1, 1], [3, ch1, ch2, 2, 2], [3, ch2, ch2, 3, 1]]
        module: {for: i, in: n, module: "Conv(cin if i == 0 else c, c, t, s if i == 0 else 1)"}
      - {for: j, in: 2, module: "torch.nn.Conv2d(ch2, ch2, 1)"}
nodes:
  - f: features
  - {op: output, args: ["%f"]}
"""


@pytest.fixture
def spec(tmp_path: Path) -> Any:
    path = tmp_path / "levels.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return fxgen.load_spec(path)


def test_the_generated_init_is_a_list_comprehension(spec: Any) -> None:
    source, _ = generated_class(spec)
    assert (
        "        self.cv2 = nn.ModuleList(\n"
        "            [\n"
        "                nn.Sequential(Conv(c, c2, 3), nn.Conv2d(c2, 4, 1))\n"
        "                for c in (ch0, ch1, ch2)\n"
        "            ]\n"
        "        )\n"
    ) in source
    assert (
        "            *[\n"
        "                Conv(cin if i == 0 else c, c, t, s if i == 0 else 1)\n"
        "                for t, cin, c, n, s in (\n"
        "                    (1, ch0, ch1, 1, 1),\n"
        "                    (3, ch1, ch2, 2, 2),\n"
        "                    (3, ch2, ch2, 3, 1),\n"
        "                )\n"
        "                for i in range(n)\n"
        "            ],\n"
        "            *[nn.Conv2d(ch2, ch2, 1) for j in range(2)],\n"
    ) in source


@pytest.mark.parametrize("args", [{}, {"ch0": 2, "ch1": 6, "ch2": 10, "c2": 3}])
def test_load_builds_what_the_generated_class_builds(spec: Any, args: dict[str, int]) -> None:
    _, cls = generated_class(spec)
    torch.manual_seed(0)
    loaded = fxgen.load(spec, args=args)
    torch.manual_seed(0)
    made = cls(**args)
    expected = loaded.state_dict()
    got = made.state_dict()
    assert list(got) == list(expected)
    assert all(torch.equal(got[key], expected[key]) for key in expected)
    # items numbered as a list would number them: the stem, 1 + 2 + 3 blocks, the two 1x1s
    assert [key for key in expected if key.startswith("features.") and key.endswith(".conv.weight")][-1] == (
        "features.6.conv.weight")
    assert "features.8.weight" in expected and "cv2.2.1.weight" in expected
    assert expected["features.2.conv.weight"].shape[:2] == (args.get("ch2", 16), args.get("ch1", 8))


def test_expand_writes_the_canonical_form(spec: Any, tmp_path: Path) -> None:
    """The shorthands desugar: a string in a row or ``in:`` is ``{arg: EXPR}``, the module a
    declaration; the canonical file loads to the same Spec."""
    loop = spec.modules["features"].args[1]
    assert loop["in"][1] == [3, {"arg": "ch1"}, {"arg": "ch2"}, 2, 2]
    assert loop["module"]["in"] == {"arg": "n"}
    assert loop["module"]["module"]["class"] == "Conv"
    canonical = tmp_path / "canonical.yaml"
    canonical.write_text(spec.to_yaml(), encoding="utf-8")
    assert fxgen.load_spec(canonical) == spec


@pytest.mark.parametrize("name", ["Conv", "torch", "nn", "ch0"])
def test_a_loop_name_never_hides_a_class_or_argument_the_init_uses(name: str, tmp_path: Path) -> None:
    """``[Conv(Conv, 8) for Conv in ...]`` would call the loop's value: refused at the name."""
    path = tmp_path / "levels.yaml"
    path.write_text(SPEC.replace("{for: c, in: [ch0, ch1, ch2]", f"{{for: {name}, in: [ch0, ch1, ch2]"), encoding="utf-8")
    with pytest.raises(fxgen.SpecError, match=rf"13:\d+: .*`for` name {name!r} would shadow"):
        fxgen.load_spec(path)


def test_a_list_of_one_name_unpacks_each_row(tmp_path: Path) -> None:
    """``for: [c]`` binds c to each row's one value (the fuzzer's find: ``for c in ((4,),)``
    bound the row itself)."""
    path = tmp_path / "levels.yaml"
    path.write_text(SPEC.replace("{for: c, in: [ch0, ch1, ch2]", "{for: [c], in: [[ch0], [ch1], [ch2]]"), encoding="utf-8")
    spec = fxgen.load_spec(path)
    source, cls = generated_class(spec)
    assert "for (c,) in ((ch0,), (ch1,), (ch2,))" in source
    torch.manual_seed(0)
    loaded = fxgen.load(spec).state_dict()
    torch.manual_seed(0)
    made = cls().state_dict()
    assert list(made) == list(loaded) and all(torch.equal(made[k], loaded[k]) for k in loaded)


@pytest.mark.parametrize("items", ["{for: j, in: n, module: 'torch.nn.Linear(w, w)'}", "{for: c, in: [w, w], module: 'torch.nn.Linear(c, w)'}"])
def test_a_node_loop_over_the_items_walks_the_container(items: str, tmp_path: Path) -> None:
    """A node loop over as many items as the ``for`` makes (its count, or its rows) is written
    as a loop over the container, as for a repeat."""
    path = tmp_path / "walk.yaml"
    count = "n" if "in: n" in items else "2"
    path.write_text(f"""\
fxgen: 2
name: Walk
args: {{w: 4, n: 2}}
modules:
  m: {{class: torch.nn.ModuleList, args: [[{items}]]}}
nodes:
  - {{op: placeholder, name: x, type: torch.Tensor}}
  - {{for: i, in: {count}, nodes: [h: ["m.{{i}}", "%x"]], carry: {{x: "%h"}}}}
  - {{op: output, args: ["%x"]}}
""", encoding="utf-8")  # fmt: skip
    spec = fxgen.load_spec(path)
    source, cls = generated_class(spec)
    assert "        for m in self.m:\n" in source
    torch.manual_seed(0)
    loaded = fxgen.load(spec)
    torch.manual_seed(0)
    made = cls()
    x = torch.randn(3, 4)
    assert torch.equal(made(x), loaded(x))
