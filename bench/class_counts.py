"""How many of a model's own classes an export keeps, and how many spec classes it writes for them
(issue 42: one spec class per Python class).

The original's own classes are the classes of its submodules that are not torch's (the top
module's class left out: it is always the spec's top class). A spec class stands for an
original class where an instance of it sits at the same path in ``fxgen.load(spec)`` (the loaded
model keeps the original's module paths, as its strict ``load_state_dict`` shows; each spec
class instance is a GraphModule whose class is named after the spec class). An original class is
kept when at least one of its instances is a spec class instance; the spec classes it became are
counted per original class. A class whose every instance the spec declares as itself (a leaf
module: einops' ``Rearrange``, a model's leaf_modules) is neither: it is counted apart, as the
spec uses it as it uses torch's classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

__all__ = ["ClassCounts", "class_counts", "is_own", "own_classes"]


def is_own(cls: type) -> bool:
    """Is ``cls`` the model's (its library's or its author's), not torch's?"""
    return cls.__module__.split(".")[0] != "torch"


def own_classes(model: torch.nn.Module) -> dict[str, type]:
    """The classes of ``model``'s submodules that are not torch's, by qualified name, the top
    module's class left out (unless a submodule has it too)."""
    return {
        f"{type(m).__module__}.{type(m).__qualname__}": type(m)
        for path, m in model.named_modules()
        if path and is_own(type(m))
    }


@dataclass
class ClassCounts:
    """Per model: the original's own classes, those kept, the spec's classes (the top one left out)
    and, per original class (by qualified name), the names of the spec classes its instances became;
    ``leaves``: the own classes the spec declares as themselves, not counted in ``original``."""

    original: int = 0
    kept: int = 0
    spec: int = 0
    became: dict[str, list[str]] = field(default_factory=dict)
    leaves: list[str] = field(default_factory=list)

    @property
    def kept_share(self) -> float:
        """Classes kept / the original's own classes (1.0 for a model with none)."""
        return self.kept / self.original if self.original else 1.0

    @property
    def per_class(self) -> float:
        """Spec classes per original class (0.0 for a model with none)."""
        return self.spec / self.original if self.original else 0.0

    def detail(self) -> str:
        """``CNBlock 9, LayerNorm2d 2, Permute 0; leaves: Rearrange``: the spec classes of each
        original class, the most first, then the classes declared as leaves."""
        counts = sorted(self.became.items(), key=lambda item: (-len(item[1]), item[0]))
        text = ", ".join(f"{_short(name)} {len(spec)}" for name, spec in counts)
        return text + (f"; leaves: {', '.join(_short(name) for name in self.leaves)}" if self.leaves else "")


def _short(qualified: str) -> str:
    return qualified.rsplit(".", 1)[-1]


def class_counts(original: torch.nn.Module, loaded: torch.nn.Module, spec_classes: int) -> ClassCounts:
    """The counts for ``original`` and ``loaded`` (``fxgen.load`` of its export, whose spec has
    ``spec_classes`` classes besides the top one)."""
    mine = own_classes(original)
    became: dict[str, set[str]] = {name: set() for name in mine}
    leaf = dict.fromkeys(mine, True)
    at = dict(loaded.named_modules())
    for path, module in original.named_modules():
        if not path or not is_own(type(module)):
            continue
        name, twin = f"{type(module).__module__}.{type(module).__qualname__}", at.get(path)
        leaf[name] = leaf[name] and type(twin) is type(module)
        if isinstance(twin, torch.fx.GraphModule):
            became[name].add(type(twin).__name__)
    return ClassCounts(
        original=sum(not leaf[name] for name in mine),
        kept=sum(bool(spec) for spec in became.values()),
        spec=spec_classes,
        became={name: sorted(spec) for name, spec in became.items() if not leaf[name]},
        leaves=sorted(name for name in mine if leaf[name]),
    )
