"""Render + format: a Spec -> the source of a standalone, readable ``nn.Module`` file.

Like torch.fx's CodeGen, this returns text and writes nothing. The file skeleton is a jinja2
template (``fxgen/codegen/templates/module.py.jinja``); statements come from
``fxgen.codegen.render``; long lines go through ``fxgen.blackstyle``; the header
(``fxgen.write.header``) names the spec and hashes both. ``render_job`` validates and renders
one spec file for the ``fxgen generate`` command.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterable
from pathlib import Path

import jinja2

from fxgen._errors import Diagnostic, FxgenError, SpecError
from fxgen.blackstyle import formatter
from fxgen.codegen import render
from fxgen.codegen.render import (
    FORWARD_DEPTH,
    Imports,
    forward_lines,
    init_lines,
    signature,
    string,
)
from fxgen.policy.policy import Policy
from fxgen.read.paths import label_of
from fxgen.spec.model import Spec
from fxgen.spec.tree import ModelTree
from fxgen.write.header import VERSION, Header, body_digest, safe_label, spec_digest
from fxgen.write.outputs import Job

__all__ = ["generate", "render_job", "render_job_safely", "render_spec"]


@functools.cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # the output is Python; every value is rendered by fxgen.codegen.render
    )
    return env.get_template("module.py.jinja")


def _module_of(target: str) -> str:
    """The module part of a qualified name validation resolved (and so imported) already."""
    parts = target.split(".")
    for i in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:i])
        if name in sys.modules:
            return name
    raise ValueError(f"module of {target!r} is not imported")


def _docstring(doc: str | None) -> list[str]:
    """The class docstring's lines: a triple-quoted docstring when black keeps it verbatim and
    ``inspect.cleandoc`` gives ``doc`` back; otherwise an exact ``__doc__ = "..."`` literal."""
    if not doc:
        return []
    lines = doc.split("\n")
    rest = [line for line in lines[1:] if line]
    clean = (
        doc == doc.strip()
        and all(line == line.rstrip() and line.isprintable() for line in lines)
        and "\\" not in doc
        and '"""' not in doc
        and not doc.startswith('"')
        and not doc.endswith('"')
        and (not rest or any(not line.startswith(" ") for line in rest))  # cleandoc keeps indents
    )
    if not clean:
        return formatter.block([f"__doc__ = {string(doc)}"], 1)
    if len(lines) == 1:
        return [f'    """{doc}"""']
    body = [("    " + line) if line else "" for line in lines[1:]]
    return [f'    """{lines[0]}', *body, '    """']


def render_spec(spec: Spec, *, label: str, digest: str) -> str:
    """The complete file text for ``spec`` (header included)."""
    render.new_render()  # each render checks its own names
    imports = Imports()
    render.plan_names(spec, imports, _module_of)
    tree = ModelTree(spec)
    init = init_lines(spec, tree, imports, _module_of)
    forward = forward_lines(spec, tree, imports, _module_of)
    params, returns = signature(spec, imports, _module_of)
    packed = render.packed_lines(imports.packed) if imports.packed else []
    if packed:
        imports.stdlib.update(("base64", "sys", "zlib"))  # what the template's _unpack uses
    def_line = f"def forward(self{params}){returns}:"
    def_lines = ["    " + line for line in formatter.format_def(def_line, 1)]
    body = _template().render(
        imports=formatter.block(imports.lines(), 0),
        class_name=spec.name,
        doc_lines=_docstring(spec.doc),
        init_lines=formatter.block(init, 2),
        def_lines=def_lines,
        forward_lines=formatter.block(forward, FORWARD_DEPTH),
        packed_lines=packed,
    )
    header = Header(VERSION, safe_label(label), digest, body_digest(body))
    return header.render() + body


def spec_label(spec: Spec) -> str:
    """Where the spec came from, as the header shows it (see :func:`fxgen.write.outputs.label_of`)."""
    if spec.document is None or spec.document.path.startswith("<"):
        return f"<spec {spec.name}>"
    return label_of(Path(spec.document.path))


def spec_bytes(spec: Spec) -> bytes:
    if spec.document is not None and spec.document.raw:
        return spec.document.raw
    return json.dumps(spec.to_dict(), sort_keys=True).encode()


def generate(
    spec: Spec | str | Path, *, allow: Iterable[str] | Policy | None = None, label: str | None = None
) -> str:
    """The generated source for a spec (a Spec, or a path to a spec file)."""
    from fxgen.check.validate import as_spec
    from fxgen.policy.policy import policy_for

    resolved = as_spec(spec, policy_for(allow))
    return render_spec(
        resolved, label=label if label is not None else spec_label(resolved), digest=spec_digest(spec_bytes(resolved))
    )


def render_job(job: Job, allow: tuple[str, ...]) -> str:
    """Validate and render one spec (imports torch and black)."""
    from fxgen.check.validate import validate_document
    from fxgen.codegen.generate import render_spec
    from fxgen.policy.policy import policy_for
    from fxgen.read.reader import parse_text

    doc = parse_text(job.raw, str(job.spec), json_syntax=job.spec.suffix == ".json")
    spec = validate_document(doc, policy_for(allow))
    return render_spec(spec, label=job.label, digest=job.digest)


def render_job_safely(args: tuple[Job, tuple[str, ...]]) -> tuple[str | None, list[Diagnostic] | str]:
    """``render_job`` for a worker process: errors come back as values, never as exceptions."""
    job, allow = args
    try:
        return render_job(job, allow), []
    except SpecError as exc:
        return None, exc.diagnostics
    except FxgenError as exc:
        return None, str(exc)
