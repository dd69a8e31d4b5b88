#!/usr/bin/python3
"""A training loop as people write it, run three ways in one process: eager
in float32 (the oracle), eager in float64 (to measure float32's own
rounding: the drift), and compiled through aotcache in float32. Prints one
JSON line: per compared tensor the compiled error and the drift, and the
compiled functions' cache_info.

    training_loop.py FORM SERVER      FORM: module | function

The loop: a small language model with tied input and output embeddings,
LayerNorm and BatchNorm, returning a dict, called with keyword arguments;
AdamW with weight decay, clip_grad_norm_, a LR scheduler, gradients
accumulated over two micro-batches, an eval every 3 steps in eval mode
(with grad on, and under no_grad), an EMA copy updated in place and
evaluated through a compiled function of its own, a checkpoint saved through
state_dict and a resume from it, and a layer frozen half way.
"""

import copy
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from aotcache.torch import aot_function, aot_module

VOCAB, BLOCK, WIDTH, BATCH = 32, 8, 16, 4
STEPS, FREEZE_AT, CHECKPOINT_AT, EVAL_EVERY = 6, 3, 4, 3


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.mix = nn.Linear(WIDTH, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.bn = nn.BatchNorm1d(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.head.weight = self.embed.weight  # weight tying

    def forward(self, idx, *, targets=None):
        # Batch norm before layer norm: after it, it would take each
        # feature's mean out again, so the layer norm's bias would get a
        # gradient that is rounding noise, which AdamW scales up to whole
        # steps: a chaotic parameter no run could match another's on.
        h = torch.tanh(self.mix(self.embed(idx)))
        h = self.bn(h.reshape(-1, WIDTH)).reshape(idx.shape + (WIDTH,))
        logits = self.head(self.norm(h))
        out = {"logits": logits}
        if targets is not None:
            out["loss"] = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        return out


def _batches(dtype_seed: int):
    g = torch.Generator().manual_seed(dtype_seed)
    data = torch.randint(0, VOCAB, (STEPS * 2 + 2, BATCH, BLOCK + 1), generator=g)
    return [(d[:, :-1], d[:, 1:]) for d in data]


def _new_run(dtype, form, server):
    torch.manual_seed(0)
    model = TinyLM().to(dtype)
    ema = copy.deepcopy(model).requires_grad_(False)
    if form == "eager":
        call, ema_call = model, ema
    elif form == "module":
        call, ema_call = aot_module(model, server=server), aot_function(
            lambda idx: ema(idx), server=server)
    else:
        call = aot_function(lambda idx, targets=None: model(idx, targets=targets),
                            server=server)
        ema_call = aot_function(lambda idx: ema(idx), server=server)
    opt = torch.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, ema, call, ema_call, opt, sched


def _train(dtype, form, server, start=None):
    """Runs the loop; `start` (a checkpoint) resumes from it. Returns the
    final state, what each eval gave, and the checkpoint taken."""
    model, ema, call, ema_call, opt, sched = _new_run(dtype, form, server)
    first = 0
    if start is not None:
        model.load_state_dict(start["model"])
        ema.load_state_dict(start["ema"])
        opt.load_state_dict(start["opt"])
        sched.load_state_dict(start["sched"])
        first = start["step"]
        if first >= FREEZE_AT:
            model.norm.requires_grad_(False)
    batches = _batches(0)
    evals, checkpoint = [], None
    for step in range(first, STEPS):
        if step == FREEZE_AT:
            model.norm.requires_grad_(False)
        model.train()
        opt.zero_grad()
        for micro in range(2):
            idx, tgt = batches[2 * step + micro]
            loss = call(idx, targets=tgt)["loss"] / 2
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        with torch.no_grad():
            for e, p in zip(ema.parameters(), model.parameters()):
                e.mul_(0.9).add_(p, alpha=0.1)
            for e, b in zip(ema.buffers(), model.buffers()):
                e.copy_(b)
        if (step + 1) % EVAL_EVERY == 0:
            model.eval()
            idx, tgt = batches[-1]
            evals.append(call(idx, targets=tgt)["loss"].detach())  # grad on
            with torch.no_grad():
                evals.append(call(idx, targets=tgt)["loss"])
                evals.append(ema_call(idx)["logits"].sum())
        if step + 1 == CHECKPOINT_AT:
            checkpoint = copy.deepcopy({"model": model.state_dict(), "ema": ema.state_dict(),
                                        "opt": opt.state_dict(), "sched": sched.state_dict(),
                                        "step": step + 1})
    state = {**{"model." + k: v for k, v in model.state_dict().items()},
             **{"ema." + k: v for k, v in ema.state_dict().items()},
             **{"eval.%d" % i: v for i, v in enumerate(evals)}}
    infos = [] if form == "eager" else call.cache_info() + ema_call.cache_info()
    return state, checkpoint, infos


def _errors(compiled, eager32, eager64):
    rows = {}
    for name, want in eager32.items():
        got = compiled[name].double()
        want = want.double()
        rows[name] = {"error": (got - want).abs().max().item(),
                      "drift": (eager64[name].double() - want).abs().max().item(),
                      "scale": want.abs().max().item()}
    return rows


def main():
    form, server = sys.argv[1], sys.argv[2]
    eager32, ckpt32, _ = _train(torch.float32, "eager", server)
    eager64, _, _ = _train(torch.float64, "eager", server)
    compiled, ckpt, infos = _train(torch.float32, form, server)
    resumed, _, resumed_infos = _train(torch.float32, form, server, start=ckpt)
    eager_resumed, _, _ = _train(torch.float32, "eager", server, start=ckpt32)
    print(json.dumps({
        "loop": _errors(compiled, eager32, eager64),
        # Resumed from the compiled run's checkpoint, against eager resumed
        # from its own: evals taken before the checkpoint are not in it.
        "resumed": {k: {"error": (resumed[k].double() - eager_resumed[k].double())
                        .abs().max().item(), "drift": v["drift"], "scale": v["scale"]}
                    for k, v in _errors(compiled, eager32, eager64).items()
                    if k in resumed and k in eager_resumed and not k.startswith("eval")},
        "cache_info": [{"status": i["status"], "key": i["key"], "eager": i["eager"]}
                       for i in infos + resumed_infos],
    }))


if __name__ == "__main__":
    main()
