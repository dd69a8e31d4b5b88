#!/usr/bin/python3
"""Check the hand-written analysis expectations against eager PyTorch.

For every entry of tests/fixtures/expected_analysis.json, runs the scenario's
function (tests/fixtures/scenarios/) EAGERLY on fresh inputs and checks
what eager lets one observe:

  inputs   requires_grad after the call; is_leaf as passed; mutates_data ==
           "its values changed" and == "some op wrote its storage";
           mutates_metadata == "its shape/stride/offset changed";
           mutations_under_no_grad == "every write into its storage ran with
           grad mode off" (writes and their grad mode are logged by a
           TorchDispatchMode in a second eager run)
  outputs  requires_grad; ALIAS_OF_INPUT/IS_INPUT exactly when the output
           shares a storage with an input (the base_idx input's), IS_INPUT
           exactly when it is that input object; for the others, the
           intermediate classes from eager's autograd views (`_base`), and
           num_intermediate_bases
  mode     recomputed with SEMANTICS.md §4's rule from the observations
and the graph file: its inputs match the eager inputs, and replaying it op
by op (each node under its recorded grad mode) gives eager's outputs
(values, requires_grad, layout) and eager's effect on the inputs;
plus the expectation's own consistency (tangents by rule e, synthetic bases
by rule f, mode by §4 from the expected fields).

Exit status 1 on any mismatch (each printed as variant: field: ...).
Run from the repository root: /usr/bin/python3 tests/python/eager_oracle.py
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import scenarios  # noqa: E402
from scenarios import AOI, AOIM, BUO, ISI, NON, SAVE, UNSAFE  # noqa: E402

EXPECTED = os.path.join(ROOT, "tests", "fixtures", "expected_analysis.json")
GRAPHS = os.path.join(ROOT, "tests", "fixtures", "graphs")

# In-place ops that change only a tensor's metadata (they are `Tensor(a!)` in
# their schema but write no data).
METADATA_ONLY = {"t_", "transpose_", "unsqueeze_", "squeeze_", "as_strided_", "swapdims_",
                 "swapaxes_", "detach_", "resize_"}


def storage_key(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr()


def flat_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    res = []
    for o in out:
        res.extend(flat_outputs(o))
    return res


class WriteLog(TorchDispatchMode):
    """Records (storage, grad mode) for every tensor an op writes."""

    def __init__(self):
        super().__init__()
        self.writes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name not in METADATA_ONLY:
            schema = func._schema
            for i, arg in enumerate(schema.arguments):
                if arg.alias_info is None or not arg.alias_info.is_write:
                    continue
                val = args[i] if i < len(args) else kwargs.get(arg.name)
                if isinstance(val, torch.Tensor):
                    self.writes.append((storage_key(val), torch.is_grad_enabled(), str(func)))
        return func(*args, **kwargs)


class Checker:
    def __init__(self, name):
        self.name = name
        self.errors = []

    def eq(self, field, got, want, source="eager"):
        if got != want:
            self.errors.append("%s: %s: expected %r, %s gives %r"
                               % (self.name, field, want, source, got))

    def fail(self, field, msg):
        self.errors.append("%s: %s: %s" % (self.name, field, msg))


def rule_mode(rg_passed, inputs, outputs):
    """SEMANTICS.md §4, on plain facts."""
    needs = any(rg_passed)
    if not needs:
        return scenarios.INFER
    outputs_need = any(o["requires_grad"] and not (
        o["output_type"] in (AOI, ISI) and inputs[o["base_idx"]]["requires_grad"])
        for o in outputs)
    mutations_need = any(i["requires_grad"] and i["mutates_data"]
                         and not i["mutations_under_no_grad_or_inference_mode"]
                         and not i["mutations_hidden_from_autograd"] for i in inputs)
    return scenarios.TRAIN if (outputs_need or mutations_need) else scenarios.INFER


def check_consistency(c, exp, storages):
    """The expectation against its own rules (e: tangents, f: synthetic bases)."""
    ins, outs = exp["inputs"], exp["outputs"]
    tangents = [["MUTATED_INPUT", i] for i, x in enumerate(ins)
                if x["mutates_data"] and x["requires_grad"]]
    tangents += [["USER_OUTPUT", i] for i, o in enumerate(outs)
                 if o["output_type"] in (NON, UNSAFE) and o["requires_grad"]]
    tangents += [["INTERMEDIATE_BASE", i] for i in range(exp["num_intermediate_bases"])]
    c.eq("consistency: tangents (rule e)", tangents, exp["tangents"], "the rule")
    groups = {}
    for i, key in enumerate(storages):
        groups.setdefault(key, []).append(i)
    sb = [idxs for idxs in groups.values()
          if len(idxs) >= 2 and any(ins[i]["mutates_data"] for i in idxs)]
    c.eq("consistency: synthetic_bases (rule f)", sorted(sb), sorted(exp["synthetic_bases"]),
         "the rule")
    for i, x in enumerate(ins):
        if x["mutations_under_no_grad_or_inference_mode"] and not x["mutates_data"]:
            c.fail("consistency: inputs[%d]" % i, "under no_grad without a data mutation")
        if x["mutations_hidden_from_autograd"]:
            c.fail("consistency: inputs[%d]" % i, "no op here hides its mutations")
    nib = 0
    for k, o in enumerate(outs):
        t, b = o["output_type"], o["base_idx"]
        if t in (NON, UNSAFE):
            if b is not None:
                c.fail("consistency: outputs[%d].base_idx" % k, "must be null for %s" % t)
        elif t == SAVE:
            c.eq("consistency: outputs[%d].base_idx" % k, nib, b, "counting SAVE_AS_OUTPUT")
            nib += 1
        elif t == AOIM:
            if b is None or b >= nib:
                c.fail("consistency: outputs[%d].base_idx" % k, "no such intermediate base yet")
    c.eq("consistency: num_intermediate_bases", nib, exp["num_intermediate_bases"],
         "counting SAVE_AS_OUTPUT")


# ---------------------------------------------------------------------------
# Graph replay: run the graph JSON op by op, each node under its recorded
# grad mode, and compare with eager.  Accepts both JSON spellings of the
# proto3 mapping (snake_case or lowerCamelCase names, int64 as numbers or
# strings).
# ---------------------------------------------------------------------------
_CAMEL = {"storageOffset": "storage_offset", "requiresGrad": "requires_grad",
          "isLeaf": "is_leaf", "gradMode": "grad_mode", "outputMeta": "output_meta"}
_INT64_KEYS = {"shape", "stride", "storage_offset", "size", "int", "values", "storage", "id"}
_DTYPES = {"DTYPE_FLOAT32": torch.float32, "DTYPE_FLOAT64": torch.float64,
           "DTYPE_INT64": torch.int64, "DTYPE_BOOL": torch.bool}
_NP = {"DTYPE_FLOAT32": "<f4", "DTYPE_FLOAT64": "<f8", "DTYPE_INT64": "<i8", "DTYPE_BOOL": "|b1"}


def normalize(obj, key=None):
    if isinstance(obj, dict):
        return {_CAMEL.get(k, k): normalize(v, _CAMEL.get(k, k)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [normalize(x, key) for x in obj]
    if key in _INT64_KEYS and isinstance(obj, str):
        return int(obj)
    return obj


def _arg(a, env):
    (kind, val), = a.items()
    if kind == "node":
        return env[val]
    if kind == "float":
        return float({"Infinity": "inf", "-Infinity": "-inf", "NaN": "nan"}.get(val, val))
    if kind in ("int", "bool"):
        return val
    if kind == "string":
        if val.startswith("torch.") and hasattr(torch, val[6:]):
            return getattr(torch, val[6:])
        return val
    if kind == "ints":
        return list(val.get("values", []))
    if kind == "dtype":
        return _DTYPES[val]
    if kind == "none":
        return None
    if kind == "nodes":
        return [env[n] for n in val.get("names", [])]
    if kind == "device":
        return torch.device(val)
    raise ValueError("unknown Argument kind %r" % kind)


def replay(graph, inputs, caller_grad):
    import base64
    import operator
    import numpy as np
    env = {}
    for gi, t in zip(graph["inputs"], inputs):
        env[gi["name"]] = t
    for c in graph.get("constants", []):
        m = c["meta"]
        arr = np.frombuffer(base64.b64decode(c["data"]), dtype=_NP[m["dtype"]]).copy()
        env[c["name"]] = torch.from_numpy(arr).reshape(m.get("shape", []))
    for n in graph["nodes"]:
        op = n["op"]
        if op in ("getitem", "_operator.getitem"):
            fn = operator.getitem
        else:
            ns, name, overload = op.split(".")
            fn = getattr(getattr(getattr(torch.ops, ns), name), overload)
        args = [_arg(a, env) for a in n.get("args", [])]
        kwargs = {k: _arg(a, env) for k, a in n.get("kwargs", {}).items()}
        mode = {"GRAD_MODE_ENABLED": True, "GRAD_MODE_DISABLED": False}.get(
            n.get("grad_mode"), caller_grad)
        with torch.set_grad_enabled(mode):
            env[n["name"]] = fn(*args, **kwargs)
    return [env[o] for o in graph["outputs"]]


def same_values(x, y):
    return x.shape == y.shape and torch.equal(x.detach(), y.detach())


def check_replay(c, var, graph, eager_outs, eager_inputs):
    graph = normalize(graph)
    inputs = var.fresh_inputs()
    with torch.set_grad_enabled(var.caller_grad):
        outs = replay(graph, inputs, var.caller_grad)
    c.eq("replay: number of outputs", len(outs), len(eager_outs), "replay")
    for k, (o, e) in enumerate(zip(outs, eager_outs)):
        if not same_values(o, e):
            c.fail("replay: outputs[%d]" % k, "values differ from eager")
        c.eq("replay: outputs[%d].requires_grad" % k, o.requires_grad, e.requires_grad,
             "replay")
        c.eq("replay: outputs[%d] layout" % k, (o.stride(), o.storage_offset()),
             (e.stride(), e.storage_offset()), "replay")
    for i, (t, e) in enumerate(zip(inputs, eager_inputs)):
        if not same_values(t, e):
            c.fail("replay: inputs[%d]" % i, "values after the call differ from eager")
        c.eq("replay: inputs[%d] (requires_grad, shape, stride) after" % i,
             (t.requires_grad, tuple(t.shape), t.stride()),
             (e.requires_grad, tuple(e.shape), e.stride()), "replay")


def check_variant(var, exp):
    c = Checker(var.name)
    n_in, n_out = len(exp["inputs"]), len(exp["outputs"])

    # ---- run 1: plain eager -------------------------------------------------
    inputs = var.fresh_inputs()
    c.eq("len(inputs)", len(inputs), n_in)
    before = []
    for t in inputs:
        before.append({
            "rg": t.requires_grad, "leaf": t.is_leaf, "shape": tuple(t.shape),
            "stride": t.stride(), "offset": t.storage_offset(),
            "values": t.detach().clone(), "storage": storage_key(t),
        })
    storages = [b["storage"] for b in before]
    with torch.set_grad_enabled(var.caller_grad):
        outs = flat_outputs(var.fn(*inputs))
    c.eq("len(outputs)", len(outs), n_out)
    if c.errors:
        return c

    changed = []
    for i, (t, b, e) in enumerate(zip(inputs, before, exp["inputs"])):
        f = "inputs[%d]." % i
        c.eq(f + "is_leaf (as passed)", b["leaf"], e["is_leaf"])
        c.eq(f + "requires_grad (after)", t.requires_grad, e["requires_grad"])
        now = t.detach().as_strided(b["shape"], b["stride"], b["offset"])
        ch = not torch.equal(now, b["values"])
        changed.append(ch)
        c.eq(f + "mutates_data (values changed)", ch, e["mutates_data"])
        meta_changed = (tuple(t.shape), t.stride(), t.storage_offset()) != (
            b["shape"], b["stride"], b["offset"])
        c.eq(f + "mutates_metadata (shape/stride/offset changed)", meta_changed,
             e["mutates_metadata"])

    # outputs: requires_grad and aliasing of inputs
    out_storage = [storage_key(o) for o in outs]
    for k, (o, e) in enumerate(zip(outs, exp["outputs"])):
        f = "outputs[%d]." % k
        c.eq(f + "requires_grad", o.requires_grad, e["requires_grad"])
        aliases_input = out_storage[k] in storages
        c.eq(f + "output_type in (ALIAS_OF_INPUT, IS_INPUT) (shares an input's storage)",
             e["output_type"] in (AOI, ISI), aliases_input)
        is_some_input = any(o is t for t in inputs)
        if e["output_type"] in (AOI, ISI):
            b = e["base_idx"]
            if b is None or not 0 <= b < n_in:
                c.fail(f + "base_idx", "not an input index: %r" % (b,))
                continue
            c.eq(f + "base_idx input shares the output's storage",
                 storages[b] == out_storage[k], True)
            c.eq(f + "output_type == IS_INPUT (output is inputs[base_idx])",
                 e["output_type"] == ISI, o is inputs[b])
        else:
            c.eq(f + "is an input object", is_some_input, False)

    # outputs: aliases of intermediates, from eager's autograd views
    last_index = {}
    for k, o in enumerate(outs):
        last_index[id(o)] = k
    ib_ids = {}
    for k, (o, e) in enumerate(zip(outs, exp["outputs"])):
        if out_storage[k] in storages:
            continue
        f = "outputs[%d]." % k
        if o._is_view() and o.requires_grad and o._base.requires_grad:
            base = o._base
            if id(base) in last_index:
                got = (BUO, last_index[id(base)])
            elif id(base) in ib_ids:
                got = (AOIM, ib_ids[id(base)])
            else:
                ib_ids[id(base)] = len(ib_ids)
                got = (SAVE, ib_ids[id(base)])
        else:
            same = [j for j, p in enumerate(outs)
                    if p is not o and p.requires_grad and out_storage[j] == out_storage[k]
                    and (p.shape, p.stride(), p.storage_offset())
                    == (o.shape, o.stride(), o.storage_offset())]
            if not o.requires_grad and same:
                got = (BUO, last_index[id(outs[same[0]])])
            else:
                got = (NON, None)
        c.eq(f + "(output_type, base_idx) from eager views", got,
             (e["output_type"], e["base_idx"]))
    c.eq("num_intermediate_bases (eager views)", len(ib_ids), exp["num_intermediate_bases"])

    # ---- run 2: log every write and its grad mode ----------------------------
    inputs2 = var.fresh_inputs()
    storages2 = [storage_key(t) for t in inputs2]
    log = WriteLog()
    with torch.set_grad_enabled(var.caller_grad):
        with log:
            var.fn(*inputs2)
    written, under_no_grad = [], []
    for i in range(n_in):
        modes = [grad for (s, grad, _) in log.writes if s == storages2[i]]
        written.append(bool(modes))
        under_no_grad.append(bool(modes) and not any(modes))
        f = "inputs[%d]." % i
        c.eq(f + "mutates_data (storage written)", written[i], exp["inputs"][i]["mutates_data"])
        c.eq(f + "mutations_under_no_grad_or_inference_mode (every write with grad off)",
             under_no_grad[i], exp["inputs"][i]["mutations_under_no_grad_or_inference_mode"])

    # ---- mode from eager observations ----------------------------------------
    obs_inputs = [{"requires_grad": t.requires_grad, "mutates_data": written[i],
                   "mutations_under_no_grad_or_inference_mode": under_no_grad[i],
                   "mutations_hidden_from_autograd": False} for i, t in enumerate(inputs)]
    obs_outputs = []
    for k, o in enumerate(outs):
        alias = [i for i in range(n_in) if storages[i] == out_storage[k]]
        b = exp["outputs"][k]["base_idx"] if exp["outputs"][k]["base_idx"] in alias else (
            alias[0] if alias else None)
        obs_outputs.append({"requires_grad": o.requires_grad,
                            "output_type": AOI if alias else NON, "base_idx": b})
    rg_passed = [b["rg"] for b in before]
    c.eq("mode (SEMANTICS §4 from eager observations)", rule_mode(rg_passed, obs_inputs,
                                                                   obs_outputs), exp["mode"])
    c.eq("consistency: mode (SEMANTICS §4 from the expected fields)",
         rule_mode(rg_passed, exp["inputs"], exp["outputs"]), exp["mode"], "the rule")
    check_consistency(c, exp, storages)

    # ---- the graph file agrees with the inputs -------------------------------
    gpath = os.path.join(GRAPHS, exp["graph"])
    if not os.path.exists(gpath):
        c.fail("graph", "missing %s (run tools/make_fixtures.py)" % exp["graph"])
    else:
        with open(gpath) as fh:
            graph = json.load(fh)
        try:
            check_replay(c, var, graph, outs, inputs)
        except Exception as e:
            c.fail("replay", "%s: %s" % (type(e).__name__, e))
    if os.path.exists(gpath) and var.hand_graph is None:
        c.eq("graph: number of inputs", len(graph["inputs"]), n_in)
        c.eq("graph: number of outputs", len(graph["outputs"]), n_out)
        for i, (gi, b) in enumerate(zip(graph["inputs"], before)):
            m = gi["meta"]
            c.eq("graph: inputs[%d] meta" % i,
                 (tuple(m["shape"]), tuple(m["stride"]), m["storage_offset"],
                  m["requires_grad"], m["is_leaf"]),
                 (b["shape"], b["stride"], b["offset"], b["rg"], b["leaf"]))
        ids = {}
        for i, key in enumerate(storages):
            ids.setdefault(key, len(ids))
        c.eq("graph: input storage ids", [gi["storage"] for gi in graph["inputs"]],
             [ids[k] for k in storages])
    return c


def main():
    with open(EXPECTED) as fh:
        expected = json.load(fh)
    by_name = {v.name: v for v in scenarios.VARIANTS}
    passed = failed = 0
    seen = set()
    for exp in expected:
        var = by_name.get(exp["name"])
        if var is None:
            print("%s: no such variant in tests/fixtures/scenarios" % exp["name"])
            failed += 1
            continue
        seen.add(exp["name"])
        try:
            c = check_variant(var, exp)
        except Exception as e:  # an eager error is a failure of the fixture
            c = Checker(var.name)
            c.fail("eager run", "%s: %s" % (type(e).__name__, e))
        if c.errors:
            failed += 1
            for err in c.errors:
                print(err)
        else:
            passed += 1
    for name in sorted(set(by_name) - seen):
        print("%s: missing from expected_analysis.json (run tools/make_fixtures.py)" % name)
        failed += 1
    print("eager oracle: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
