"""Policy: which callables, classes, methods and types a spec may name, resolved safely.

Takes a qualified name from a spec (and the trusted ``allow`` list). Hands on the object it
resolves to, or a ``TargetError`` saying why not. Never imports a module on a spec's behalf,
never runs a looked-up object's code (module ``__dict__`` and class MRO lookups only), and
checks the resolved object rather than its spelling. docs/security.md is its threat model.
"""
