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


# -- a shape no tensor can have ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("declaration", "why"),
    [
        ("p: {shape: [99999999999999999999]}", "dimension 0 (99999999999999999999) is larger than torch's largest size"),
        ("b: {shape: [4294967296, 4294967296, 4294967296], dtype: uint8}",
         "its 79228162514264337593543950336 elements of 1 byte are more than the 2**63 - 1 bytes"),
        ("b: {shape: [2305843009213693952]}", "its 2305843009213693952 elements of 4 bytes are more"),
    ],
)
def test_a_shape_no_tensor_can_have_is_refused_at_its_line(declaration: str, why: str) -> None:
    table = "parameters" if declaration.startswith("p") else "buffers"
    ((line, col, message),) = errors(HEAD + f"{table}:\n  {declaration}\n" + TAIL)
    assert (line, col) == (4, 14) and why in message and message.endswith("use smaller dimensions")


def test_the_largest_shapes_torch_makes_are_valid() -> None:
    """The rule is the build's own (torch.empty on the meta device): no tighter."""
    text = HEAD + "buffers:\n  b: {shape: [2305843009213693951, 0, 9223372036854775807]}\n"
    text += "  c: {shape: [9223372036854775807], dtype: uint8}\n" + TAIL
    assert validate_document(parse_text(text, "s.yaml")).buffers["c"].shape == [2**63 - 1]


def test_a_shape_an_argument_makes_too_large_is_refused() -> None:
    text = HEAD.replace("fxgen: 1", "fxgen: 2") + "args:\n  n: {type: int, default: 4294967296}\n"
    text += "parameters:\n  p: {shape: [{arg: n}, {arg: n * n}]}\n" + TAIL
    ((line, col, message),) = errors(text)
    assert (line, col) == (6, 14) and "dimension 1 (18446744073709551616)" in message
