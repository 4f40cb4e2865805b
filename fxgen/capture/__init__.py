"""Capture: an ``nn.Module`` -> a torch.fx graph -> a Spec (``fxgen.export``), exactly.

Takes a module (and how to trace it: concrete args, leaf modules, a tracer class). Hands on a
Spec whose every tensor the checkpoint does not carry is declared with its values, whose every
``call_module`` is a constructor call recovered from the instance and verified by rebuilding it
(``recover``, ``rebuild``, ``compare``), and a model left as it was found (``preserve``).
docs/export.md states its promises. Never writes: ``fxgen.write`` does, from the CLI.
"""
