"""Two captures of one class, one per mode, aligned node by node (``fxgen.describe.align``):
each mode's nodes are exactly its branches and the common nodes, in order, up to names; the
differing runs are as short as the captures allow; a value a branch defines is read only in
its run or, defined by both branches, after it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from fxgen.describe.align import MODE_ARGUMENT, Aligned, Differing, align
from fxgen.spec.model import IfNodes, Node
from fxgen.spec.resolve import resolve_nodes


def _n(op: str, name: str | None, target: str | None = None, *args: Any, **kwargs: Any) -> Node:
    return Node(op=op, name=name, target=target, args=list(args), kwargs=kwargs)


def _mode_value(value: Any, mode: bool) -> Any:
    if value == MODE_ARGUMENT:
        return mode
    if isinstance(value, list):
        return [_mode_value(v, mode) for v in value]
    if isinstance(value, dict):
        return {k: _mode_value(v, mode) for k, v in value.items()}
    return value


def _expanded(aligned: Aligned, mode: bool) -> list[Node]:
    out: list[Node] = []
    for item in aligned.items:
        if isinstance(item, Differing):
            out += item.train if mode else item.eval
        else:
            out.append(Node(item.op, item.name, item.target, _mode_value(item.args, mode),
                            _mode_value(item.kwargs, mode), item.type, item.default))  # fmt: skip
    return out


def _same_up_to_names(a: list[Node], b: list[Node]) -> None:
    """Node for node equal, names mapped one to one."""
    assert len(a) == len(b)
    names: dict[str, str] = {}

    def ref(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("%"):
            return "%" + names[value[1:]]
        if isinstance(value, list):
            return [ref(v) for v in value]
        if isinstance(value, dict):
            return {k: ref(v) for k, v in value.items()}
        return value

    for x, y in zip(a, b, strict=True):
        assert (x.op, x.target, ref(x.args), ref(x.kwargs)) == (y.op, y.target, y.args, y.kwargs)
        if x.name is not None:
            assert x.name not in names and y.name not in names.values()
            names[x.name] = str(y.name)


def _check(eval_nodes: list[Node], train_nodes: list[Node]) -> Aligned:
    aligned = align(eval_nodes, train_nodes)
    for mode, nodes in ((False, eval_nodes), (True, train_nodes)):
        expanded = _expanded(aligned, mode)
        _same_up_to_names(nodes, expanded)
        assert len({n.name for n in expanded if n.name}) == len([n for n in expanded if n.name])  # SSA per mode
    _branches_are_closed(aligned)
    return aligned


def _branches_are_closed(aligned: Aligned) -> None:
    """A name defined in a branch is read after its run only if both branches define it."""
    defined_later: dict[str, tuple[int, bool]] = {}
    for k, item in enumerate(aligned.items):
        if isinstance(item, Differing):
            both = {n.name for n in item.eval} & {n.name for n in item.train}
            for nodes in (item.eval, item.train):
                for node in nodes:
                    for name in _read(node):
                        if name in defined_later:
                            at, in_both = defined_later[name]
                            assert at == k or in_both, name
                    defined_later.update({str(n.name): (k, n.name in both) for n in nodes})
        else:
            for name in _read(item):
                if name in defined_later:
                    assert defined_later[name][1], f"{name} is read after the run that defines it in one branch"


def _read(node: Node) -> list[str]:
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str) and value.startswith("%"):
            out.append(value[1:])
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    walk(node.args)
    walk(node.kwargs)
    return out


def test_equal_captures_are_all_common() -> None:
    nodes = [_n("placeholder", "x"), _n("call_module", "fc", "fc", "%x"), Node("output", args=["%fc"])]
    aligned = _check(nodes, nodes)
    assert not aligned.differs and aligned.items == nodes


def test_a_boolean_that_is_the_mode_is_written_as_the_mode() -> None:
    """issue 33's Head: ``F.dropout(x, 0.5, training=self.training)``."""
    def head(mode: bool) -> list[Node]:
        return [_n("placeholder", "x"), _n("call_function", "dropout", "torch.nn.functional.dropout", "%x",
                                          p=0.5, training=mode, inplace=False),
                _n("call_module", "fc", "fc", "%dropout"), Node("output", args=["%fc"])]  # fmt: skip

    aligned = _check(head(False), head(True))
    assert aligned.differs and not any(isinstance(i, Differing) for i in aligned.items)
    assert aligned.items[1].kwargs == {"p": 0.5, "training": MODE_ARGUMENT, "inplace": False}
    # True in eval and False in train is not the mode: a differing run
    assert any(isinstance(i, Differing) for i in align(head(True), head(False)).items)


