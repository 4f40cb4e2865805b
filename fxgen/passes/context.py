"""What a pass is given besides the GraphModule."""

from __future__ import annotations

from dataclasses import dataclass, field

from fxgen._errors import Location
from fxgen.policy.policy import Policy
from fxgen.spec.model import Spec, walk_nodes

__all__ = ["PassContext"]


@dataclass
class PassContext:
    """What a pass may consult besides the GraphModule: the target policy, the spec it came from
    (to locate what it reports), where the pass was named, the notes it reports, and whether the
    model is on the meta device (``meta``: validating or generating, where only the resulting spec
    counts; its tensors have shapes and no values, but for the spec's own constant buffers)."""

    policy: Policy
    spec: Spec
    where: Location
    notes: list[str] = field(default_factory=list)
    meta: bool = False

    def note(self, message: str, location: Location | None = None) -> None:
        self.notes.append(f"{location or self.where}: note: {message}")

    def locate_node(self, name: str) -> Location:
        """Where the spec declares the node ``name`` (the pass's own place for a node it made)."""
        for i, node in enumerate(walk_nodes(self.spec.nodes)):
            if node.name == name:
                return self.spec.locate(("nodes", i))
        return self.where
