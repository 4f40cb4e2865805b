"""The code blocks of README.md and docs/*.md run as written: every ```python block, and every
`fxgen` command of a ```sh block, in document order, in a copy of the repository's specs.

A block that is deliberately not runnable says so on its first line, where a reader sees it:
`# not run: WHY`. A block preceded by `<!-- file: PATH -->` is that file of the repository, verbatim.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT

from fxgen.cli.main import main
from fxgen.passes import registry

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?:<!-- file: (?P<file>\S+) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.S | re.M)
NOT_RUN = re.compile(r"# not run: \S")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it starts, its language, its text, and the file it claims to be."""

    doc: Path
    line: int
    lang: str
    body: str
    file: str | None

    def __str__(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line} ({self.lang})"


def blocks(doc: Path) -> list[Block]:
    text = doc.read_text(encoding="utf-8")
    return [
        Block(doc, text.count("\n", 0, m.start("body")) + 1, m["lang"], m["body"], m["file"])
        for m in FENCE.finditer(text)
    ]


def runnable(block: Block) -> bool:
    if block.lang not in ("python", "sh"):
        return False
    first = block.body.split("\n", 1)[0]
    if first.startswith("# not run"):
        assert NOT_RUN.match(first), f"{block}: say why the block is not run: '# not run: WHY'"
        return False
    return True


def commands(block: Block) -> list[list[str]]:
    """The `fxgen` commands of a shell block (continuation lines joined); other commands are not run."""
    lines = block.body.replace("\\\n", " ").splitlines()
    return [words for words in (shlex.split(line, comments=True) for line in lines) if words[:1] == ["fxgen"]]


def run(block: Block, namespace: dict[str, object]) -> None:
    if block.lang == "python":
        exec(compile(block.body, str(block), "exec"), namespace)
        return
    for words in commands(block):
        assert main(words[1:]) == 0, f"{block}: {shlex.join(words)} failed"


@pytest.mark.parametrize("doc", [d for d in DOCS if any(map(runnable, blocks(d)))], ids=lambda d: d.name)
def test_code_blocks_run_as_written(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("model_specs", "generated"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)  # the project's root, as in the repository
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))  # docs/transforms.md registers one
    monkeypatch.syspath_prepend(str(tmp_path))  # `from generated.x import X`, as from the repository's root
    namespace: dict[str, object] = {"__name__": "__doc_snippets__"}
    for block in filter(runnable, blocks(doc)):
        run(block, namespace)


@pytest.mark.parametrize("block", [b for d in DOCS for b in blocks(d) if b.file], ids=str)
def test_a_block_shown_as_a_file_is_that_file(block: Block) -> None:
    assert block.body == (ROOT / block.file).read_text(encoding="utf-8"), f"{block} is not {block.file}"


def test_the_readme_tour_shows_the_spec_it_names() -> None:
    assert next(b.file for b in blocks(ROOT / "README.md") if b.lang == "yaml") == "model_specs/resnet_block.yaml"


def test_a_block_not_run_says_why() -> None:
    quiet = Block(ROOT / "README.md", 1, "python", "# not run\nx = 1\n", None)
    with pytest.raises(AssertionError, match="say why"):
        runnable(quiet)
    assert not runnable(Block(ROOT / "README.md", 1, "python", "# not run: mypkg is yours\nx\n", None))
    shell = Block(ROOT / "README.md", 1, "sh", "pip install x && fxgen generate a/\nfxgen show \\\n  b.yaml  # c\n", None)
    assert commands(shell) == [["fxgen", "show", "b.yaml"]]
