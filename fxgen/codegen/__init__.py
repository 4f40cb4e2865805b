"""Codegen: a validated Spec -> the text of a standalone, readable Python module.

Takes a Spec. Hands on the complete file text (header included): imports, one ``nn.Module``
class with ``__init__`` and ``forward`` (one statement per node), and packed tensor data when the
spec has any, formatted as black formats it. Spec text reaches the source only as validated
identifiers or ``repr``-escaped literals (``render``). Never writes a file: ``fxgen.write`` does.
"""
