"""Construct: one declaration -> one torch object (a graph's nodes, a module, a tensor).

Takes validated declarations and the target policy. Hands on ``torch.fx.Graph`` nodes,
``nn.Module`` instances (on a device, on the meta device, with the global random generator left
as it was when asked) and initialised tensors. Shared by the stages above it: validation
constructs modules to check them, the assemble stage builds the model, export rebuilds
recovered modules to verify them. Never decides what is allowed: it is given resolved classes
and checked arguments.
"""
