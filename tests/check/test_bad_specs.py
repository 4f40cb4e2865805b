"""The invalid-spec catalogue (tests/bad_specs/): every flawed spec is refused, exactly as its
header says, by the API (load_spec, load, generate) and by `fxgen validate`.

Each YAML file starts with `# expect: LINE:COL: MESSAGE-SUBSTRING` lines; a JSON file has them
in a sibling `NAME.json.expect` file. A diagnostic matches an expectation when line and column
are equal and the message contains the substring; every expectation must be met and no other
diagnostic may appear.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from helpers import HANG_WATCHDOG

import fxgen
from fxgen._errors import Diagnostic

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "tests" / "bad_specs"
SPECS = sorted(p for p in CATALOGUE.iterdir() if p.suffix in (".yaml", ".json"))
IDS = [p.name for p in SPECS]

Expectation = tuple[int, int, str]
_HEADER = re.compile(r"# expect: (\d+):(\d+): (.+)")
_PLAIN = re.compile(r"(\d+):(\d+): (.+)")
_CLI_LINE = re.compile(r"(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): error: (?P<message>.*)")
_CLI_SUMMARY = re.compile(r"fxgen: (\d+) of (\d+) specs? valid")


def expectations(path: Path) -> list[Expectation]:
    """The diagnostics a catalogue file must produce, from its header or its .expect file."""
    if path.suffix == ".json":
        lines = path.with_name(path.name + ".expect").read_text(encoding="utf-8").splitlines()
        pattern = _PLAIN
    else:
        text = path.read_bytes().removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")
        lines = []
        for line in text.splitlines():
            if not line.startswith("# expect:"):
                break
            lines.append(line)
        pattern = _HEADER
    found = []
    for line in lines:
        match = pattern.fullmatch(line)
        assert match, f"{path.name}: malformed expectation {line!r}"
        found.append((int(match[1]), int(match[2]), match[3]))
    assert found, f"{path.name}: no expectations"
    return found


def unmatched(expected: list[Expectation], got: list[tuple[int, int, str]]) -> tuple[list[Expectation], list]:
    """(expectations nobody met, diagnostics nobody expected)."""
    left = list(got)
    missing = []
    for line, col, text in expected:
        hit = next((g for g in left if g[:2] == (line, col) and text in g[2]), None)
        if hit is None:
            missing.append((line, col, text))
        else:
            left.remove(hit)
    return missing, left


def assert_matches(path: Path, diagnostics: list[Diagnostic]) -> None:
    got = [(d.location.line, d.location.column, d.message) for d in diagnostics]
    missing, extra = unmatched(expectations(path), got)
    assert not missing and not extra, f"{path.name}:\n  missing: {missing}\n  unexpected: {extra}\n  got: {got}"
    for d in diagnostics:
        assert d.location.path == str(path)
        assert "\n" not in d.message, "a message must stay on one line"


# -- the catalogue itself ------------------------------------------------------------------------
def test_catalogue_size_and_files() -> None:
    assert len(SPECS) >= 40
    for path in SPECS:
        expectations(path)  # well-formed, non-empty
    expects = {p.name.removesuffix(".expect") for p in CATALOGUE.glob("*.json.expect")}
    assert expects == {p.name for p in SPECS if p.suffix == ".json"}, "every JSON case needs a .expect file"


def test_binary_cases_still_hold_their_bytes() -> None:
    """An editor that 'fixes' these files would make their cases pass for the wrong reason."""
    assert (CATALOGUE / "bom.yaml").read_bytes().startswith(b"\xef\xbb\xbf")
    with pytest.raises(UnicodeDecodeError):
        (CATALOGUE / "invalid_utf8.yaml").read_bytes().decode("utf-8")


def test_expectation_matching_can_fail() -> None:
    expected = [(3, 4, "boom")]
    assert unmatched(expected, [(3, 4, "a boom here")]) == ([], [])
    assert unmatched(expected, [(3, 5, "a boom here")]) == ([(3, 4, "boom")], [(3, 5, "a boom here")])
    assert unmatched(expected, [(3, 4, "boom"), (1, 1, "extra")]) == ([], [(1, 1, "extra")])


# -- the API -------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", SPECS, ids=IDS)
def test_load_spec_reports_exactly_the_expected_diagnostics(path: Path) -> None:
    with pytest.raises(fxgen.SpecError) as info:
        fxgen.load_spec(path)
    assert_matches(path, info.value.diagnostics)
    for line in str(info.value).splitlines():
        assert line.startswith(f"{path}:") and ": error: " in line


@pytest.mark.parametrize("path", SPECS, ids=IDS)
def test_load_and_generate_refuse(path: Path) -> None:
    with pytest.raises(fxgen.SpecError) as info:
        fxgen.load(path)
    assert_matches(path, info.value.diagnostics)
    with pytest.raises(fxgen.SpecError) as info:
        fxgen.generate(path)
    assert_matches(path, info.value.diagnostics)


# -- the CLI, once over the whole catalogue ----------------------------------------------------
def test_cli_validate_reports_every_file() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "fxgen", "validate", "tests/bad_specs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_WATCHDOG,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stdout == ""
    *lines, summary = result.stderr.splitlines()
    assert _CLI_SUMMARY.fullmatch(summary), summary
    assert summary == f"fxgen: 0 of {len(SPECS)} specs valid"
    by_file: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for line in lines:
        match = _CLI_LINE.fullmatch(line)
        assert match, f"not a PATH:LINE:COL: error: line: {line!r}"
        by_file[match["path"]].append((int(match["line"]), int(match["col"]), match["message"]))
    assert set(by_file) == {f"tests/bad_specs/{p.name}" for p in SPECS}
    failures = []
    for path in SPECS:
        missing, extra = unmatched(expectations(path), by_file[f"tests/bad_specs/{path.name}"])
        if missing or extra:
            failures.append(f"{path.name}: missing {missing}, unexpected {extra}")
    assert not failures, "\n".join(failures)
