"""Describe: a torch.fx GraphModule -> a Spec, exactly (``fxgen.to_spec``).

Takes a GraphModule whose attributes sit at their real paths and whose placeholders are the
model's own inputs (what capture hands on, or what a pass leaves). Hands on a Spec whose every
``call_module`` is a constructor call recovered from the instance and verified by rebuilding it
(``recover``, ``recover_rules``, ``rebuild``, ``compare``, ``record``, ``thirdparty``), and whose
every tensor the checkpoint does not carry is declared with its values (``to_spec``). Used by
capture (``fxgen.export``) and by passes (``fxgen.transform``); imports neither. Never writes.
"""
