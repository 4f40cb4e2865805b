"""Format 2's conditionals and repeats of nodes: the rules of the node list as written.

The graph of one instance is checked node by node once it is resolved (``fxgen.spec.resolve``
takes the branches and unrolls the loops; ``fxgen.check.nodes`` checks what comes out, located
at the items written). What must hold whatever the argument values is checked here, once, on
the items themselves, because the generated ``forward`` is written from them (an ``if`` and a
``for`` in Python): a name used after an ``if`` is defined by both branches (SSA, as torch.fx
graphs are); the names a loop's nodes define are new each step and visible after the loop only
through its ``carry`` and ``collect``; inputs and the output stay at the top; the expressions
use the class's arguments and named values, the enclosing loops' indices and ``training``; an
``if:`` may also ask whether an optional input was given (``mask is None``, ``mask is not None``:
an input whose default is None, tested in no other way).
"""

from __future__ import annotations

import builtins
import keyword
from collections.abc import Mapping
from typing import Any

from fxgen._errors import did_you_mean
from fxgen.check.blocks import PRESENCE_ONLY_IN_CONDITIONS, unknown_names
from fxgen.check.checker import IDENTIFIER, RESERVED_NAMES
from fxgen.read.yaml_events import JsonPath
from fxgen.spec.expr import ExprError, call_problems, parse, tested, untested
from fxgen.spec.resolve import (
    MAX_NESTING,
    MAX_TESTED,
    TEMPLATE,
    TRAINING,
    arg_expressions,
    last_name,
)
from fxgen.spec.values import iter_refs

__all__ = ["construct_problems", "shown_path"]

Problem = tuple[JsonPath, str]


