"""PyTorch's AOTAutograd as the oracle of aotcache's analysis (torch 2.x):
every traced scenario variant (tests/fixtures/scenarios) and every zoo
model's training step (the loss inside, parameters and buffers as inputs),
exported by aotcache and analyzed by the daemon, and analyzed by the
installed torch's own create_aot_state (torch_analysis.py): the mode, and
per input and output the ViewAndMutationData fields both compute, equal
field by field except where DIFFERENCES names the field and the reason."""

import json
import os
import re
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures"))
sys.path.insert(0, HERE)

import run_scenarios  # noqa: E402
import zoo  # noqa: E402
from aotcache import _binding  # noqa: E402
from aotcache.fx_export import export_graph  # noqa: E402

pytestmark = pytest.mark.skipif(torch.__version__ < "2", reason="torch 2.x's AOTAutograd")

if torch.__version__ >= "2":
    import torch_analysis  # noqa: E402

_SHARED = ("decision a of tests/fixtures/scenarios: an input that shares its storage with a "
           "mutated input mutates data too, since the write changes its values (aotcache's "
           "epilogue writes the storage once); torch's analysis marks only the input written")
_VIEW_OF_INTERMEDIATE = (
    "an output that is the only view of an intermediate: aotcache returns it as a view of "
    "its intermediate base, as eager does (out._base is set; in-place ops on it behave as "
    "eager's); torch 2.x returns it as a fresh tensor (unsafe_view_alias) and saves no base")
_RUNNING_STATISTICS = (
    "batch norm's running statistics: aotcache's decomposition writes them with grad mode off "
    "(autograd does not see the write, as in eager's kernel); torch's functional batch norm "
    "writes them back under the caller's grad mode. Neither requires grad, so the mode rule "
    "does not read the flag")
_REQUIRES_GRAD_AFTER = (
    "b views the base that a's write of a value requiring grad makes require grad: after the "
    "call eager's b requires grad (eager_oracle.py checks it) and so does aotcache's; torch's "
    "analysis records b before its synthetic base merges the two")

# Where aotcache deliberately differs from torch: (variants, field pattern, reason).
DIFFERENCES = [
    (("input_mutation_aliases_other_input__rg", "input_mutation_aliases_other_input__nrg"),
     r"inputs\[1\]\.mutates_data", _SHARED),
    (("input_mutation_aliases_bases_out_of_order__rg",
      "input_mutation_aliases_bases_out_of_order__nrg"), r"inputs\[3\]\.mutates_data", _SHARED),
    (("input_mutation_alias_everything__rg", "input_mutation_alias_everything__nrg"),
     r"inputs\[0\]\.mutates_data", _SHARED),
    (("aliased_input_gets_rg_via_other__rg", "aliased_input_gets_rg_via_other__nrg"),
     r"inputs\[1\]\.mutates_data", _SHARED),
    (("aliased_input_gets_rg_via_other__rg",),
     r"inputs\[1\]\.requires_grad|outputs\[0\]\.requires_grad", _REQUIRES_GRAD_AFTER),
    (("output_aliases_intermediate_single__rg", "intermediate_view_under_no_grad__rg",
      "reshape_unsafe_view__rg"),
     r"outputs\[\d+\]\.(output_type|base_idx)|num_intermediate_bases", _VIEW_OF_INTERMEDIATE),
    (("cnn", "resnet18"), r"inputs\[\d+\]\.mutations_under_no_grad_or_inference_mode",
     _RUNNING_STATISTICS),
]


def _deliberate(name, field):
    return any(name in names and re.fullmatch(pattern, field)
               for names, pattern, _ in DIFFERENCES)


def _differences(ours, theirs, prefix=""):
    if isinstance(ours, dict):
        out = []
        for key in sorted(set(ours) | set(theirs)):
            out += _differences(ours.get(key), theirs.get(key),
                                "%s.%s" % (prefix, key) if prefix else key)
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        out = []
        for n, (a, b) in enumerate(zip(ours, theirs)):
            out += _differences(a, b, "%s[%d]" % (prefix, n))
        return out
    return [] if ours == theirs else [(prefix, ours, theirs)]


def _compare(name, fn, make_args, grad_enabled, server):
    with torch.set_grad_enabled(grad_enabled):
        graph = export_graph(fn, *make_args())
        theirs = torch_analysis.analyze(fn, make_args())
    compiled = _binding.Client(server).compile(json.dumps(graph))
    ours = torch_analysis.aotcache_fields(json.loads(compiled.metadata_json()))
    ours["mode"] = compiled.mode
    found = [d for d in _differences(ours, theirs) if not _deliberate(name, d[0])]
    assert found == [], "field, aotcache, torch"


@pytest.mark.parametrize("variant", run_scenarios.traced_variants(), ids=lambda v: v.name)
def test_scenario_analysis_equals_torch_s(daemon, variant):
    _compare(variant.name, variant.fn, lambda: variant.fresh_inputs(0), variant.caller_grad,
             daemon)


def _zoo_step(name):
    """The training step of zoo model `name` as a function of its
    parameters, buffers and inputs, and a maker of those."""
    torch.manual_seed(0)
    w = zoo.ZOO[name](0.0)
    module = w.module.train()
    state = dict(module.named_parameters())
    state.update(module.named_buffers())
    names = list(state)

    def step(*tensors):
        values = dict(zip(names, tensors))
        out = torch.func.functional_call(module, values, tuple(tensors[len(names):]))
        return w.loss(out, w.target)

    def make_args():
        return ([t.detach().clone().requires_grad_(t.requires_grad) for t in state.values()]
                + [x.clone() for x in w.inputs])

    return step, make_args


@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_zoo_training_step_analysis_equals_torch_s(daemon, name):
    step, make_args = _zoo_step(name)
    _compare(name, step, make_args, True, daemon)
