#!/usr/bin/python3
"""Record the GRADIENTS torch eager computes for the training scenario variants.

For every variant of tests/fixtures/scenarios/ (in VARIANTS order) whose
expected mode (tests/fixtures/expected_analysis.json) is MODE_TRAINING and
whose inputs share no storage with each other, and on which eager can run
backward at all (otherwise the variant is skipped and reported), writes

  tests/fixtures/grads/<variant>.json

to test a C++ autodiff of tests/fixtures/graphs/<variant>.json against.
Layout (keys in this order; a tensor is {shape, dtype, data}, data being
base64 of the little-endian row-major values, as in tests/fixtures/values/):

  name, graph                  the variant and its graph file
  output_cotangents[]          one per user output: randn(shape, dtype) from a
                               torch.Generator seeded 1234 + j if the eager
                               output requires grad, else null
  mutated_input_cotangents[]   one per input: randn of the input's NEW shape
                               (seed 5678 + i) if the call mutates its data
                               (expected mutates_data) and it requires grad
                               after the call, else null
  input_grads[]                one per input: the gradient with respect to the
                               input's value AS PASSED, or null exactly where
                               eager gives None (always for an input that does
                               not require grad)

How the gradients are computed.  The inputs are the value fixtures' (the
same ``variant.fresh_inputs()``, checked against the graph file with
make_value_fixtures' helpers), with one handle per input that requires grad:
a LEAF whose .grad is the gradient w.r.t. the input as passed:
  * a leaf input: the input itself;
  * a non-leaf ``leaf.clone()`` (scenarios' N): that leaf;
  * any other non-leaf (scenarios' B: ``base.add(1)``, or a view of it): a new
    leaf ``src`` with the input's values, the input rebuilt from it with the
    same values and layout -- ``src.clone()`` when the input is contiguous and
    fills its storage, else a copy of the whole storage whose region of the
    input is ``copy_``'d from src (so shape, stride, offset and storage size
    stay the graph's).
The function runs eagerly under the variant's caller grad mode (RNG seeded as
in make_value_fixtures), then torch.autograd.backward runs on the outputs
that have a cotangent and on the caller's (mutated) input tensors that have
one, and each handle's .grad is read.  An output can require grad without any
gradient edge (a view made under no_grad): it keeps its cotangent, but eager
cannot backpropagate through it, so it is left out of backward (listed in
the report and in tests/fixtures/grads/README.md).

Finite-difference check.  Every written variant is checked in float64
(central differences, step 1e-6, on a float64 copy of the inputs rebuilt the
same way) on L = sum_j <out_j, cot_j> + sum_i <new input_i, cot_i>: each
recorded gradient must match (rtol 1e-4, atol 1e-5) and a null gradient must
have a numeric gradient that is exactly zero.  Variants where autograd's
recorded history intentionally differs from the math (FD_SKIP below) are not
checked; their numeric gradient is still computed and reported as
information.  Any disagreement is reported and the exit status is 1.

Output is deterministic (one intra-op thread, seeded generators): rerunning
gives identical bytes.  Run: /usr/bin/python3 tools/make_grad_fixtures.py
"""

import json
import os
import sys
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import torch  # noqa: E402

import make_value_fixtures as mvf  # noqa: E402  (also puts tests/fixtures on sys.path)

scenarios = mvf.scenarios

GRADS_DIR = os.path.join(ROOT, "tests", "fixtures", "grads")
EXPECTED = os.path.join(ROOT, "tests", "fixtures", "expected_analysis.json")

OUT_SEED = 1234
MUT_SEED = 5678
FD_STEP = 1e-6
FD_RTOL = 1e-4
FD_ATOL = 1e-5

