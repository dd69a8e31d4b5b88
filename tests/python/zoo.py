"""The model zoo: the models people train, as they write them.

Each entry builds a module, a batch, and a loss, so that tests and bench/
run the same workloads: through aot_module (the loss outside, in eager) and
through aot_function (the loss inside the compiled function).

Thread-safety: builders make fresh objects; nothing here is shared.
"""

import copy
import math
from typing import Callable, Dict, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F


class Workload(NamedTuple):
    module: nn.Module
    inputs: tuple          # the batch the module takes
    target: torch.Tensor   # what the loss compares against
    loss: Callable         # loss(output, target) -> scalar


class MlpClassifier(nn.Module):
    def __init__(self, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(dropout),
                                 nn.Linear(64, 10))

    def forward(self, x):
        return self.net(x)


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class BasicBlock(nn.Module):
    """torchvision's resnet BasicBlock, written out (see ResNet18)."""

    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):
    """torchvision.models.resnet18 (same modules, names and initialization),
    written out: PyPI's torchvision does not load beside every torch this
    suite runs on."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = 64
        for i, (cout, stride) in enumerate(((64, 1), (128, 2), (256, 2), (512, 2))):
            setattr(self, "layer%d" % (i + 1),
                    nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout)))
            cin = cout
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        return self.drop(self.proj(y))


class DecoderBlock(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, dropout)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d),
                                 nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GptDecoder(nn.Module):
    def __init__(self, vocab=64, block=16, d=32, heads=4, layers=2, dropout=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(block, d)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[DecoderBlock(d, heads, dropout) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.drop(self.tok(idx) + self.pos(pos))
        return self.head(self.ln(self.blocks(x)))


class LstmTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 32, batch_first=True)
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


class Encoder(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=dropout,
                                                batch_first=True)
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


def _classify(out, target):
    return F.cross_entropy(out, target)


def _lm_loss(out, target):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))


def mlp(dropout=0.1):
    return Workload(MlpClassifier(dropout), (torch.randn(8, 32),),
                    torch.randint(0, 10, (8,)), _classify)


def cnn(dropout=0.0):
    return Workload(SmallCnn(), (torch.randn(4, 3, 16, 16),), torch.randint(0, 10, (4,)),
                    _classify)


def resnet18(dropout=0.0):
    return Workload(ResNet18(num_classes=10), (torch.randn(4, 3, 64, 64),),
                    torch.randint(0, 10, (4,)), _classify)


def gpt(dropout=0.1):
    idx = torch.randint(0, 64, (2, 16))
    return Workload(GptDecoder(dropout=dropout), (idx,), torch.randint(0, 64, (2, 16)),
                    _lm_loss)


def encoder(dropout=0.0):
    return Workload(Encoder(dropout), (torch.randn(2, 8, 32),), torch.randint(0, 5, (2,)),
                    _classify)


def lstm(dropout=0.0):
    return Workload(LstmTagger(), (torch.randn(3, 7, 16),), torch.randint(0, 5, (3,)),
                    _classify)


# Each builder takes the dropout probability (ignored by models without).
ZOO: Dict[str, Callable[..., Workload]] = {
    "mlp": mlp,
    "cnn": cnn,
    "resnet18": resnet18,
    "gpt": gpt,
    "encoder": encoder,
    "lstm": lstm,
}


# -- training through the cache, against eager --------------------------------

# How far past float32's own rounding a compiled result may be: our kernels
# accumulate in a different order (and in float64 in the reference kernels).
DRIFT_FACTOR = 4.0
# An absolute floor, relative to the magnitude, for steps whose drift is 0.
RELATIVE_FLOOR = 1e-6
# More ReLU inputs than this within rounding of 0 in one step means the band
# is wrong, not that the model is ill-conditioned.
MAX_KINKS = 64


class _ReluInputs:
    """Records the input of every nn.ReLU call of a module, in call order,
    and can replay a forward with one of those inputs' units on the other
    side of ReLU's kink (the rest as recorded by x > 0)."""

    def __init__(self, module: nn.Module):
        self.inputs = []
        self.flip = None  # (call, flat unit index) to put on the other side
        self._calls = 0
        self._relus = [m for m in module.modules() if isinstance(m, nn.ReLU)]
        for m in self._relus:
            m.inplace = False  # the hook reads the input after the call
            m.register_forward_hook(self._on_call)

    def _on_call(self, module, args, out):
        x, call = args[0], self._calls
        self._calls += 1
        if self.flip is None:
            self.inputs.append(x.detach().clone())
            return None
        if self.flip[0] != call:
            return None
        mask = (x > 0).to(x.dtype).flatten()
        mask[self.flip[1]] = 1 - mask[self.flip[1]]
        return x * mask.view_as(x)

    def start(self, flip=None):
        self.inputs, self.flip, self._calls = [], flip, 0


