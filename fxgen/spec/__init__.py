"""Spec: the model of a spec, and its value encoding.

Takes plain data that validation accepted. Hands on ``Spec`` dataclasses (nodes, modules,
parameters, buffers), values still encoded (``"%x"``, ``{"tuple": [...]}``) so a Spec compares,
hashes and serialises without torch; the encoding both ways (``values``), packed tensor data
(``packed``), initialisation schemes (``init``) and the tree the dotted paths form (``tree``).
Never resolves a name a spec gives: that is the target policy's job.
"""