# Scenarios whose eager gradients intentionally differ from the derivative of
# the computed values: autograd does not record the write or the region.
_DETACH = "mutation through detach(): the write is invisible to autograd"
_NO_GRAD_MUT = "mutation under no_grad: the write is invisible to autograd"
FD_SKIP = {
    "input_mutation_requires_grad_detach": _DETACH,
    "input_mutation_requires_grad_no_grad": _NO_GRAD_MUT,
    "input_mutation_requires_grad_no_grad_detach_mixed":
        "mutations through detach() and under no_grad (the tracked mul_(3) is recorded, "
        "the others are not)",
    "data_mutation": "mutation through .data: the write is invisible to autograd",
    "view_under_no_grad": "no_grad region: the view made under no_grad has no gradient edge, "
                          "so nothing flows back through either output",
    "intermediate_view_under_no_grad": "no_grad region: the output, a view made under no_grad, "
                                       "has no gradient edge",
    "hand_canonical_json": _NO_GRAD_MUT,
    "hand_torch2_style": _DETACH,
}


class FixtureError(mvf.FixtureError):
    pass


class EagerBackwardError(Exception):
    """torch.autograd.backward raised in eager: no gradient to record."""


# ---------------------------------------------------------------------------
# Inputs: recipes, handles, rebuilding (native dtype or float64, perturbed)
# ---------------------------------------------------------------------------
def _fills_storage(t):
    return (t.is_contiguous() and t.storage_offset() == 0
            and mvf.storage_numel(t) == t.numel())


def _clone_source(t):
    """The leaf L if t is ``L.clone()`` (scenarios' N), else None."""
    fn = t.grad_fn
    if fn is None or type(fn).__name__ != "CloneBackward0" or len(fn.next_functions) != 1:
        return None
    nxt = fn.next_functions[0][0]
    leaf = getattr(nxt, "variable", None)  # AccumulateGrad
    if (leaf is None or not leaf.is_leaf or leaf.shape != t.shape
            or leaf.stride() != t.stride() or not _fills_storage(leaf) or not _fills_storage(t)):
        return None
    return leaf


class Recipe:
    """How input i was made, and a snapshot (taken before any call) to remake it."""

    def __init__(self, name, i, t):
        self.t = t
        self.leaf = None
        if t.is_leaf:
            self.kind = "leaf"
            if t.requires_grad and not _fills_storage(t):
                raise FixtureError("%s: input %d is a leaf view that requires grad (unsupported)"
                                   % (name, i))
        else:
            self.leaf = _clone_source(t)
            self.kind = "clone" if self.leaf is not None else "rebuild"
        self.shape = tuple(t.shape)
        self.stride = tuple(t.stride())
        self.offset = t.storage_offset()
        self.requires_grad = t.requires_grad
        self.fills_storage = _fills_storage(t)
        src = self.leaf if self.kind == "clone" else t
        self.vals = src.detach().clone(memory_format=torch.contiguous_format)
        self.store = storage_flat(t, None)

    def make(self, dtype=None, delta=None):
        """(input, handle leaf or None).  dtype None and no delta: the original
        objects where possible (call once).  delta: (flat element, amount) added
        to the handle's value."""
        if dtype is None and delta is None and self.kind in ("leaf", "clone"):
            if self.kind == "clone":
                return self.t, self.leaf
            return self.t, (self.t if self.requires_grad else None)
        v = _as(self.vals.clone(), dtype)
        if delta is not None:
            v.view(-1)[delta[0]] += delta[1]
        if self.kind == "leaf":
            if not self.fills_storage:  # a view of a leaf without grad: keep its layout
                x = _as(self.store.clone(), dtype).as_strided(self.shape, self.stride,
                                                               self.offset)
                x.copy_(v)
                return x, None
            v.requires_grad_(self.requires_grad)
            return v, (v if self.requires_grad else None)
        src = v.requires_grad_(True)
        with torch.enable_grad():
            if self.kind == "clone" or self.fills_storage:
                return src.clone(), src
            store = _as(self.store.clone(), dtype)
            x = store.as_strided(self.shape, self.stride, self.offset)
            x.copy_(src)  # x (a view of store) now requires grad through src
            return x, src


