"""Hostile and broken input: YAML tags, duplicates, bombs, encodings, weights files, versions, CLI.

Every failure must be an ordinary located FxgenError (on the command line: a non-zero exit and
one ``PATH:LINE:COL: error: ...`` line per problem, tracebacks only with --debug), reached
quickly and with bounded memory. Resource-hungry inputs run in a child process under an
address-space limit, so a regression fails the test instead of exhausting the machine.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import HANG_WATCHDOG
from safetensors.torch import save_file

import fxgen
import fxgen.check.validate
from fxgen._errors import SpecError, WeightsError
from fxgen.read.reader import MAX_BYTES, parse_text
from fxgen.read.yaml_events import MAX_VALUES
from fxgen.spec.model import FORMAT_VERSION

VALID_YAML = """\
fxgen: 1
name: Small
nodes:
  - {op: placeholder, name: x}
  - {op: call_function, name: y, target: torch.relu, args: ["%x"]}
  - {op: output, args: ["%y"]}
"""


def _located(error: SpecError, line: int | None = None) -> None:
    """Every diagnostic is ``PATH:LINE:COL: error: ...`` on one line."""
    for diagnostic in error.diagnostics:
        assert diagnostic.location.line >= 1, diagnostic
        assert "\n" not in diagnostic.message
    if line is not None:
        assert error.diagnostics[0].location.line == line, str(error)


# -- YAML: safe loading only ------------------------------------------------------------------------
PYTHON_TAGS = [
    '!!python/object/apply:os.system ["touch {marker}"]',
    "!!python/object/apply:subprocess.check_output [[touch, {marker}]]",
    "!!python/name:os.system",
    "!!python/module:os",
    '!!python/object/new:subprocess.Popen [["touch", "{marker}"]]',
    "!!python/tuple [1, 2]",
    "!!python/bytes aGVsbG8=",
    "!!binary aGVsbG8=",
    "!!set {{a: null}}",
    "!!omap [a: 1]",
    "!!timestamp 2001-12-14",
    "!custom value",
    "!<tag:yaml.org,2002:python/object/apply:os.system> [touch {marker}]",
]


@pytest.mark.parametrize("tagged", PYTHON_TAGS)
def test_python_and_unknown_tags_are_refused(tagged: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = VALID_YAML.replace("name: Small", f"name: Small\ndoc: {tagged.format(marker=marker)}")
    with pytest.raises(SpecError) as info:
        parse_text(text)
    _located(info.value, line=3)
    assert "tag" in str(info.value)
    assert not marker.exists()


def test_tag_directives_cannot_rename_python_tags(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = "%TAG !p! tag:yaml.org,2002:python/\n---\n" + VALID_YAML.replace(
        "name: Small", f"name: Small\ndoc: !p!object/apply:os.system [touch {marker}]"
    )  # fmt: skip
    with pytest.raises(SpecError):
        parse_text(text)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (VALID_YAML + "name: Again\n", 7),
        (VALID_YAML.replace("{op: placeholder, name: x}", "{op: placeholder, name: x, name: z}"), 4),
        ("fxgen: 1\nname: A\na: &a {op: output}\nnodes: [{<<: *a, args: [1]}]\n", 4),
        ("fxgen: 1\nname: A\n? [complex, key]\n: 1\nnodes: []\n", 3),
        ("fxgen: 1\n---\nname: A\n", 2),
    ],
    ids=["duplicate top-level key", "duplicate node key", "merge key", "collection key", "two documents"],
)
def test_yaml_structure_errors_are_located(text: str, line: int) -> None:
    with pytest.raises(SpecError) as info:
        parse_text(text)
    _located(info.value, line=line)


def test_json_duplicate_keys_are_located() -> None:
    text = '{"fxgen": 1,\n "name": "A",\n "name": "B",\n "nodes": []}'
    with pytest.raises(SpecError) as info:
        parse_text(text, json_syntax=True)
    _located(info.value, line=3)
    assert "duplicate" in str(info.value)


# -- encodings and empty or broken files ------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "json_syntax", "line"),
    [
        (VALID_YAML.encode().replace(b"Small", b"Sm\xffall"), False, 2),
        (b"fxgen: 1\nname: \xc3\x28\n", False, 2),
        (b"\xef\xbb\xbf" + VALID_YAML.encode(), False, 1),
        (b"", False, 1),
        (b"   \n\n\t\n", False, 1),
        (b"# only a comment\n# and another\n", False, 1),
        (b"", True, 1),
        (b"---\n...\n", False, 1),
        (b'{"fxgen": 1, "name": "A", "nodes": []} trailing', True, 1),
        (b'{"fxgen": 1,\n "name": "A",\n "nodes": [],}', True, 3),
        (b'{"fxgen": 1, "name": NaN, "nodes": []}', True, 1),
        (b"{'fxgen': 1}", True, 1),
        (b"[1, 2, 3]", True, 1),
        (b"just a string", False, 1),
        (b"fxgen: 1\nname: [unclosed\n", False, 3),
        (b"fxgen: 1\n\tname: A\n", False, 2),
        (b"fxgen: " + b"9" * 5000 + b"\nname: A\nnodes: []\n", False, 1),
        (b'{"fxgen": ' + b"9" * 5000 + b', "name": "A", "nodes": []}', True, 1),
        (b'{"fxgen": 1, "name": "A", "doc": "\\ud800",\n "nodes": [{"op": "placeholder", "name": "x"}, '
         b'{"op": "output", "args": ["%x"]}]}', True, 1),
    ],
    ids=["invalid utf-8", "invalid utf-8 sequence", "bom", "empty", "whitespace", "comments only", "empty json",
         "empty document", "json trailing garbage", "json trailing comma", "json nan", "json single quotes",
         "json list", "yaml scalar", "yaml unclosed", "yaml tab", "yaml huge int", "json huge int",
         "json lone surrogate"],
)
def test_broken_files_are_located_errors(raw: bytes, json_syntax: bool, line: int, tmp_path: Path) -> None:
    path = tmp_path / ("spec.json" if json_syntax else "spec.yaml")
    path.write_bytes(raw)
    with pytest.raises(SpecError) as info:
        fxgen.load_spec(path)
    _located(info.value, line=line)
    assert str(info.value).startswith(str(path))
    assert len(info.value.diagnostics) == 1, str(info.value)  # the problem itself, not a consequence


def test_newer_format_version_is_a_clear_error() -> None:
    with pytest.raises(SpecError) as info:
        fxgen.load(parse_text(VALID_YAML.replace("fxgen: 1", f"fxgen: {FORMAT_VERSION + 1}")).data)
    assert "newer" in str(info.value) and "upgrade fxgen" in str(info.value)
    for version in ("0", '"1"', "1.5", "true", "null"):
        with pytest.raises(SpecError):
            fxgen.load(parse_text(VALID_YAML.replace("fxgen: 1", f"fxgen: {version}")).data)


def test_oversized_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as f:
        f.truncate(MAX_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(SpecError) as info:
        fxgen.load_spec(path)
    assert "larger than" in str(info.value)


# -- bombs: work and memory, measured in a child process ---------------------------------------------
# Work is counted, not timed: the Python steps (lines, calls, returns) the parse runs, the same on
# every machine and under any load. A parse that runs past its budget is stopped there, so a bomb
# that is not refused fails the test at once instead of hanging it.
_BOMB_RUNNER = r"""
import json, resource, sys, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
from fxgen.read.reader import parse_text
from fxgen._errors import SpecError
recipe = json.loads(sys.argv[1])
text = eval(recipe["text"])  # the test's own expression building the payload
class OverBudget(BaseException):
    pass
