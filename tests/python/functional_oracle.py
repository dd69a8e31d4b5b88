#!/usr/bin/python3
"""Check functionalization (the `functional_graph` of `aotcache analyze`)
against eager PyTorch, by value.

For every variant of tests/fixtures/scenarios/:
  * runs `AOTCACHE_CLI analyze --json tests/fixtures/graphs/<variant>.json`;
  * builds the variant's inputs (seed 0, as tests/python/eager_oracle.py),
    takes a detached clone of them that keeps their aliasing (inputs sharing
    a storage share one cloned storage), then runs the scenario function
    eagerly on the inputs (under the variant's caller grad mode) and records
    the final value of every input and the outputs;
  * interprets the functional graph with torch under torch.no_grad() on the
    clone: original inputs by name, and for a synthetic base a 1-D tensor
    over the whole cloned storage;
  * checks, with torch.testing.assert_close (exact for ints and bools):
      - the functional graph has no in-place op (no "aten.X_.Y") and does
        not write its inputs;
      - its inputs are the original ones with each synthetic base at its first
        member's position, the other members dropped;
      - it has one output per mutated input (data or metadata, not kept in
        the graph), per user output, and per intermediate base;
      - the new value of each mutated input equals eager's final value of
        that input (shape and values; for a metadata mutation also the
        stride, and for a metadata-only mutation the storage offset);
      - each user output equals eager's output;
      - each intermediate base equals eager's `out._base` of the
        corresponding ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT output.
  Variants whose graph uses random ops are compared by shape only.

Prints one line per failure, then `functional oracle: P passed, F failed`;
exit status 1 if anything failed.

Run from the repository root:
  /usr/bin/python3 tests/python/functional_oracle.py build/client/cli/aotcache
"""

import base64
import json
import operator
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

# eager_oracle also puts tests/fixtures on sys.path.
from eager_oracle import GRAPHS, _arg, _DTYPES, _NP, flat_outputs, normalize, storage_key  # noqa: E402,E501
import scenarios  # noqa: E402
from scenarios import SAVE  # noqa: E402

# Ops whose values depend on the random generator: compare shapes only.
RNG_OPS = {"rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm",
           "bernoulli", "native_dropout", "dropout", "normal", "uniform", "multinomial",
           "exponential", "geometric", "cauchy", "log_normal", "random"}


def op_base_name(op):
    """"aten.add_.Tensor" -> "add_"; getitem -> None."""
    if op in ("getitem", "_operator.getitem"):
        return None
    parts = op.split(".")
    return parts[1] if len(parts) == 3 else parts[-1]


def uses_rng(graph):
    for n in graph.get("nodes", []):
        name = op_base_name(n["op"])
        if name is not None and name.rstrip("_") in RNG_OPS:
            return True
    return False


def storage_numel(t):
    if hasattr(t, "untyped_storage"):
        return t.untyped_storage().nbytes() // t.element_size()
    return t.storage().size()


def aliased_clone(inputs):
    """Detached clones of `inputs`; those sharing a storage share one cloned
    storage, with the same sizes, strides and (absolute) storage offsets."""
    flats = {}
    out = []
    with torch.no_grad():
        for t in inputs:
            key = storage_key(t)
            if key not in flats:
                flats[key] = torch.as_strided(t.detach(), (storage_numel(t),), (1,), 0).clone()
            out.append(flats[key].as_strided(t.shape, t.stride(), t.storage_offset()))
    return out


def snake_keys(obj):
    """Proto3 JSON may spell field names in lowerCamelCase; use the proto names."""
    if isinstance(obj, dict):
        return {re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k): snake_keys(v)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [snake_keys(x) for x in obj]
    return obj


