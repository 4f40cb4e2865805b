"""Values are what the spec says and limits are checked where the spec is read (issue 34): a
literal its dtype cannot hold, a shape no tensor can have, a NaN where a number is wanted and
blocks nested too deeply are located errors of validation, saying what to write instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import fxgen
from fxgen.check.blocks import MAX_BLOCK_DEPTH
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
    text += "parameters:\n  p: {shape: [{arg: n}, {arg: n * 1024}]}\n" + TAIL
    ((line, col, message),) = errors(text)
    assert (line, col) == (6, 14) and "more than the 2**63 - 1 bytes a tensor can hold" in message
    # n * n is 2**64: the expression itself is refused (integers are at most 2**63 in magnitude)
    ((line, col, message),) = errors(text.replace("n * 1024", "n * n"))
    assert (line, col) == (6, 3) and "n * n is too large: 18446744073709551616" in message


# -- a literal its dtype cannot hold -------------------------------------------------------------
def buffer(value: str, dtype: str) -> str:
    return HEAD + f"buffers:\n  b: {{value: {value}, dtype: {dtype}}}\n" + TAIL


@pytest.mark.parametrize(
    ("value", "dtype", "column", "message"),
    [
        ("[-1]", "uint8", 15, "-1 is out of range: uint8 holds the integers from 0 to 255"),
        ("[2, -3]", "bool", 15, "2 is not a bool value: bool holds 0 and 1 (false and true) only; write false or true "
                                "(1 more number of the literal does not fit either)"),
        ("[1.5]", "int64", 15, "1.5 is not a whole number: int64 holds the integers from -9223372036854775808 to "
                               "9223372036854775807; write an integer, or declare a floating-point dtype"),
        ("70000", "float16", 14, "70000 is beyond the range of float16 (finite values from -65504.0 to 65504.0) and "
                                 "would become inf; write a value in that range, or declare a dtype that holds it"),
        ("1e300", "float32", 14, "1e+300 is beyond the range of float32"),
        ("[300]", "int8", 15, "300 is out of range: int8 holds the integers from -128 to 127; write a value in that "
                              "range, or declare a dtype that holds it"),
        ("[0.1, 1e300]", "bfloat16", 20, "1e+300 is beyond the range of bfloat16"),
        ("[[1, 2], [3, -1e39]]", "complex64", 27, "-1e+39 is beyond the range of complex64"),
        ("[1, 1e400]", "float64", 18, "is beyond the range of float64"),  # an integer no float holds
        ("[32768]", "int16", 15, "32768 is out of range: int16 holds the integers from -32768 to 32767"),
        ("[-2147483649]", "int32", 15, "-2147483649 is out of range: int32"),
        ("[9223372036854775808]", "int64", 15, "9223372036854775808 is out of range: int64"),
        ("[0.5]", "bool", 15, "0.5 is not a bool value"),
    ],
)
def test_a_literal_its_dtype_cannot_hold_is_refused_at_the_number(value: str, dtype: str, column: int,
                                                                  message: str) -> None:  # fmt: skip
    text = buffer(value.replace("1e400", "2" + "0" * 308), dtype)
    ((line, col, got),) = errors(text)
    assert (line, col) == (4, column) and got.startswith("'b': ") and message in got, got


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        ("[0.1, 65504, -65504, 65519]", "float16"),  # rounded to the nearest float16, not beyond it
        ("[3.4028234663852886e+38, 1e-50]", "float32"),
        ("[0, 255]", "uint8"),
        ("[-128, 127, 2.0]", "int8"),
        ("[-9223372036854775808, 9223372036854775807]", "int64"),
        ("[true, false, 0, 1, 1.0]", "bool"),
        ("[1e300, -1e300]", "float64"),
        ("[1e300]", "complex128"),
    ],
)
def test_every_literal_a_dtype_holds_is_valid(value: str, dtype: str) -> None:
    """Accepted, and the loaded buffer holds those values as torch converts them to the dtype."""
    checked = validate_document(parse_text(buffer(value, dtype), "s.yaml"))
    expected = torch.tensor(json.loads(value), dtype=getattr(torch, dtype))
    assert torch.equal(fxgen.load(checked).get_buffer("b"), expected)


@pytest.mark.parametrize(
    ("val", "dtype", "message"),
    [
        ("300", "int8", "init 'constant': val 300 is out of range: int8 holds the integers from -128 to 127"),
        ("-1", "uint8", "init 'constant': val -1 is out of range: uint8"),
        ("1.5", "int64", "init 'constant': val 1.5 is not a whole number"),
        ("2", "bool", "init 'constant': val 2 is not a bool value"),
        ("70000", "float16", "init 'constant': val 70000 is beyond the range of float16"),
        ("1e300", "complex64", "init 'constant': val 1e+300 is beyond the range of complex64"),
    ],
)
def test_a_constant_init_its_dtype_cannot_hold_is_refused(val: str, dtype: str, message: str) -> None:
    text = HEAD + f"parameters:\n  p: {{shape: [2], dtype: {dtype}, init: {{constant: {{val: {val}}}}}, requires_grad: false}}\n"
    ((line, _, got),) = errors(text + TAIL)
    assert line == 4 and got.startswith("'p': ") and message in got


def test_a_ragged_literal_is_still_said_to_be_one() -> None:
    ((_, _, message),) = errors(buffer("[[1, 2], [3]]", "int8"))
    assert "nested lists must be rectangular" in message


# -- blocks nested too deeply --------------------------------------------------------------------
def chain(depth: int, *, used: bool = True, cycle: bool = False) -> str:
    """A model whose blocks nest ``depth`` deep: B0 holds B1 ... holds an Identity (or B0)."""
    lines = ["fxgen: 2", "name: Deep", "modules:", f"  b: {{class: {'B0' if used else 'torch.nn.Identity'}}}",
             "nodes:", "  - {op: placeholder, name: x, type: torch.Tensor}",
             "  - {op: call_module, name: y, target: b, args: ['%x']}", "  - {op: output, args: ['%y']}", "classes:"]  # fmt: skip
    for i in range(depth):
        inner = f"B{i + 1}" if i + 1 < depth else "B0" if cycle else "torch.nn.Identity"
        lines += [f"  B{i}:", "    modules:", f"      m: {{class: {inner}}}", "    nodes:",
                  "      - {op: placeholder, name: x, type: torch.Tensor}",
                  "      - {op: call_module, name: y, target: m, args: ['%x']}", "      - {op: output, args: ['%y']}"]  # fmt: skip
    return "\n".join(lines) + "\n"


def test_blocks_nested_as_deep_as_allowed_build_and_run(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(chain(MAX_BLOCK_DEPTH), encoding="utf-8")
    model = fxgen.load(path)
    assert model(torch.ones(2)).tolist() == [1.0, 1.0]
    namespace: dict[str, object] = {}
    exec(compile(fxgen.generate(path), "deep.py", "exec"), namespace)  # the generated class too
    assert namespace["Deep"]()(torch.ones(2)).tolist() == [1.0, 1.0]  # type: ignore[operator]


@pytest.mark.parametrize("depth", [MAX_BLOCK_DEPTH + 1, 200, 5000])
@pytest.mark.parametrize("used", [True, False])
def test_blocks_nested_too_deeply_are_refused_where_the_limit_is_passed(depth: int, used: bool, tmp_path: Path) -> None:
    """Refused without a RecursionError, at the declaration one level too deep, by validate,
    load and generate alike."""
    text = chain(depth, used=used)
    path = tmp_path / "deep.yaml"
    path.write_text(text, encoding="utf-8")
    line = 12 + 7 * (MAX_BLOCK_DEPTH - 1)  # the module m of B31, which is B32: level 33 either way
    expected = (f"nests blocks {MAX_BLOCK_DEPTH + 1} deep here ({'Deep' if used else 'B0'} -> ",
                f"blocks nest at most {MAX_BLOCK_DEPTH} deep: declare some of them in the blocks that use them instead")
    ((got_line, col, message),) = errors(text)
    assert (got_line, col) == (line, 18) and all(part in message for part in expected), message
    for make in (fxgen.load, fxgen.generate):
        with pytest.raises(fxgen.SpecError) as info:
            make(path)
        assert [d.location.line for d in info.value.diagnostics] == [line]


def test_a_cycle_at_the_end_of_a_long_chain_is_reported_as_a_cycle() -> None:
    ((_, _, message),) = errors(chain(5000, cycle=True))
    assert "block 'B0' contains itself (B0 -> B1 -> B2" in message