def _error_past_kinks(wide, relus32, relus64, run_wide, grads64, error):
    """The gradient error left once ReLU's kink is accounted for. A unit
    whose float64 input lies within DRIFT_FACTOR times its call's largest
    float32 rounding of 0 may land on either side in a compiled float32 run
    (its sums are ordered otherwise than eager's), which changes the
    gradients by far more than rounding. Each such unit is flipped alone in
    the float64 model; the changes that bring `error` (compiled - eager,
    per parameter) closest to 0 are taken off it, one at a time while one
    helps. Returns the norm left and how many flips were taken off."""
    near = []
    for call, (x32, x64) in enumerate(zip(relus32.inputs, relus64.inputs)):
        band = DRIFT_FACTOR * float((x32.double() - x64).abs().max())
        near += [(call, int(u)) for u in torch.nonzero(x64.flatten().abs() <= band).flatten()]
    if len(near) > MAX_KINKS:
        raise AssertionError("%d ReLU inputs within rounding of 0: the band is wrong" % len(near))
    changes = []
    for flip in near:
        relus64.start(flip)
        wide.zero_grad(set_to_none=True)
        run_wide().backward()
        changes.append([g - g64 for g, g64 in zip(_grads(wide), grads64)])
    relus64.start()
    flips = 0
    while changes:
        left = [_diff(error, change) for change in changes]
        best = min(range(len(changes)), key=left.__getitem__)
        if left[best] >= _norm(error):
            break
        error = [e - c for e, c in zip(error, changes.pop(best))]
        flips += 1
    return _norm(error), flips


def _grads(module):
    return [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
            for p in module.parameters()]


def _norm(tensors):
    return math.sqrt(sum(float(t.double().pow(2).sum()) for t in tensors))


def _diff(a, b):
    return _norm([x.double() - y.double() for x, y in zip(a, b)])


def _copy_state(dst, src):
    with torch.no_grad():
        for d, s in zip(list(dst.parameters()) + list(dst.buffers()),
                        list(src.parameters()) + list(src.buffers())):
            d.copy_(s)


