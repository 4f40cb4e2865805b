"""Values are what the spec says and limits are checked where the spec is read (issue 34): a
literal its dtype cannot hold, a shape no tensor can have, a NaN where a number is wanted and
blocks nested too deeply are located errors of validation, saying what to write instead."""

from __future__ import annotations

import pytest

import fxgen
from fxgen.check.validate import validate_document
from fxgen.read.reader import parse_text

HEAD = """\
fxgen: 1
name: Tiny
"""

TAIL = """\
nodes:
  - {op: placeholder, name: x, type: torch.Tensor}
  - {op: output, args: ["%x"]}
"""


def errors(text: str) -> list[tuple[int, int, str]]:
    with pytest.raises(fxgen.SpecError) as info:
        validate_document(parse_text(text, "s.yaml"))
    return [(d.location.line, d.location.column, d.message) for d in info.value.diagnostics]


# -- a NaN or an infinity where a number is wanted -----------------------------------------------
@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(
    ("declaration", "column", "message"),
    [
        ("p: {shape: [.inf]}", 15, "shape[0]: {float: inf} (an infinity) is not allowed here; write an integer of at least 0"),
        ("p: {shape: [2], init: {constant: {val: .nan}}}", 42, "{float: nan} (NaN) is not allowed here; write a finite number"),
        ("p: {shape: [2], init: {normal: {std: -.inf}}}", 40, "{float: -inf} (an infinity) is not allowed here; write a finite number of at least 0"),
        ("p: {shape: [2, 2, 2], init: {dirac: {groups: .inf}}}", 48, "write an integer of at least 1"),
    ],
)
def test_a_non_finite_number_is_said_to_be_one(version: int, declaration: str, column: int, message: str) -> None:
    text = HEAD.replace("fxgen: 1", f"fxgen: {version}") + f"parameters:\n  {declaration}\n" + TAIL
    ((line, col, got),) = errors(text)
    assert (line, col) == (4, column) and message in got and "format 2" not in got
