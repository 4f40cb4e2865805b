"""``{layout: strided}``: a torch.layout, from a fixed table."""

from __future__ import annotations

import torch

from fxgen.spec.tags.base import Named

LAYOUTS: dict[str, torch.layout] = {
    name: getattr(torch, name)
    for name in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn")
}


class Layout(Named):
    name = "layout"
    table = LAYOUTS
    kind = torch.layout


TAG: Layout = Layout()
