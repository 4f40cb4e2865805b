"""Sections of a generated Markdown file that one bench script writes and the others keep.

``docs/zoo.md`` is rewritten by ``zoo_report.py`` and ``docs/benchmarks.md`` by ``run.py``; other
scripts measure something those runs do not and put it between a pair of markers, which the
rewrite carries over, in the order the file had them. Prose a person writes about a generated
section goes between ``BY_HAND``'s markers, which ``zoo_report.py`` keeps too.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BEYOND", "BLOCKS", "BLOCKS_DYNAMO", "BY_HAND", "CLI_STARTUP", "COMPARED", "DYNAMO_CAPTURE",
           "ENVIRONMENTS", "EXPORT_BLOCKS", "EXPORT_CLASSES", "keep_sections", "write_section"]

Markers = tuple[str, str]

BLOCKS: Markers = ("<!-- zoo_blocks: written by bench/zoo_blocks.py -->", "<!-- /zoo_blocks -->")
BLOCKS_DYNAMO: Markers = ("<!-- zoo_blocks --dynamo: written by bench/zoo_blocks.py -->", "<!-- /zoo_blocks --dynamo -->")
COMPARED: Markers = ("<!-- bench/zoo_compare.py -->", "<!-- end bench/zoo_compare.py -->")
DYNAMO_CAPTURE: Markers = ("<!-- bench/dynamo_capture.py -->", "<!-- end bench/dynamo_capture.py -->")
BEYOND: Markers = ("<!-- zoo_report: beyond the example -->", "<!-- /zoo_report: beyond the example -->")
# prose a person wrote about a generated section (no script writes it; every rewrite keeps it)
BY_HAND: Markers = ("<!-- written by hand: kept by every rewrite -->", "<!-- /written by hand -->")
CLI_STARTUP: Markers = ("<!-- bench/cli_startup.py -->", "<!-- end bench/cli_startup.py -->")
EXPORT_BLOCKS: Markers = ("<!-- bench/export_blocks.py -->", "<!-- end bench/export_blocks.py -->")
EXPORT_CLASSES: Markers = ("<!-- bench/export_classes.py -->", "<!-- end bench/export_classes.py -->")
# zoo_report.py --environment NAME: the figures per library and version in one environment
ENVIRONMENTS: dict[str, Markers] = {
    name: (f"<!-- zoo_report --environment {name} -->", f"<!-- /zoo_report --environment {name} -->")
    for name in ("pinned", "current", "last-4.x")
}


def _read(out: Path) -> str:
    return out.read_text(encoding="utf-8") if out.is_file() else ""


def _span(document: str, markers: Markers) -> tuple[int, int] | None:
    start, end = document.find(markers[0]), document.find(markers[1])
    return (start, end + len(markers[1])) if 0 <= start < end else None


def write_section(out: Path, markers: Markers, body: str) -> None:
    """Put ``body`` between ``markers`` in ``out``: in place of the section there, or at the end."""
    old = _read(out)
    section = f"{markers[0]}\n{body.strip(chr(10))}\n{markers[1]}"
    span = _span(old, markers)
    text = old[: span[0]] + section + old[span[1] :] if span else old.rstrip("\n") + "\n\n" + section + "\n"
    out.write_text(text, encoding="utf-8")


def keep_sections(out: Path, text: str, *sections: Markers) -> None:
    """Write ``text`` to ``out``, followed by each of ``sections`` the old file had, in the old
    file's order (a rewrite moves nothing it keeps)."""
    old = _read(out)
    for span in sorted(filter(None, (_span(old, markers) for markers in sections))):
        text = text.rstrip("\n") + "\n\n" + old[span[0] : span[1]] + "\n"
    out.write_text(text, encoding="utf-8")