def test_droppath_differs_in_one_short_run_and_the_rest_is_common() -> None:
    """issue 33's DropPath: eval adds, train draws a mask first; the names after it agree."""
    eval_nodes = [_n("placeholder", "x"), _n("call_module", "fc", "fc", "%x"),
                  _n("call_function", "add", "operator.add", "%x", "%fc"),
                  _n("call_function", "mul", "operator.mul", "%add", 2), Node("output", args=["%mul"])]  # fmt: skip
    train_nodes = [_n("placeholder", "x"), _n("call_module", "fc", "fc", "%x"),
                   _n("call_function", "rand", "torch.rand", 3, 1),
                   _n("call_function", "ge", "operator.ge", "%rand", 0.5),
                   _n("call_function", "mul", "operator.mul", "%fc", "%ge"),
                   _n("call_function", "add", "operator.add", "%x", "%mul"),
                   _n("call_function", "mul_1", "operator.mul", "%add", 2), Node("output", args=["%mul_1"])]  # fmt: skip
    aligned = _check(eval_nodes, train_nodes)
    kinds = ["run" if isinstance(i, Differing) else i.name for i in aligned.items]
    assert kinds == ["x", "fc", "run", "mul", None]
    (run,) = [i for i in aligned.items if isinstance(i, Differing)]
    assert [n.name for n in run.eval] == ["add"]
    assert [n.name for n in run.train] == ["rand", "ge", "mul_2", "add"]  # its mul renamed: mul and mul_1 are taken


def test_a_value_read_by_a_later_run_joins_the_runs() -> None:
    eval_nodes = [_n("placeholder", "x"), _n("call_function", "a", "torch.relu", "%x"),
                  _n("call_function", "b", "torch.tanh", "%a"),
                  _n("call_function", "c", "torch.sin", "%b"), Node("output", args=["%c"])]  # fmt: skip
    train_nodes = [_n("placeholder", "x"), _n("call_function", "r", "torch.rand_like", "%x"),
                   _n("call_function", "a", "torch.relu", "%x"),
                   _n("call_function", "b", "torch.tanh", "%a"),
                   _n("call_function", "c", "torch.cos", "%b", "%r"), Node("output", args=["%c"])]  # fmt: skip
    aligned = _check(eval_nodes, train_nodes)
    runs = [i for i in aligned.items if isinstance(i, Differing)]
    assert len(runs) == 1 and [n.name for n in runs[0].train] == ["r", "a", "b", "c"]


@pytest.mark.parametrize("seed", range(40))
def test_random_edits_align_exactly(seed: int) -> None:
    """A chain of nodes, and the same chain with nodes inserted, removed or changed here and
    there (as a mode changes a forward): each mode expands to its own nodes."""
    rng = random.Random(seed)
    targets = ["torch.relu", "torch.sin", "operator.add", "operator.mul", "torch.rand_like"]
    eval_nodes = [_n("placeholder", "x")]
    for k in range(rng.randint(1, 25)):
        args = [f"%{rng.choice(eval_nodes).name}" for _ in range(rng.randint(1, 2))]
        eval_nodes.append(_n("call_function", f"n{k}", rng.choice(targets), *args))
    train_nodes = [eval_nodes[0]]
    names = {"x": "x"}
    for node in eval_nodes[1:]:
        roll = rng.random()
        if roll < 0.15:
            continue  # dropped in train mode: its readers read the last node instead
        if roll < 0.3:
            extra = _n("call_function", f"t{len(train_nodes)}", rng.choice(targets), f"%{train_nodes[-1].name}")
            train_nodes.append(extra)
        args = [f"%{names.get(a[1:], train_nodes[-1].name)}" for a in node.args]
        target = rng.choice(targets) if roll > 0.9 else node.target
        train_nodes.append(_n("call_function", str(node.name), target, *args))
        names[str(node.name)] = str(node.name)
    eval_nodes.append(Node("output", args=[f"%{eval_nodes[-1].name}"]))
    train_nodes.append(Node("output", args=[f"%{train_nodes[-1].name}"]))
    _check(eval_nodes, train_nodes)


