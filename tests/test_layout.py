"""The package's layout: one subpackage per stage, imports flowing one way, the public API fixed.

docs/architecture.md draws the stages; this test holds the code to the drawing. Every import
between fxgen's modules counts, at module level or inside a function (a lazy import is still a
dependency), and so does an import only for type checking.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import fxgen

PACKAGE = Path(fxgen.__file__).parent

# From the bottom up: a module may import modules of its own layer or of a layer below it.
LAYERS = [
    ("_version", "_errors"),  # what every stage shares
    ("blackstyle",),  # black's style for text: knows nothing of specs
    ("read",),  # disk -> plain data
    ("write",),  # text and tensors -> disk; the state of generated files
    ("spec",),  # the model and its value encoding
    ("policy",),  # which names a spec may use
    ("construct",),  # one declaration -> one torch object
    ("check",),  # Document -> Spec
    ("assemble",),  # Spec -> GraphModule (fxgen.load)
    ("analysis",),  # Spec + example inputs -> shapes, FLOPs, pictures
    ("codegen",),  # Spec -> source text
    ("describe",),  # GraphModule -> Spec (fxgen.to_spec)
    ("capture",),  # nn.Module -> GraphModule -> Spec (fxgen.export)
    ("passes",),  # Spec -> GraphModule -> passes -> Spec (fxgen.transform)
    ("_api",),  # the public functions: the whole way through the stages for each job
    ("cli",),  # the fxgen command
    ("__init__", "__main__"),  # the public API
]
LAYER = {part: i for i, parts in enumerate(LAYERS) for part in parts}


def _modules() -> dict[str, Path]:
    """``fxgen.check.validate`` -> its file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(("fxgen", *parts))
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The fxgen modules ``path`` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from fxgen.blackstyle import split` imports a module; `from m import name` imports m
            targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                       for a in node.names]  # fmt: skip
        else:
            continue
        found.update(t for t in targets if t.split(".")[0] == "fxgen" and t != "fxgen")
    return found


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYER[parts[1] if len(parts) > 1 else "__init__"]


GRAPH = {name: _imports(path, _modules()) for name, path in _modules().items()}


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in GRAPH if m.split(".")[1:2] and m.split(".")[1] not in LAYER)
    assert not unplaced, f"place these in LAYERS (and in docs/architecture.md): {unplaced}"


def test_imports_flow_down_the_stages() -> None:
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if _layer(target) > _layer(module)
    )
    assert not upward, "imports that run back up the stages:\n" + "\n".join(upward)


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or through others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        for target in GRAPH.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    assert not cycles, f"import cycles: {cycles}"


def test_the_layer_check_finds_an_upward_import() -> None:
    """The checks above are not vacuous: the graph has edges, and an upward one would be found."""
    assert sum(map(len, GRAPH.values())) > 100
    assert _layer("fxgen.cli.main") > _layer("fxgen.check.validate") > _layer("fxgen.read.reader")
    assert "fxgen.read.reader" in GRAPH["fxgen.check.validate"]


PUBLIC_API = [
    "DEFAULT_POLICY", "BufferSpec", "Diagnostic", "ExportError", "FxgenError", "GenerateError",
    "Location", "ModuleSpec", "Node", "ParameterSpec", "Policy", "Spec", "SpecError",
    "WeightsError", "__version__", "export", "generate", "load", "load_spec",
    "record_constructors", "register_constructor", "register_pass", "save_weights", "to_spec",
    "transform", "validate",
]  # fmt: skip


def test_the_public_api_is_exactly_this() -> None:
    assert sorted(fxgen.__all__) == sorted(PUBLIC_API)
    for name in PUBLIC_API:
        assert getattr(fxgen, name) is not None
    assert callable(fxgen.export) and callable(fxgen.load)  # not shadowed by a subpackage


def test_import_fxgen_imports_neither_torch_nor_black() -> None:
    code = "import sys, fxgen; print(sorted(m for m in ('torch', 'black') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_only_the_read_and_write_stages_open_files() -> None:
    """The disk is touched by fxgen.read and fxgen.write alone (the CLI reads its configuration)."""
    calls = defaultdict(list)
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                callee = ast.unparse(node.func)
                if callee in ("open", "os.open") or callee.endswith((".read_text", ".read_bytes", ".write_text",
                                                                       ".write_bytes", "os.replace", "os.unlink")):  # fmt: skip
                    calls[name.split(".")[1] if "." in name else name].append(f"{name}: {callee}")
    outside = {stage: found for stage, found in calls.items() if stage not in ("read", "write", "cli")}
    assert not outside, outside


# --------------------------------------------------------------------------------------
# Dead and private code cannot come back
# --------------------------------------------------------------------------------------

ROOT = PACKAGE.parent


def _trees() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in _modules().items()}


TREES = _trees()


def test_no_private_name_is_imported_from_another_module() -> None:
    """A name shared between modules is public (no underscore) and in its module's ``__all__``."""
    found = sorted(
        f"{module} imports {node.module}.{alias.name}"
        for module, tree in TREES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fxgen")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    )
    assert not found, "private names used across modules:\n" + "\n".join(found)


def _words(paths: list[Path]) -> set[str]:
    """Every identifier written in these files (code, docs, templates)."""
    words: set[str] = set()
    for path in paths:
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text(encoding="utf-8", errors="replace")))
    return words


def _defined_public() -> dict[str, list[tuple[str, int]]]:
    """Each public module-level function and class of fxgen -> where it is defined."""
    out: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for module, tree in TREES.items():
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                out[node.name].append((module, node.lineno))
    return out


def test_every_public_function_and_class_is_used() -> None:
    """A public function or class that nothing in fxgen (outside its own definition), the tests,
    bench or the public API uses is dead code: delete it, or make it private to its module."""
    usage_files = [p for p in ROOT.joinpath("tests").rglob("*.py")] + list(ROOT.joinpath("bench").rglob("*.py"))
    used: dict[str, int] = defaultdict(int)
    for path in usage_files:
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text(encoding="utf-8")):
            used[word] += 1
    for tree in TREES.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                used[node.id] += 1
            elif isinstance(node, ast.Attribute):
                used[node.attr] += 1
            elif isinstance(node, ast.alias):
                used[node.asname or node.name.split(".")[-1]] += 1
    # what torch or jinja2 call by name, and the template, count as uses
    template_words = _words(list(PACKAGE.rglob("*.jinja")))
    dead = sorted(
        f"{module}:{line} {name}"
        for name, places in _defined_public().items()
        if not used.get(name) and name not in fxgen.__all__ and name not in template_words
        for module, line in places
    )
    assert not dead, "public functions and classes nothing uses:\n" + "\n".join(dead)


def test_docs_architecture_names_every_module() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = sorted(
        name for name in _modules()
        if name.count(".") >= 2 and f"`{name.rsplit('.', 1)[1]}`" not in text
    )
    stages = sorted({name.split(".")[1] for name in _modules() if name.count(".") >= 2})
    missing += [f"fxgen.{stage} (stage)" for stage in stages if f"**{stage}**" not in text]
    assert not missing, "modules docs/architecture.md does not name:\n" + "\n".join(missing)


_DOTTED = re.compile(r"\bfxgen(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _resolves(dotted: str) -> bool:
    """``fxgen.check.validate.validate_document`` names a module, or an attribute of one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module == "fxgen" or module in _modules():
            obj: object = importlib.import_module(module)
            for attr in parts[cut:]:
                if not hasattr(obj, attr):
                    return False
                obj = getattr(obj, attr)
            return True
    return False


def test_every_dotted_fxgen_reference_resolves() -> None:
    """A dotted ``fxgen`` name (stage, module, attribute) in a docstring, a comment or a doc exists."""
    sources = [*PACKAGE.rglob("*.py"), *ROOT.joinpath("docs").glob("*.md"), ROOT / "README.md",
               *ROOT.joinpath("tests").rglob("*.py")]  # fmt: skip
    broken = sorted(
        f"{path.relative_to(ROOT)}: {ref}"
        for path in sources
        if "node_modules" not in path.parts
        for ref in set(_DOTTED.findall(path.read_text(encoding="utf-8")))
        if not ref.endswith((".py", ".yaml", ".json", ".md")) and not _resolves(ref.rstrip("."))
    )
    assert not broken, "dotted references that do not resolve:\n" + "\n".join(broken)


# --------------------------------------------------------------------------------------
# Tests you can find
# --------------------------------------------------------------------------------------


def test_every_module_has_a_test_that_names_it_or_a_row_in_the_test_map() -> None:
    """A maintainer changing a module finds its tests: a test file names it by its dotted name
    (or imports it from its package), or tests/README.md's map says which tests cover it."""
    tests = ROOT / "tests"
    text = "\n".join(p.read_text(encoding="utf-8") for p in tests.rglob("*.py") if "node_modules" not in p.parts)
    rows = dict(re.findall(r"^\| `(fxgen[\w.]*)` \| (.*) \|$", (tests / "README.md").read_text(encoding="utf-8"), re.M))
    unfound = []
    for name in _modules():
        if name.count(".") < 1 or name.endswith("__init__") or name in ("fxgen",) or (name.count(".") >= 1 and (
                PACKAGE / Path(*name.split(".")[1:])).is_dir()):  # fmt: skip
            continue
        package, leaf = name.rsplit(".", 1)
        named = re.search(re.escape(name) + r"\b", text) or re.search(rf"from {re.escape(package)} import [^\n]*\b{leaf}\b", text)
        if not named and name not in rows:
            unfound.append(name)
    missing_files = sorted(
        f"{module}: {path}" for module, cell in rows.items() for path in re.findall(r"`(tests/[\w/]+\.py)`", cell)
        if not (ROOT / path).exists()
    )
    stale = sorted(module for module in rows if module not in _modules())
    assert not unfound, "modules no test names and tests/README.md's map does not list:\n" + "\n".join(unfound)
    assert not missing_files, "the test map names test files that do not exist:\n" + "\n".join(missing_files)
    assert not stale, "the test map lists modules that do not exist:\n" + "\n".join(stale)
