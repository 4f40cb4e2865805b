"""Assemble: a validated Spec -> a runnable ``torch.fx.GraphModule`` (``fxgen.load``).

Takes a Spec (or a path or dict, validated on the way) and optionally a weights file. Hands on a
GraphModule whose attributes live at the spec's dotted paths, so its ``state_dict()`` keys are
the spec's paths, built in the generated class's order of random draws. With weights, modules
are built on the meta device and the file's tensors assigned, strictly checked. Never writes.
"""
