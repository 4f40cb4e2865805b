"""The read stage (fxgen.read.reader): located values, YAML safety and limits, JSON details."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import steps
from hypothesis import given
from hypothesis import strategies as st
from yaml.resolver import Resolver

from fxgen._errors import Location, SpecError
from fxgen.read import reader
from fxgen.read.reader import MAX_BYTES, Document, parse_text, read_document
from fxgen.read.scalars import MAYBE_TYPED, STR, resolve_plain
from fxgen.read.yaml_events import _MEMO_SIZE, MAX_DEPTH, MAX_VALUES, Builder


def errors(raw: bytes | str, *, json_syntax: bool = False) -> list[tuple[int, int, str]]:
    """(line, column, message) of every diagnostic parse_text raises."""
    with pytest.raises(SpecError) as info:
        parse_text(raw, "f", json_syntax=json_syntax)
    return [(d.location.line, d.location.column, d.message) for d in info.value.diagnostics]


def one_error(raw: bytes | str, *, json_syntax: bool = False) -> tuple[int, int, str]:
    found = errors(raw, json_syntax=json_syntax)
    assert len(found) == 1, found
    return found[0]


def data(raw: str, *, json_syntax: bool = False) -> Any:
    return parse_text(raw, "f", json_syntax=json_syntax).data


# -- locations -----------------------------------------------------------------------------------
YAML_TEXT = """\
fxgen: 1
name: Located
modules:
  conv1: {class: torch.nn.Conv2d, args: [3, 8, 3], kwargs: {padding: 1}}
nodes:
  - {op: placeholder, name: x}
  - op: call_module
    name: c
    target: conv1
    args: ["%x", {tuple: [1, 2]}]
  - {op: output, args: ["%c"]}
