"""model_specs/gpt2.yaml, issue 31's GPT-2 proof: one spec for the family (layers, width, heads,
dropout, tied or untied head), against nanoGPT's model written here in plain PyTorch."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from conftest import ROOT
from helpers import generated_class
from torch import nn

import fxgen
from fxgen.assemble.module import build_module

SPEC = ROOT / "model_specs" / "gpt2.yaml"
SMALL = {"vocab_size": 97, "block_size": 32, "n_layer": 2, "n_head": 4, "n_embd": 64, "dropout": 0.1}


# -- nanoGPT (Karpathy, model.py), as written there --------------------------------------------
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head, self.n_embd, self.dropout = n_head, n_embd, dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                                           is_causal=True)  # fmt: skip
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, n_embd: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, bias=bias)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout, bias)
        self.ln_2 = nn.LayerNorm(n_embd, bias=bias)
        self.mlp = MLP(n_embd, dropout, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size: int = 50257, block_size: int = 1024, n_layer: int = 12, n_head: int = 12,
                 n_embd: int = 768, dropout: float = 0.0, bias: bool = True, tie: bool = True) -> None:  # fmt: skip
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([Block(n_embd, n_head, dropout, bias) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd, bias=bias),
        ))  # fmt: skip
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        if tie:
            self.transformer.wte.weight = self.lm_head.weight  # nanoGPT's weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


# -- the spec ---------------------------------------------------------------------------------
def _meta_parameters(args: dict[str, Any]) -> int:
    spec = fxgen.load_spec(SPEC, args=args)
    return sum(p.numel() for p in build_module(spec, device="meta").parameters())


def test_gpt2_has_its_published_parameter_count() -> None:
    assert _meta_parameters({}) == 124_439_808  # GPT-2 small, the head tied to the token embedding
    reference = GPT(**{**SMALL, "tie": True})
    assert _meta_parameters({**SMALL, "tie": True}) == sum(p.numel() for p in reference.parameters())
    untied = GPT(**{**SMALL, "tie": False})
    assert _meta_parameters({**SMALL, "tie": False}) == sum(p.numel() for p in untied.parameters())


def _same_weights(reference: GPT, state: dict[str, torch.Tensor], tie: bool) -> None:
    if tie:  # nanoGPT's tied head is the embedding under a second key; the spec uses the embedding itself
        state = {**state, "lm_head.weight": state["transformer.wte.weight"]}
    reference.load_state_dict(state, strict=True)


@pytest.mark.parametrize("tie", [True, False])
def test_gpt2_computes_what_nanogpt_computes_in_both_modes(tie: bool) -> None:
    args = {**SMALL, "tie": tie}
    torch.manual_seed(0)
    gm = fxgen.load(SPEC, args=args)
    spec = fxgen.load_spec(SPEC, args=args)
    source, cls = generated_class(spec)
    compile(source, "gpt2.py", "exec")
    torch.manual_seed(0)
    generated = cls()
    assert list(generated.state_dict()) == list(gm.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(generated.state_dict().values(), gm.state_dict().values(), strict=True))
    reference = GPT(**args)
    _same_weights(reference, gm.state_dict(), tie)
    idx = torch.randint(0, SMALL["vocab_size"], (3, 11))
    for train in (True, False, True):
        outputs = []
        for model in (reference, gm, generated):
            model.train(train)
            torch.manual_seed(7)  # the same dropout draws
            outputs.append(model(idx))
        assert torch.equal(outputs[0], outputs[1]) and torch.equal(outputs[0], outputs[2]), train
    assert not torch.equal(outputs[0], reference.eval()(idx))  # dropout was on: the train-mode check means something


def test_gpt2_weights_start_as_nanogpt_draws_them() -> None:
    torch.manual_seed(0)
    gm = fxgen.load(SPEC, args=SMALL)
    for name, tensor in gm.state_dict().items():
        if name.endswith("c_proj.weight"):
            assert abs(tensor.std().item() - 0.02 / math.sqrt(2 * SMALL["n_layer"])) < 0.004, name
        elif name.endswith(("wte.weight", "wpe.weight", "c_attn.weight", "c_fc.weight")):
            assert abs(tensor.std().item() - 0.02) < 0.004, name
        elif name.endswith("bias") and ".ln_" not in name and "ln_f" not in name:
            assert torch.count_nonzero(tensor) == 0, name
