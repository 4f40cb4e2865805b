"""Classes used from other spec files: ``imports:`` resolved into one located Document.

A spec can take classes from another spec file of the same project::

    imports:
      - {from: blocks.yaml, classes: [Conv, C2f]}

Each import is read here, where files are read, and its classes (with every class of that file
they use, and whatever that file imports in turn) are added to the spec's own ``classes:``, and
the named functions of that file they call (``functions:``, and the functions those call) to the
spec's own ``functions:``. The stages below see one spec, so the generated file stays standalone.
Each class and function is still located in its own file: a diagnostic about one names that
file's line.

A spec is untrusted data, so an import is a relative path that stays inside the project (the
nearest folder above the importing spec holding ``pyproject.toml``, ``.git`` or ``.fxgen-root``,
else the spec's own folder), names a ``.yaml``, ``.yml`` or ``.json`` file, and never a URL;
cycles, missing files and classes, and a name declared twice are located errors. Nothing is
fetched from the network: only files on disk are read.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from fxgen._errors import Diagnostic, Location, SpecError, printable_path
from fxgen.read.reader import Document, read_document
from fxgen.read.yaml_events import JsonPath

__all__ = ["MAX_IMPORTED_FILES", "class_names", "imported_digest", "read_spec", "with_imports"]


MAX_IMPORTED_FILES = 256  # files one spec may reach through its imports: a project's block library, not a crawl

_PROJECT_MARKERS = ("pyproject.toml", ".git", ".fxgen-root")
_SUFFIXES = (".yaml", ".yml", ".json")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")  # http:, file:, C: ...


def read_spec(path: str | Path, *, display_path: str | None = None) -> Document:
    """A spec file read from disk with the classes it imports (see the module docstring)."""
    return with_imports(read_document(path, display_path=display_path), Path(path))


def with_imports(doc: Document, file: Path | None = None) -> Document:
    """``doc`` with its ``imports:`` resolved (``file``: where it was read from; a spec that is
    not a file, such as a dict, cannot import). A malformed ``imports:`` is left as it is, for
    the schema check to report."""
    if not _wants_imports(doc.data):
        return doc
    if file is None:
        raise SpecError.at(doc.locate(("imports",)), "a spec that is not read from a file cannot import classes; "
                           "save it as a file, or copy the classes into its `classes:`")  # fmt: skip
    resolver = _Resolver(_project_root(file.resolve()))
    return resolver.resolve(doc, file.resolve(), ())


def imported_digest(doc: Document) -> str | None:
    """A digest of every file ``doc`` imports (None when it imports nothing): what a generated
    file depends on besides its own spec."""
    files = getattr(doc, "imported_files", None)
    if not files:
        return None
    digest = hashlib.sha256()
    for shown, raw in files:
        digest.update(f"{len(shown)}:{shown}:{len(raw)}:".encode())
        digest.update(raw)
    return digest.hexdigest()


@dataclass
class ImportedDocument(Document):
    """A spec with imported classes merged into its ``classes:``; each imported class is
    located in the file it came from."""

    own: Document | None = field(default=None, repr=False, compare=False)
    origins: dict[str, Document] = field(default_factory=dict, repr=False, compare=False)
    imported_files: list[tuple[str, bytes]] = field(default_factory=list, repr=False, compare=False)
    function_origins: dict[str, Document] = field(default_factory=dict, repr=False, compare=False)

    def _origin(self, path: JsonPath) -> Document:
        if len(path) >= 2 and path[0] == "classes" and isinstance(path[1], str) and path[1] in self.origins:
            return self.origins[path[1]]
        if len(path) >= 2 and path[0] == "functions" and isinstance(path[1], str) and path[1] in self.function_origins:
            return self.function_origins[path[1]]
        assert self.own is not None
        return self.own

    def locate(self, path: JsonPath) -> Location:
        return self._origin(path).locate(path)

    def key_location(self, path: JsonPath) -> Location:
        return self._origin(path).key_location(path)


def _wants_imports(data: Any) -> bool:
    return isinstance(data, dict) and "imports" in data


def _well_formed(imports: Any) -> bool:
    """The shape the schema asks for; anything else is the schema's to report, with its words."""
    return isinstance(imports, list) and all(
        isinstance(item, dict)
        and set(item) == {"from", "classes"}
        and isinstance(item["from"], str)
        and isinstance(item["classes"], list)
        and all(isinstance(name, str) for name in item["classes"])
        for item in imports
    )


