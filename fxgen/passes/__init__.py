"""Passes stage (``fxgen.transform``): a validated Spec and passes -> a new, validated Spec.

Takes a Spec, the passes (names and arguments, checked by ``fxgen.check.passes``) and optionally
the model's weights; builds the GraphModule (``assemble``), runs each pass over it with torch.fx's
own machinery (``subgraph_rewriter``, retracing with ``Proxy``, ``experimental.optimization.fuse``,
``experimental.const_fold``, ``Graph.eliminate_dead_code``), hands the result to
``describe.to_spec`` and validates what comes back, so a transformed spec is as trustworthy as a
hand-written one. One pass per module, as in ``torch/fx/passes``. It never reads or writes
files; passes written in Python run only when trusted code registered them
(``fxgen.register_pass``) and trusted configuration or code names them.
"""
