#!/usr/bin/python3
"""Record what torch EAGER computes for every scenario variant.

For every variant of tests/fixtures/scenarios/ (in VARIANTS order), runs the
variant's function eagerly, exactly as tests/python/eager_oracle.py does
(fresh inputs from ``variant.fresh_inputs()``, i.e. seed 0 -- the seed
tools/make_fixtures.py exported the graph with -- under the variant's
caller grad mode, NOT under no_grad), and writes

  tests/fixtures/values/<variant>.json

with the storages and inputs before the call, the eager outputs, the inputs
after the call and which input (if any) each output shares storage with, so
that a C++ runtime executing tests/fixtures/graphs/<variant>.json can be
checked against eager.  Layout of a file (keys in this order):

  name, graph                 the variant and its graph file
  storages[]                  {id, dtype, size (elements), data}: every input
                              storage's whole contents BEFORE the call; ids
                              numbered in order of first appearance (the
                              exporter's convention, fx_export.py)
  inputs[]                    {storage, shape, stride, storage_offset,
                              requires_grad, is_leaf}, one per graph input
  outputs[]                   {shape, dtype, data}: eager outputs, values in
                              row-major (contiguous) order
  inputs_after[]              {shape, stride, storage_offset, dtype, data}:
                              every input after the call (metadata may have
                              changed through t_/unsqueeze_ ...)
  output_aliases_input[]      per output, the LOWEST index of an input whose
                              storage the output shares in eager, else -1
  uses_rng                    the graph has rand_like/randn_like/bernoulli/
                              native_dropout (outputs then not comparable)

``data`` is base64 of little-endian raw bytes (bool: one byte per element).
The inputs written are checked against the graph file (shape, stride,
offset, requires_grad, is_leaf, dtype, storage ids and storage sizes); any
mismatch aborts.  Hand-written graphs in canonical proto3 JSON
(lowerCamelCase, int64 as strings, defaults omitted, no storages) are
normalised first; an input without a storage id has a storage of its own,
"just large enough for it" (graph.proto).

Output is deterministic (one intra-op thread, fixed RNG seed before every
eager call): rerunning gives identical bytes.
Run: /usr/bin/python3 tools/make_value_fixtures.py
"""

import base64
import json
import os
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))

import torch  # noqa: E402

import scenarios  # noqa: E402

GRAPHS_DIR = os.path.join(ROOT, "tests", "fixtures", "graphs")
VALUES_DIR = os.path.join(ROOT, "tests", "fixtures", "values")

RNG_OPS = ("rand_like", "randn_like", "bernoulli", "native_dropout")
RNG_SEED = 0

_DTYPES = {
    torch.float32: "DTYPE_FLOAT32",
    torch.float64: "DTYPE_FLOAT64",
    torch.int64: "DTYPE_INT64",
    torch.bool: "DTYPE_BOOL",
}


class FixtureError(Exception):
    pass


# ---------------------------------------------------------------------------
# Tensor helpers (torch 1.13: no untyped_storage(), storage() is a TypedStorage)
# ---------------------------------------------------------------------------
def _storage(t):
    if hasattr(t, "untyped_storage"):  # torch >= 2.0
        return t.untyped_storage()
    return t.storage()


def storage_key(t):
    """As aotcache.torch_version.storage_key: equal keys <=> same memory."""
    ptr = _storage(t).data_ptr()
    if ptr == 0:  # empty storage: aliases nothing
        return ("empty", id(t))
    return (str(t.device), ptr)


def storage_numel(t):
    return _storage(t).nbytes() // t.element_size()


def dtype_name(t, what):
    try:
        return _DTYPES[t.dtype]
    except KeyError:
        raise FixtureError("%s has unsupported dtype %s" % (what, t.dtype)) from None


def b64(t):
    """base64 of t's values, row-major, little-endian."""
    arr = t.detach().contiguous().cpu().numpy()
    arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
    return base64.b64encode(arr.tobytes()).decode("ascii")


def storage_b64(t):
    """base64 of the whole storage t lives in (all its elements, in t's dtype)."""
    n = storage_numel(t)
    flat = t.detach().as_strided((n,), (1,), 0)
    return b64(flat)


def flat_outputs(out):
    """As eager_oracle.flat_outputs."""
    if isinstance(out, torch.Tensor):
        return [out]
    res = []
    for o in out:
        res.extend(flat_outputs(o))
    return res


