"""Render + format: a Spec -> the source of a standalone, readable ``nn.Module`` file.

Like torch.fx's CodeGen, this returns text and writes nothing. The file skeleton is a jinja2
template (``fxgen/codegen/templates/module.py.jinja``); statements come from
``fxgen.codegen.render``; long lines go through ``fxgen.blackstyle``; the header
(``fxgen.write.header``) names the spec and hashes both. ``fxgen._api`` validates a spec
and hands it here.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jinja2

from fxgen.blackstyle import formatter
from fxgen.codegen import render
from fxgen.codegen.constructor import (
    ClassBuild,
    body_annotations,
    container_classes,
    init_def,
    init_lines,
    loop_variable,
    reached_items,
    variant_methods,
)
from fxgen.codegen.functions import function_defs
from fxgen.codegen.render import (
    FORWARD_DEPTH,
    Imports,
    comment,
    declared_classes,
    forward_block,
    signature,
    string,
)
from fxgen.read.paths import label_of
from fxgen.spec.file_names import PACKED_HELPER_SOURCE, PACKED_IMPORTS
from fxgen.spec.model import Spec
from fxgen.spec.tree import ModelTree
from fxgen.write.header import VERSION, Header, body_digest, safe_label

__all__ = ["block_order", "render_spec", "spec_bytes", "spec_label"]


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


def render_spec(
    spec: Spec, *, label: str, digest: str, shapes: dict[int, str] | None = None, passes: Iterable[str] = ()
) -> str:
    """The complete file text for ``spec`` (header included): its functions (format 2), its
    blocks, each after the blocks it uses, then its own class. ``shapes`` are end-of-line comments for the top
    class's statements, by node index; ``passes`` names the passes the spec went through (a
    comment line under the header)."""
    imports = Imports()
    bodies = [spec.block(name) for name in block_order(spec)] + [spec]
    render.plan_names(bodies, imports, _module_of)
    functions = function_defs(spec, imports)
    classes: list[dict[str, Any]] = []
    for body in bodies:
        classes += _render_class(body, imports, owner=None if body is spec else body.name,
                                 shapes=shapes if body is spec else None)  # fmt: skip
    packed = render.packed_lines(imports.packed) if imports.packed else []
    if packed:
        imports.stdlib |= PACKED_IMPORTS  # what the helper reads
    import_lines = formatter.block(imports.lines(), 0)
    if render.imports_other_packages(imports):
        import_lines = [render.UNTYPED_IMPORTS, "", *import_lines]
    text = _template().render(imports=import_lines, functions=functions, classes=classes, packed_lines=packed,
                              packed_helper=PACKED_HELPER_SOURCE)
    names = list(passes)
    if names:  # identifiers (validated pass names) only
        text = f"# Transformed by the spec's passes: {', '.join(names)}. The code is the transformed spec's.\n" + text
    header = Header(VERSION, safe_label(label), digest, body_digest(text))
    return header.render() + text


def _render_class(
    spec: Spec, imports: Imports, owner: str | None, shapes: dict[int, str] | None = None
) -> list[dict[str, Any]]:
    """The template's view of one class of the spec, after the typed containers it uses."""
    tree = ModelTree(spec)
    build = ClassBuild(spec, tree, imports, _module_of, loop=loop_variable(spec), owner=owner,
                       reached=reached_items(spec, tree))  # fmt: skip
    out: list[dict[str, Any]] = [
        {"name": name, "doc": [doc], "fields": fields, "model": False}
        for name, (doc, fields) in container_classes(build, spec.name)
    ]
    statements = forward_block(spec, tree, imports, _module_of, build.fields)
    init = init_lines(build)
    if any(depth for _, _, depth in statements):
        forward = _nested(statements, shapes or {})
    elif shapes is None:
        forward = formatter.block([line for line, _, _ in statements], FORWARD_DEPTH)
    else:
        forward = formatter.commented_block(
            [(line, comment(shapes.get(index)) if index is not None else None) for line, index, _ in statements],
            FORWARD_DEPTH,
        )
    params, returns = signature(spec, imports, _module_of)
    out.append({
        "name": spec.name,
        "doc": _docstring(spec.doc),
        "fields": body_annotations(build),
        "model": True,
        "init_def": ["    " + line for line in formatter.format_def(init_def(build), 1)],
        "init": _nested([(line, None, depth) for line, depth in init], {}, 2) if any(d for _, d in init) else
                formatter.block([line for line, _ in init], 2),
        "variants": [["    " + m[0], "    " + m[1], *formatter.block([m[2]], 2)] for m in variant_methods(build)],
        "forward_def": ["    " + line for line in formatter.format_def(f"def forward(self{params}){returns}:", 1)],
        "forward": forward,
    })  # fmt: skip
    return out


def _nested(statements: list[tuple[str, int | None, int]], shapes: dict[int, str], base: int = FORWARD_DEPTH) -> list[str]:
    """The lines of a body with conditionals and loops (``forward``'s, or ``__init__``'s at
    ``base``): each run of statements at one depth formatted as a block (a top-level node's with
    its shape comment), each header (``if ...:``, ``else:``, ``for ...:``) on its own."""
    out: list[str] = []
    run: list[tuple[str, str | None]] = []
    run_depth = 0
    for line, index, depth in statements:
        if run and (depth != run_depth or line.endswith(":")):
            out += formatter.commented_block(run, base + run_depth)
            run = []
        if line.endswith(":"):  # a compound statement's header: no simple statement ends so
            prefix = "    " * (base + depth)
            out += [prefix + part for part in formatter.format_header(line, base + depth)]
            continue
        run.append((line, comment(shapes.get(index)) if index is not None else None))
        run_depth = depth
    return out + (formatter.commented_block(run, base + run_depth) if run else [])


def block_order(spec: Spec) -> list[str]:
    """The spec's blocks in declaration order, each after the blocks it uses."""
    order: dict[str, None] = {}
    seen: set[str] = set()  # blocks never use each other in a cycle (validation)

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for module in spec.classes[name].modules.values():
            for used in declared_classes(module):
                if used in spec.classes:
                    visit(used)
        order[name] = None

    for name in spec.classes:
        visit(name)
    return list(order)


def spec_label(spec: Spec) -> str:
    """Where the spec came from, as the header shows it (see :func:`fxgen.write.outputs.label_of`)."""
    if spec.document is None or spec.document.path.startswith("<"):
        return f"<spec {spec.name}>"
    return label_of(Path(spec.document.path))


def spec_bytes(spec: Spec) -> bytes:
    if spec.document is not None and spec.document.raw:
        return spec.document.raw
    return json.dumps(spec.to_dict(), sort_keys=True).encode()

