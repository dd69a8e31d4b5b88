"""PyTorch's own AOTAutograd analysis of fn(*args) on torch 2.x, as plain
data: what aot_function computes before it traces a graph (its
ViewAndMutationMeta and its training-or-inference decision), reached
through the steps of torch._functorch.aot_autograd.aot_function up to
create_aot_state. fn runs on fake tensors only: args are left alone.

These are torch's private APIs; they are read off the installed torch 2.13
(torch/_functorch/aot_autograd.py, create_aot_state: needs_autograd is "some
input requires grad" cleared when no output requires grad other than
aliases of inputs that require grad, and no input that requires grad has a
data mutation outside no_grad that autograd sees)."""

import contextlib
from typing import Any, Callable, Dict, List, Sequence

import torch


def analyze(fn: Callable[..., Any], args: Sequence[torch.Tensor]) -> Dict[str, Any]:
    """{"mode", "inputs": [...], "outputs": [...], "num_intermediate_bases"}
    in aotcache's field names, under the caller's grad mode."""
    from torch._functorch._aot_autograd.descriptors import PlainAOTInput
    from torch._functorch._aot_autograd.frontend_utils import (construct_fake_mode,
                                                               process_inputs)
    from torch._functorch._aot_autograd.schemas import AOTConfig
    from torch._functorch._aot_autograd.utils import create_tree_flattened_fn
    from torch._functorch.aot_autograd import AOT_COUNTER, create_aot_state

    config = AOTConfig(fw_compiler=None, bw_compiler=None, inference_compiler=None,
                       partition_fn=None, decompositions={}, num_params_buffers=0,
                       aot_id=next(AOT_COUNTER), keep_inference_input_mutations=False,
                       dynamic_shapes=False, aot_autograd_arg_pos_to_source=None,
                       is_export=False, no_tangents=False, enable_log=False)
    args = list(args)
    flat_fn, _ = create_tree_flattened_fn(fn, args, {})
    fake_mode, shape_env = construct_fake_mode(args, config)
    fake_mode.allow_non_fake_inputs = True  # Tensors fn captures: constants.
    fake_args, _ = process_inputs(args, config, fake_mode, shape_env)
    descriptors = [PlainAOTInput(i) for i in range(len(fake_args))]
    with contextlib.ExitStack() as stack:
        state = create_aot_state(stack, flat_fn, fake_args, descriptors, config, fake_mode,
                                 shape_env)
    meta = state.fw_metadata
    return {
        "mode": "training" if state.needs_autograd else "inference",
        "inputs": [_input(i) for i in meta.input_info],
        "outputs": [_output(o) for o in meta.output_info],
        "num_intermediate_bases": meta.num_intermediate_bases,
    }


def _input(info: Any) -> Dict[str, Any]:
    return {
        "mutates_data": bool(info.mutates_data),
        "mutates_metadata": bool(info.mutates_metadata),
        "mutations_under_no_grad_or_inference_mode":
            bool(info.mutations_under_no_grad_or_inference_mode),
        # torch sets it on inputs nothing writes too: it means something
        # only beside mutates_data.
        "mutations_hidden_from_autograd":
            bool(info.mutations_hidden_from_autograd and info.mutates_data),
        "requires_grad": bool(info.requires_grad),
    }


def _output(info: Any) -> Dict[str, Any]:
    return {
        "output_type": "OUTPUT_TYPE_" + info.output_type.name.upper(),
        "base_idx": info.base_idx,
        "requires_grad": bool(info.requires_grad),
    }


def aotcache_fields(metadata: Dict[str, Any]) -> Dict[str, Any]:
    """The same fields of aotcache's view_and_mutation (metadata_json())."""
    vmd = metadata["view_and_mutation"]
    inputs: List[Dict[str, Any]] = []
    for i in vmd.get("inputs", []):
        inputs.append({
            "mutates_data": bool(i.get("mutates_data")),
            "mutates_metadata": bool(i.get("mutates_metadata")),
            "mutations_under_no_grad_or_inference_mode":
                bool(i.get("mutations_under_no_grad_or_inference_mode")),
            "mutations_hidden_from_autograd":
                bool(i.get("mutations_hidden_from_autograd") and i.get("mutates_data")),
            "requires_grad": bool(i.get("requires_grad")),
        })
    outputs = [{"output_type": o["output_type"], "base_idx": o.get("base_idx"),
                "requires_grad": bool(o.get("requires_grad"))}
               for o in vmd.get("outputs", [])]
    return {"inputs": inputs, "outputs": outputs,
            "num_intermediate_bases": vmd.get("num_intermediate_bases", 0)}