def run_cli(cli, graph_path):
    proc = subprocess.run([cli, "analyze", "--json", graph_path], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    if proc.returncode != 0:
        raise RuntimeError("aotcache exited with %d: %s"
                           % (proc.returncode, proc.stderr.strip()[:500]))
    return normalize(snake_keys(json.loads(proc.stdout)))


def interpret(graph, feeds):
    """Runs `graph` (normalized JSON) on `feeds` (name -> tensor) under no_grad;
    returns the list of its outputs."""
    env = dict(feeds)
    for c in graph.get("constants", []):
        m = c["meta"]
        dtype = m.get("dtype", "DTYPE_FLOAT32")
        arr = np.frombuffer(base64.b64decode(c.get("data", "")), dtype=_NP[dtype]).copy()
        env[c["name"]] = torch.from_numpy(arr).reshape(m.get("shape", [])).to(_DTYPES[dtype])
    with torch.no_grad():
        for n in graph.get("nodes", []):
            op = n["op"]
            if op in ("getitem", "_operator.getitem"):
                fn = operator.getitem
            else:
                ns, name, overload = op.split(".")
                fn = getattr(getattr(getattr(torch.ops, ns), name), overload)
            args = [_arg(a, env) for a in n.get("args", [])]
            kwargs = {k: _arg(a, env) for k, a in n.get("kwargs", {}).items()}
            try:
                env[n["name"]] = fn(*args, **kwargs)
            except Exception as e:
                raise RuntimeError("node %s (%s): %s: %s"
                                   % (n["name"], op, type(e).__name__, e)) from None
    return [env[o] for o in graph.get("outputs", [])]


class Checker:
    def __init__(self, name):
        self.name = name
        self.errors = []

    def fail(self, what, msg):
        self.errors.append("%s: %s: %s" % (self.name, what, msg))

    def close(self, what, got, want, shapes_only=False, layout=None):
        """got: the functional graph's value; want: eager's."""
        if not isinstance(got, torch.Tensor):
            self.fail(what, "functional graph gives a %s, not a tensor" % type(got).__name__)
            return
        want = want.detach()
        if tuple(got.shape) != tuple(want.shape):
            self.fail(what, "shape %s, eager %s" % (tuple(got.shape), tuple(want.shape)))
            return
        if got.dtype != want.dtype:
            self.fail(what, "dtype %s, eager %s" % (got.dtype, want.dtype))
            return
        if layout:
            g = {"stride": got.stride(), "storage_offset": got.storage_offset()}
            w = {"stride": want.stride(), "storage_offset": want.storage_offset()}
            for k in layout:
                if g[k] != w[k]:
                    self.fail(what, "%s %s, eager %s" % (k, g[k], w[k]))
        if shapes_only:
            return
        try:
            torch.testing.assert_close(got, want, equal_nan=True, check_stride=False)
        except AssertionError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            self.fail(what, "values differ from eager (%s)" % "; ".join(lines[:4]))


def expected_functional_inputs(graph, vmd):
    """[(kind, index)]: ("input", i) for a kept original input, ("synthetic", k)
    for synthetic base k, at its first member's position."""
    first_of = {}
    dropped = set()
    for k, sb in enumerate(vmd.get("synthetic_bases", [])):
        members = sorted(sb.get("inputs", []))
        first_of[members[0]] = k
        dropped.update(members[1:])
    res = []
    for i in range(len(graph["inputs"])):
        if i in first_of:
            res.append(("synthetic", first_of[i]))
        elif i not in dropped:
            res.append(("input", i))
    return res


def check_variant(var, cli):
    c = Checker(var.name)
    gpath = os.path.join(GRAPHS, var.name + ".json")
    with open(gpath) as fh:
        graph = normalize(json.load(fh))
    try:
        report = run_cli(cli, gpath)
    except Exception as e:
        c.fail("aotcache analyze", str(e))
        return c, False
    vmd = report.get("view_and_mutation", {})
    fg = report.get("functional_graph")
    if fg is None:
        c.fail("functional_graph", "missing from the report")
        return c, False
    rng = uses_rng(graph) or uses_rng(fg)

    # ---- no in-place op ------------------------------------------------------
    for n in fg.get("nodes", []):
        name = op_base_name(n["op"])
        if name is not None and name.endswith("_"):
            c.fail("functional graph node %s" % n["name"], "in-place op %s" % n["op"])

    # ---- eager ---------------------------------------------------------------
    inputs = var.fresh_inputs()
    if len(inputs) != len(graph["inputs"]):
        c.fail("inputs", "the scenario builds %d inputs, the graph has %d"
               % (len(inputs), len(graph["inputs"])))
        return c, rng
    clones = aliased_clone(inputs)
    clones_before = [t.clone() for t in clones]
    with torch.set_grad_enabled(var.caller_grad):
        outs = flat_outputs(var.fn(*inputs))

    vin = vmd.get("inputs", [])
    vout = vmd.get("outputs", [])
    if len(vin) != len(inputs) or len(vout) != len(outs):
        c.fail("view_and_mutation", "%d inputs / %d outputs, eager has %d / %d"
               % (len(vin), len(vout), len(inputs), len(outs)))
        return c, rng

    # ---- functional inputs ---------------------------------------------------
    layout = expected_functional_inputs(graph, vmd)
    fins = fg.get("inputs", [])
    if len(fins) != len(layout):
        c.fail("functional inputs", "%s, expected %d inputs (%s)"
               % ([x["name"] for x in fins], len(layout), layout))
        return c, rng
    feeds = {}
    n_errors = len(c.errors)
    sbs = vmd.get("synthetic_bases", [])
    for fi, (kind, idx) in zip(fins, layout):
        if kind == "input":
            want_name = graph["inputs"][idx]["name"]
            if fi["name"] != want_name:
                c.fail("functional inputs", "%r where original input %d (%r) belongs"
                       % (fi["name"], idx, want_name))
            feeds[fi["name"]] = clones[idx]
        else:
            sb = sbs[idx]
            if not fi["name"].startswith("synthetic_base_"):
                c.fail("functional inputs", "%r where synthetic base %d belongs" % (fi["name"], idx))
            member = clones[min(sb["inputs"])]
            size = sb.get("size", 0)
            if list(fi["meta"].get("shape", [])) != [size]:
                c.fail("functional inputs", "%r has shape %s, synthetic base %d has size %d"
                       % (fi["name"], fi["meta"].get("shape"), idx, size))
            if size != storage_numel(member):
                c.fail("synthetic_bases[%d].size" % idx, "%d, the storage has %d elements"
                       % (size, storage_numel(member)))
            feeds[fi["name"]] = torch.as_strided(member, (size,), (1,), 0)
    if len(c.errors) > n_errors:
        return c, rng

    # ---- interpret -------------------------------------------------------------
    try:
        fouts = interpret(fg, feeds)
    except Exception as e:
        c.fail("interpreting the functional graph", str(e))
        return c, rng
    for i, (t, b) in enumerate(zip(clones, clones_before)):
        if not torch.equal(t, b):
            c.fail("inputs[%d]" % i, "the functional graph wrote into its input")

    mutated = [i for i, x in enumerate(vin)
               if (x.get("mutates_data") or x.get("mutates_metadata"))
               and not x.get("keep_input_mutations")]
    saves = [k for k, o in enumerate(vout) if o.get("output_type") == SAVE]
    nib = vmd.get("num_intermediate_bases", 0)
    if nib != len(saves):
        c.fail("num_intermediate_bases", "%d, but %d SAVE_AS_OUTPUT outputs" % (nib, len(saves)))
    want_n = len(mutated) + len(outs) + len(saves)
    if len(fouts) != want_n:
        c.fail("functional outputs", "%d, expected %d (%d mutated inputs + %d user outputs + %d "
               "intermediate bases)" % (len(fouts), want_n, len(mutated), len(outs), len(saves)))
        return c, rng

    pos = 0
    for i in mutated:
        x = vin[i]
        lay = []
        if x.get("mutates_metadata"):
            lay = ["stride"] if x.get("mutates_data") else ["stride", "storage_offset"]
        c.close("output %d (new value of input %d %r)" % (pos, i, graph["inputs"][i]["name"]),
                fouts[pos], inputs[i], rng, lay)
        pos += 1
    for k, o in enumerate(outs):
        c.close("output %d (user output %d)" % (pos, k), fouts[pos], o, rng)
        pos += 1
    for j, k in enumerate(saves):
        base = outs[k]._base
        if base is None:
            c.fail("output %d (intermediate base %d)" % (pos, j),
                   "eager's output %d has no _base" % k)
        else:
            c.close("output %d (intermediate base %d, base of user output %d)" % (pos, j, k),
                    fouts[pos], base, rng)
        pos += 1
    return c, rng


def main(argv):
    if len(argv) != 2:
        print("usage: %s PATH_TO_AOTCACHE_CLI" % argv[0], file=sys.stderr)
        return 2
    cli = os.path.abspath(argv[1])
    passed = failed = 0
    shape_only = []
    for var in scenarios.VARIANTS:
        try:
            c, rng = check_variant(var, cli)
        except Exception as e:
            c, rng = Checker(var.name), False
            c.fail("oracle", "%s: %s" % (type(e).__name__, e))
        if rng:
            shape_only.append(var.name)
        if c.errors:
            failed += 1
            for err in c.errors:
                print(err)
        else:
            passed += 1
    if shape_only:
        print("random ops, shapes compared only: %s" % ", ".join(shape_only))
    print("functional oracle: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
