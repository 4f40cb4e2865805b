"""Analysis stage: a validated Spec with example inputs -> what each node computes.

Takes a Spec and the target policy; builds the model on the meta device (through ``assemble``)
and runs torch.fx's ``ShapeProp`` on FakeTensors, counting FLOPs with ``FlopCounterMode``; hands
on an ``Analysis`` (every node's output shape and dtype, FLOPs, parameter counts) and pictures of
the graph (``pictures``: mermaid, dot). It never allocates a tensor of the model's size, never
reads or writes files, and runs nothing a spec names beyond what building the model runs.
"""