def test_outputs_that_differ_are_named_in_each_branch_and_the_output_comes_after() -> None:
    eval_nodes = [_n("placeholder", "x"), _n("call_module", "fc", "fc", "%x"), Node("output", args=["%fc"])]
    train_nodes = [_n("placeholder", "x"), _n("call_module", "fc", "fc", "%x"), _n("call_module", "aux", "aux", "%fc"),
                   Node("output", args=[{"tuple": ["%fc", "%aux"]}])]  # fmt: skip
    items = _check(eval_nodes, train_nodes).spec_items()
    assert items[-1] == Node("output", args=["%out"])
    group = items[-2]
    assert isinstance(group, IfNodes) and group.cond == "training"
    assert group.then[-1] == Node("alias", "out", args=[{"tuple": ["%fc", "%aux"]}])
    assert group.orelse == [Node("alias", "out", args=["%fc"])]


def _resolved(items: list[Any], flag: bool) -> list[Node]:
    """A merged list as one instance computes it: ``if: f`` taken or not, aliases followed."""
    return resolve_nodes(items, {"f": flag})


_BLOCK = [_n("placeholder", "x"), _n("call_module", "conv1", "conv1", "%x"), _n("call_module", "bn1", "bn1", "%conv1"),
          _n("call_function", "add", "operator.add", "%bn1", "%x"), _n("call_function", "relu", "torch.relu", "%add"),
          Node("output", args=["%relu"])]  # fmt: skip


@pytest.mark.parametrize("at", [1, 3])
def test_a_submodule_one_list_calls_is_a_conditional_whose_other_branch_names_the_value_it_reads(at: int) -> None:
    """ResNet's BasicBlock with and without downsample (called first, or just before the add):
    the add is common, reading a name both branches define; only the call is conditional."""
    with_call = [*_BLOCK[:at], _n("call_module", "downsample", "downsample", "%x"), *_BLOCK[at:]]
    with_call[with_call.index(_BLOCK[3])] = _n("call_function", "add", "operator.add", "%bn1", "%downsample")
    items = align(_BLOCK, with_call, mode=False, aliases=True).spec_items("f", "not f")
    groups = [item for item in items if isinstance(item, IfNodes)]
    assert groups == [IfNodes("f", [_n("call_module", "downsample", "downsample", "%x")],
                              [Node("alias", "downsample", args=["%x"])])]  # fmt: skip
    _same_up_to_names(_BLOCK, _resolved(items, False))
    _same_up_to_names(with_call, _resolved(items, True))
    joined = align(_BLOCK, with_call, mode=False).spec_items("f", "not f")  # (without aliases: the add is in the run)
    assert [n.target for item in joined if isinstance(item, IfNodes) for n in item.then][-1] == "operator.add"


def test_constants_that_differ_are_one_value_when_asked() -> None:
    scaled = [_n("placeholder", "x"), _n("call_function", "mul", "operator.mul", "%x", 2.0), Node("output", args=["%mul"])]
    other = [*scaled[:1], _n("call_function", "mul", "operator.mul", "%x", 3.0), scaled[2]]
    items = align(scaled, other, mode=False, constant=lambda a, b: {"arg": f"c{a}_{b}"}).spec_items("f", "not f")
    assert items[1] == _n("call_function", "mul", "operator.mul", "%x", {"arg": "c2.0_3.0"})
    assert any(isinstance(item, Differing) for item in align(scaled, other, mode=False).items)


@pytest.mark.parametrize("seed", range(30))
def test_random_optional_calls_align_exactly(seed: int) -> None:
    """A chain, and the same chain where some nodes also read the result of a call the first
    list lacks (each call reading a value from before it): each flag value resolves to its own
    list, up to names."""
    rng = random.Random(seed)
    targets = ["torch.relu", "torch.sin", "operator.add", "operator.mul"]
    plain = [_n("placeholder", "x")]
    extra = [_n("placeholder", "x")]
    for k in range(rng.randint(1, 20)):
        source = rng.choice(plain[:-1] or plain)
        args = [f"%{plain[-1].name}", f"%{source.name}"]
        plain.append(_n("call_function", f"n{k}", rng.choice(targets), *args))
        if rng.random() < 0.3:
            extra.append(_n("call_module", f"m{k}", f"opt{k}", f"%{source.name}"))
            args = [args[0], f"%m{k}"]
        extra.append(_n("call_function", f"n{k}", plain[-1].target, *args))
    plain.append(Node("output", args=[f"%{plain[-1].name}"]))
    extra.append(Node("output", args=[f"%{extra[-1].name}"]))
    items = align(plain, extra, mode=False, aliases=True).spec_items("f", "not f")
    _same_up_to_names(plain, _resolved(items, False))
    _same_up_to_names(extra, _resolved(items, True))