def train(name, form, steps=5, server=None, seed=0, dropout=0.0):
    """Trains zoo model `name` for `steps` Adam steps, eager and compiled side
    by side at identical parameters: every step, both compute the loss and
    the gradients from the same parameters and buffers, then eager's
    optimizer steps and its state is copied into the compiled model. A
    float64 eager copy at the same parameters measures float32's own
    rounding (the bound a compiler error must stay under).

    Returns per step: loss_error (|compiled - eager|), loss_drift (|eager32 -
    eager64|), grad_error and grad_drift (norms over all parameters), and
    buffer_error (running statistics after the step), plus cache_info."""
    from aotcache.torch import aot_function, aot_module

    torch.manual_seed(seed)
    w = ZOO[name](dropout)
    eager = w.module.train()
    compiled_model = copy.deepcopy(eager)
    wide = copy.deepcopy(eager).double()
    relus32, relus64 = _ReluInputs(eager), _ReluInputs(wide)
    if form == "module":
        compiled = aot_module(compiled_model, server=server)

        def run(*inputs):
            return w.loss(compiled(*inputs), w.target)
    elif form == "compile":  # torch.compile(backend="aotcache"), loss outside
        # Dynamo leaves nn.LSTM to eager unless told (the README says so).
        torch._dynamo.config.allow_rnn = True
        compiled = torch.compile(compiled_model, backend="aotcache",
                                 options={"server": server} if server else None)

        def run(*inputs):
            return w.loss(compiled(*inputs), w.target)
    else:
        run = aot_function(lambda *inputs: w.loss(compiled_model(*inputs), w.target),
                           server=server)
    opt = torch.optim.Adam(eager.parameters(), lr=1e-2)
    wide_inputs = tuple(x.double() if x.is_floating_point() else x for x in w.inputs)
    rows = []
    for _ in range(steps):
        _copy_state(compiled_model, eager)
        _copy_state(wide, eager)
        for m in (eager, compiled_model, wide):
            m.zero_grad(set_to_none=True)
        loss_c = run(*w.inputs)
        loss_c.backward()
        relus32.start()
        relus64.start()
        wide_buffers = [b.clone() for b in wide.buffers()]
        loss_w = w.loss(wide(*wide_inputs), w.target)
        loss_w.backward()
        loss_e = w.loss(eager(*w.inputs), w.target)
        loss_e.backward()
        ge, gc, gw = _grads(eager), _grads(compiled_model), _grads(wide)
        row = {
            "loss": float(loss_e),
            "loss_error": abs(float(loss_c) - float(loss_e)),
            "loss_drift": abs(float(loss_e) - float(loss_w)),
            "grad_norm": _norm(ge),
            "grad_error": _diff(gc, ge),
            "grad_drift": _diff(ge, gw),
            "grad_error_past_kinks": None,
            "kinks_flipped": 0,
            "buffer_error": _diff(list(compiled_model.buffers()), list(eager.buffers())),
            "buffer_drift": _diff(list(eager.buffers()), list(wide.buffers())),
        }
        if row["grad_error"] > DRIFT_FACTOR * row["grad_drift"] + RELATIVE_FLOOR * row["grad_norm"]:
            # Only then: a replay per unit near a kink costs a float64 step.
            def run_wide():
                with torch.no_grad():
                    for b, saved in zip(wide.buffers(), wide_buffers):
                        b.copy_(saved)
                return w.loss(wide(*wide_inputs), w.target)
            error = [c.double() - e.double() for c, e in zip(gc, ge)]
            row["grad_error_past_kinks"], row["kinks_flipped"] = _error_past_kinks(
                wide, relus32, relus64, run_wide, gw, error)
        rows.append(row)
        opt.step()
    return {"steps": rows, "cache_info": _cache_info(form, compiled if form == "module" else run)}


def _cache_info(form, compiled):
    if form.startswith("compile"):
        import aotcache.dynamo
        return aotcache.dynamo.cache_info()
    return compiled.cache_info()


def evaluate(name, form="eval", server=None, seed=0, batches=3):
    """Zoo model `name` in eval mode under no_grad through aot_module (form
    "eval") or torch.compile ("compile-eval"), on `batches` batches, against
    eager float32 and float64. Returns per batch output_error, output_drift
    and output_norm, plus cache_info."""
    from aotcache.torch import aot_module

    torch.manual_seed(seed)
    w = ZOO[name](0.0)
    eager = w.module.eval()
    wide = copy.deepcopy(eager).double()
    if form == "eval":
        compiled = aot_module(copy.deepcopy(eager), server=server)
    else:
        compiled = torch.compile(copy.deepcopy(eager), backend="aotcache",
                                 options={"server": server} if server else None)
    rows = []
    with torch.no_grad():
        for _ in range(batches):
            inputs = tuple(torch.randn_like(x) if x.is_floating_point() else x
                           for x in w.inputs)
            got, want = compiled(*inputs), eager(*inputs)
            exact = wide(*(x.double() if x.is_floating_point() else x for x in inputs))
            rows.append({"output_error": _diff([got], [want]),
                         "output_drift": _diff([want], [exact]),
                         "output_norm": _norm([want])})
    return {"steps": rows, "cache_info": _cache_info(form, compiled)}


if __name__ == "__main__":
    # One run in its own process: zoo.py NAME FORM [SERVER], FORM "module"
    # (aot_module, loss outside), "function" (aot_function, loss inside),
    # "compile" (torch.compile(backend="aotcache"), loss outside), "eval"
    # or "compile-eval"; prints JSON.
    import json
    import sys
    server = sys.argv[3] if len(sys.argv) > 3 else None
    if sys.argv[2].endswith("eval"):
        result = evaluate(sys.argv[1], sys.argv[2], server=server)
    else:
        result = train(sys.argv[1], sys.argv[2], server=server)
    print(json.dumps(result))
