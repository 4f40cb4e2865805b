"""Blackstyle: black's output for the statements fxgen writes, without running black on them.

Contract: for every statement the renderer writes, ``formatter.block`` and
``formatter.format_def`` return exactly the lines black (the pinned version, in
``formatter.MODE``) would; property tests check it against black itself
(tests/blackstyle). The commonest shapes are split from string lengths (``fast``), the rest by a
port of black's own splitting (``linegen`` with its line model ``lines`` and ``power``, the
``def`` rules in ``funcdef``, per statement skeleton in ``split``); anything they do not claim
goes to black, in batches. Takes and hands on text only; knows nothing of specs.
"""