"""


@pytest.mark.parametrize(
    ("path", "line", "col"),
    [
        ((), 1, 1),
        (("name",), 2, 7),
        (("modules", "conv1"), 4, 10),
        (("modules", "conv1", "class"), 4, 18),
        (("modules", "conv1", "args", 2), 4, 48),
        (("modules", "conv1", "kwargs", "padding"), 4, 70),
        (("nodes", 0), 6, 5),
        (("nodes", 0, "name"), 6, 29),
        (("nodes", 1), 7, 5),
        (("nodes", 1, "target"), 9, 13),
        (("nodes", 1, "args", 0), 10, 12),
        (("nodes", 1, "args", 1, "tuple", 1), 10, 30),
        (("nodes", 2, "args", 0), 11, 25),
    ],
)
def test_locate_gives_exact_positions(path: tuple[Any, ...], line: int, col: int) -> None:
    doc = parse_text(YAML_TEXT, "spec.yaml")
    assert doc.locate(path) == Location("spec.yaml", line, col)


def test_key_location_points_at_the_key() -> None:
    doc = parse_text(YAML_TEXT, "spec.yaml")
    assert doc.key_location(("modules", "conv1")) == Location("spec.yaml", 4, 3)
    assert doc.key_location(("nodes", 1, "target")) == Location("spec.yaml", 9, 5)
    assert doc.key_location(("nodes", 1)) == doc.locate(("nodes", 1))  # list items have no key


def test_locate_falls_back_to_the_nearest_ancestor() -> None:
    doc = parse_text(YAML_TEXT, "spec.yaml")
    assert doc.locate(("nodes", 1, "kwargs", "missing")) == doc.locate(("nodes", 1))
    assert doc.locate(("nope",)) == Location("spec.yaml", 1, 1)


def test_json_values_are_located_too() -> None:
    text = '{\n  "fxgen": 1,\n  "nodes": [\n    {"op": "placeholder", "name": "x"},\n    {"op": "output", "args": ["%x"]}\n  ]\n}\n'
    doc = parse_text(text, "spec.json", json_syntax=True)
    assert doc.data["nodes"][1]["args"] == ["%x"]
    assert doc.locate(("nodes", 1, "args", 0)) == Location("spec.json", 5, 31)
    assert doc.key_location(("nodes",)) == Location("spec.json", 3, 3)
    assert doc.locate(("nodes", 0, "name")) == Location("spec.json", 4, 35)


def test_columns_count_characters_not_bytes() -> None:
    doc = parse_text('doc: "ééé"\nlist: [é, x]\n')
    assert doc.locate(("list", 1)) == Location("<spec>", 2, 11)


# -- YAML: duplicate keys, tags, merge keys --------------------------------------------------------
def test_duplicate_keys_are_refused_everywhere_and_all_at_once() -> None:
    found = errors("a: 1\nb: {x: 1, y: 2, x: 3}\na: 2\n")
    assert [(line, col) for line, col, _ in found] == [(2, 17), (3, 1)]
    assert all("duplicate key" in m for _, _, m in found)


def test_duplicate_json_keys_are_located() -> None:
    text = '{"a": 1,\n "b": [{"k": 1}, {"k": 2, "k": 3}]}'
    assert one_error(text, json_syntax=True)[:2] == (2, 27)


@pytest.mark.parametrize(
    "text",
    [
        "a: !!python/object/apply:os.system [echo hi]\n",
        "a: !!python/object:os.PathLike {}\n",
        "a: !!python/name:os.system\n",
        "a: !!binary aGVsbG8=\n",
        "a: !!set {x, y}\n",
        "a: !!omap [{x: 1}]\n",
        "a: !local 5\n",
        "a: !!timestamp 2024-05-01\n",
    ],
)
def test_tags_are_refused(text: str) -> None:
    line, col, message = one_error(text)
    assert (line, col) == (1, 4)
    assert message.startswith("tag !") and "not allowed" in message


def test_a_python_tag_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = f"a: !!python/object/apply:os.system ['touch {marker}']\nb: !!python/object/apply:subprocess.call [[touch, {marker}]]\n"
    assert len(errors(text)) == 2
    assert not marker.exists()


def test_standard_scalar_tags_are_accepted() -> None:
    assert data("a: !!str 5\nb: !!float 1\nc: !!int '7'\nd: ! 5\ne: !!null ''\nf: !!bool true\n") == {
        "a": "5", "b": 1.0, "c": 7, "d": "5", "e": None, "f": True,
    }  # fmt: skip


@pytest.mark.parametrize("text", ["a: !!int abc\n", "a: !!bool maybe\n", "a: !!float x\n", "a: !!null x\n"])
def test_a_standard_tag_on_a_bad_value_is_an_error_not_a_crash(text: str) -> None:
    assert "is not a valid !!" in one_error(text)[2]


def test_timestamps_are_strings_that_must_be_quoted() -> None:
    line, col, message = one_error("doc: 2024-05-01\n")
    assert (line, col) == (1, 6)
    assert "date" in message and 'quote it ("2024-05-01")' in message
    assert data("doc: '2024-05-01'\n") == {"doc": "2024-05-01"}
    assert "quote it" in one_error("when: 2001-12-14t21:59:43.10-05:00\n")[2]


def test_merge_keys_are_refused() -> None:
    text = "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n"
    assert one_error(text)[:2] == (3, 3)
    assert data("a: {'<<': 1}\n") == {"a": {"<<": 1}}  # a quoted key is just a string


def test_non_string_keys_are_refused() -> None:
    assert "plain strings" in one_error("? [a, b]\n: 1\n")[2]
    assert "aliases" in one_error("a: &k x\n*k : 2\n")[2]


# -- YAML: scalars --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e5", 100000.0), ("1.5e-5", 1.5e-5), ("-.5e3", -500.0), ("+12", 12), ("0o17", 15), ("0x1F", 31),
        ("1.", 1.0), ("-0", 0), ("~", None), ("null", None), ("", None), ("True", True), ("false", False),
        (".inf", {"float": "inf"}), ("-.Inf", {"float": "-inf"}), (".nan", {"float": "nan"}),
        ("y", "y"), ("n", "n"), ("'1e5'", "1e5"), ('"yes"', "yes"), ("0o8", "0o8"), ("x1", "x1"),
    ],
)  # fmt: skip
def test_plain_scalars_follow_yaml_12(text: str, value: Any) -> None:
    got = data(f"a: {text}\n")["a"]
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    ("text", "hint"),
    [("yes", "write true"), ("no", "write false"), ("On", "write true"), ("OFF", "write false"),
     ("010", "write 8 or write 10"), ("1_000", "write 1000"), ("1:30", "write 90"), ("0b101", "write 5")],
)  # fmt: skip
def test_scalars_yaml_11_reads_differently_are_refused(text: str, hint: str) -> None:
    line, col, message = one_error(f"a: {text}\n")
    assert (line, col) == (1, 4)
    assert "YAML 1.1" in message and hint in message and f'quote it ("{text}")' in message


# -- YAML: aliases and limits ----------------------------------------------------------------------
def test_aliases_are_expanded() -> None:
    assert data("a: &x [1, {b: 2}]\nc: *x\n") == {"a": [1, {"b": 2}], "c": [1, {"b": 2}]}


def billion_laughs(levels: int = 9, width: int = 10) -> str:
    lines = ["l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_fast_with_bounded_memory() -> None:
    """Refused before expanding: a few thousand Python steps (counted, not timed), not 10**9."""
    text = billion_laughs()  # 10**9 values once expanded
    found: list[tuple[int, int, str]] = []
    tracemalloc.start()
    try:
        work = steps(lambda: found.append(one_error(text)), budget=100_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    ((line, _, message),) = found
    assert "alias bomb" in message and str(MAX_VALUES) in message
    assert line <= 9
    assert work < 100_000, work
    assert peak < 5 * 2**20, peak


def test_a_smaller_alias_fan_out_is_fine() -> None:
    assert len(data(billion_laughs(levels=3))["l2"]) == 10


@pytest.mark.parametrize("text", ["a: &a [1, *a]\n", "a: &a {b: [*a]}\n"])
def test_recursive_aliases_are_refused(text: str) -> None:
    assert "recursive alias" in one_error(text)[2]


def test_undefined_alias() -> None:
    assert one_error("a: [1, *nope]\n")[:2] == (1, 8)


def test_aliases_cannot_nest_past_the_depth_limit() -> None:
    # each level wraps the previous one in 10 lists: small text, deep value
    lines = ["a0: &a0 " + "[" * 10 + "1" + "]" * 10]
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} " + "[" * 10 + f"*a{i - 1}" + "]" * 10)
    assert f"deeper than {MAX_DEPTH}" in one_error("\n".join(lines))[2]


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_deep_flow_nesting_is_refused_without_recursion(depth: int) -> None:
    """libyaml's own composer overflows the C stack here (a segfault, not an exception); the
    reader stops at the limit, in as many Python steps (counted, not timed) at any depth."""
    found: list[tuple[int, int, str]] = []
    work = steps(lambda: found.append(one_error("a: " + "[" * depth + "]" * depth)), budget=50_000)
    ((line, col, message),) = found
    assert "deeper than" in message and (line, col) == (1, 4 + MAX_DEPTH)
    assert work < 50_000, work  # about 3,000 (2026-12), where walking 100,000 levels takes more


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r", "\u2028"])
def test_a_nesting_bomb_gets_fxgens_message_whatever_pyyaml_release(newline: str) -> None:
    """The libyaml of PyYAML 6.0.4's wheels refuses 1000 levels itself, and its scanner reads that
    far ahead of the events: the value past MAX_DEPTH is still the one reported, with the same
    message as under PyYAML 6.0.3 (after lines ending in any YAML line break)."""
    text = newline.join(["x: 1", "y: é", "z: " + "[" * 2000 + "]" * 2000])
    assert one_error(text) == (3, 4 + MAX_DEPTH, f"spec nests deeper than {MAX_DEPTH} levels; flatten it")


def test_deep_block_nesting_is_refused() -> None:
    text = "".join(" " * i + "- \n" for i in range(200))
    assert "deeper than" in one_error(text)[2]


def test_depth_limit_is_not_too_tight() -> None:
    depth = MAX_DEPTH - 2
    nested: list[Any] = []
    for _ in range(depth - 1):
        nested = [nested]
    assert data("a: " + "[" * depth + "]" * depth) == {"a": nested}


def test_too_large_files_are_refused_before_parsing() -> None:
    line, col, message = one_error(b"#" * (MAX_BYTES + 1))
    assert (line, col) == (1, 1) and "larger than" in message


# -- YAML: syntax, documents, encodings ---------------------------------------------------------
def test_yaml_syntax_error_is_located_with_its_context() -> None:
    line, col, message = one_error("a: [1, 2\nb: 3\n")
    assert (line, col) == (2, 2)
    assert message.startswith("YAML syntax error:") and "line 1, column 4" in message


def test_tab_indentation_gets_a_hint() -> None:
    assert "spaces, not tabs" in one_error("a:\n\tb: 1\n")[2]


def test_an_unquoted_reference_gets_a_hint() -> None:
    line, col, message = one_error('args: [%x]\n')
    assert (line, col) == (1, 8) and 'quote it, "%x"' in message


def test_several_documents_are_refused() -> None:
    assert one_error("a: 1\n---\nb: 2\n")[:2] == (2, 1)
    assert data("---\na: 1\n...\n") == {"a": 1}


def test_byte_order_mark_is_refused() -> None:
    line, col, message = one_error(b"\xef\xbb\xbfa: 1\n")
    assert (line, col) == (1, 1) and "byte-order mark" in message


def test_invalid_utf8_is_located() -> None:
    raw = "a: 1\nb: 'é ".encode() + b"\xff\xfe'\n"
    line, col, message = one_error(raw)
    assert (line, col) == (2, 7)  # characters: b, :, space, ', é, space -> the 7th
    assert "0xff" in message


def test_a_str_with_lone_surrogates_is_refused_and_located() -> None:
    line, col, message = one_error("a: 1\nb: 'x\ud800'\n")
    assert (line, col) == (2, 6) and "lone surrogate" in message and "U+D800" in message


@pytest.mark.parametrize("text", ["", "   \n\n", "# only\n  # comments\n", "---\n", "null\n", "~\n"])
def test_empty_specs(text: str) -> None:
    assert one_error(text) == (1, 1, "spec is empty; it needs at least `fxgen: 1`, `name` and `nodes`")


@pytest.mark.parametrize("text", ["", " \n"])
def test_empty_json(text: str) -> None:
    assert "spec is empty" in one_error(text, json_syntax=True)[2]


def test_all_reader_errors_of_a_file_are_reported_together() -> None:
    found = errors("a: !!binary x\nb: yes\nc: 1\nc: 2\n")
    assert [line for line, _, _ in found] == [1, 2, 4]


# -- JSON ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "line", "col", "hint"),
    [
        ('{"a": [1, 2,]}', 1, 13, "trailing commas"),
        ('{"a": 1,}', 1, 9, "double quotes"),
        ("{'a': 1}", 1, 2, "double quotes"),
        ('{\n  "a": 1\n  "b": 2\n}', 3, 3, "delimiter"),
        ('{"a": tru}', 1, 7, "expecting a value"),
    ],
)
def test_json_syntax_errors_are_located(text: str, line: int, col: int, hint: str) -> None:
    got = one_error(text, json_syntax=True)
    assert got[:2] == (line, col)
    assert got[2].startswith("JSON syntax error") and hint in got[2]


def test_json_trailing_garbage() -> None:
    got = one_error('{"a": 1}\n\n  {"b": 2}\n', json_syntax=True)
    assert got[:2] == (3, 3) and "after the end of the JSON document" in got[2]


def test_json_nan_and_infinity_literals_are_refused_and_located() -> None:
    found = errors('{"a": NaN,\n "b": [1, -Infinity],\n "c": "NaN and Infinity in a string are fine",\n "d": Infinity}',
                   json_syntax=True)  # fmt: skip
    assert found == [
        (1, 7, 'JSON does not allow NaN; write {"float": "nan"} instead'),
        (2, 11, 'JSON does not allow -Infinity; write {"float": "-inf"} instead'),
        (4, 7, 'JSON does not allow Infinity; write {"float": "inf"} instead'),
    ]


def test_json_numbers() -> None:
    got = data('{"a": 1e5, "b": 1, "c": -0.5E-3, "d": 12345678901234567890}', json_syntax=True)
    assert got == {"a": 100000.0, "b": 1, "c": -0.0005, "d": 12345678901234567890}
    assert type(got["a"]) is float and type(got["b"]) is int


def test_json_deep_nesting_is_refused() -> None:
    text = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    line, col, message = one_error(text, json_syntax=True)
    assert (line, col) == (1, 7 + MAX_DEPTH - 1) and "deeper than" in message


def test_json_brackets_in_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"a": "[" * 1000, "b": "\\\"[[[", "c": [[1]]})
    assert data(text, json_syntax=True)["c"] == [[1]]


def test_json_that_yaml_cannot_read_still_loads_without_locations() -> None:
    text = '{"a":\t[1,\t2]}'  # tabs are JSON whitespace; YAML flow context allows them too
    assert data(text, json_syntax=True) == {"a": [1, 2]}


# -- files ---------------------------------------------------------------------------------------
def test_read_document_picks_the_syntax_by_suffix(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"x": 1e5}')
    (tmp_path / "a.yaml").write_text("x: 1e5\n")
    assert read_document(tmp_path / "a.json").data == read_document(tmp_path / "a.yaml").data == {"x": 1e5}
    doc = read_document(tmp_path / "a.yaml", display_path="shown.yaml")
    assert isinstance(doc, Document) and doc.path == "shown.yaml" and doc.raw == b"x: 1e5\n"


def test_read_document_reports_missing_files(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        read_document(tmp_path / "missing.yaml")
    assert "cannot read spec" in str(info.value)
    assert info.value.diagnostics[0].location.path == str(tmp_path / "missing.yaml")


# -- lazy locations and the fast paths ---------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
SPEC_FILES = sorted((ROOT / "model_specs").glob("*.yaml")) + sorted(
    p for p in (ROOT / "tests" / "bad_specs").iterdir() if p.suffix in (".yaml", ".json")
)


def eager(text: str) -> tuple[Any, dict[Any, tuple[int, int]]]:
    """Data and locations from one pass that does both (what reading did before it went lazy)."""
    builder = Builder("f", construct=True, locate=True)
    try:
        return builder.build(text), builder.locations
    except SpecError:
        return None, {}


@pytest.mark.parametrize("spec", SPEC_FILES, ids=[p.name for p in SPEC_FILES])
def test_lazy_locations_equal_eager_ones(spec: Path) -> None:
    raw = spec.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    data, locations = eager(text)
    assert reader._locate("f", text) == locations  # a refused spec too: its diagnostics may need them
    try:
        doc = parse_text(raw, "f", json_syntax=spec.suffix == ".json")
    except SpecError:
        return
    assert doc._locations is None  # reading did not locate anything
    assert doc.locations == locations and locations
    if spec.suffix == ".yaml":
        assert doc.data == data
        as_json = json.dumps(doc.data, indent=1, ensure_ascii=False)
        json_doc = parse_text(as_json, "f", json_syntax=True)
        assert json_doc.data == doc.data and json_doc.locations == eager(as_json)[1]


def test_documents_locate_on_first_use_and_keep_the_map() -> None:
    doc = parse_text(YAML_TEXT, "spec.yaml")
    assert doc._locations is None
    assert doc.key_location(("nodes", 1, "target")) == Location("spec.yaml", 9, 5)
    assert doc.locations is doc.locations
    assert Document(data={}, path="p").locate(("a",)) == Location("p", 1, 1)  # no raw text: line 1


@given(st.text(min_size=1).filter(lambda s: s[0] not in MAYBE_TYPED))
def test_plain_scalars_that_skip_resolution_are_strings_in_both_schemas(value: str) -> None:
    assert Resolver().resolve(yaml.ScalarNode, value, (True, False)) == STR
    assert resolve_plain(value) == value


@given(st.lists(st.sampled_from(["yes", "no", "010", "1.5", "-2", ".inf", ".nan", "null", "n0", "torch.relu", "x"]),
                max_size=30))  # fmt: skip
def test_repeated_plain_scalars_read_like_the_first_one(items: list[str]) -> None:
    text = "a: [" + ", ".join(items) + "]\n"
    singles = []
    for item in items:
        try:
            singles.append(("ok", data(f"a: [{item}]\n")["a"][0]))
        except SpecError as exc:
            singles.append(("error", exc.diagnostics[0].message))
    refused = [(i, s[1]) for i, s in enumerate(singles) if s[0] == "error"]
    if refused:
        found = errors(text)
        assert [m for _, _, m in found] == [m for _, m in refused]
        columns = [5 + sum(len(x) + 2 for x in items[:i]) for i, _ in refused]
        assert [(line, col) for line, col, _ in found] == [(1, c) for c in columns]
    else:
        assert data(text)["a"] == [s[1] for s in singles]


def test_non_finite_floats_are_not_shared() -> None:
    got = data("a: [.inf, .inf, -.inf]\n")["a"]
    assert got == [{"float": "inf"}, {"float": "inf"}, {"float": "-inf"}] and got[0] is not got[1]


def test_the_plain_scalar_memo_is_bounded() -> None:
    builder = Builder("f", construct=True)
    values = builder.build("[" + ", ".join(str(i) for i in range(3 * _MEMO_SIZE)) + ", 7]")
    assert values == [*range(3 * _MEMO_SIZE), 7] and 0 < len(builder.plain) <= _MEMO_SIZE


def nested(depth: int, inner: str = "1") -> str:
    return '{"a": ' + "[" * (depth - 1) + inner + "]" * (depth - 1) + "}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (nested(MAX_DEPTH), None),
        (nested(MAX_DEPTH + 1), (1, 7 + MAX_DEPTH - 1, "JSON nests deeper than")),  # json.loads reads it
        (nested(5000), (1, 7 + MAX_DEPTH - 1, "JSON nests deeper than")),  # json.loads gives up
        (nested(MAX_DEPTH + 1, "1,,") , (1, 7 + MAX_DEPTH - 1, "JSON nests deeper than")),  # before syntax
        (nested(MAX_DEPTH + 1, "9" * 500), (1, 7 + MAX_DEPTH - 1, "JSON nests deeper than")),  # before huge ints
        ('{"a": "\\ud800", "b": NaN, "b": 1}', (1, 8, "surrogate pair")),  # before NaN and duplicates
        ('{"b": NaN, "a": ' + "9" * 401 + "}", (1, 17, "integer with 401 digits")),  # before NaN
    ],
)
def test_json_checks_keep_their_order(text: str, expected: tuple[int, int, str] | None) -> None:
    if expected is None:
        assert reader._depth(data(text, json_syntax=True)) == MAX_DEPTH
        return
    line, col, message = errors(text, json_syntax=True)[0]
    assert (line, col) == expected[:2] and expected[2] in message


@pytest.mark.parametrize(
    ("sign", "prefix", "json_syntax"),
    [("", "", False), ("-", "", False), ("+", "", False), ("", "0x", False), ("", "0o", False),
     ("", "", True), ("-", "", True)],  # JSON has neither + nor 0x
)  # fmt: skip
def test_the_integer_limit_counts_digits_not_signs_or_prefixes(sign: str, prefix: str, json_syntax: bool) -> None:
    """400 digits read, 401 are refused at the number, whatever its sign or base."""
    digit = "7" if prefix else "9"
    text = "[1, {}]" if json_syntax else "a: [1, {}]\n"
    ok = sign + prefix + digit * 400
    assert data(text.format(ok), json_syntax=json_syntax) == (
        [1, int(ok, 0)] if json_syntax else {"a": [1, int(ok, 0)]}
    )
    line, col, message = one_error(text.format(sign + prefix + digit * 401), json_syntax=json_syntax)
    assert (line, col, message) == (1, 5 if json_syntax else 8, "integer with 401 digits is too long for a spec")


def test_json_duplicates_and_literals_are_all_reported() -> None:
    assert errors('{"b": 1,\n "b": NaN, "c": [Infinity]}', json_syntax=True) == [
        (2, 2, "duplicate key 'b'; each key may appear once per mapping, delete one"),
        (2, 7, 'JSON does not allow NaN; write {"float": "nan"} instead'),
        (2, 18, 'JSON does not allow Infinity; write {"float": "inf"} instead'),
    ]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=30,
)


def depth_of(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    return 0


@given(JSON_VALUES, st.sampled_from([None, 0, 2]))
def test_json_reads_what_json_wrote_and_locates_it_lazily(value: Any, indent: int | None) -> None:
    text = json.dumps({"v": value}, indent=indent, ensure_ascii=False)
    try:
        doc = parse_text(text, "f", json_syntax=True)
    except SpecError as exc:  # only strings that are not text (lone surrogates)
        assert "surrogate" in str(exc)
        return
    assert doc.data == {"v": value} and reader._depth(doc.data) == depth_of(doc.data)
    assert doc._locations is None and doc.locations == eager(text)[1]


# -- fast paths (each compared with the slow path it skips) ----------------------------------------
def _same_value(a: Any, b: Any) -> bool:
    return type(a) is type(b) and repr(a) == repr(b)


def test_resolve_plain_shortcut_agrees_with_the_yaml_1_1_check() -> None:
    """Every short string of number-ish characters, and the edge cases, resolve as the full check
    (YAML 1.2, compared with YAML 1.1) resolves them."""
    from itertools import product

    from fxgen.read.scalars import _checked_plain

    alphabet = "019+-.eE_:x"
    samples = ["".join(chars) for size in range(5) for chars in product(alphabet, repeat=size)]
    samples += ["1" * 400, "1" * 401, "-" + "1" * 400, "1" * 500 + ".0", "1.0e+999", "-1.0e+999", "1.0e-999",
                "-0.0", "+0", "-0", "00", "1.", "1.5e+3", "1e5", "1.0E-5", "0.3535533905932738", "Null", "~",
                "true", "True", "TRUE", "tRue", "yes", "no", "on", "off", "null", "NULL", "nan", "inf", "0x1F"]  # fmt: skip
    for value in samples:
        assert _same_value(resolve_plain(value), _checked_plain(value)), value


@given(st.text(alphabet="0123456789+-.eE_:", max_size=12))
def test_resolve_plain_shortcut_agrees_on_generated_numbers(value: str) -> None:
    from fxgen.read.scalars import _checked_plain

    assert _same_value(resolve_plain(value), _checked_plain(value))


@pytest.mark.parametrize(
    "text, json_syntax",
    [("a: [1, {b: [2.5, null, true]}, 'x', &x [y], *x]\nc: !!float 3\nd: .inf\n", False),
     ('{"a": [1, {"b": [2.5, null, true]}], "c": 1e999, "d": "%x"}', True)],
)  # fmt: skip
def test_documents_the_reader_builds_are_plain_json(text: str, json_syntax: bool) -> None:
    """The schema check skips its own exact-types walk for what the reader built: it must pass."""
    from fxgen.check.schema import _FAST_MAX_DEPTH, _plain_json

    doc = parse_text(text, "f", json_syntax=json_syntax)
    assert doc.plain_json and _plain_json(doc.data)
    assert MAX_DEPTH < _FAST_MAX_DEPTH
    assert not Document(data={}, path="p").plain_json  # built elsewhere: walked as before


def test_plain_json_documents_get_the_schema_errors_of_walked_ones() -> None:
    from fxgen.check.schema import check_schema

    text = "fxgen: 1\nname: X\nnodes: [{op: placeholder, name: x}, {op: output, args: ['%x']}]\nextra: 1\n"
    doc = parse_text(text, "f")
    walked = Document(data=doc.data, path=doc.path, raw=doc.raw)
    assert check_schema(doc) == check_schema(walked) != []


@pytest.mark.parametrize("text", ["# a \x07 bell\n", "# c\n\t# tab\n", "# x\n---\n", "# \ufeff\n"])
def test_comments_only_is_empty_whatever_the_parser_says(text: str) -> None:
    """Only comments is an empty spec, checked after parsing now: also when the parser refuses
    a character or an indentation inside the comments."""
    assert one_error(text) == (1, 1, "spec is empty; it needs at least `fxgen: 1`, `name` and `nodes`")
