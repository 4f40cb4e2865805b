"""A fix to torch.fx's code generation, installed when fxgen builds or traces a graph.

torch.fx writes the access to a submodule or attribute path segment by segment: ``self.name``
for an identifier, ``getattr(self, "name")`` otherwise, with the name pasted between double
quotes unescaped (``torch.fx.graph._format_target``). Two kinds of names nn.Module accepts then
break the generated ``forward``: a keyword (``self.class``: a SyntaxError), and a name holding a
double quote or a backslash, which ends the string early. That makes the second a way to inject
code: a spec is untrusted, and ``fxgen.load`` compiles what torch.fx writes for its paths.

The replacement writes exactly what torch.fx wrote wherever that was valid Python for the name,
and ``getattr(base, <repr of the name>)`` wherever it was not. It is installed only while torch's
own function still has the fault, so a torch that fixes it keeps its own.
"""

from __future__ import annotations

import keyword

import torch.fx.graph

__all__ = ["format_target", "install"]


def format_target(base: str, target: str) -> str:
    """``base`` followed by the access to each segment of the dotted ``target``."""
    text = base
    for segment in target.split("."):
        if segment.isidentifier() and not keyword.iskeyword(segment):
            text = f"{text}.{segment}"
        elif '"' not in segment and "\\" not in segment and segment.isprintable():
            text = f'getattr({text}, "{segment}")'  # torch.fx's own spelling, where it is right
        else:
            text = f"getattr({text}, {segment!r})"
    return text


def _faulty(fn: object) -> bool:
    try:
        return fn("self", "class") == "self.class" or fn("self", 'a"b') == 'getattr(self, "a"b")'  # type: ignore[operator]
    except Exception:
        return False


def install() -> None:
    """Use :func:`format_target` in torch.fx's code generation if torch's own has the fault."""
    if torch.fx.graph._format_target is not format_target and _faulty(torch.fx.graph._format_target):
        torch.fx.graph._format_target = format_target


install()