def shown_path(path: JsonPath) -> str:
    """``("nodes", 3, "then", 0)`` -> ``nodes[3].then[0]``: where an item is, for messages."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def construct_problems(
    items: list[dict[str, Any]], arguments: list[str], values: list[str], label: str,
    attributes: dict[str, str] | None = None, functions: Mapping[str, tuple[int, int]] | None = None,
) -> list[Problem]:
    """What is wrong with the conditionals, repeats and aliases of a node list (as data), and
    with the expressions its items hold; ``label`` names the class in messages, ``functions``
    are the spec's (name -> the fewest and most arguments a call gives). ``attributes`` are the
    class's own attribute names (its modules', parameters' and buffers' first path segments ->
    which kind): an argument or value the nodes read is kept as ``self.NAME`` by the generated
    class, so it cannot share its name with one of them."""
    walker = _Walker(arguments, values, label)
    walker.attributes = attributes or {}
    walker.functions = functions or {}
    walker.inputs = {item["name"]: "default" in item and item["default"] is None
                     for item in items if item.get("op") == "placeholder" and isinstance(item.get("name"), str)}  # fmt: skip
    walker.items(items, ("nodes",), {}, [], 0)
    if len(walker.tested) > MAX_TESTED:
        walker.problems.append((("nodes",), f"the conditions of {label} test {len(walker.tested)} optional inputs "
                                            f"({', '.join(walker.tested)}); at most {MAX_TESTED}, as each one doubles "
                                            "the graphs a load builds: move the rest into a block of its own"))  # fmt: skip
    if walker.uses_training:
        for name in (TRAINING,) if TRAINING in arguments or TRAINING in values else ():
            kind = "args" if name in arguments else "values"
            walker.problems.append(((kind, name), f"{TRAINING!r} is the module's mode in the nodes of {label}, "
                                                  "so it cannot also be an argument or value; rename it"))  # fmt: skip
    return walker.problems


class _Walker:
    def __init__(self, arguments: list[str], values: list[str], label: str) -> None:
        self.arguments = arguments
        self.values = values
        self.label = label
        self.functions: Mapping[str, tuple[int, int]] = {}
        self.problems: list[Problem] = []
        self.hidden: dict[str, str] = {}  # a name not visible here -> why (for the message at its use)
        self.uses_training = False
        self.inputs: dict[str, bool] = {}  # the inputs of forward -> is its default None?
        self.tested: list[str] = []  # the optional inputs the conditions test
        self.attributes: dict[str, str] = {}  # the class's attribute names -> module, parameter or buffer

    def items(self, items: list[dict[str, Any]], prefix: JsonPath, visible: dict[str, JsonPath],
              loops: list[str], depth: int) -> None:  # fmt: skip
        """Walk ``items``, defining in ``visible`` (name -> where) the names they define."""
        for k, item in enumerate(items):
            where = (*prefix, k)
            if "if" in item:
                self.conditional(item, where, visible, loops, depth)
            elif "for" in item:
                self.repeat(item, where, visible, loops, depth)
            else:
                self.node(item, where, visible, loops, depth)

    def nested(self, where: JsonPath, depth: int) -> bool:
        if depth >= MAX_NESTING:
            self.problems.append((where, f"conditionals and repeats nest at most {MAX_NESTING} deep; move the inner "
                                         "part into a block of its own (`classes:`)"))  # fmt: skip
            return False
        return True

    def conditional(self, item: dict[str, Any], where: JsonPath, visible: dict[str, JsonPath], loops: list[str],
                    depth: int) -> None:  # fmt: skip
        if not self.nested(where, depth):
            return
        self.expression(item["if"], (*where, "if"), loops, "the condition", condition=True)
        branches = []
        for key in ("then", "else"):
            inner = dict(visible)
            self.items(item.get(key, []), (*where, key), inner, loops, depth + 1)
            branches.append({name: at for name, at in inner.items() if name not in visible})
        then, orelse = branches
        for name in then.keys() & orelse.keys():
            visible[name] = then[name]
            self.hidden.pop(name, None)
        for name in then.keys() ^ orelse.keys():
            self.hidden[name] = (f"is defined in only one branch of the `if` at {shown_path(where)}; define it in "
                                 "both (an `alias` gives a value a second name), or use it inside its branch")  # fmt: skip

    def repeat(self, item: dict[str, Any], where: JsonPath, visible: dict[str, JsonPath], loops: list[str],
               depth: int) -> None:  # fmt: skip
        if not self.nested(where, depth):
            return
        var = item["for"]
        self.expression(item["in"], (*where, "in"), loops, "the loop count")
        problem = self.index_problem(var, visible, loops)
        if problem:
            self.problems.append(((*where, "for"), problem))
        inner = dict(visible)
        self.items(item["nodes"], (*where, "nodes"), inner, [*loops, var], depth + 1)
        defined = {name: at for name, at in inner.items() if name not in visible}
        for name, value in item.get("carry", {}).items():
            at = (*where, "carry", name)
            if name not in visible:
                self.problems.append((at, f"carry {name!r}: a carried name needs a value before the loop (its value "
                                          f"at the first step); define {name!r} before the `for`, e.g. as an "
                                          "`alias` of the first input"))  # fmt: skip
            ref = str(value)[1:]
            if ref not in inner:
                why = self.hidden.get(ref, "is not defined in the loop" + did_you_mean(ref, defined))
                self.problems.append((at, f"carry {name!r}: %{ref} {why}"))
        collect = item.get("collect")
        if collect is not None:
            at = (*where, "collect")
            if last_name(item["nodes"]) is None:
                self.problems.append((at, f"collect {collect!r} gathers each step's last value: end the loop's "
                                          "nodes with a named node, or an `if` whose branches both end with "
                                          "one of the same name (an `alias` if need be)"))  # fmt: skip
            problem = self.name_problem(collect, "collect name")
            if problem:
                self.problems.append((at, problem))
            elif collect in inner or collect in self.arguments or collect in self.values or collect in loops:
                self.problems.append((at, f"collect name {collect!r} is already a name here; give the list a "
                                          "name of its own"))  # fmt: skip
        for name in defined:
            if name not in item.get("carry", {}):
                self.hidden[name] = (f"is defined inside the `for` at {shown_path(where)}: a loop's nodes are new "
                                     "each step; use its `carry` or `collect` names after it")  # fmt: skip
        if collect is not None:
            visible[collect] = (*where, "collect")
            self.hidden.pop(collect, None)

    def index_problem(self, var: str, visible: dict[str, JsonPath], loops: list[str]) -> str | None:
        problem = self.name_problem(var, "loop index")
        if problem:
            return problem
        if var == TRAINING:
            return f"loop index {var!r} would hide the module's mode; choose another name"
        if var in loops:
            return f"loop index {var!r} is already the index of an enclosing loop; choose another name"
        if var in self.arguments or var in self.values or var in visible:
            return f"loop index {var!r} is already an argument, value or node name here; choose another name"
        return None

    @staticmethod
    def name_problem(name: str, what: str) -> str | None:
        """Why ``name`` cannot be a local of the generated ``forward``, or None."""
        if not IDENTIFIER.fullmatch(name):
            return f"{what} {name!r} is not an identifier; use only letters, digits and _"
        if keyword.iskeyword(name) or keyword.issoftkeyword(name):
            return f"{what} {name!r} is a Python keyword; choose another name"
        if hasattr(builtins, name) or name in RESERVED_NAMES:
            return f"{what} {name!r} would shadow a name the generated code uses; choose another name"
        return None

    def node(self, item: dict[str, Any], where: JsonPath, visible: dict[str, JsonPath], loops: list[str],
             depth: int) -> None:  # fmt: skip
        op = item["op"]
        if depth and op in ("placeholder", "output"):
            what = "an input of forward: declare it at the top of `nodes`" if op == "placeholder" else (
                "what forward returns: end the top-level `nodes` with it")  # fmt: skip
            self.problems.append((where, f"a {op} node is {what}, not inside an `if` or `for`"))
            return
        for field in ("args", "kwargs"):
            if field not in item:
                continue
            for rel, ref in iter_refs(item[field]):
                if ref not in visible and ref in self.hidden:
                    self.problems.append(((*where, field, *rel), f"%{ref}: {ref!r} {self.hidden[ref]}"))
            for rel, text in arg_expressions(item[field]):
                self.expression(text, (*where, field, *rel), loops, "{arg: ...}")
        if loops and "{" in item.get("target", ""):
            self.target(item["target"], (*where, "target"), loops)
        name = item.get("name")
        if name is None:
            return
        if depth and loops and name in visible:
            self.problems.append(((*where, "name"), f"node name {name!r} inside a `for` is already a value outside "
                                                    "it; a loop's nodes are new each step: give it a name of its "
                                                    "own"))  # fmt: skip
        visible[name] = where
        self.hidden.pop(name, None)

    def target(self, target: str, where: JsonPath, loops: list[str]) -> None:
        """Inside a loop, ``{i}`` in a target is the index: a whole path segment after the
        first (``m.{i}``, ``m.{i}.conv``), an item of what comes before it."""
        segments = target.split(".")
        for k, segment in enumerate(segments):
            for found in TEMPLATE.finditer(segment):
                if found.group(1) not in loops:
                    continue
                if segment != found.group(0) or k == 0:
                    self.problems.append((where, f"target {target!r}: the loop index {found.group(0)} is a path "
                                                 "segment of its own after the container it indexes "
                                                 f"(`m.{found.group(0)}`, `m.{found.group(0)}.conv`)"))  # fmt: skip
                    return

    def expression(self, value: Any, where: JsonPath, loops: list[str], what: str, *, condition: bool = False) -> None:
        if not isinstance(value, str):
            return
        try:
            tree = parse(value)
        except ExprError as exc:
            self.problems.append((where, f"{what} `{value}`: {exc}"))
            return
        used = untested(tree)
        if TRAINING in used:
            self.uses_training = True
        for name in tested(tree):
            problem = self.presence_problem(name, condition)
            if problem:
                self.problems.append((where, f"{what} `{value}`: {problem}"))
            elif name not in self.tested:
                self.tested.append(name)
        known = [*self.values, *loops, TRAINING]
        inputs = [n for n in used if n in self.inputs and n not in self.arguments and n not in known]
        for name in inputs:
            self.problems.append((where, f"{what} `{value}`: {name!r} is an input of forward, a value the graph "
                                         f"computes with; an `if:` asks only whether it was given (`{name} is None`, "
                                         f"`{name} is not None`)"))  # fmt: skip
        for message in unknown_names([n for n in used if n not in inputs], self.arguments, known, self.label):
            self.problems.append((where, f"{what} `{value}`: {message}"))
        for name in [n for n in used if n in self.attributes and n not in loops]:
            if name in self.arguments or name in self.values:
                kind = "argument" if name in self.arguments else "value"
                self.problems.append((where, f"{what} `{value}`: the {kind} {name!r} is read by forward, which keeps "
                                             f"it as self.{name}, but self.{name} is the {self.attributes[name]} "
                                             f"{name!r} of {self.label}: rename the {kind} or the "
                                             f"{self.attributes[name]}"))  # fmt: skip
        for message in call_problems(tree, self.functions):
            self.problems.append((where, f"{what} `{value}`: {message}"))

    def presence_problem(self, name: str, condition: bool) -> str | None:
        """Why ``NAME is None`` cannot be asked of ``name`` here, or None."""
        if not condition:
            return PRESENCE_ONLY_IN_CONDITIONS
        optional = [n for n, default_none in self.inputs.items() if default_none]
        which = f" (here: {', '.join(optional)})" if optional else " (this forward has none)"
        if name in self.arguments or name in self.values or name == TRAINING:
            return f"{name!r} is an argument or value of {self.label}, set when it is built: `{name} is None` asks " \
                   f"only whether an input of forward whose default is None was given{which}"  # fmt: skip
        if name not in self.inputs:
            return f"{name!r} is not an input of forward: `NAME is None` asks whether an input whose default is " \
                   f"None was given{which}"  # fmt: skip
        if not self.inputs[name]:
            return f"the input {name!r} has no default None, so it is always given: declare it with " \
                   f"`default: null` to make it optional, or remove the test"  # fmt: skip
        return None
