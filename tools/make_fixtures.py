#!/usr/bin/python3
"""Regenerate the analysis fixtures from the tests/fixtures/scenarios/ package.

Writes
  tests/fixtures/graphs/<variant>.json   the exported (or hand-written) Graph
  tests/fixtures/expected_analysis.json  the hand-written expectations
  examples/{mlp,input_mutation,view_detach,aliased_inputs}.json

Output is deterministic: running it twice gives identical bytes.
Run from anywhere with Debian's interpreter: /usr/bin/python3 tools/make_fixtures.py
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))

import torch  # noqa: E402

from aotcache.fx_export import export_graph  # noqa: E402
import scenarios  # noqa: E402

GRAPHS_DIR = os.path.join(ROOT, "tests", "fixtures", "graphs")
EXPECTED = os.path.join(ROOT, "tests", "fixtures", "expected_analysis.json")
EXAMPLES_DIR = os.path.join(ROOT, "examples")

EXAMPLES = {
    "mlp.json": "mlp_mse__rg",
    "input_mutation.json": "input_mutation_simple__rg",
    "view_detach.json": "view_detach__rg",
    "aliased_inputs.json": "input_mutation_aliases_other_input__rg",
}


def _scalar(x):
    return json.dumps(x, ensure_ascii=False, allow_nan=False)


def dumps(obj, indent=0):
    """Pretty JSON with 2-space indent; short objects and lists of scalars stay on one
    line.  Keys keep their insertion order (deterministic)."""
    if isinstance(obj, (dict, list, tuple)) and obj:
        flat = json.dumps(obj, ensure_ascii=False, allow_nan=False)
        if len(flat) + 2 * indent <= 88:
            return flat
    pad = "  " * indent
    inner = "  " * (indent + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = ["%s%s: %s" % (inner, _scalar(k), dumps(v, indent + 1)) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, (list, tuple)):
        if not obj:
            return "[]"
        if all(not isinstance(x, (dict, list, tuple)) for x in obj):
            return "[" + ", ".join(_scalar(x) for x in obj) + "]"
        items = [inner + dumps(x, indent + 1) for x in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return _scalar(obj)


def write(path, obj):
    text = dumps(obj) + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def graph_of(variant):
    if variant.hand_graph is not None:
        return variant.hand_graph
    inputs = variant.fresh_inputs()
    before = [snapshot(t) for t in inputs]
    with torch.set_grad_enabled(variant.caller_grad):
        graph = export_graph(variant.fn, *inputs)
    if [snapshot(t) for t in inputs] != before:
        raise SystemExit("%s: export_graph changed the caller's tensors" % variant.name)
    return graph


def snapshot(t):
    """Everything export_graph must leave alone in a caller's tensor."""
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.requires_grad, t.is_leaf,
            type(t.grad_fn).__name__, t._version, t.detach().clone().tolist())


def main():
    os.makedirs(GRAPHS_DIR, exist_ok=True)
    os.makedirs(EXAMPLES_DIR, exist_ok=True)
    wanted = {v.name + ".json" for v in scenarios.VARIANTS}
    for stale in sorted(os.listdir(GRAPHS_DIR)):
        if stale.endswith(".json") and stale not in wanted:
            os.remove(os.path.join(GRAPHS_DIR, stale))

    graphs = {}
    expected = []
    for v in scenarios.VARIANTS:
        g = graph_of(v)
        graphs[v.name] = g
        if v.hand_graph is None:
            n_in, n_out = len(g["inputs"]), len(g["outputs"])
            if n_in != len(v.expected["inputs"]) or n_out != len(v.expected["outputs"]):
                raise SystemExit("%s: graph has %d inputs / %d outputs, expectation %d / %d"
                                 % (v.name, n_in, n_out, len(v.expected["inputs"]),
                                    len(v.expected["outputs"])))
        write(os.path.join(GRAPHS_DIR, v.name + ".json"), g)
        e = v.expected
        expected.append({
            "name": v.name,
            "graph": v.name + ".json",
            "mode": e["mode"],
            "inputs": e["inputs"],
            "outputs": e["outputs"],
            "num_intermediate_bases": e["num_intermediate_bases"],
            "synthetic_bases": e["synthetic_bases"],
            "tangents": e["tangents"],
            "why": dict({"scenario": v.source, "caller_grad_mode":
                         "enabled" if v.caller_grad else "disabled"}, **e["why"]),
        })
    write(EXPECTED, expected)
    for fname, vname in EXAMPLES.items():
        write(os.path.join(EXAMPLES_DIR, fname), graphs[vname])
    print("make_fixtures: %d variants (%d scenarios), %d examples"
          % (len(expected), len(scenarios.SCENARIOS), len(EXAMPLES)))


if __name__ == "__main__":
    main()
