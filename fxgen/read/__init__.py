"""Read: bytes on disk -> plain data, located.

Takes a spec file's bytes (YAML or JSON), a spec folder, or a safetensors file. Hands on a
``Document`` (plain JSON data, with the line and column of every value worked out when a
diagnostic needs one), the list of spec files, or the tensors of a weights file. Never
constructs an object a file names (no YAML tags, no pickle), and stays within its budgets (size,
nesting, aliases, digits). With ``fxgen.write``, the only stage that touches the disk.
"""
