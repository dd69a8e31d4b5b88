"""nn.LSTM through aot_module against eager: values, gradients of the
input, the initial states and every weight, for stacked, bidirectional,
sequence-first and batch-first layers (torch 2.x records mkldnn_rnn_layer,
torch 1.13 the cell's ops)."""

import copy

import pytest
import torch
import torch.nn as nn

from aotcache.torch import aot_module


class Tagger(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.lstm = nn.LSTM(6, 5, **kw)

    def forward(self, x, h0, c0):
        out, (h, c) = self.lstm(x, (h0, c0))
        return out.sum() + 2 * h.sum() + 3 * c.sum()


@pytest.mark.parametrize("kw", [
    dict(),
    dict(batch_first=True),
    dict(num_layers=2),
    dict(bidirectional=True, batch_first=True),
    dict(num_layers=2, bidirectional=True, bias=False),
])
def test_lstm_values_and_gradients(daemon, kw):
    torch.manual_seed(0)
    eager = Tagger(**kw)
    model = copy.deepcopy(eager)
    compiled = aot_module(model, server=daemon)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    x = torch.randn(3, 4, 6) if kw.get("batch_first") else torch.randn(4, 3, 6)
    states = [torch.randn(layers, 3, 5) for _ in range(2)]
    args_c = [t.clone().requires_grad_() for t in [x] + states]
    args_e = [t.clone().requires_grad_() for t in [x] + states]
    got, want = compiled(*args_c), eager(*args_e)
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
    got.backward()
    want.backward()
    for a, b in zip(args_c, args_e):
        assert torch.allclose(a.grad, b.grad, atol=1e-5), (a.grad - b.grad).abs().max()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-5), name
    assert compiled.cache_info()[0]["mode"] == "training"


@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2, bidirectional=True)])
def test_lstm_in_eval_under_no_grad(daemon, kw):
    # Validation as trainers write it; torch 2.x's mkldnn_rnn_layer returns
    # no workspace under no_grad (an undefined fourth result).
    torch.manual_seed(0)
    eager = Tagger(**kw).eval()
    compiled = aot_module(copy.deepcopy(eager), server=daemon)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    args = [torch.randn(4, 3, 6)] + [torch.randn(layers, 3, 5) for _ in range(2)]
    with torch.no_grad():
        got, want = compiled(*args), eager(*args)
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
    assert compiled.cache_info()[0]["mode"] == "inference"
