"""Pictures: ``fxgen show --format mermaid`` parsed by mermaid's own parser (mermaid.parse, in
Node: tests/mermaid), ``--format dot`` by pydot's; what they read back is the spec's graph."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pydot
import pytest

import fxgen
from fxgen.analysis.pictures import dot, mermaid
from fxgen.analysis.shapes import analyse
from fxgen.check.validate import validate_data
from fxgen.policy.policy import DEFAULT_POLICY
from fxgen.spec.model import InputSpec
from fxgen.spec.values import dtype_name
from tests.helpers import HANG_WATCHDOG, example_graph, example_inputs

MERMAID = Path(__file__).parents[1] / "mermaid"


def _parse_mermaid(text: str) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None or not (MERMAID / "node_modules" / "mermaid").is_dir():
        if os.environ.get("CI"):
            pytest.fail("mermaid's parser is not installed: npm ci --prefix tests/mermaid")
        pytest.skip("mermaid's parser is not installed (npm ci --prefix tests/mermaid)")
    done = subprocess.run([node, str(MERMAID / "parse.mjs")], input=text, capture_output=True, text=True,
                          timeout=HANG_WATCHDOG, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _edges(spec: fxgen.Spec, values: dict[int, str]) -> list[tuple[str, str, str]]:
    """The spec's edges (reader, read, the read node's value), from the graph torch.fx builds."""
    gm = fxgen.load(spec) if not spec.classes else None
    index = {n.name: i for i, n in enumerate(spec.nodes) if n.name}
    index["output"] = len(spec.nodes) - 1
    graph = gm.graph if gm is not None else None
    assert graph is not None
    return sorted((f"n{index[src.name]}", f"n{index[n.name]}", values.get(index[src.name], ""))
                  for n in graph.nodes for src in n.all_input_nodes)  # fmt: skip


def _analysed(example: Path) -> tuple[fxgen.Spec, Any]:
    spec = example_graph(example)
    spec.inputs = {k: InputSpec(list(t.shape), dtype_name(t.dtype)) for k, t in example_inputs(example).items()}
    return spec, analyse(spec, DEFAULT_POLICY)


def test_mermaid_parses_and_holds_the_graph(example: Path) -> None:
    spec, analysis = _analysed(example)
    parsed = _parse_mermaid(mermaid(spec, analysis))
    assert len(parsed["vertices"]) == len(spec.nodes)
    got = sorted((e["start"], e["end"], e["text"]) for e in parsed["edges"])
    if not spec.classes:
        assert got == _edges(spec, {i.index: i.value for i in analysis.nodes})
    titles = {s["title"] for s in parsed["subgraphs"]}
    containers = {n.target.rpartition(".")[0] for n in spec.nodes if n.op == "call_module" and "." in (n.target or "")}
    assert containers <= titles


def test_dot_parses_and_holds_the_graph(example: Path) -> None:
    spec, analysis = _analysed(example)
    (graph,) = pydot.graph_from_dot_data(dot(spec, analysis))

    def nodes(g: Any) -> list[Any]:
        return [*g.get_nodes(), *(n for s in g.get_subgraphs() for n in nodes(s))]

    names = {n.get_name() for n in nodes(graph) if n.get_name() not in ("node", "edge", "graph")}
    assert names == {f"n{i}" for i in range(len(spec.nodes))}
    got = sorted((e.get_source(), e.get_destination(), (e.get_label() or '""').strip('"'))
                 for e in graph.get_edges())  # fmt: skip
    if not spec.classes:
        assert got == _edges(spec, {i.index: i.value for i in analysis.nodes})


HOSTILE = 'a"b]c\\d;e}f{g|h<i>j#k'


def test_spec_text_stays_label_text(tmp_path: Path) -> None:
    """A module path full of the pictures' own syntax is a label in both, read back unchanged
    by dot (escaped) and shown by mermaid with entity codes, never breaking out of the label."""
    data = {"fxgen": 1, "name": "M", "modules": {f"outer.{HOSTILE}": {"class": "torch.nn.ReLU"}}, "nodes": [
        {"op": "placeholder", "name": "x"},
        {"op": "call_module", "name": "y", "target": f"outer.{HOSTILE}", "args": ["%x"]},
        {"op": "output", "args": ["%y"]}]}  # fmt: skip
    spec = validate_data(data)
    parsed = _parse_mermaid(mermaid(spec))
    assert len(parsed["vertices"]) == 3 and len(parsed["edges"]) == 2
    (graph,) = pydot.graph_from_dot_data(dot(spec))
    (cluster,) = graph.get_subgraphs()
    assert cluster.get_label() == '"outer"'
    assert len(graph.get_edges()) == 2


def test_svg_says_what_to_install_without_graphviz(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from fxgen.cli.main import main

    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` on it, whether Graphviz is installed or not
    root = Path(__file__).parents[2]
    assert main(["show", "--format", "svg", str(root / "model_specs" / "mlp.yaml")]) == 1
    err = capsys.readouterr().err
    assert "needs Graphviz's `dot` program, which is not installed" in err and "Traceback" not in err


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_is_what_graphviz_draws(capsys: pytest.CaptureFixture[str]) -> None:
    import xml.dom.minidom

    from fxgen.cli.main import main

    root = Path(__file__).parents[2]
    assert main(["show", "--format", "svg", str(root / "model_specs" / "resnet_block.yaml")]) == 0
    svg = xml.dom.minidom.parseString(capsys.readouterr().out.encode()).documentElement
    assert svg.tagName == "svg" and svg.getElementsByTagName("g")


PICTURES = Path(__file__).parents[2] / "docs" / "pictures.md"
_INTRO = """# The examples' graphs

`fxgen show --format mermaid model_specs/NAME.yaml` for each example: nodes grouped by the module
they belong to, each edge labelled with the shape and dtype of the value along it (the examples
declare `inputs:`; `batch` is symbolic). GitHub and GitLab render these blocks as pictures;
`--format dot` gives the same graph for Graphviz. A test keeps this page current
(`python -m pytest tests/analysis/test_pictures.py --update-golden` rewrites it).
"""


def _pictures_page() -> str:
    from conftest import EXAMPLES

    parts = [_INTRO]
    for path in EXAMPLES:
        spec = example_graph(path)
        analysis = analyse(spec, DEFAULT_POLICY)
        parts.append(f"\n## {path.stem}\n\n```mermaid\n{mermaid(spec, analysis)}```\n")
    return "".join(parts)


def test_docs_show_the_examples_pictures(update_golden: bool) -> None:
    page = _pictures_page()
    if update_golden:
        PICTURES.write_text(page, encoding="utf-8")
    assert PICTURES.read_text(encoding="utf-8") == page, "run pytest tests/analysis/test_pictures.py --update-golden"
