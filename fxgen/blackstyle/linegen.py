"""Black's line splitting for the statements fxgen writes, without running black.

Black (``fxgen.blackstyle.formatter.MODE``) costs 0.3-2 ms a statement, most of a large graph's generate
time. The statements fxgen writes are few shapes: ``target = expression``, ``return
expression`` and bare expressions, whose expressions are names, attribute chains, calls,
subscripts, keyword arguments, numbers, single-line strings, ``...``, unary and binary
operators, lists, tuples and dicts; and ``def`` signatures (``fxgen.blackstyle.funcdef``). For those,
this module runs black's own splitting algorithm (linegen.py of the pinned black:
``transform_line``, ``rhs`` with its trailer omission and optional parentheses,
``delimiter_split`` with the operator priorities, the ``FORCE_OPTIONAL_PARENTHESES`` second
opinion, and ``format_str``'s second pass, where the trailing commas the first pass added are
magic) on a token list that carries the few syntax-tree facts those rules consult (trailer or
atom brackets, invisible parentheses, delimiter priorities, annotations). The port keeps
black's structure, names and its mutation of leaves, so it can be compared with black function
by function, module by module: the line model (lines.py, brackets.py) is
``fxgen.blackstyle.lines``, ``hug_power_op`` (trans.py) is ``fxgen.blackstyle.power``, the ``def``
rules are ``fxgen.blackstyle.funcdef``.

``fxgen.blackstyle.statement`` turns a statement into those leaves; :func:`split` returns None for
anything it does not recognise (comments, keywords, redundant parentheses, operators in
subscripts, implicit string concatenation, trailing commas...), and the caller falls back to
black. The result is a function of the statement's skeleton (token kinds, lengths, spacing),
so it is computed once per skeleton and reused. ``tests/test_format.py`` checks the output
against black.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from black.strings import str_width  # black's own width rule (east asian wide characters)

from fxgen.blackstyle.lines import (
    COMMA_PRIORITY,
    DOT_PRIORITY,
    LINE_LENGTH,
    CannotSplit,
    Line,
    RHSResult,
    can_be_split,
    can_omit_invisible_parens,
    is_one_sequence_between,
    is_short,
    leaves_inside_matching_brackets,
)
from fxgen.blackstyle.power import hug_power_op
from fxgen.blackstyle.statement import (
    BRACKETS,
    CLOSING,
    OPENING,
    Leaf,
)

__all__ = ["left_hand_split", "new_comma", "should_split_funcdef_with_rhs", "transform_line"]


# -- transform_line and its transformers (black.linegen) --------------------------------------
Transformer = Callable[[Line, bool], Iterator[Line]]


def transform_line(line: Line, force_optional: bool = False, line_str: str = "") -> Iterator[Line]:
    line_str = line_str or str(line).strip("\n")
    # the length check sees ``**`` hugged, as black's output will have it
    hugged_str = _hugged_line_str(line) or line_str
    transformers: list[Transformer]
    if not line.should_split_rhs and not line.magic_trailing_comma and is_short(line, hugged_str):
        transformers = []
    else:
        transformers = [delimiter_split, rhs] if line.inside_brackets else [rhs]
        if line.is_def and not should_split_funcdef_with_rhs(line):  # (never inside brackets)
            transformers = [left_hand_split]
    transformers.append(hug_power_op)
    for transform in transformers:
        try:
            result = run_transformer(line, transform, force_optional, line_str)
        except CannotSplit:
            continue
        yield from result
        return
    yield line


def run_transformer(line: Line, transform: Transformer, force_optional: bool, line_str: str) -> list[Line]:
    optional_parens = [bracket for bracket in line.bt.invisible if bracket.bracket_depth == 0]
    result: list[Line] = []
    for transformed in transform(line, force_optional):
        text = str(transformed).strip("\n")
        if text == line_str:
            raise CannotSplit("unchanged")
        result.extend(transform_line(transformed, force_optional, text))
    if (
        force_optional
        or transform is not rhs
        or not line.bt.invisible
        or any(bracket.value for bracket in optional_parens)
        or is_short(result[0])
        or any(leaf.created for leaf in line.leaves)  # black: a leaf without a parent
    ):
        return result
    line_copy = line.clone()
    for old in line.leaves:  # black.linegen.append_leaves: fresh leaves, whitespace recomputed
        line_copy.append(old.copy())
    second_opinion = run_transformer(line_copy, transform, True, line_str)
    if all(is_short(ln) for ln in second_opinion):
        result = second_opinion
    return result


def delimiter_split(line: Line, force_optional: bool) -> Iterator[Line]:
    """Split at the highest-priority delimiters; first leaf prefixes normalized (as black's
    ``dont_increase_indentation`` decorator does)."""
    if not line.leaves:
        raise CannotSplit("empty")
    last_leaf = line.leaves[-1]
    bt = line.bt
    try:
        priority = bt.max_priority(exclude={id(last_leaf)})
    except ValueError:
        raise CannotSplit("no delimiters") from None
    if priority == DOT_PRIORITY and bt.count_with_priority(priority) == 1:
        raise CannotSplit("single attribute")
    current = Line(line.depth, line.inside_brackets)
    annotation = ""
    in_arglist = False
    for leaf in line.leaves:
        current.append(leaf, preformatted=True)
        if bt.delimiters.get(id(leaf)) == priority:
            annotation = leaf.annotation  # (a comma: the added one belongs to the same list)
            in_arglist = leaf.trailer
            current.leaves[0].prefix = ""
            yield current
            current = Line(line.depth, line.inside_brackets)
    if current:
        if priority == COMMA_PRIORITY and current.leaves[-1].type != ",":
            current.append(new_comma(annotation, in_arglist))
        current.leaves[0].prefix = ""
        yield current


def rhs(line: Line, force_optional: bool) -> Iterator[Line]:
    """black.linegen.right_hand_split_with_omits."""
    first_lines: list[Line] | None = None
    prefix_lengths: dict[int, int] = {}
    length = 4 * line.depth
    for leaf in line.leaves:
        prefix_lengths[id(leaf)] = length
        length += len(leaf.prefix) + len(leaf.value)
    for omit in generate_trailers_to_omit(line):
        if omit:
            target: Leaf | None = None
            for leaf in reversed(line.leaves):
                if leaf.type in CLOSING and id(leaf) not in omit:
                    target = leaf.opening_bracket
                    break
            if target is not None and target.value and prefix_lengths.get(id(target), 0) > LINE_LENGTH:
                continue
        lines = list(right_hand_split(line, force_optional, omit))
        if first_lines is None and not omit:
            first_lines = lines
        if is_short(lines[0]):
            yield from lines
            return
    if first_lines is not None:
        yield from first_lines
    else:
        yield from right_hand_split(line, force_optional)


def right_hand_split(line: Line, force_optional: bool, omit: set[int] | frozenset[int] = frozenset()) -> Iterator[Line]:
    result = _first_right_hand_split(line, omit)
    yield from _maybe_split_omitting_optional_parens(result, line, force_optional, omit)


def _first_right_hand_split(line: Line, omit: set[int] | frozenset[int]) -> RHSResult:
    tail_leaves: list[Leaf] = []
    body_leaves: list[Leaf] = []
    head_leaves: list[Leaf] = []
    current = tail_leaves
    opening_bracket: Leaf | None = None
    closing_bracket: Leaf | None = None
    for leaf in reversed(line.leaves):
        if current is body_leaves and leaf is opening_bracket:
            current = head_leaves if body_leaves else tail_leaves
        current.append(leaf)
        if current is tail_leaves and leaf.type in CLOSING and id(leaf) not in omit:
            opening_bracket = leaf.opening_bracket
            closing_bracket = leaf
            current = body_leaves
    if not (opening_bracket and closing_bracket and head_leaves):
        raise CannotSplit("no brackets")
    tail_leaves.reverse()
    body_leaves.reverse()
    head_leaves.reverse()
    head = _build_line(head_leaves, line, opening_bracket, "head")
    body = _build_line(body_leaves, line, opening_bracket, "body")
    tail = _build_line(tail_leaves, line, opening_bracket, "tail")
    bracket_split_succeeded_or_raise(head, body, tail)
    return RHSResult(head, body, tail, opening_bracket, closing_bracket)


def bracket_split_succeeded_or_raise(head: Line, body: Line, tail: Line) -> None:
    tail_len = len(str(tail).strip())
    if not body and (tail_len == 0 or tail_len < 3):
        raise CannotSplit("nothing to gain")


def _maybe_split_omitting_optional_parens(
    rhs_: RHSResult, line: Line, force_optional: bool, omit: set[int] | frozenset[int]
) -> Iterator[Line]:
    if (
        not force_optional
        and rhs_.opening_bracket.type == "("
        and not rhs_.opening_bracket.value
        and rhs_.closing_bracket.type == ")"
        and not rhs_.closing_bracket.value
        and can_omit_invisible_parens(rhs_)
    ):
        omit = {id(rhs_.closing_bracket), *omit}
        try:
            rhs_oop = _first_right_hand_split(line, omit)
            if _prefer_split_rhs_oop_over_rhs(rhs_oop, rhs_):
                yield from _maybe_split_omitting_optional_parens(rhs_oop, line, force_optional, omit)
                return
        except CannotSplit as e:
            if not line.is_chained_assignment and not can_be_split(rhs_.body) and not is_short(rhs_.body):
                raise CannotSplit("body still too long") from e
    for bracket in (rhs_.opening_bracket, rhs_.closing_bracket):  # ensure_visible
        if bracket.type in "()":
            bracket.value = bracket.type
    for result in (rhs_.head, rhs_.body, rhs_.tail):
        if result:
            yield result


def _prefer_split_rhs_oop_over_rhs(rhs_oop: RHSResult, rhs_: RHSResult) -> bool:
    head = rhs_.head.leaves
    if not (len(head) >= 2 and head[-2].type == "="):
        return True
    if not any(leaf.type in BRACKETS for leaf in head[:-1]):
        return True
    if str_width(str(rhs_.head).strip("\n")) > LINE_LENGTH - 1:
        return True
    if rhs_.head.magic_trailing_comma is not None:
        return True
    head_equals = [leaf.type for leaf in head].count("=")
    oop_equals = [leaf.type for leaf in rhs_oop.head.leaves].count("=")
    if head_equals > 1 and head_equals > oop_equals:
        return False
    has_closing_bracket_after_assign = False
    for leaf in reversed(rhs_oop.head.leaves):
        if leaf.type == "=":
            break
        if leaf.type in CLOSING:
            has_closing_bracket_after_assign = True
            break
    return has_closing_bracket_after_assign or (
        any(leaf.type == "=" for leaf in rhs_oop.head.leaves) and is_short(rhs_oop.head)
    )


def _build_line(leaves: list[Leaf], original: Line, opening_bracket: Leaf, component: str) -> Line:
    """black.linegen.bracket_split_build_line."""
    result = Line(original.depth)
    if component == "body":
        result.inside_brackets = True
        result.depth += 1
        if original.is_def and _ensure_trailing_comma(leaves, opening_bracket) and leaves[-1].type != ",":
            leaves.append(new_comma(opening_bracket.annotation, opening_bracket.trailer))
    track = leaves_inside_matching_brackets(leaves) if component == "head" else set()
    for leaf in leaves:
        result.append(leaf, preformatted=True, track_bracket=id(leaf) in track)
    if component == "body" and _should_split_line(result, opening_bracket):
        result.should_split_rhs = True
    return result


def _ensure_trailing_comma(leaves: list[Leaf], opening_bracket: Leaf) -> bool:
    """black.linegen._ensure_trailing_comma for a def: a lone parameter gets a trailing comma
    (fxgen's signatures have no ``|`` unions, stars or comments)."""
    if not leaves or opening_bracket.value != "(":
        return False
    if any(leaf.type == "," and not leaf.annotation for leaf in leaves):
        return False
    leaf_with_parent = next((leaf for leaf in leaves if not leaf.created), None)
    return leaf_with_parent is None or leaf_with_parent.annotation != "return"


def new_comma(annotation: str, in_arglist: bool) -> Leaf:
    """A trailing comma a split adds (black: ``Leaf(token.COMMA, ",")``, without a parent).
    ``in_arglist``: in black's second pass it sits in an arglist or typedargslist."""
    comma = Leaf(",", ",", "", trailer=in_arglist)
    comma.created = True
    comma.annotation = annotation
    return comma


def _should_split_line(line: Line, opening_bracket: Leaf) -> bool:
    exclude = set()
    trailing_comma = False
    try:
        last_leaf = line.leaves[-1]
        if last_leaf.type == ",":
            trailing_comma = True
            exclude.add(id(last_leaf))
        max_priority = line.bt.max_priority(exclude=exclude)
    except (IndexError, ValueError):
        return False
    return max_priority == COMMA_PRIORITY and (trailing_comma or not opening_bracket.trailer)


def generate_trailers_to_omit(line: Line) -> Iterator[set[int]]:
    omit: set[int] = set()
    if not line.magic_trailing_comma:
        yield omit
    length = 4 * line.depth
    opening_bracket: Leaf | None = None
    closing_bracket: Leaf | None = None
    inner_brackets: set[int] = set()
    for index, leaf, leaf_length in line.enumerate_with_length(is_reversed=True):
        length += leaf_length
        if length > LINE_LENGTH:
            break
        if opening_bracket:
            if leaf is opening_bracket:
                opening_bracket = None
            elif leaf.type in CLOSING:
                if _after_trailing_comma(line, index, leaf):
                    break
                inner_brackets.add(id(leaf))
        elif leaf.type in CLOSING:
            prev = line.leaves[index - 1] if index > 0 else None
            if prev and prev.type in OPENING:
                inner_brackets.add(id(leaf))
                continue
            if closing_bracket:
                omit.add(id(closing_bracket))
                omit.update(inner_brackets)
                inner_brackets.clear()
                yield omit
            if _after_trailing_comma(line, index, leaf):
                break
            if leaf.value:
                opening_bracket = leaf.opening_bracket
                closing_bracket = leaf


def _after_trailing_comma(line: Line, index: int, leaf: Leaf) -> bool:
    """A closing bracket right after a comma that is not a one-element tuple's (black stops there)."""
    prev = line.leaves[index - 1] if index > 0 else None
    return bool(
        prev
        and prev.type == ","
        and leaf.opening_bracket is not None
        and not is_one_sequence_between(leaf.opening_bracket, leaf, line.leaves)
    )


def _hugged_line_str(line: Line) -> str | None:
    """black.linegen._hugging_power_ops_line_to_string."""
    if not any(leaf.type == "**" for leaf in line.leaves):
        return None
    return str(next(hug_power_op(line, False))).strip("\n")


def should_split_funcdef_with_rhs(line: Line) -> bool:
    """black.linegen.should_split_funcdef_with_rhs: a magic trailing comma in the return
    annotation (black's string-annotation case cannot occur: parse_def rejects strings)."""
    return_type_leaves: list[Leaf] = []
    in_return_type = False
    for leaf in line.leaves:
        if leaf.type == ":":
            in_return_type = False
        if in_return_type:
            return_type_leaves.append(leaf)
        if leaf.type == "->":
            in_return_type = True
    result = Line(line.depth)
    track = leaves_inside_matching_brackets(return_type_leaves)
    for leaf in return_type_leaves:
        result.append(leaf, preformatted=True, track_bracket=id(leaf) in track)
    return result.magic_trailing_comma is not None


def left_hand_split(line: Line, force_optional: bool) -> Iterator[Line]:
    """black.linegen.left_hand_split: split at the first opening bracket, the parameters'
    (fxgen's signatures have no type parameters, so black's ``[`` pass never applies)."""
    tail_leaves: list[Leaf] = []
    body_leaves: list[Leaf] = []
    head_leaves: list[Leaf] = []
    current_leaves = head_leaves
    matching_bracket: Leaf | None = None
    for leaf in line.leaves:
        if (
            current_leaves is body_leaves
            and leaf.type in CLOSING
            and leaf.opening_bracket is matching_bracket
            and matching_bracket is not None
        ):
            _ensure_visible(leaf)
            _ensure_visible(matching_bracket)
            current_leaves = tail_leaves if body_leaves else head_leaves
        current_leaves.append(leaf)
        if current_leaves is head_leaves and leaf.type == "(":
            matching_bracket = leaf
            current_leaves = body_leaves
    if not matching_bracket or not tail_leaves:
        raise CannotSplit("no brackets found")
    head = _build_line(head_leaves, line, matching_bracket, "head")
    body = _build_line(body_leaves, line, matching_bracket, "body")
    tail = _build_line(tail_leaves, line, matching_bracket, "tail")
    bracket_split_succeeded_or_raise(head, body, tail)
    for result in (head, body, tail):
        if result:
            yield result


def _ensure_visible(leaf: Leaf) -> None:
    if leaf.type in "()":
        leaf.value = leaf.type
