#!/usr/bin/python3
"""Writes tests/fuzz/seeds/graph/*.json: small graphs traced with make_fx
that use the op families the model zoo brought (losses, convolution, batch
norm, pooling, indexing, the decomposed ops, selecting reductions,
random ops), so that the graph
fuzzer starts from them and scripts/test replays them. Byte-identical when
nothing changed.

    PYTHONPATH=build/python /usr/bin/python3 tools/make_op_seeds.py
"""

import json
import os

import torch
import torch.nn.functional as F

from aotcache import fx_export

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   "tests", "fuzz", "seeds", "graph")


def cross_entropy(x, w):
    return F.cross_entropy(x @ w, torch.tensor([0, 2, 1]), ignore_index=1)


def cnn(x, w, g, b, rm, rv):
    y = F.conv2d(x, w, stride=1, padding=1, groups=1)
    y = F.batch_norm(y, rm, rv, g, b, training=True)
    y = F.max_pool2d(y.relu(), 2) + F.avg_pool2d(y, 2, ceil_mode=True)
    return F.adaptive_avg_pool2d(y, (1, 2)).sum()


def attention(x, e):
    q, k = (x + F.embedding(torch.tensor([[1, 0, 2, 1]]), e)).split(2, dim=-1)
    att = (q @ k.transpose(-2, -1)).masked_fill(
        ~torch.ones(4, 4, dtype=torch.bool).tril(), float("-inf"))
    return torch.stack(list(att.softmax(-1).unbind(1)), 0).sum() * torch.arange(1, 3).sum()


def selecting(x, i, t):
    v, j = x.clamp(-1, 1).max(1)
    y = torch.gather(x, 1, i).sum() + x.index_select(0, i[:, 0]).sum() + v.sum()
    y = y + x.scatter_add(1, i, x[:, :2]).index_add(0, i[:, 0], x, alpha=2).argmax().float() + j.sum()
    var, mean = torch.var_mean(x, 1)
    return y + F.binary_cross_entropy_with_logits(x, t, pos_weight=torch.ones(4)) + \
        torch.baddbmm(x[None], x[None, :, :3], x[None, :3]).sum() + var.sum() + mean.sum()


def dropout(x):
    return F.dropout(x, 0.25, training=True).sum()


CASES = {
    "cross_entropy": (cross_entropy, lambda: (torch.randn(3, 4), torch.randn(4, 5).requires_grad_())),
    "conv_norm_pool": (cnn, lambda: (torch.randn(2, 3, 6, 6), torch.randn(4, 3, 3, 3).requires_grad_(),
                                     torch.ones(4).requires_grad_(), torch.zeros(4).requires_grad_(),
                                     torch.zeros(4), torch.ones(4))),
    "attention_decomposed": (attention, lambda: (torch.randn(1, 4, 4).requires_grad_(),
                                                 torch.randn(3, 4).requires_grad_())),
    "selecting_and_indexing": (selecting, lambda: (torch.randn(3, 4).requires_grad_(),
                                                   torch.tensor([[0, 1], [2, 3], [1, 1]]),
                                                   torch.rand(3, 4))),
    "dropout": (dropout, lambda: (torch.randn(8).requires_grad_(),)),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (fn, make) in CASES.items():
        torch.manual_seed(0)
        graph = fx_export.export_graph(fn, *make())
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(graph, f, indent=2, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
