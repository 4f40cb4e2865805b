"""The package's layout: one subpackage per stage, imports flowing one way, the public API fixed.

docs/architecture.md draws the stages; this test holds the code to the drawing. Every import
between fxgen's modules counts, at module level or inside a function (a lazy import is still a
dependency), and so does an import only for type checking.
"""

from __future__ import annotations

import ast
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
    ("capture",),  # nn.Module -> Spec (fxgen.export)
    ("passes",),  # Spec -> GraphModule -> passes -> Spec (fxgen.transform)
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
