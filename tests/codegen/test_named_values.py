"""Named values and expressions in generated code: each value one assignment at the start of
``__init__`` in the order written, expressions as Python (``math.ceil``, black's spacing), and the
generated class builds what ``fxgen.load`` builds at other argument values too."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from helpers import generated_class

import fxgen
from fxgen.check.validate import validate_data

SPEC: dict[str, Any] = {
    "fxgen": 2,
    "name": "Scaled",
    "args": {"dim": {"type": "int", "default": 20}, "ratio": {"type": "float", "default": 0.5}},
    "values": {"hidden": "max(8, int(dim * ratio + 4) // 8 * 8)", "heads": "hidden // 8 if hidden > 8 else 1"},
    "classes": {
        "Mix": {
            "args": {"width": "int", "groups": "int"},
            "values": {"inner": "width * 2 ** (groups - 1)"},
            "modules": {"fc": {"class": "torch.nn.Linear", "args": [{"arg": "width"}, {"arg": "inner"}]},
                        "out": {"class": "torch.nn.Linear", "args": [{"arg": "inner"}, {"arg": "width"}]}},
            "nodes": [
                {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
                {"op": "call_module", "name": "h", "target": "fc", "args": ["%x"]},
                {"op": "call_module", "name": "y", "target": "out", "args": ["%h"]},
                {"op": "output", "args": ["%y"]},
            ],
        },
    },
    "modules": {
        "proj": {"class": "torch.nn.Linear", "args": [{"arg": "dim"}, {"arg": "hidden"}]},
        "mix": {"class": "Mix", "args": [{"arg": "hidden"}, {"arg": "heads"}]},
    },
    "nodes": [
        {"op": "placeholder", "name": "x", "type": "torch.Tensor"},
        {"op": "call_module", "name": "p", "target": "proj", "args": ["%x"]},
        {"op": "call_module", "name": "m", "target": "mix", "args": ["%p"]},
        {"op": "output", "args": ["%m"]},
    ],
}  # fmt: skip


def test_values_are_assigned_first_in_the_order_written() -> None:
    source, _ = generated_class(validate_data(SPEC))
    assert (
        "        super().__init__()\n"
        "        hidden = max(8, int(dim * ratio + 4) // 8 * 8)\n"
        "        heads = hidden // 8 if hidden > 8 else 1\n"
        "        self.proj = nn.Linear(dim, hidden)\n"
    ) in source
    assert "        inner = width * 2 ** (groups - 1)\n        self.fc = nn.Linear(width, inner)\n" in source
    assert "import math" not in source  # only ceil and floor need it


def test_ceil_and_floor_are_maths() -> None:
    data = copy.deepcopy(SPEC)
    data["values"]["hidden"] = "ceil(dim * ratio / 8) * 8 + floor(ratio)"
    source, _ = generated_class(validate_data(data))
    assert "import math\n" in source
    assert "        hidden = math.ceil(dim * ratio / 8) * 8 + math.floor(ratio)\n" in source


@pytest.mark.parametrize("args", [{}, {"dim": 33, "ratio": 1.3}, {"dim": 64, "ratio": 0.75}, {"dim": 7, "ratio": 0.1}])
def test_the_generated_class_builds_what_load_builds(args: dict[str, Any]) -> None:
    spec = validate_data(SPEC)
    _, cls = generated_class(spec)
    loaded = fxgen.load(spec, args=args)
    made = cls(**args)
    assert [(k, t.shape) for k, t in made.state_dict().items()] == [(k, t.shape) for k, t in loaded.state_dict().items()]


def test_a_load_whose_values_cannot_be_computed_says_where() -> None:
    data = copy.deepcopy(SPEC)
    data["values"]["hidden"] = "8 * 64 // (dim - 8)"
    spec = validate_data(data)  # dim=20 at the defaults
    with pytest.raises(fxgen.SpecError, match=r"values.*divides by zero"):
        fxgen.load(spec, args={"dim": 8})