def _as(t, dtype):
    if dtype is not None and t.is_floating_point():
        return t.to(dtype)
    return t


def storage_flat(t, dtype):
    """A copy (no grad) of the whole storage t lives in, as a flat tensor."""
    n = mvf.storage_numel(t)
    return _as(t.detach().as_strided((n,), (1,), 0).clone(), dtype)


def describe_inputs(name, inputs):
    """(storages, inputs) in make_value_fixtures' layout, for check_against_graph."""
    ids, storages, ins = {}, [], []
    for i, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor):
            raise FixtureError("%s: input %d is not a tensor" % (name, i))
        key = mvf.storage_key(t)
        dt = mvf.dtype_name(t, "%s: input %d" % (name, i))
        if key not in ids:
            ids[key] = len(ids)
            storages.append({"id": ids[key], "dtype": dt, "size": mvf.storage_numel(t),
                             "data": mvf.storage_b64(t)})
        ins.append({"storage": ids[key], "shape": list(t.shape), "stride": list(t.stride()),
                    "storage_offset": t.storage_offset(), "requires_grad": t.requires_grad,
                    "is_leaf": t.is_leaf})
    return storages, ins


def tensor_json(t, what):
    return {"shape": list(t.shape), "dtype": mvf.dtype_name(t, what), "data": mvf.b64(t)}


