"""Check: a Document -> a Spec, or a SpecError listing every problem, located.

Takes the reader's ``Document`` and a ``Policy``. Hands on a validated ``Spec`` (and, when
validating for a load, the modules it constructed so the build can keep them). Runs the JSON
Schema (``schema``), then the semantic rules on declarations (``validate``) and nodes
(``nodes``). Nothing here runs code a spec names, except the constructors of allowed module
classes with the spec's literal arguments; every problem becomes a ``Diagnostic`` at its
``PATH:LINE:COL``.
"""
