"""Schema stage: check a document against ``schemas/fxgen.schema.json`` and locate every error.

The JSON Schema is the one definition of the format's shape; this module only loads it and
turns jsonschema's errors into ``PATH:LINE:COL`` diagnostics with messages a person can act on.

Speed: a compiled validator (``jsonschema_rs``, when installed) is asked first; it checks a
10,000-node spec in about 15 ms where jsonschema takes seconds. Only a document it rejects goes
through jsonschema, so every diagnostic is exactly jsonschema's. The fast path must never accept
what jsonschema refuses, so:

* it is asked only about plain JSON data (exact ``dict``/``list``/``str``/``int``/``float``/
  ``bool``/``None``, what the reader builds): it takes a tuple for an array, jsonschema does not;
* it gets a copy of the schema whose patterns mean what they mean to jsonschema (``re.search``):
  Python's ``$`` also matches before a trailing newline, ECMA's and Rust's do not, so each ``$``
  anchor becomes ``(?=\n?$)``. The newline cases stay jsonschema's: the semantic checks
  refuse them with their own messages (fullmatch), as they always have;
* anything it cannot decide (an exception; NaN or an infinity, which it cannot represent) goes
  to jsonschema, and so does data nested deeper than it can safely recurse.

tests/test_schema_fast.py checks that the two engines agree.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from fxgen._errors import Diagnostic
from fxgen.read.reader import Document
from fxgen.read.schema import SCHEMA_PATH, load_schema
from fxgen.spec.values import DECLARATION_TAGS, TAGS

if TYPE_CHECKING:  # jsonschema is imported only to explain a document the fast path rejects
    import jsonschema
    from jsonschema.exceptions import ValidationError

__all__ = ["SCHEMA_PATH", "check_schema", "load_schema"]

_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    import jsonschema

    schema = load_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@functools.cache
def _fast_validator() -> Any:
    """The compiled validator for the schema, or None (not installed, or not usable)."""
    try:
        import jsonschema_rs
    except ImportError:
        return None
    schema = load_schema()
    if not (isinstance(schema, dict) and schema.get("$schema") == _DRAFT_2020_12):
        return None  # both engines must apply the same draft: the class below is 2020-12
    try:
        return jsonschema_rs.Draft202012Validator(
            _rust_schema(schema),
            validate_formats=False,  # jsonschema's default: `format` is an annotation
            pattern_options=jsonschema_rs.FancyRegexOptions(),  # lookarounds, for `(?=\n?$)`
        )
    except Exception:  # a pattern _rust_pattern refuses, an incompatible release: slow is correct
        return None


def _rust_schema(schema: Any) -> Any:
    """A copy of ``schema`` whose ``pattern``/``patternProperties`` regexes use Python's ``$``."""
    if isinstance(schema, list):
        return [_rust_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    copy: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "pattern" and isinstance(value, str):
            copy[key] = _rust_pattern(value)
        elif key == "patternProperties" and isinstance(value, dict):
            copy[key] = {_rust_pattern(k): _rust_schema(v) for k, v in value.items()}
        elif key in _DATA_KEYWORDS:
            copy[key] = value  # instances, not schemas
        else:
            copy[key] = _rust_schema(value)
    return copy


def _rust_pattern(pattern: str) -> str:
    r"""``pattern`` for an ECMA/Rust engine, matching exactly the strings ``re.search`` matches.

    Without MULTILINE, Python's ``$`` matches at the end and before a final newline; in ECMA 262
    and Rust ``$`` is the end only, so each ``$`` anchor becomes ``(?=\n?$)``. Only constructs
    both engines read alike are translated (literals, punctuation escapes, ASCII classes,
    groups, lookaheads, quantifiers); anything else (``.``, ``\d``/``\w``/``\s``/``\b`` and other
    class escapes, which are Unicode-aware in Python, inline flags, lookbehinds) raises
    ValueError, and then the fast path is not used at all.
    """
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escaped = pattern[i + 1 : i + 2]
            punctuation = escaped.isascii() and not escaped.isalnum()
            if not escaped or not (punctuation or escaped in _SAME_ESCAPES):
                raise ValueError(f"pattern {pattern!r}: escape \\{escaped} may differ between engines")
            out.append(char + escaped)
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            out.append(char)
            i += 1
            if pattern[i : i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i : i + 1] == "]":  # a leading `]` is literal in Python, not in ECMA
                raise ValueError(f"pattern {pattern!r}: a leading ']' in a class")
            continue
        elif char == "$":
            char = "(?=\\n?$)"
        elif char == "{":
            raise ValueError(f"pattern {pattern!r}: '{{' (Python reads `a{{,3}}` as a quantifier)")
        elif char == ".":
            raise ValueError(f"pattern {pattern!r}: '.' differs between engines (\\r, \\u2028)")
        elif char == "(" and pattern[i + 1 : i + 2] == "?" and pattern[i + 2 : i + 3] not in ":=!":
            raise ValueError(f"pattern {pattern!r}: inline flags, named groups or lookbehinds")
        out.append(char)
        i += 1
    if in_class:
        raise ValueError(f"pattern {pattern!r}: unterminated class")
    return "".join(out)


_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


_SAME_ESCAPES = frozenset("nt")  # \n and \t; every other letter or digit escape is refused


_SCALARS = frozenset({str, int, float, bool, type(None)})


# jsonschema_rs recurses on the native stack: nesting 100,000 deep kills the process (SIGSEGV),
# 3,000 does in a thread with a 256 KiB stack. The reader refuses more than 64 levels; deeper
# data from elsewhere goes to jsonschema, as it always did.
_FAST_MAX_DEPTH = 100


def _plain_json(data: Any) -> bool:
    """Exact JSON types only (what the reader builds), at most ``_FAST_MAX_DEPTH`` deep."""
    if type(data) in _SCALARS:
        return True
    level = [data]
    for _ in range(_FAST_MAX_DEPTH):
        below = []
        for container in level:
            if type(container) is dict:
                for key in container:
                    if type(key) is not str:
                        return False
                items: Any = container.values()
            elif type(container) is list:
                items = container
            else:
                return False
            for item in items:
                kind = type(item)
                if kind is dict or kind is list:
                    below.append(item)
                elif kind not in _SCALARS:
                    return False
        if not below:
            return True
        level = below
    return False


def _fast_accepts(data: Any, *, plain: bool = False) -> bool:
    """True only when the compiled validator says ``data`` is valid (never wrongly: see above);
    ``plain`` when ``data`` is known to pass ``_plain_json`` (the reader built it)."""
    fast = _fast_validator()
    if fast is None or not (plain or _plain_json(data)):
        return False
    try:
        return fast.is_valid(data) is True
    except Exception:  # a value it cannot convert (huge numbers, deep nesting): ask jsonschema
        return False


def check_schema(doc: Document) -> list[Diagnostic]:
    """Every schema violation in ``doc``, located; empty when the shape is right. A tag mapping
    that a comma split (``{arg: int(a, 2)}`` in flow style reads as two keys) is one error, with
    the hint to quote it."""
    if _fast_accepts(doc.data, plain=doc.plain_json):
        return []
    return _diagnostics(doc, _validator().iter_errors(doc.data))


def _diagnostics(doc: Document, errors: Iterable[ValidationError]) -> list[Diagnostic]:
    """The diagnostics of jsonschema's ``errors`` in ``doc`` (a split tag mapping's once)."""
    out: list[Diagnostic] = []
    split: set[tuple[Any, ...]] = set()
    for error in errors:
        at = _split_at(doc.data, tuple(error.absolute_path))
        if at is None:
            out.append(_diagnostic(doc, error))
        elif at not in split:
            split.add(at)
            out.append(Diagnostic(doc.locate(at), f"{_describe(at)}{_split_message(_at(doc.data, at))}"))
    return out


def _split_at(data: Any, path: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The path of the mapping a comma split, at or above ``path`` (None: there is none)."""
    for size in range(len(path), -1, -1):
        value = _at(data, path[:size])
        if isinstance(value, dict) and len(value) >= 2 and next(iter(value)) in TAGS:
            first = next(iter(value.values()))
            if isinstance(first, str) and _opens(first) > 0:
                return path[:size]
        if isinstance(value, dict) and _split_entry(value) is not None:
            return path[:size]
    return None


def _opens(text: str) -> int:
    """How many more brackets ``text`` opens than it closes."""
    return text.count("(") - text.count(")") + text.count("[") - text.count("]")


def _split_entry(value: dict[Any, Any]) -> tuple[Any, list[Any]] | None:
    """The entry of ``value`` whose text a comma cut (``last: f(a`` then the key ``b)``), and the
    keys its pieces became; None when there is none."""
    items = list(value.items())
    for i, (key, text) in enumerate(items):
        if not isinstance(text, str) or _opens(text) <= 0:
            continue
        depth, pieces = _opens(text), []
        for piece, rest in items[i + 1 :]:
            if depth <= 0 or not isinstance(piece, str) or (_opens(piece) >= 0 and rest is None):
                break
            pieces.append(piece)
            depth += _opens(piece) + (_opens(rest) if isinstance(rest, str) else 0)
        if pieces and depth <= 0:
            return key, pieces
    return None


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _split_message(value: dict[str, Any]) -> str:
    first = next(iter(value.values()))
    tagged = next(iter(value)) in TAGS and isinstance(first, str) and _opens(first) > 0
    entry = None if tagged else _split_entry(value)
    if entry is not None:
        key, pieces = entry
        keys = [key, *pieces]
        written = ", ".join(f"{k}: {value[k]}" if value[k] is not None else str(k) for k in pieces)
        whole = f"{value[key]}, {written}"
        return (f"a comma inside {{...}} separates its entries, so `{key}: {whole}` reads as {len(keys)} keys "
                f"({', '.join(map(repr, keys))}); quote a value that holds a comma: {key}: \"{whole}\"")
    tag, text = next(iter(value.items()))
    rest = ", ".join(str(key) if item is None else f"{key}: {item}" for key, item in list(value.items())[1:])
    return (f"a comma inside {{...}} separates its entries, so {{{tag}: {text}, {rest}}} reads as {len(value)} keys "
            f"({', '.join(map(repr, value))}); quote a value that holds a comma: {{{tag}: \"{text}, {rest}\"}}")


def _diagnostic(doc: Document, error: ValidationError) -> Diagnostic:
    if error.validator in ("anyOf", "oneOf") and error.context:
        non_finite = _non_finite(error)
        if non_finite:
            path = tuple(error.absolute_path)
            return Diagnostic(doc.locate(path), f"{_describe(path)}{non_finite}")
        if _is_loop_rows(error):
            path = tuple(error.absolute_path)
            return Diagnostic(doc.locate(path), f"{_describe(path)}`in:` of a `for` over module declarations is a list "
                              "of rows (for one name a value each, for a list of names a list of one value per name) "
                              f"or a count (an integer or an expression), not {_kind(error.instance)} "
                              f"{_short(error.instance)}")  # fmt: skip
        error = _deepest(error)
    path = tuple(error.absolute_path)
    where = _describe(path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        if extra:
            known = ", ".join(sorted(allowed)) or "none"
            return Diagnostic(
                doc.key_location((*path, extra[0])),
                f"{where}unknown key {extra[0]!r} (allowed here: {known}); remove or rename it",
            )
    if "propertyNames" in error.relative_schema_path and isinstance(error.instance, str):
        return Diagnostic(doc.key_location((*path, error.instance)), f"{where}{_key_message(error)}")
    return Diagnostic(doc.locate(path), f"{where}{_message(error, path)}")


_NON_FINITE = {"nan": "NaN", "inf": "an infinity", "-inf": "an infinity"}


def _non_finite(error: ValidationError) -> str | None:
    """A NaN or an infinity (``{float: nan}``, what YAML's ``.nan`` reads as) where only a number
    fits: said so, where the deepest alternative is the ``{arg: ...}`` mapping it is not."""
    value = error.instance
    if not (isinstance(value, dict) and list(value) == ["float"] and value["float"] in _NON_FINITE):
        return None
    numbers = [e.schema for e in error.context or [] if e.validator == "type" and isinstance(e.schema, dict)
               and e.validator_value in ("number", "integer")]  # fmt: skip
    if not numbers:
        return None
    wanted = "an integer" if numbers[0]["type"] == "integer" else "a finite number"
    if "minimum" in numbers[0]:
        wanted += f" of at least {numbers[0]['minimum']}"
    return f"{{float: {value['float']}}} ({_NON_FINITE[value['float']]}) is not allowed here; write {wanted}"


def _is_loop_rows(error: ValidationError) -> bool:
    """Is ``error`` a ``for``'s ``in:`` that is none of its forms, and of no kind one of them
    takes (a mapping other than ``{arg: ...}``, a float, a bool)? Each alternative's own
    complaint would name one form only."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    if schema.get("description") != load_schema()["$defs"]["loop_rows"]["description"]:
        return False
    value = error.instance
    return not isinstance(value, list | str) and not (isinstance(value, int) and not isinstance(value, bool)) and \
        not (isinstance(value, dict) and set(value) == {"arg"})  # fmt: skip


def _deepest(error: ValidationError) -> ValidationError:
    """For anyOf/oneOf, the alternative that got furthest says what is actually wrong."""
    from jsonschema.exceptions import best_match

    best = best_match(_fitting(error.context or []))
    while best.validator in ("anyOf", "oneOf") and best.context:
        best = best_match(_fitting(best.context))
    return best


def _fitting(errors: list[ValidationError]) -> list[ValidationError]:
    """The alternatives written for the value's kind, when there are some: ``-1`` for "an
    integer ≥ 0, or an {arg: ...} mapping" is a number below the minimum, not a missing mapping."""
    return [e for e in errors if e.validator != "type"] or errors


_KINDS = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer",
          "number": "a number", "boolean": "true or false", "null": "null"}  # fmt: skip


_VALUE_TAGS = ", ".join(tag for tag in TAGS if tag not in DECLARATION_TAGS)


def _message(error: ValidationError, path: tuple[Any, ...]) -> str:
    schema = error.schema if isinstance(error.schema, dict) else {}
    description = str(schema.get("description", ""))
    hint = _hint(description)
    instance = error.instance
    if error.validator == "pattern":
        if instance == "%" and (path[:1] == ("nodes",) or (path[:1] == ("classes",) and "nodes" in path)):
            return ("'%' (the previous value) is for the compact node form only: drop the node's `op` (its "
                    "target implies it), or write the value as '%name'; '%%' is the literal string '%'")  # fmt: skip
        if isinstance(instance, str) and instance.startswith("%"):
            return (f"{instance!r} is not a node reference ('%name'); write {'%' + instance!r} for the "
                    f"literal string {instance!r}")  # fmt: skip
        return f"{instance!r} is not valid here" + (f": {description}" if description else "")
    if error.validator == "enum":
        options = ", ".join(map(str, error.validator_value))
        return f"{_short(instance)} is not one of: {options}" + (hint if "write" in description else "")
    if error.validator == "const":
        return f"{_short(instance)} must be {error.validator_value!r}"
    if error.validator == "type":
        types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        expected = " or ".join(_KINDS.get(str(t), str(t)) for t in types)
        if not path:
            return f"a spec is a mapping with `fxgen: 1`, `name` and `nodes`, not {_kind(instance)}"
        return f"expected {expected}, not {_kind(instance)} {_short(instance)}"
    if error.validator == "required":
        missing = [k for k in error.validator_value if isinstance(instance, dict) and k not in instance]
        name = missing[0] if missing else str(error.message)
        if len(path) == 2 and path[0] == "nodes" and isinstance(instance, dict):
            return f"missing key {name!r}: {instance.get('op')} nodes need " + ", ".join(
                f"`{k}`" for k in error.validator_value
            )
        if name == "nodes" and (not path or (len(path) == 2 and path[0] == "classes")):
            return ("missing key 'nodes': a class, and the top level, has `nodes:`, `modules:` that run in the "
                    "order declared, each on the previous one's output, or a layer table (`layers:`)")  # fmt: skip
        required = ", ".join(f"`{k}`" for k in error.validator_value)
        return f"missing key {name!r} (required here: {required})" + (hint if path else "")
    if error.validator in ("minimum", "maximum"):
        bound = "at least" if error.validator == "minimum" else "at most"
        return f"{_short(instance)} is out of range: {bound} {error.validator_value} allowed{hint}"
    if error.validator in ("minItems", "maxItems") and isinstance(instance, list):
        bound = "at least" if error.validator == "minItems" else "at most"
        return f"has {len(instance)} item{'s' * (len(instance) != 1)}, {bound} {error.validator_value} allowed{hint}"
    if error.validator in ("minProperties", "maxProperties") and isinstance(instance, dict):
        if schema.get("minProperties") == schema.get("maxProperties") == 1:
            keys = ", ".join(map(repr, instance)) or "none"
            return f"expected a mapping with exactly one key, got {len(instance)} ({keys}){hint}"
        bound = "at least" if error.validator == "minProperties" else "at most"
        return f"has {len(instance)} keys, {bound} {error.validator_value} allowed{hint}"
    return " ".join(str(error.message).split())[:200]


def _key_message(error: ValidationError) -> str:
    """A mapping key that fails ``propertyNames`` (a tag, a kwarg name, a path)."""
    key = error.instance
    if error.validator == "enum" and tuple(error.validator_value) == TAGS:
        return (f"unknown value tag {key!r}; a mapping in a value is a single-key tag ({_VALUE_TAGS}; in format-2 "
                "declarations also arg, module, repeat, for), write a dict as {dict: {...}}")  # fmt: skip
    if error.validator == "enum":
        return f"key {key!r} is not one of: {', '.join(map(str, error.validator_value))}"
    schema = error.schema if isinstance(error.schema, dict) else {}
    hint = schema.get("description", "")
    return f"key {key!r} is not valid here" + (f": {hint}" if hint else "")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "a mapping"


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (a message stays one line)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _hint(description: str) -> str:
    """A schema description as the tail of a message: ``"; a list of ..."``."""
    text = description.rstrip(".")
    if text[:1].isupper() and (text[1:2].islower() or text[1:2] == " "):
        text = text[0].lower() + text[1:]
    return f"; {text}" if text else ""


def _describe(path: tuple[Any, ...]) -> str:
    """``("nodes", 3, "args", 0)`` -> ``"nodes[3].args[0]: "``."""
    if not path:
        return ""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text + ": "