steps = 0
def count(frame, event, arg):
    global steps
    steps += 1
    if steps > recipe["steps"]:
        raise OverBudget
    return count
tracemalloc.start()
sys.settrace(count)
try:
    parse_text(text, json_syntax=recipe["json"])
    outcome = "parsed"
except SpecError as exc:
    outcome = "SpecError: " + str(exc).splitlines()[0]
except MemoryError:
    outcome = "MemoryError"
except OverBudget:
    outcome = "stopped"
finally:
    sys.settrace(None)
print(json.dumps({"outcome": outcome, "steps": steps,
                  "peak": tracemalloc.get_traced_memory()[1], "values": recipe.get("values", 0)}))
"""


def _laughs(levels: int = 9, width: int = 9) -> str:
    lines = ["fxgen: 1", "name: A", "a0: &a0 [lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return "\n".join([*lines, f"nodes: *a{levels}"])


MiB = 2**20
# name -> (payload expression, JSON?, must be refused?, Python steps, peak bytes, value count). The
# step budgets are about ten times what the parse takes (2026-12: 3,000 for the refused bombs,
# 157,000 for the quadratic aliases, 1.45 million for 50,000 YAML values), far below what a
# blow-up takes (the aliases' 25 million references walked one by one, 10**9 laughs expanded).
BOMBS: dict[str, tuple[str, bool, bool, int, int, int]] = {
    "billion laughs": (repr(_laughs()), False, True, 50_000, 32 * MiB, 0),
    "quadratic aliases": ('"a: &a [" + ",".join(["1"] * 5000) + "]\\nb: [" + ",".join(["*a"] * 5000) + "]"',
                          False, True, 2_000_000, 64 * MiB, 0),
    "deep flow nesting": ('"x: " + "[" * 100000 + "]" * 100000', False, True, 50_000, 32 * MiB, 0),
    "deep block nesting": ('"".join("  " * i + "- \\n" for i in range(3000))', False, True, 50_000, 64 * MiB, 0),
    "deep json nesting": ('"[" * 200000 + "]" * 200000', True, True, 50_000, 32 * MiB, 0),
    "recursive alias": ('"a: &a [*a]\\nnodes: *a"', False, True, 50_000, 32 * MiB, 0),
    "long json string": ("'{\"doc\": \"' + 'a' * 4_000_000 + '\"}'", True, False, 50_000, 48 * MiB, 0),
    "long yaml string": ("'doc: \"' + 'a' * 4_000_000 + '\"'", False, False, 50_000, 48 * MiB, 0),
    "flat json array": ('"[" + "0," * 50000 + "0]"', True, False, 5_000_000, 1024 * MiB, 50_001),
    "flat yaml array": ('"x: [" + "0," * 50000 + "0]"', False, False, 15_000_000, 1024 * MiB, 50_001),
    "many json keys": ('"{" + ",".join(f\'"k{i}": 0\' for i in range(50000)) + "}"', True, False, 5_000_000,
                       1024 * MiB, 50_001),
}
# A refusal at MAX_VALUES must stay under this, extrapolated from the per-value cost measured above.
WORST_CASE_PEAK = 1 * 2**30


def test_bombs_are_refused_quickly_with_bounded_memory() -> None:
    """Every payload is accepted or refused within its budget of work (Python steps, counted)
    and memory (run in parallel)."""
    procs = {}
    for name, (expr, json_syntax, _, steps, _, values) in BOMBS.items():
        recipe = json.dumps({"text": expr, "json": json_syntax, "values": values, "steps": steps})
        procs[name] = subprocess.Popen([sys.executable, "-c", _BOMB_RUNNER, recipe], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
    problems = []
    for name, proc in procs.items():
        _, _, refuse, step_budget, peak_budget, values = BOMBS[name]
        try:
            out, err = proc.communicate(timeout=HANG_WATCHDOG)
        except subprocess.TimeoutExpired:
            proc.kill()
            problems.append(f"{name}: still running after {HANG_WATCHDOG:.0f} s")
            continue
        if proc.returncode != 0:
            problems.append(f"{name}: crashed ({proc.returncode}): {err.strip()[-500:]}")
            continue
        result = json.loads(out.strip().splitlines()[-1])
        outcome, steps, peak = result["outcome"], result["steps"], result["peak"]
        if refuse and not outcome.startswith("SpecError"):
            problems.append(f"{name}: not refused ({outcome})")
        if not (outcome == "parsed" or outcome.startswith("SpecError")):
            problems.append(f"{name}: {outcome}")
        if outcome == "stopped":
            problems.append(f"{name}: stopped after {step_budget} Python steps, its budget")
        if peak > peak_budget:
            problems.append(f"{name}: peak {peak / MiB:.0f} MiB > {peak_budget / MiB:.0f} MiB")
        if values and peak / values * MAX_VALUES > WORST_CASE_PEAK:
            problems.append(f"{name}: {peak / values:.0f} bytes per value; at MAX_VALUES={MAX_VALUES} that is "
                            f"{peak / values * MAX_VALUES / 2**30:.1f} GiB")
    assert not problems, "\n".join(problems)


# -- weights: safetensors only ---------------------------------------------------------------------------
WEIGHTS_SPEC: dict[str, Any] = {
    "fxgen": 1, "name": "W",
    "modules": {"lin": {"class": "torch.nn.Linear", "args": [2, 3]}},
    "buffers": {"b": {"shape": [3]}, "scratch": {"shape": [2], "persistent": False}},
    "nodes": [{"op": "placeholder", "name": "x"}, {"op": "call_module", "name": "y", "target": "lin", "args": ["%x"]},
              {"op": "output", "args": ["%y"]}],
}  # fmt: skip
GOOD = {"lin.weight": torch.ones(3, 2), "lin.bias": torch.zeros(3), "b": torch.full((3,), 2.0)}


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (os.system, (f"touch {self.marker}",))


def _weights_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, a phrase the error must contain)."""
    files: dict[str, tuple[Path, str]] = {}

    def st(name: str, tensors: dict[str, torch.Tensor], phrase: str) -> None:
        save_file(tensors, str(tmp / f"{name}.safetensors"))
        files[name] = (tmp / f"{name}.safetensors", phrase)

    def raw(name: str, data: bytes, phrase: str = "cannot read weights") -> None:
        (tmp / f"{name}.safetensors").write_bytes(data)
        files[name] = (tmp / f"{name}.safetensors", phrase)

    st("extra", {**GOOD, "extra": torch.zeros(1)}, "unexpected tensor 'extra'")
    st("missing", {k: v for k, v in GOOD.items() if k != "b"}, "missing tensor 'b'")
    st("shape", {**GOOD, "b": torch.zeros(4)}, "'b' has shape [4]")
    st("dtype", {**GOOD, "b": torch.zeros(3, dtype=torch.float64)}, "'b' has dtype torch.float64")
    st("nonpersistent", {**GOOD, "scratch": torch.zeros(2)}, "unexpected tensor 'scratch'")
    raw("pickle", pickle.dumps(_Evil(tmp / "PICKLE_RAN")))
    buffer = tmp / "torchsave.bin"
    torch.save(GOOD, buffer)
    raw("torch_save", buffer.read_bytes())
    raw("empty", b"")
    good = tmp / "good.safetensors"
    raw("truncated", good.read_bytes()[: len(good.read_bytes()) // 2])
    raw("huge header", struct.pack("<Q", 2**62) + b"{}")
    raw("header json", struct.pack("<Q", 10) + b"not json!!")
    header = b'{"b": {"dtype": "F32", "shape": [3], "data_offsets": [0, 999999999]}}'
    raw("bad offsets", struct.pack("<Q", len(header)) + header + b"\0" * 12)
    (tmp / "dir.safetensors").mkdir()
    files["directory"] = (tmp / "dir.safetensors", "cannot read weights")
    files["missing file"] = (tmp / "nope.safetensors", "cannot read weights")
    return files


def test_weights_only_through_safetensors(tmp_path: Path) -> None:
    save_file(GOOD, str(tmp_path / "good.safetensors"))
    gm = fxgen.load(WEIGHTS_SPEC, weights=tmp_path / "good.safetensors")
    assert torch.equal(gm.lin.weight, GOOD["lin.weight"]) and torch.equal(gm.b, GOOD["b"])
    problems = []
    for name, (path, phrase) in _weights_files(tmp_path).items():
        try:
            fxgen.load(WEIGHTS_SPEC, weights=path)
            problems.append(f"{name}: loaded")
        except WeightsError as exc:
            if phrase not in str(exc) or not str(exc).startswith(str(path)):
                problems.append(f"{name}: unclear message {str(exc)!r}")
        except Exception as exc:
            problems.append(f"{name}: {type(exc).__name__}: {exc}")
    assert not problems, "\n".join(problems)
    assert not (tmp_path / "PICKLE_RAN").exists()


def test_pickled_weights_are_named_as_such(tmp_path: Path) -> None:
    """A pickle (torch.save) file renamed .safetensors: the message says what it is."""
    path = tmp_path / "model.safetensors"
    torch.save(GOOD, path)
    with pytest.raises(WeightsError) as info:
        fxgen.load(WEIGHTS_SPEC, weights=path)
    assert "not a safetensors file" in str(info.value)


# -- the command line: every failure is one located line per problem and a non-zero exit ------------------
_FORK_RUNNER = r"""
import json, os, sys, traceback
import torch
import fxgen.cli.main, fxgen.cli.show, fxgen.cli.export, fxgen.assemble.load, fxgen.check.validate, fxgen.codegen.generate

results = []
for case in json.loads(sys.argv[1]):
    out, err = case["cwd"] + "/.out", case["cwd"] + "/.err"
    pid = os.fork()
    if pid == 0:  # the child is one `fxgen ...` process
        try:
            os.chdir(case["cwd"])
            for fd, name in ((1, out), (2, err)):
                os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
            sys.argv = ["fxgen", *case["argv"]]
            code = fxgen.cli.main.main(case["argv"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    results.append({"rc": os.waitstatus_to_exitcode(status), "stdout": open(out).read(), "stderr": open(err).read()})
print(json.dumps(results))
"""

LOCATED = re.compile(r"^[^\n]+?(:\d+:\d+)?: error: [^\n]+$")
SUMMARY = re.compile(r"^fxgen: .*$")


def _cli_workspace(tmp: Path) -> dict[str, Any]:
    """Files for the failure table; returns name -> (argv, cwd, expected rc, stderr phrase)."""
    specs = tmp / "specs"
    specs.mkdir()
    files = {
        "syntax.yaml": "fxgen: 1\nname: [A\n",
        "schema.yaml": VALID_YAML.replace("op: placeholder", "op: placeholdr"),
        "refused.yaml": VALID_YAML.replace("torch.relu", "torch.load"),
        "refused_twice.yaml": VALID_YAML.replace("torch.relu", "torch.load").replace(
            "  - {op: output", '  - {op: call_function, name: z, target: torch.save, args: ["%y", f]}\n  - {op: output'
        ),
        "empty.yaml": "",
        "dup.yaml": VALID_YAML + "name: B\n",
        "newer.yaml": VALID_YAML.replace("fxgen: 1", f"fxgen: {FORMAT_VERSION + 1}"),
        "tag.yaml": VALID_YAML.replace("name: Small", "name: !!python/name:os.system"),
        "bomb.yaml": _laughs(),
        "good.yaml": VALID_YAML,
    }
    for name, text in files.items():
        (specs / name).write_text(text)
    (specs / "utf8.yaml").write_bytes(VALID_YAML.encode().replace(b"Small", b"Sm\xffll"))
    lone = tmp / "lone"
    lone.mkdir()
    for name in ("refused.yaml", "refused_twice.yaml", "good.yaml"):
        (lone / name).write_text(files[name])
    edited = tmp / "edited"
    edited.mkdir()
    (edited / "good.py").write_text("# my own file\n")
    (tmp / "not_a_dir").write_text("x")
    bad_allow = tmp / "bad_allow"
    bad_allow.mkdir()
    (bad_allow / "pyproject.toml").write_text('[tool.fxgen]\nallow = "torch"\n')
    bad_entry = tmp / "bad_entry"
    bad_entry.mkdir()
    (bad_entry / "pyproject.toml").write_text('[tool.fxgen]\nallow = ["os system"]\n')
    bad_toml = tmp / "bad_toml"
    bad_toml.mkdir()
    (bad_toml / "pyproject.toml").write_text("[tool.fxgen\nallow = [\n")
    s = str(specs)
    table: dict[str, tuple[list[str], Path, int, str]] = {
        "missing path": (["validate", "nope.yaml"], tmp, 1, "no such file"),
        "syntax error": (["validate", f"{s}/syntax.yaml"], tmp, 1, "YAML syntax error"),
        "schema error": (["validate", f"{s}/schema.yaml"], tmp, 1, "placeholdr"),
        "refused target": (["validate", f"{s}/refused.yaml"], tmp, 1, "--allow torch.load"),
        "empty file": (["validate", f"{s}/empty.yaml"], tmp, 1, "empty"),
        "duplicate key": (["validate", f"{s}/dup.yaml"], tmp, 1, "duplicate key"),
        "newer version": (["validate", f"{s}/newer.yaml"], tmp, 1, "newer"),
        "python tag": (["validate", f"{s}/tag.yaml"], tmp, 1, "tag"),
        "alias bomb": (["validate", f"{s}/bomb.yaml"], tmp, 1, "alias"),
        "invalid utf-8": (["validate", f"{s}/utf8.yaml"], tmp, 1, "UTF-8"),
        "all at once": (["validate", s], tmp, 1, "1 of 11 specs valid"),
        "show refused": (["show", f"{s}/refused.yaml"], tmp, 1, "--allow torch.load"),
        "generate refused": (["generate", "--out-dir", str(tmp / "out1"), f"{lone}/refused.yaml"], tmp, 1, "torch.load"),
        "generate over foreign": (["generate", "--out-dir", str(edited), f"{lone}/good.yaml"], tmp, 1,
                                  "not written by fxgen"),
        "generate into a file": (["generate", "--out-dir", str(tmp / "not_a_dir"), f"{lone}/good.yaml"], tmp, 1,
                                 "Not a directory"),
        "check missing": (["generate", "--check", "--out-dir", str(tmp / "out2"), f"{lone}/good.yaml"], tmp, 1,
                          "missing"),
        "bad --allow": (["validate", "--allow", "os system", f"{lone}/good.yaml"], tmp, 2, "invalid allow entry"),
        "--allow before the command": (["--allow", "torch.load", "validate", f"{lone}/refused.yaml"], tmp, 0, ""),
        "--allow before and after": (["--allow", "torch.load", "validate", "--allow", "torch.save",
                                      f"{lone}/refused_twice.yaml"], tmp, 0, ""),
        "--allow after, one missing": (["validate", "--allow", "torch.save", f"{lone}/refused_twice.yaml"], tmp, 1,
                                       "--allow torch.load"),
        "bad allow entry in pyproject": (["validate", f"{lone}/good.yaml"], bad_entry, 1, "invalid allow entry"),
        "bad [tool.fxgen]": (["validate", f"{lone}/good.yaml"], bad_allow, 1, "allow must be a list"),
        "bad pyproject": (["validate", f"{lone}/good.yaml"], bad_toml, 1, "pyproject.toml"),
        "export no module": (["export", "fxgen_no_such_module:Model", "--out", str(tmp / "x.yaml")], tmp, 1,
                             "fxgen_no_such_module"),
        "export not a module": (["export", "os:getcwd", "--out", str(tmp / "x.yaml")], tmp, 1, "getcwd"),
        "unknown command": (["frobnicate"], tmp, 2, "invalid choice"),
        "no command": ([], tmp, 2, "usage"),
        "missing argument": (["validate"], tmp, 2, "required"),
    }
    return {"table": table, "out1": tmp / "out1", "specs": specs, "lone": lone}


def test_cli_failure_modes(tmp_path: Path) -> None:
    """The table, through real processes; alongside, the console script and ``python -m fxgen``."""
    work = _cli_workspace(tmp_path)
    table = work["table"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    cases = [{"argv": argv, "cwd": str(cwd)} for argv, cwd, _, _ in table.values()]
    runner = subprocess.Popen([sys.executable, "-c", _FORK_RUNNER, json.dumps(cases)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    spec = work["lone"] / "refused.yaml"
    script = Path(sys.executable).with_name("fxgen")
    plain_cmd = [str(script)] if script.exists() else [sys.executable, "-m", "fxgen"]
    plain = subprocess.Popen([*plain_cmd, "validate", str(spec)], cwd=tmp_path, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    debug = subprocess.Popen([sys.executable, "-m", "fxgen", "--debug", "show", str(spec)], cwd=tmp_path, env=env,
                             text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = runner.communicate(timeout=HANG_WATCHDOG)
    _, plain_err = plain.communicate(timeout=HANG_WATCHDOG)
    _, debug_err = debug.communicate(timeout=HANG_WATCHDOG)
    assert runner.returncode == 0, err[-3000:]
    outcomes = json.loads(out.strip().splitlines()[-1])
    problems = []
    for (name, (_, _, rc, phrase)), outcome in zip(table.items(), outcomes, strict=True):
        err = outcome["stderr"]
        lines = [line for line in err.splitlines() if line.strip()]
        if outcome["rc"] != rc:  # (rc 0: a case that must succeed)
            problems.append(f"{name}: exit {outcome['rc']}, expected {rc}: {err[-500:]}")
        if phrase not in err:
            problems.append(f"{name}: {phrase!r} not in {err[-500:]!r}")
        if "Traceback" in err or "internal error" in err:
            problems.append(f"{name}: {err[-800:]}")
        if rc == 1:  # argparse's own usage errors (exit 2) have their own format
            odd = [line for line in lines if not (LOCATED.match(line) or SUMMARY.match(line))]
            if odd or not any(LOCATED.match(line) for line in lines):
                problems.append(f"{name}: not one located line per problem: {lines}")
    # the console script: exit 1, one located line (and the summary), no traceback
    lines = plain_err.strip().splitlines()
    if plain.returncode != 1 or len(lines) != 2 or not lines[0].startswith(f"{spec}:") or "Traceback" in plain_err:
        problems.append(f"console script: exit {plain.returncode}: {plain_err[-800:]}")
    # --debug (before the command) shows the traceback
    if debug.returncode != 1 or "Traceback" not in debug_err or "SpecError" not in debug_err:
        problems.append(f"python -m fxgen --debug: exit {debug.returncode}: {debug_err[-800:]}")
    assert not problems, "\n".join(problems)
    assert not work["out1"].exists() or not list(work["out1"].iterdir())  # nothing written for a bad spec


# -- a spec cannot widen its own policy through a pyproject.toml next to it ---------------------------------
def test_pyproject_next_to_the_spec_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """[tool.fxgen] allow is read from the nearest pyproject.toml of the *working directory* only."""
    from fxgen.cli.main import main

    evil = tmp_path / "downloaded"
    evil.mkdir()
    (evil / "pyproject.toml").write_text('[tool.fxgen]\nallow = ["torch.load"]\n')
    (evil / "spec.yaml").write_text(VALID_YAML.replace("torch.relu", "torch.load"))
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["validate", str(evil / "spec.yaml")]) == 1
    assert "--allow torch.load" in capsys.readouterr().err
    monkeypatch.chdir(evil)  # run inside that project: its configuration applies (documented)
    assert main(["validate", "spec.yaml"]) == 0


# -- specs that used to crash load with torch's own exceptions ----------------------------------------------
def _one_node(node: dict[str, Any], modules: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"fxgen": 1, "name": "Crash", "modules": modules or {},
            "nodes": [{"op": "placeholder", "name": "x"}, {"name": "y", **node}, {"op": "output", "args": ["%y"]}]}  # fmt: skip


CRASHERS = {
    "constructor type": _one_node({"op": "call_module", "target": "m", "args": ["%x"]},
                                  {"m": {"class": "torch.nn.Linear", "args": ["a", "b"]}}),
    "constructor range": _one_node({"op": "call_module", "target": "m", "args": ["%x"]},
                                   {"m": {"class": "torch.nn.Linear", "args": [2, -5]}}),
    "constructor device": _one_node({"op": "call_module", "target": "m", "args": ["%x"]},
                                    {"m": {"class": "torch.nn.Linear", "args": [2, 2],
                                           "kwargs": {"device": {"device": "cuda:7"}}}}),
    "constructor value": _one_node({"op": "call_module", "target": "m", "args": ["%x"]},
                                   {"m": {"class": "torch.nn.Conv2d", "args": [3, 4, 3],
                                          "kwargs": {"padding_mode": "evil"}}}),
    "allocation": _one_node({"op": "call_module", "target": "m", "args": ["%x"]},
                            {"m": {"class": "torch.nn.Linear", "args": [10**6, 10**7]}}),
    "operator arity": _one_node({"op": "call_function", "target": "operator.add", "args": ["%x"]}),
    "operator keywords": _one_node({"op": "call_function", "target": "operator.add", "args": ["%x", 1],
                                    "kwargs": {"extra": 1}}),
    "method on a number": _one_node({"op": "call_method", "target": "view", "args": [2, -1]}),
    "getattr on an int": _one_node({"op": "call_function", "target": "getattr", "args": [0, "shape"]}),
    "getattr on a float": _one_node({"op": "call_function", "target": "getattr", "args": [{"float": "nan"}, "real"]}),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CRASHERS))
def test_specs_torch_refuses_are_spec_errors(name: str) -> None:
    """Constructors, allocations and torch.fx's own code printer fail as located SpecErrors."""
    with pytest.raises(SpecError) as info:
        fxgen.load(CRASHERS[name])
    _located(info.value)
    if name != "allocation":  # generating source allocates nothing: only loading can fail there
        with pytest.raises(SpecError):
            fxgen.generate(CRASHERS[name])


def test_validate_data_refuses_what_is_not_json() -> None:
    for bad in ({1, 2}, 10**5000, object()):
        with pytest.raises(SpecError):
            fxgen.check.validate.validate_data({"fxgen": 1, "name": "A", "doc": bad, "nodes": []})
