"""``Snapshot`` puts back what a trace changed on the model: the same objects, the same contents."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn

from fxgen.capture.preserve import Snapshot


class _Holder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.cache: dict[str, object] = {}
        self.history = [1, 2]
        self.nested = {"a": [{"b": []}]}
        self.table: OrderedDict[str, int] = OrderedDict(x=1)
        self.scale = 2.0


def test_restore_puts_back_attributes_and_contents() -> None:
    model = nn.Sequential(_Holder())
    inner = model[0]
    cache, history, nested, hooks = inner.cache, inner.history, inner.nested, inner.lin._forward_hooks
    snapshot = Snapshot(model)
    inner.cache["k"] = 1  # filled
    inner.history.append(3)  # grown
    inner.nested["a"][0]["b"].append(4)  # an empty list three levels down
    inner.table["y"] = 2
    inner.scale = 3.0  # rebound
    inner.extra = 5  # added
    inner.renamed = inner.__dict__.pop("history")  # same objects under another name
    hooks[0] = print  # nn.Module's own bookkeeping, empty before
    snapshot.restore()
    assert inner.cache is cache and cache == {}
    assert inner.history is history and history == [1, 2]
    assert inner.nested is nested and nested == {"a": [{"b": []}]}
    assert inner.table == OrderedDict(x=1)
    assert inner.scale == 2.0 and not hasattr(inner, "extra") and not hasattr(inner, "renamed")
    assert inner.lin._forward_hooks is hooks and not hooks


def test_proxies_of_an_earlier_trace_are_named_where_they_are() -> None:
    model = nn.Sequential(_Holder())
    graph = torch.fx.Graph()
    proxy = torch.fx.Proxy(graph.placeholder("x"))
    model[0].cache["bias"] = proxy
    model[0].nested["a"][0]["b"].append(proxy)
    model[0].lin.note = (proxy,)
    assert Snapshot(model).proxies == ["0.cache['bias']", "0.nested['a'][0]['b'][0]", "0.lin.note[0]"]
    model.top = proxy
    assert Snapshot(model).proxies[0] == "top"
