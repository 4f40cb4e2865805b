"""Render stage, part 2: what a class builds — ``__init__``'s signature and body, and the types
the class body declares.

``__init__`` creates every declared module, parameter and buffer at its path, in the order
``fxgen.spec.tree.construction_order`` fixes (the order ``fxgen.load`` draws from the random
generator in). In format 2 a declaration may use the class's constructor arguments: ``{arg:
cout * 4}`` is written as the same expression (``fxgen.spec.expr.render``), a module value
``{module: D}`` as D's constructor call, a repeat ``{repeat: N, module: D}`` as the
comprehension a person would write (``*[Block(c) for _ in range(n)]``), and so a ``for`` over
module declarations (``[Conv(c, c2) for c in (ch0, ch1, ch2)]``).

The class body declares the type of what ``__init__`` cannot show a type checker: buffers
(``register_buffer``), and everything set inside a plain container, which becomes a small
typed class of its own (``_TransformerBlockAttn``) instead of a bare ``nn.Module()``: so that
``self.attn.q_proj(x)`` type-checks as a call of an ``nn.Linear``, not of ``Tensor | Module``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fxgen.codegen.render import (
    Imports,
    LiteralWriter,
    UnsafeName,
    annotation,
    attribute_name,
    call_args,
    checked,
    child,
    expression,
    literal,
    packed_key,
    presence_flags,
    qualified,
    string,
)
from fxgen.spec import expr
from fxgen.spec.file_names import PACKED_HELPER, PACKED_TABLE
from fxgen.spec.init import init_call
from fxgen.spec.model import (
    NO_DEFAULT,
    BufferSpec,
    ModuleSpec,
    ParameterSpec,
    Spec,
    walk_loops,
    walk_nodes,
)
from fxgen.spec.resolve import has_arguments, is_module_loop, loop_names
from fxgen.spec.tags import lookup
from fxgen.spec.tree import Container, ModelTree

__all__ = ["ClassBuild", "body_annotations", "container_classes", "init_def", "init_lines", "loop_variable", "reached_items", "static_type", "variant_methods"]


@dataclass
class ClassBuild:
    """What rendering one class's ``__init__`` needs: the class, its tree, the file's imports,
    and the typed container classes (path -> class name) the file defines for it."""

    spec: Spec
    tree: ModelTree
    imports: Imports
    module_of: Callable[[str], str]
    containers: dict[str, str] = field(default_factory=dict)
    loop: str = "_"  # a repeat's loop variable: no argument of the class is named so
    owner: str | None = None  # a block's name (None for the spec's own class): keys its packed tensors
    reached: set[str] = field(default_factory=set)  # see reached_items
    fields: list[str] = field(default_factory=list)  # arguments and values forward reads as self.NAME

    def packed_key(self, path: str) -> str | tuple[str, str]:
        return path if self.owner is None else (self.owner, path)


# -- the signature --------------------------------------------------------------------------
def init_def(build: ClassBuild) -> str:
    """``def __init__(self, cin: int, stride: int = 1) -> None:`` (one line, unformatted)."""
    params = []
    for name, arg in build.spec.args.items():
        text = f"{checked(name)}: {annotation(arg.type, build.imports, build.module_of)}"
        if arg.default is not NO_DEFAULT:
            text += " = " + literal(arg.default, build.imports)
        params.append(text)
    return f"def __init__(self{''.join(', ' + p for p in params)}) -> None:"


def variant_methods(build: ClassBuild) -> list[list[str]]:
    """A classmethod per variant of the spec (the top class only): ``WidthNet.s()`` builds size
    ``s``, its arguments written out as a person would call the class. Each method is its
    decorator, its ``def`` and its statement (unindented; names are validated identifiers, values
    literals)."""
    out = []
    for name, values in build.spec.variants.items():
        call = ", ".join(f"{checked(arg)}={literal(value, build.imports)}" for arg, value in values.items())
        out.append(["@classmethod", f"def {checked(name)}(cls) -> {string(build.spec.name)}:", f"return cls({call})"])
    return out


def loop_variable(spec: Spec) -> str:
    """``_``, unless the class has an argument or value of that name (a repeat's module may use it)."""
    name, i = "_", 0
    while name in spec.args or name in spec.values:
        i += 1
        name = f"_{i}"
    return name


# -- the class body: typed containers ---------------------------------------------------------
def container_classes(build: ClassBuild, owner: str) -> list[tuple[str, tuple[str, list[str]]]]:
    """A typed class for each plain container of ``owner``'s tree (``(name, (docstring,
    body))``, innermost first, so each is defined before the classes that name it). Containers
    holding the same names of the same types share one class. Fills ``build.containers``.

    The annotations are for type checkers only (``if typing.TYPE_CHECKING:``): TorchScript
    reads a module's class annotations as its attributes' types, and refuses module types there.
    """
    out: list[tuple[str, tuple[str, list[str]]]] = []
    by_body: dict[tuple[str, ...], str] = {}

    def visit(node: Container, path: str) -> None:
        for key, item in node.children.items():
            if isinstance(item, Container):
                visit(item, f"{path}.{key}" if path else key)
        if node is build.tree.root or node.kind != "attr":
            return
        fields = tuple(f"{key}: {kind}" for key, kind in _fields(build, node, path))
        name = by_body.get(fields)
        if name is None:
            name = by_body[fields] = _container_name(build.imports, owner, path)
            doc = f'    """A container of {owner}: its attributes are set by {owner}.__init__."""'
            out.append((name, (doc, _type_checking(build.imports, list(fields)))))
        build.containers[path] = name

    visit(build.tree.root, "")
    return out


def body_annotations(build: ClassBuild) -> list[str]:
    """The class's own declarations of what ``__init__`` shows no type for: its buffers (set by
    ``register_buffer``), and, for type checkers only, the lists and dicts ``forward`` reaches
    into the items of (``layers[0].fc``: typed ``Any``, as a checker knows an item only as an
    ``nn.Module``, whose attributes are ``Tensor | Module``)."""
    plain, checked_only = [], []
    for key, kind in _fields(build, build.tree.root, ""):
        if kind == "torch.Tensor":
            plain.append(f"    {key}: {kind}")
        elif kind == "typing.Any":
            checked_only.append(f"{key}: {kind}")
    return plain + _type_checking(build.imports, checked_only)


def _type_checking(imports: Imports, fields: list[str]) -> list[str]:
    if not fields:
        return []
    imports.stdlib.add("typing")
    return ["    if typing.TYPE_CHECKING:", *("        " + field for field in fields)]


def _fields(build: ClassBuild, node: Container, path: str) -> list[tuple[str, str]]:
    """``(attribute, its type)`` for the children of ``node`` that are set by name."""
    out = []
    for key, item in node.children.items():
        if attribute_name(key):
            out.append((key, static_type(build, item, f"{path}.{key}" if path else key)))
    return out


def static_type(build: ClassBuild, item: Any, path: str) -> str:
    """The type a checker should see for what ``path`` holds."""
    if isinstance(item, ModuleSpec):
        return qualified(item.cls, build.imports, build.module_of)
    if isinstance(item, ParameterSpec):
        return "nn.Parameter"
    if isinstance(item, BufferSpec):
        build.imports.torch = True
        return "torch.Tensor"
    if path in build.reached:
        build.imports.stdlib.add("typing")
        return "typing.Any"
    if item.kind == "list":
        return "nn.ModuleList"
    if item.kind == "dict":
        return "nn.ModuleDict"
    return build.containers[path]


def reached_items(spec: Spec, tree: ModelTree) -> set[str]:
    """The lists and dicts whose items ``forward`` goes on from (``layers.0.fc``: ``layers``)."""
    out: set[str] = set()
    looped = {id(node) for loop in walk_loops(spec.nodes) for node in walk_nodes(loop.nodes)}
    for node in walk_nodes(spec.nodes):
        if node.op in ("call_module", "get_attr") and node.target is not None and id(node) not in looped:
            steps = tree.steps(node.target)
            for i, (_, kind) in enumerate(steps[:-1]):
                if kind in ("list", "dict"):
                    out.add(".".join(part for part, _ in steps[:i]))
    return out


def _container_name(imports: Imports, owner: str, path: str) -> str:
    parts = [_NOT_WORD.sub("_", part) for part in path.split(".")]
    base = "_" + owner + "".join(part[:1].upper() + part[1:] for part in parts)
    name, i = base, 1
    while name in imports.taken:
        i += 1
        name = f"{base}{i}"
    imports.taken.add(name)
    return checked(name)


_NOT_WORD = re.compile(r"[^A-Za-z0-9_]+")


# -- the body -------------------------------------------------------------------------------
def init_lines(build: ClassBuild) -> list[tuple[str, int]]:
    """The body of ``__init__`` after ``super().__init__()``: the class's named values, then
    what it declares; each statement with its depth (a module declared on a condition is set
    inside ``if COND:``)."""
    lines: list[str | tuple[str, list[str]]] = list(value_lines(build))
    presence = presence_flags(build.spec)  # (None, typed as the module that is declared after in its place)
    lines += [f"self.{checked(name)}: {qualified(build.spec.modules[name].cls, build.imports, build.module_of)} | None = None"
              if name in presence else f"self.{checked(name)} = {checked(name)}" for name in build.fields]  # fmt: skip
    _emit_children(build, "self", "", build.tree.root, lines)
    out: list[tuple[str, int]] = []
    for line in lines:
        if isinstance(line, tuple):
            out += [(line[0], 0), *((inner, 1) for inner in line[1])]
        else:
            out.append((line, 0))
    return out


def value_lines(build: ClassBuild) -> list[str]:
    """``hidden = max(8, int(c * width + 4) // 8 * 8)``: each named value the class uses, in the
    order written (each after the values it uses), before anything that uses it."""
    return [f"{checked(name)} = {_expression(build, text)}" for name, text in build.spec.values.items()]


def _emit_children(build: ClassBuild, expr_: str, prefix: str, node: Container, lines: list[Any]) -> None:
    """``prefix``: the path of ``node`` followed by a dot (``""`` at the class). A module
    declared on a condition comes as one item, ``(header, its statements)``."""
    for key, item in node.children.items():
        named = attribute_name(key)  # else reached as getattr(expr, "key") and set by add_module & co
        target = f"{expr_}.{key}" if named else child(expr_, key, "attr")
        if isinstance(item, ModuleSpec):
            ctor = constructor(build, item)
            made = [f"{target} = {ctor}" if named else f"{expr_}.add_module({string(key)}, {ctor})",
                    *module_init_lines(build, target, item)]  # fmt: skip
            if item.when is None:
                lines.extend(made)
            else:
                condition = item.when if isinstance(item.when, str) else repr(item.when)
                lines.append((f"if {_expression(build, condition)}:", made))
        elif isinstance(item, ParameterSpec):
            value = _tensor(build, item, param=True)
            if named:
                lines.append(f"{target} = {value}")
            else:
                lines.append(f"{expr_}.register_parameter({string(key)}, {value})")
            lines.extend(_init_call(build, target, item))
        elif isinstance(item, BufferSpec):
            extra = "" if item.persistent else ", persistent=False"
            value = _tensor(build, item, param=False, path=prefix + key)
            lines.append(f"{expr_}.register_buffer({string(key)}, {value}{extra})")
            lines.extend(_init_call(build, target, item))
        else:
            creation = _container_expr(build, item, prefix + key)
            lines.append(f"{target} = {creation}" if named else f"{expr_}.add_module({string(key)}, {creation})")
            _emit_nested(build, target, prefix + key + ".", item, lines)


def _emit_nested(build: ClassBuild, expr_: str, prefix: str, node: Container, lines: list[Any]) -> None:
    """Statements for a container's contents that its creation expression did not hold."""
    if node.kind == "attr":
        _emit_children(build, expr_, prefix, node, lines)
        return
    for key, item in node.children.items():
        if isinstance(item, Container):
            _emit_nested(build, child(expr_, key, node.kind), prefix + key + ".", item, lines)


def _container_expr(build: ClassBuild, node: Container, path: str) -> str:
    kind = node.kind

    def item_expr(key: str, item: Any) -> str:
        if isinstance(item, ModuleSpec):
            return constructor(build, item)
        return _container_expr(build, item, f"{path}.{key}")

    if kind == "list":
        return "nn.ModuleList([" + ", ".join(item_expr(k, i) for k, i in node.children.items()) + "])"
    if kind == "dict":
        body = ", ".join(f"{string(k)}: {item_expr(k, i)}" for k, i in node.children.items())
        return "nn.ModuleDict({" + body + "})"
    return f"{build.containers[path]}()" if path in build.containers else "nn.Module()"


def constructor(build: ClassBuild, item: ModuleSpec) -> str:
    """``Class(args...)``; a block of the spec is named as it is (a class of this file)."""
    cls = qualified(item.cls, build.imports, build.module_of)
    if has_arguments(item.args) or has_arguments(item.kwargs):
        return f"{cls}({_declared_args(build, item.args, item.kwargs)})"
    return f"{cls}({call_args(item.args, item.kwargs, build.imports)})"


# -- format 2's declaration values ----------------------------------------------------------
def _declared_args(build: ClassBuild, args: list[Any], kwargs: dict[str, Any]) -> str:
    parts = _items(build, args)
    parts += [f"{checked(k)}={declared(build, v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _items(build: ClassBuild, items: list[Any]) -> list[str]:
    """Items of an argument list or a list literal; a repeat or a ``for`` is starred (``*[...]``)."""
    return [("*" + _repeat(build, item)) if _is_repeat(item) else declared(build, item) for item in items]


def _is_repeat(value: Any) -> bool:
    return isinstance(value, dict) and ("repeat" in value or is_module_loop(value))


def _repeat(build: ClassBuild, value: dict[str, Any]) -> str:
    """A repeat, ``[Block(c) for _ in range(n)]``, or a ``for`` over module declarations as the
    comprehension a person writes: ``[Conv(c, 16) for c in (ch0, ch1)]``, nested ``for`` items as
    its clauses, the outer first (``for t, c, n, s in (...) for i in range(n)``)."""
    if is_module_loop(value):
        clauses = []
        while is_module_loop(value):
            clauses.append(_loop_clause(build, value))
            value = value["module"]
        return f"[{constructor(build, ModuleSpec.from_data(value))} {' '.join(clauses)}]"
    made = constructor(build, ModuleSpec.from_data(value["module"]))
    return f"[{made} for {build.loop} in range({declared(build, value['repeat'])})]"


def _loop_clause(build: ClassBuild, value: dict[str, Any]) -> str:
    """``for c in (ch0, ch1, ch2)``, ``for t, c in ((1, 16), (6, 24))``, ``for i in range(n)``
    (``for (c,) in ((ch0,), (ch1,))`` for a list of one name: each row is a list)."""
    names = [checked(name) for name in loop_names(value)]
    target = f"({names[0]},)" if isinstance(value["for"], list) and len(names) == 1 else ", ".join(names)
    written = value["in"]
    if not isinstance(written, list):
        return f"for {target} in range({declared(build, written)})"
    rows = [declared(build, {"tuple": row}) if isinstance(row, list) else declared(build, row) for row in written]
    return f"for {target} in ({', '.join(rows)}{',' * (len(rows) == 1)})"


def declared(build: ClassBuild, value: Any) -> str:
    """Source text of a declaration value: ``literal``, plus format 2's arguments, module
    values and repeats, inside any list, tuple, slice or dict."""
    if isinstance(value, list):
        if len(value) == 1 and _is_repeat(value[0]):
            return _repeat(build, value[0])  # [Block() for _ in range(n)], not [*[...]]
        return "[" + ", ".join(_items(build, value)) + "]"
    if not isinstance(value, dict) or not has_arguments(value):
        return literal(value, build.imports)
    ((tag, body),) = value.items()
    if tag == "arg":
        return _expression(build, body)
    if tag == "module":
        return constructor(build, ModuleSpec.from_data(body))
    known = lookup(tag)
    if known is not None and known.holds == "list":  # a tuple's or slice's items, a repeat starred
        return known.render(body, LiteralWriter(build.imports, lambda item, _: _items(build, [item])[0]))
    if known is not None and known.holds == "mapping":
        return known.render(body, LiteralWriter(build.imports, lambda item, _: declared(build, item)))
    raise UnsafeName(f"value tag {tag!r} cannot hold arguments")


def _expression(build: ClassBuild, text: str) -> str:
    """An expression as Python source (``ceil`` as ``math.ceil``, the file importing ``math``)."""
    return expression(expr.parse(text), build.imports)


# -- tensors --------------------------------------------------------------------------------
def _shape(build: ClassBuild, shape: list[Any], *, tuple_: bool = False) -> str:
    """Sizes as ``torch.empty`` takes them (``2, 3``), or as one tuple (``(2, 3)``, ``(8,)``)."""
    if not shape:
        return "()"
    text = ", ".join(str(d) if type(d) is int else declared(build, d) for d in shape)
    if not tuple_:
        return text
    return f"({text},)" if len(shape) == 1 else f"({text})"


def _tensor(build: ClassBuild, item: ParameterSpec | BufferSpec, *, param: bool, path: str = "") -> str:
    imports = build.imports
    imports.torch = True
    dtype = "" if item.dtype == "float32" else f", dtype=torch.{checked(item.dtype)}"
    if isinstance(item, BufferSpec) and item.value is not None:
        value = f"torch.tensor({literal(item.value, imports)}, dtype=torch.{checked(item.dtype)})"
    elif isinstance(item, BufferSpec) and item.data is not None:
        assert item.shape is not None
        key = build.packed_key(path)
        imports.packed[key] = item.data
        shape = _shape(build, item.shape, tuple_=True)
        value = f"{PACKED_HELPER}({PACKED_TABLE}[{packed_key(key)}], torch.{checked(item.dtype)}, {shape})"
    else:
        assert item.shape is not None
        name, kwargs = init_call(item.init)
        if name in ("zeros", "ones"):
            value = f"torch.{name}({_shape(build, item.shape)}{dtype})"
        elif name == "constant":
            fill = kwargs["val"]
            if not dtype and not (isinstance(fill, float) or _tag(fill) == "float"):
                dtype = ", dtype=torch.float32"  # torch.full infers int64/bool from an int/bool fill
            value = f"torch.full({_shape(build, item.shape, tuple_=True)}, {declared(build, fill)}{dtype})"
        else:
            value = f"torch.empty({_shape(build, item.shape)}{dtype})"
    if param:
        grad = "" if item.requires_grad else ", requires_grad=False"  # type: ignore[union-attr]
        return f"nn.Parameter({value}{grad})"
    return value


def _tag(value: Any) -> str | None:
    return next(iter(value)) if isinstance(value, dict) else None


def module_init_lines(build: ClassBuild, target: str, item: ModuleSpec) -> list[str]:
    """``nn.init.normal_(self.fc.get_parameter("weight"), std=0.02)``: a declared module's
    ``init``, right after its constructor call, in the order written. The tensor is asked for by
    the kind validation found it to be, so a type checker knows it is a tensor (``self.conv.bias``
    is typed ``Tensor | None``)."""
    lines = []
    for path, init in item.init.items():
        getter = "get_buffer" if item.kinds.get(path) == "buffer" else "get_parameter"
        name, kwargs = init_call(init)
        args = "".join(f", {checked(k)}={declared(build, v)}" for k, v in kwargs.items())
        lines.append(f"nn.init.{checked(name)}_({target}.{getter}({string(path)}){args})")
    return lines


def _init_call(build: ClassBuild, target: str, item: ParameterSpec | BufferSpec) -> list[str]:
    if isinstance(item, BufferSpec) and item.value is not None:
        return []
    name, kwargs = init_call(item.init)
    if name in ("zeros", "ones", "constant"):
        return []
    args = "".join(f", {checked(k)}={declared(build, v)}" for k, v in kwargs.items())
    return [f"nn.init.{checked(name)}_({target}{args})"]
