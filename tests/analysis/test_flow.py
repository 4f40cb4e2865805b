"""The flow check's first try: plain meta tensors, without importing TorchDynamo.

``fxgen.analysis.flow`` only ever says "they flow" or "cannot tell" (``shapes`` decides the
rest: tests/analysis/test_shapes.py), so what is tested here is that it tells right when it says
they flow, that it leaves torch as it found it, and that it imports no TorchDynamo (a fresh
interpreter: this one has imported it long ago).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import torch
from helpers import HANG_WATCHDOG

from fxgen.analysis.flow import flows_on_meta
from fxgen.assemble.module import build_module
from fxgen.check.validate import validate_data
from fxgen.policy.policy import DEFAULT_POLICY

ROOT = Path(__file__).resolve().parents[2]


def _linear(features: int, *more: dict[str, object]) -> torch.fx.GraphModule:
    data = {"fxgen": 1, "name": "M", "modules": {"fc": {"class": "torch.nn.Linear", "args": [8, 4]}},
            "buffers": {"shift": {"shape": [4], "init": "ones"}},
            "nodes": [{"op": "placeholder", "name": "x"},
                      {"op": "call_module", "name": "y", "target": "fc", "args": ["%x"]},
                      {"op": "get_attr", "name": "s", "target": "shift"},
                      {"op": "call_function", "name": "z", "target": "torch.add", "args": ["%y", "%s"]},
                      *more, {"op": "output", "args": ["%z" if not more else f"%{more[-1]['name']}"]}],
            "inputs": {"x": {"shape": [2, features]}}}  # fmt: skip
    return build_module(validate_data(data), DEFAULT_POLICY, device="meta")


def test_it_says_they_flow_only_when_they_do() -> None:
    assert flows_on_meta(_linear(8), [([2, 8], torch.float32)])
    assert not flows_on_meta(_linear(8), [([2, 9], torch.float32)])


def test_a_graph_that_names_a_device_is_left_to_the_fake_tensors() -> None:
    """A factory call given a device makes a real tensor there, which no other tensor of the meta
    run meets as the load's would: it cannot tell, even where the graph would flow."""
    made = {"op": "call_function", "name": "w", "target": "torch.zeros", "args": [4], "kwargs": {"device": "cpu"}}
    added = {"op": "call_function", "name": "v", "target": "torch.add", "args": ["%z", "%w"]}
    assert not flows_on_meta(_linear(8, made, added), [([2, 8], torch.float32)])


def test_tensors_made_for_real_meet_the_meta_inputs() -> None:
    gm = _linear(8)
    gm.shift = torch.ones(4)  # as a literal would be
    assert flows_on_meta(gm, [([2, 8], torch.float32)])


def test_it_imports_no_dynamo_and_leaves_torch_as_it_was() -> None:
    """In a fresh interpreter: elementwise meta kernels, layer_norm and a convolution run without
    importing TorchDynamo; afterwards the wrappers import it again as torch wrote them to."""
    code = textwrap.dedent("""
        import sys, torch
        from fxgen.analysis.flow import _CACHE, _disabled, without_dynamo_import
        x = torch.empty(2, 3, 8, 8, device="meta")
        with without_dynamo_import():
            y = torch.relu(x + x * 2).mean(-1)
            torch.nn.functional.layer_norm(y, [8])
            torch.nn.functional.conv2d(x, torch.empty(4, 3, 3, 3, device="meta"))
        assert "torch._dynamo" not in sys.modules, "imported TorchDynamo"
        assert len(_disabled()) > 50, len(_disabled())
        assert not [f for f in _disabled() if _CACHE in vars(f)], "left a mark"
        x + x
        assert "torch._dynamo" in sys.modules, "torch's wrapper no longer imports TorchDynamo"
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=HANG_WATCHDOG)
    assert done.returncode == 0, done.stderr[-2000:]
