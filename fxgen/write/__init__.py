"""Write: text and tensors -> files on disk, atomically; and the state of generated files.

Takes finished text (a generated module, a spec) or tensors (a weights file). Hands on nothing
but files: written to a locked temporary file, flushed and renamed, so an interrupted run leaves
the old file or the new one, and a later run can remove what a killed one left. Knows a generated file's header (hashes of the spec and the body) and so
whether a file is current, stale, edited by hand or orphaned. Never renders or validates: it
writes what it is given. With ``fxgen.read``, the only stage that touches the disk.
"""
