"""CLI: the ``fxgen`` command (validate, show, generate, export) over the stages below.

Takes command-line arguments and the trusted ``[tool.fxgen]`` configuration. Hands on files
(through ``fxgen.write``), located ``PATH:LINE:COL: error:`` lines, a one-line summary, and an
exit status; never a traceback unless ``--debug``. Heavy imports (torch, black) happen inside the
commands, so ``fxgen generate --check`` with nothing to do imports neither.
"""