def seeded_randn(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(tuple(shape), generator=g, dtype=dtype)


def has_gradient_edge(t):
    """Whether backward can start at t.  A view made under no_grad of a tensor
    that requires grad reports requires_grad but has neither a grad_fn nor a
    grad accumulator of its own."""
    return t.requires_grad and (t.grad_fn is not None or not t._is_view())


def run(var, inputs):
    torch.manual_seed(mvf.RNG_SEED)
    with torch.set_grad_enabled(var.caller_grad):
        return mvf.flat_outputs(var.fn(*inputs))


# ---------------------------------------------------------------------------
# One variant
# ---------------------------------------------------------------------------
def record(var, exp, graph):
    name = var.name
    originals = var.fresh_inputs()
    recipes = [Recipe(name, i, t) for i, t in enumerate(originals)]
    inputs, handles = [], []
    for r in recipes:
        x, h = r.make()
        inputs.append(x)
        handles.append(h)

    # The inputs used are the value fixtures' (same storages, layouts, flags).
    want = describe_inputs(name, originals)
    got = describe_inputs(name, inputs)
    if got != want:
        raise FixtureError("%s: rebuilt inputs differ from fresh_inputs():\n  %r\n  %r"
                           % (name, got, want))
    mvf.check_against_graph(name, graph, *got)

    before = [storage_flat(t, None) for t in inputs]
    outs = run(var, inputs)
    if len(outs) != len(graph.get("outputs", [])) or len(outs) != len(exp["outputs"]):
        raise FixtureError("%s: eager gives %d outputs, graph %d, expected %d"
                           % (name, len(outs), len(graph.get("outputs", [])),
                              len(exp["outputs"])))
    if len(inputs) != len(exp["inputs"]):
        raise FixtureError("%s: %d inputs, expected %d" % (name, len(inputs), len(exp["inputs"])))

    # Cross-check the expected facts this file relies on against eager.
    errors = []
    for j, o in enumerate(outs):
        if o.requires_grad != exp["outputs"][j]["requires_grad"]:
            errors.append("outputs[%d].requires_grad: eager %s" % (j, o.requires_grad))
    for i, t in enumerate(inputs):
        ei = exp["inputs"][i]
        if t.requires_grad != ei["requires_grad"]:
            errors.append("inputs[%d].requires_grad after: eager %s" % (i, t.requires_grad))
        changed = not torch.equal(before[i], storage_flat(t, None))
        if changed != ei["mutates_data"]:
            errors.append("inputs[%d].mutates_data: expected %s, values changed %s"
                          % (i, ei["mutates_data"], changed))
    if errors:
        raise FixtureError("%s: expected_analysis.json disagrees with eager:\n  %s"
                           % (name, "\n  ".join(errors)))

    out_cots = [seeded_randn(o.shape, o.dtype, OUT_SEED + j) if o.requires_grad else None
                for j, o in enumerate(outs)]
    mut_cots = [seeded_randn(t.shape, t.dtype, MUT_SEED + i)
                if exp["inputs"][i]["mutates_data"] and t.requires_grad else None
                for i, t in enumerate(inputs)]

    roots, cots, edgeless = [], [], []
    for j, (o, c) in enumerate(zip(outs, out_cots)):
        if c is None:
            continue
        if has_gradient_edge(o):
            roots.append(o)
            cots.append(c)
        else:
            edgeless.append("output %d" % j)
    for i, (t, c) in enumerate(zip(inputs, mut_cots)):
        if c is None:
            continue
        if has_gradient_edge(t):
            roots.append(t)
            cots.append(c)
        else:
            edgeless.append("input %d" % i)
    if roots:
        try:
            torch.autograd.backward(roots, cots)
        except RuntimeError as e:  # eager itself cannot differentiate the call
            raise EagerBackwardError(str(e).split("\n")[0]) from None

    grads = []
    for i, h in enumerate(handles):
        gr = None if h is None else h.grad
        if gr is not None and tuple(gr.shape) != recipes[i].shape:
            raise FixtureError("%s: gradient of input %d has shape %s, input %s"
                               % (name, i, list(gr.shape), list(recipes[i].shape)))
        grads.append(gr)

    rec = {
        "name": name,
        "graph": name + ".json",
        "output_cotangents": [None if c is None else tensor_json(c, "%s: cotangent" % name)
                              for c in out_cots],
        "mutated_input_cotangents": [None if c is None else tensor_json(c, "%s: cotangent" % name)
                                     for c in mut_cots],
        "input_grads": [None if gr is None else tensor_json(gr, "%s: grad" % name)
                        for gr in grads],
    }
    return rec, recipes, out_cots, mut_cots, grads, edgeless


# ---------------------------------------------------------------------------
# Finite differences (float64)
# ---------------------------------------------------------------------------
def fd_loss(var, recipes, out_cots, mut_cots, perturb=None):
    inputs = []
    for i, r in enumerate(recipes):
        delta = perturb[1:] if perturb is not None and perturb[0] == i else None
        inputs.append(r.make(torch.float64, delta)[0])
    outs = run(var, inputs)
    total = torch.zeros((), dtype=torch.float64)
    for o, c in zip(outs, out_cots):
        if c is not None:
            total = total + (o.detach().to(torch.float64) * c.to(torch.float64)).sum()
    for t, c in zip(inputs, mut_cots):
        if c is not None:
            total = total + (t.detach().to(torch.float64) * c.to(torch.float64)).sum()
    return total.item()


def fd_check(var, recipes, out_cots, mut_cots, grads):
    """[] if every recorded gradient matches the numeric one, else the problems."""
    problems = []
    for i, r in enumerate(recipes):
        if not r.requires_grad:
            continue
        n = r.vals.numel()
        num = torch.zeros(n, dtype=torch.float64)
        for k in range(n):
            lp = fd_loss(var, recipes, out_cots, mut_cots, (i, k, FD_STEP))
            lm = fd_loss(var, recipes, out_cots, mut_cots, (i, k, -FD_STEP))
            num[k] = (lp - lm) / (2 * FD_STEP)
        num = num.view(r.shape)
        gr = grads[i]
        if gr is None:
            if bool((num != 0).any()):
                problems.append("input %d: eager gives None, numeric gradient is not zero "
                                "(max |g| %.3g)" % (i, num.abs().max().item()))
        else:
            g64 = gr.to(torch.float64)
            if not torch.allclose(g64, num, rtol=FD_RTOL, atol=FD_ATOL):
                problems.append("input %d: max |recorded - numeric| %.3g (max |numeric| %.3g)"
                                % (i, (g64 - num).abs().max().item(), num.abs().max().item()))
    return problems


# ---------------------------------------------------------------------------
def main():
    start = time.time()
    torch.set_num_threads(1)  # reductions in one fixed order: identical bytes on rerun
    with open(EXPECTED, encoding="utf-8") as fh:
        expected = {e["name"]: e for e in json.load(fh)}

    written, aliased, skipped, failed, edgeless_all, info = [], [], [], [], [], []
    no_backward = []
    records = {}
    try:
        for var in scenarios.VARIANTS:
            exp = expected.get(var.name)
            if exp is None:
                raise FixtureError("%s: not in expected_analysis.json" % var.name)
            if exp["mode"] != scenarios.TRAIN:
                continue
            keys = [mvf.storage_key(t) for t in var.fresh_inputs()]
            if len(set(keys)) != len(keys):
                aliased.append(var.name)
                continue
            gpath = os.path.join(mvf.GRAPHS_DIR, var.name + ".json")
            if not os.path.exists(gpath):
                raise FixtureError("%s: missing %s (run tools/make_fixtures.py)"
                                   % (var.name, gpath))
            with open(gpath, encoding="utf-8") as fh:
                graph = mvf.normalize(json.load(fh))
            try:
                rec, recipes, out_cots, mut_cots, grads, edgeless = record(var, exp, graph)
            except EagerBackwardError as e:
                no_backward.append("%s: %s" % (var.name, e))
                continue
            records[var.name] = rec
            written.append(var.name)
            if edgeless:
                edgeless_all.append("%s (%s)" % (var.name, ", ".join(edgeless)))
            problems = fd_check(var, recipes, out_cots, mut_cots, grads)
            reason = FD_SKIP.get(var.scenario)
            if reason is not None:
                skipped.append((var.name, reason))
                info.append("%s: %s" % (var.name, "; ".join(problems) if problems
                                        else "numeric gradient agrees anyway"))
            elif problems:
                failed.append("%s: %s" % (var.name, "; ".join(problems)))
    except mvf.FixtureError as e:
        sys.stderr.write("make_grad_fixtures: %s\n" % e)
        return 1

    os.makedirs(GRADS_DIR, exist_ok=True)
    wanted = {n + ".json" for n in written}
    for stale in sorted(os.listdir(GRADS_DIR)):
        if stale.endswith(".json") and stale not in wanted:
            os.remove(os.path.join(GRADS_DIR, stale))
    for n in written:
        text = json.dumps(records[n], indent=1, ensure_ascii=False, allow_nan=False) + "\n"
        with open(os.path.join(GRADS_DIR, n + ".json"), "w", encoding="utf-8") as fh:
            fh.write(text)

    print("make_grad_fixtures: %d variants written to %s (%.1f s)"
          % (len(written), os.path.relpath(GRADS_DIR, ROOT), time.time() - start))
    print("skipped, inputs share a storage (%d): %s" % (len(aliased), ", ".join(aliased)))
    print("skipped, eager backward raises (no file written) (%d):" % len(no_backward))
    for line in no_backward:
        print("  " + line)
    print("finite-difference check skipped (%d):" % len(skipped))
    for n, why in skipped:
        print("  %s: %s" % (n, why))
    print("  (information, not checked) numeric vs recorded on those:")
    for line in info:
        print("    " + line)
    print("outputs/inputs requiring grad without a gradient edge (cotangent recorded, "
          "not backpropagated) (%d): %s" % (len(edgeless_all), ", ".join(edgeless_all)))
    if failed:
        print("FINITE-DIFFERENCE DISAGREEMENTS (%d):" % len(failed))
        for line in failed:
            print("  " + line)
        return 1
    print("finite-difference check: %d variants agree" % (len(written) - len(skipped)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
