"""A package that re-exports a function under its own module's name, as torchvision does with
``torchvision.ops.stochastic_depth``: here ``shadowpkg.scale`` is the function, not the module."""

from .scale import Scale, scale

__all__ = ["Scale", "scale"]