def _project_root(file: Path) -> Path:
    for folder in file.parents:
        if any((folder / marker).exists() for marker in _PROJECT_MARKERS):
            return folder
    return file.parent


class _Resolver:
    """One spec's imports, followed through every file they reach."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.read: dict[Path, Document] = {}  # each file read once, however often it is imported

    def resolve(self, doc: Document, file: Path, stack: tuple[Path, ...]) -> Document:
        data = doc.data
        if not _wants_imports(data) or not _well_formed(data["imports"]):
            return doc
        own_classes = data.get("classes", {})
        own_functions = data.get("functions", {})
        if not isinstance(own_classes, dict) or not isinstance(own_functions, dict):
            return doc
        merged: dict[str, Any] = {}
        origins: dict[str, Document] = {}
        functions: dict[str, Any] = {}  # the functions the imported classes call
        function_origins: dict[str, Document] = {}
        function_where: dict[str, Location] = {}  # the import that brought each function, for a clash
        where: dict[str, Location] = {}  # the import that brought each class, for a clash
        files: list[tuple[str, bytes]] = []
        errors: list[Diagnostic] = []
        for i, item in enumerate(data["imports"]):
            at = doc.locate(("imports", i, "from"))
            try:
                source_file, shown = self._target(item["from"], file, doc.path)
            except ValueError as exc:
                errors.append(Diagnostic(at, str(exc)))
                continue
            if source_file in (*stack, file):
                chain = " -> ".join(str(p.relative_to(self.root)) for p in (*stack, file, source_file))
                errors.append(Diagnostic(at, f"imports form a cycle ({chain}); move the shared classes to a file "
                                             "that imports neither"))  # fmt: skip
                continue
            source = self._read(source_file, shown, at, (*stack, file))
            available = source.data.get("classes", {}) if isinstance(source.data, dict) else {}
            if not isinstance(available, dict):
                available = {}
            files.extend([(shown, source.raw), *getattr(source, "imported_files", [])])
            for j, name in enumerate(item["classes"]):
                if name not in available:
                    known = ", ".join(sorted(available)) or "none"
                    errors.append(Diagnostic(doc.locate(("imports", i, "classes", j)),
                                             f"{printable_path(shown)} declares no class {name!r} (it declares: {known})"))  # fmt: skip
                    continue
                for used in _used_classes(name, available):
                    clash = used in own_classes or (used in merged and merged[used] is not available[used])
                    if clash:
                        first = where.get(used) or doc.key_location(("classes", used))
                        errors.append(Diagnostic(doc.locate(("imports", i, "classes", j)),
                                                 f"class {used!r} (from {printable_path(shown)}) is already declared at {first}; "
                                                 "rename one of them"))  # fmt: skip
                        continue
                    if used not in merged:
                        merged[used] = available[used]
                        origins[used] = _origin_of(source, used)
                        where[used] = doc.locate(("imports", i, "classes", j))
                        at_import = doc.locate(("imports", i, "classes", j))
                        for name_called, body in _called_functions(available[used], source.data).items():
                            if name_called in functions and functions[name_called] is body:
                                continue
                            if name_called in own_functions or name_called in functions:
                                first = function_where.get(name_called) or doc.key_location(("functions", name_called))
                                errors.append(Diagnostic(at_import, f"function {name_called!r} (from {printable_path(shown)}, called by "
                                                         f"class {used!r}) is already declared at {first}; rename one "
                                                         "of them"))  # fmt: skip
                                continue
                            functions[name_called] = body
                            function_origins[name_called] = _function_origin_of(source, name_called)
                            function_where[name_called] = at_import
        if errors:
            raise SpecError(errors)
        if len({shown for shown, _ in files}) > MAX_IMPORTED_FILES:
            raise SpecError.at(doc.locate(("imports",)), f"imports reach more than {MAX_IMPORTED_FILES} files; "
                               "gather the classes into fewer files")  # fmt: skip
        combined = {key: value for key, value in data.items()}
        combined["classes"] = {**merged, **own_classes}
        if functions:
            combined["functions"] = {**functions, **own_functions}
        return ImportedDocument(combined, doc.path, doc.raw, doc.plain_json, own=doc, origins=origins,
                                imported_files=_unique(files), function_origins=function_origins)  # fmt: skip

    def _target(self, text: str, importer: Path, importer_shown: str) -> tuple[Path, str]:
        """The file an import names, and how diagnostics show it; ValueError says why not."""
        pure = PurePosixPath(text)
        if _SCHEME.match(text) or text.startswith(("/", "\\", "~")) or "\\" in text or pure.is_absolute():
            raise ValueError(f"an import is a relative path with '/' between folders, not {text!r}; "
                             "nothing is fetched from the network")  # fmt: skip
        if pure.suffix not in _SUFFIXES:
            raise ValueError(f"an import names a spec file ({', '.join(_SUFFIXES)}), not {text!r}")
        target = Path(os.path.realpath(importer.parent / Path(*pure.parts)))  # (Path.resolve raises on a symlink loop)
        if not target.is_relative_to(self.root):
            raise ValueError(f"{text!r} is outside the project ({printable_path(self.root)}); imports stay "
                             "inside it")
        if not target.is_file():
            raise ValueError(f"{text!r} does not exist (looked for {printable_path(target)}); check the path, "
                             "relative to this spec")
        shown = posixpath.normpath(posixpath.join(Path(importer_shown).parent.as_posix(), text))
        return target, shown

    def _read(self, file: Path, shown: str, at: Location, stack: tuple[Path, ...]) -> Document:
        if file not in self.read:
            if len(self.read) >= MAX_IMPORTED_FILES:
                raise SpecError.at(at, f"imports reach more than {MAX_IMPORTED_FILES} files; "
                                   "gather the classes into fewer files")  # fmt: skip
            self.read[file] = self.resolve(read_document(file, display_path=shown), file, stack)
        return self.read[file]


def _origin_of(source: Document, name: str) -> Document:
    """The document that locates class ``name`` of ``source`` (its own file, or the one it
    imported the class from)."""
    if isinstance(source, ImportedDocument):
        return source.origins.get(name) or source.own or source
    return source


def _function_origin_of(source: Document, name: str) -> Document:
    """The document that locates function ``name`` of ``source``."""
    if isinstance(source, ImportedDocument):
        return source.function_origins.get(name) or source.own or source
    return source


def _called_functions(body: Any, data: Any) -> dict[str, Any]:
    """The functions of a spec file (``data``'s ``functions:``) that a class ``body`` of it calls,
    directly or through another, in the order the file declares them. Read from the text of its
    expressions (a name followed by ``(``; docstrings aside): the check stage parses them, and
    refuses a function brought here that nothing calls."""
    available = data.get("functions") if isinstance(data, dict) else None
    if not isinstance(available, dict) or not available:
        return {}
    seen: set[str] = set()
    todo = [body]
    while todo:
        for found in _CALLED_NAME.findall(" ".join(_texts(todo.pop()))):
            if found in available and found not in seen:
                seen.add(found)
                todo.append(available[found])
    return {name: function for name, function in available.items() if name in seen}


def _texts(value: Any) -> list[str]:
    """Every string in ``value`` outside a ``doc``."""
    out: list[str] = []
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            todo.extend(v for k, v in item.items() if k != "doc")
        elif isinstance(item, list):
            todo.extend(item)
    return out


_CALLED_NAME = re.compile(r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_]*)\s*\(")  # a name called in an expression


def _used_classes(name: str, classes: dict[str, Any]) -> list[str]:
    """``name`` and every class of ``classes`` it builds, directly or through another, in the
    order the file declares them."""
    seen = {name}
    todo = [name]
    while todo:
        for found in class_names(classes.get(todo.pop())):
            if found in classes and found not in seen:
                seen.add(found)
                todo.append(found)
    return [known for known in classes if known in seen]


def class_names(value: Any) -> list[str]:
    """Every ``class:`` value in a class body, however deeply nested, and every class a module
    written as a call string names (``Conv(c, c, 3)``, ``torch.nn.Sequential(Conv(...))``, a
    layer table's row: the shorthands ``fxgen.spec`` desugars after reading)."""
    found: list[str] = []
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            if isinstance(item.get("class"), str):
                found.append(item["class"])
            calls = [item.get("module"), item.get("call")]
            if isinstance(item.get("modules"), dict):
                calls += item["modules"].values()
            if isinstance(item.get("layers"), dict):  # a layer table's rows, [FROM, MODULE] (fxgen.spec.layers)
                calls += [row[-1] for rows in item["layers"].values() if isinstance(rows, list)
                          for row in rows if isinstance(row, list) and row]  # fmt: skip
            found += [name.group(1) for call in calls if isinstance(call, str) for name in _CALLED.finditer(call)]
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return found


_CALLED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\(")  # a name called in a call string


def _unique(files: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    seen: dict[str, bytes] = {}
    for shown, raw in files:
        seen.setdefault(shown, raw)
    return sorted(seen.items())