# ---------------------------------------------------------------------------
# Graph file: normalise the proto3-JSON spellings
# ---------------------------------------------------------------------------
_CAMEL = {"storageOffset": "storage_offset", "requiresGrad": "requires_grad",
          "isLeaf": "is_leaf", "gradMode": "grad_mode", "outputMeta": "output_meta"}
_INT64_KEYS = {"shape", "stride", "storage_offset", "size", "int", "values", "storage", "id"}


def normalize(obj, key=None):
    if isinstance(obj, dict):
        return {_CAMEL.get(k, k): normalize(v, _CAMEL.get(k, k)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [normalize(x, key) for x in obj]
    if key in _INT64_KEYS and isinstance(obj, str):
        return int(obj)
    return obj


def contiguous_strides(shape):
    stride, acc = [], 1
    for size in reversed(shape):
        stride.insert(0, acc)
        acc *= max(size, 1)
    return stride


def extent(shape, stride, offset):
    """Elements a tensor needs in its storage (0 if it has no elements)."""
    if any(s == 0 for s in shape):
        return 0
    return offset + 1 + sum((s - 1) * st for s, st in zip(shape, stride))


def check_against_graph(name, graph, storages, inputs):
    """Fail loudly unless the recorded storages/inputs are the graph file's."""
    errors = []
    g_inputs = graph.get("inputs", [])
    if len(g_inputs) != len(inputs):
        raise FixtureError("%s: graph has %d inputs, eager %d"
                           % (name, len(g_inputs), len(inputs)))
    g_sizes = {s.get("id", 0): s.get("size", 0) for s in graph.get("storages", [])}
    by_id = {s["id"]: s for s in storages}
    g_ids = []
    for i, (gi, inp) in enumerate(zip(g_inputs, inputs)):
        m = gi.get("meta", {})
        shape = list(m.get("shape", []))
        stride = list(m.get("stride", [])) or contiguous_strides(shape)
        got = (shape, stride, m.get("storage_offset", 0), m.get("requires_grad", False),
               m.get("is_leaf", False), m.get("dtype"))
        want = (inp["shape"], inp["stride"], inp["storage_offset"], inp["requires_grad"],
                inp["is_leaf"], by_id[inp["storage"]]["dtype"])
        if got != want:
            errors.append("inputs[%d] (shape, stride, offset, requires_grad, is_leaf, dtype): "
                          "graph %r, eager %r" % (i, got, want))
        if "storage" in gi:
            sid = gi["storage"]
            if sid not in g_sizes:
                errors.append("inputs[%d]: storage %d not in graph storages" % (i, sid))
            elif g_sizes[sid] != by_id[inp["storage"]]["size"]:
                errors.append("inputs[%d]: storage size graph %d, eager %d"
                              % (i, g_sizes[sid], by_id[inp["storage"]]["size"]))
            g_ids.append(sid)
        else:
            # Unset: a storage of its own, just large enough for the input.
            own = extent(shape, stride, m.get("storage_offset", 0))
            if by_id[inp["storage"]]["size"] != own:
                errors.append("inputs[%d]: no graph storage (own storage of %d elements), "
                              "eager storage has %d" % (i, own, by_id[inp["storage"]]["size"]))
            g_ids.append(("own", i))
    # Same sharing pattern, and (where the graph numbers storages) the same ids.
    eager_ids = [inp["storage"] for inp in inputs]
    for i in range(len(inputs)):
        for j in range(i):
            if (g_ids[i] == g_ids[j]) != (eager_ids[i] == eager_ids[j]):
                errors.append("inputs[%d]/[%d]: graph and eager disagree on sharing a storage"
                              % (j, i))
        if not isinstance(g_ids[i], tuple) and g_ids[i] != eager_ids[i]:
            errors.append("inputs[%d]: storage id graph %d, eager %d"
                          % (i, g_ids[i], eager_ids[i]))
    if "storages" in graph and sorted(g_sizes) != sorted(by_id):
        errors.append("storage ids: graph %r, eager %r" % (sorted(g_sizes), sorted(by_id)))
    if errors:
        raise FixtureError("%s: graph file %s.json disagrees with the eager inputs:\n  %s"
                           % (name, name, "\n  ".join(errors)))


def graph_uses_rng(graph):
    for n in graph.get("nodes", []):
        op = n.get("op", "")
        parts = op.split(".")
        packet = parts[1] if len(parts) >= 2 and parts[0] == "aten" else op
        if packet in RNG_OPS:
            return True
    return False


# ---------------------------------------------------------------------------
# One variant
# ---------------------------------------------------------------------------
def record(var):
    gpath = os.path.join(GRAPHS_DIR, var.name + ".json")
    if not os.path.exists(gpath):
        raise FixtureError("%s: missing %s (run tools/make_fixtures.py)" % (var.name, gpath))
    with open(gpath, encoding="utf-8") as fh:
        graph = normalize(json.load(fh))

    # The same inputs the graph exporter used (make_fixtures: fresh_inputs()).
    inputs = var.fresh_inputs()
    ids = {}
    storages, ins = [], []
    for i, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor):
            raise FixtureError("%s: input %d is not a tensor" % (var.name, i))
        what = "%s: input %d" % (var.name, i)
        key = storage_key(t)
        dt = dtype_name(t, what)
        if key not in ids:
            ids[key] = len(ids)
            storages.append({"id": ids[key], "dtype": dt, "size": storage_numel(t),
                             "data": storage_b64(t)})
        elif storages[ids[key]]["dtype"] != dt:
            raise FixtureError("%s: inputs of different dtypes share storage %d"
                               % (var.name, ids[key]))
        ins.append({"storage": ids[key], "shape": list(t.shape), "stride": list(t.stride()),
                    "storage_offset": t.storage_offset(), "requires_grad": t.requires_grad,
                    "is_leaf": t.is_leaf})
    check_against_graph(var.name, graph, storages, ins)

    # Eager, as eager_oracle runs it (grad mode = the caller's, never no_grad).
    torch.manual_seed(RNG_SEED)
    with torch.set_grad_enabled(var.caller_grad):
        outs = flat_outputs(var.fn(*inputs))
    n_out = len(graph.get("outputs", []))
    if len(outs) != n_out:
        raise FixtureError("%s: eager gives %d outputs, graph has %d"
                           % (var.name, len(outs), n_out))

    in_keys = [storage_key(t) for t in inputs]
    outputs, aliases = [], []
    for k, o in enumerate(outs):
        if not isinstance(o, torch.Tensor):
            raise FixtureError("%s: output %d is not a tensor" % (var.name, k))
        outputs.append({"shape": list(o.shape),
                        "dtype": dtype_name(o, "%s: output %d" % (var.name, k)),
                        "data": b64(o)})
        ok = storage_key(o)
        aliases.append(next((i for i, key in enumerate(in_keys) if key == ok), -1))
    after = []
    for i, t in enumerate(inputs):
        after.append({"shape": list(t.shape), "stride": list(t.stride()),
                      "storage_offset": t.storage_offset(),
                      "dtype": dtype_name(t, "%s: input %d after" % (var.name, i)),
                      "data": b64(t)})
    return {
        "name": var.name,
        "graph": var.name + ".json",
        "storages": storages,
        "inputs": ins,
        "outputs": outputs,
        "inputs_after": after,
        "output_aliases_input": aliases,
        "uses_rng": graph_uses_rng(graph),
    }


def main():
    torch.set_num_threads(1)  # reductions in one fixed order: identical bytes on rerun
    os.makedirs(VALUES_DIR, exist_ok=True)
    wanted = {v.name + ".json" for v in scenarios.VARIANTS}
    for stale in sorted(os.listdir(VALUES_DIR)):
        if stale.endswith(".json") and stale not in wanted:
            os.remove(os.path.join(VALUES_DIR, stale))
    n_rng = 0
    try:
        for var in scenarios.VARIANTS:
            rec = record(var)
            n_rng += rec["uses_rng"]
            text = json.dumps(rec, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
            with open(os.path.join(VALUES_DIR, var.name + ".json"), "w",
                      encoding="utf-8") as fh:
                fh.write(text)
    except FixtureError as e:
        sys.stderr.write("make_value_fixtures: %s\n" % e)
        return 1
    print("make_value_fixtures: %d variants written to %s (%d use RNG)"
          % (len(scenarios.VARIANTS), os.path.relpath(VALUES_DIR, ROOT), n_rng))
    return 0


if __name__ == "__main__":
    sys.exit(main())
