"""Compatibility shim: the zoo now lives in the ``bench/zoo/`` package (one module per library).

``from zoo_models import ZOO, ZooModel`` (with ``bench/`` on ``sys.path``) keeps working.
"""

from zoo import FEATURES, ZOO, ZooModel

__all__ = ["FEATURES", "ZOO", "ZooModel"]
