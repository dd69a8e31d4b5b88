#include "client/python/native/training_function.h"

#include <torch/csrc/autograd/custom_function.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "client/python/native/status_error.h"
#include "client/python/native/torch_tensors.h"

namespace aotcache {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A value saved for backward: a view of a saved input (which goes through
// save_for_backward, so that eager's check against in-place writes fires),
// or a tensor of its own.
struct SavedValue {
  int input = -1;  // Index among the saved inputs; -1: `owned`.
  std::vector<int64_t> shape, stride;
  int64_t offset = 0;  // In the saved input's storage.
  int64_t origin = 0;  // The saved input's origin when borrowed (Borrow).
  at::Tensor owned;
};

// What one call keeps for its backward, beside the saved inputs.
struct SavedForBackward : torch::CustomClassHolder {
  std::shared_ptr<const TrainingStep> step;
  std::vector<SavedValue> values;
};

constexpr char kSaved[] = "aotcache";

// Not an autograd input (a TensorList argument would be one): the
// function's inputs, whose memory the forward reads.
struct Memory {
  const std::vector<at::Tensor>& inputs;
  const std::vector<int64_t>& origins;  // Per input (see Borrow).
  uint64_t seed;                        // Keys the random ops of this call.
};

// A result for the caller to own: copied when it lies in an input's memory,
// which the epilogue may write.
at::Tensor Owned(TorchResult r) {
  return r.arg >= 0 ? r.tensor.clone() : std::move(r.tensor);
}

class CompiledStep : public torch::autograd::Function<CompiledStep> {
 public:
  static variable_list forward(AutogradContext* ctx,
                               const std::shared_ptr<const TrainingStep>& step,
                               const Memory& memory,
                               at::TensorList differentiable) {
    const TrainingPlan& plan = step->plan;
    const std::vector<at::Tensor>& inputs = memory.inputs;
    const std::vector<Tensor> args = Borrow(inputs, memory.origins);
    const CompiledFunction& f = step->function->function();
    absl::StatusOr<std::vector<Tensor>> artifact_args = f.ArtifactArgs(args);
    Check(artifact_args.status());
    absl::StatusOr<std::vector<Tensor>> raw =
        f.RunForwardArtifact(*artifact_args, memory.seed);
    Check(raw.status());
    auto result = [&](size_t n) { return ToTorch((*raw)[n], args, inputs); };

    const size_t k = plan.num_mutated;
    const size_t first_saved = k + plan.num_user + plan.num_bases;
    auto saved = c10::make_intrusive<SavedForBackward>();
    saved->step = step;
    std::vector<at::Tensor> saved_inputs;
    for (size_t n = first_saved; n < raw->size(); ++n) {
      TorchResult r = result(n);
      SavedValue value;
      if (r.arg >= 0 && !plan.mutated_data[r.arg] && !plan.member[r.arg]) {
        const Meta& m = (*raw)[n].meta();
        value.input = static_cast<int>(saved_inputs.size());
        value.shape = m.shape;
        value.stride = m.stride;
        value.offset = r.tensor.storage_offset();
        value.origin = r.origin;
        saved_inputs.push_back(inputs[r.arg]);
      } else {
        value.owned = Owned(std::move(r));
      }
      saved->values.push_back(std::move(value));
    }
    ctx->save_for_backward(saved_inputs);
    ctx->saved_data[kSaved] = at::IValue::make_capsule(std::move(saved));

    variable_list outs;
    outs.reserve(k + plan.function_user.size() + plan.num_bases);
    for (size_t n = 0; n < k; ++n) outs.push_back(result(n).tensor);
    for (int j : plan.function_user) outs.push_back(Owned(result(k + j)));
    for (int b = 0; b < plan.num_bases; ++b) {
      outs.push_back(result(k + plan.num_user + b).tensor);
    }
    if (!plan.non_differentiable.empty()) {
      variable_list fixed;
      for (int n : plan.non_differentiable) fixed.push_back(outs[n]);
      ctx->mark_non_differentiable(fixed);
    }
    return outs;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    // The engine runs a backward with grad mode on only for create_graph:
    // the compiled backward records nothing autograd could differentiate,
    // so a double backward (a gradient penalty) would silently lose the
    // second-order terms. Refused, as AOTAutograd refuses it.
    if (at::GradMode::is_enabled()) {
      throw std::runtime_error(
          "aotcache: double backward (create_graph=True) through a compiled "
          "function is not supported: its backward is compiled and not "
          "differentiable. Compute the gradient penalty eagerly (call the "
          "uncompiled function for that step).");
    }
    auto saved = c10::static_intrusive_pointer_cast<SavedForBackward>(
        ctx->saved_data[kSaved].toCapsule());
    const TrainingPlan& plan = saved->step->plan;
    const variable_list saved_inputs = ctx->get_saved_variables();
    std::vector<at::Tensor> values;  // The saved values, then the tangents.
    std::vector<int64_t> origins;    // Where the runtime sees each begin.
    values.reserve(saved->values.size() + plan.tangent_positions.size());
    for (const SavedValue& v : saved->values) {
      values.push_back(v.input < 0 ? v.owned
                                   : saved_inputs[v.input].detach().as_strided(
                                         v.shape, v.stride, v.offset));
      origins.push_back(v.input < 0 ? 0 : v.origin);
    }
    const size_t num_saved = values.size();
    for (size_t t = 0; t < plan.tangent_positions.size(); ++t) {
      const int position = plan.tangent_positions[t];
      values.push_back(position >= 0 && grads[position].defined()
                           ? grads[position]
                           : at::zeros(plan.tangent_shapes[t],
                                       at::dtype(plan.tangent_types[t])));
      origins.push_back(0);
    }
    const std::vector<Tensor> args = Borrow(values, origins);
    absl::StatusOr<CompiledFunction::Gradients> result =
        saved->step->function->Backward(
            {args.begin(), args.begin() + num_saved},
            {args.begin() + num_saved, args.end()});
    Check(result.status());
    if (result->inputs.size() != plan.member.size()) {
      throw std::runtime_error(
          "the backward returned " + std::to_string(result->inputs.size()) +
          " input gradients, not " + std::to_string(plan.member.size()));
    }

    // None for the step and the memory, then one per differentiable input.
    variable_list out(2);
    auto add = [&](const std::optional<Tensor>& g) {
      out.push_back(g.has_value() ? ToTorch(*g, args, values).tensor
                                  : at::Tensor());
    };
    for (size_t i = 0; i < result->inputs.size(); ++i) {
      if (!plan.member[i]) add(result->inputs[i]);
    }
    for (const std::optional<Tensor>& g : result->synthetic_bases) add(g);
    return out;
  }
};

}  // namespace

bool TrainingPlan::Consistent() const {
  const int outputs =
      num_mutated + static_cast<int>(function_user.size()) + num_bases;
  bool consistent = member.size() == mutated_data.size() &&
                    tangent_shapes.size() == tangent_positions.size() &&
                    tangent_types.size() == tangent_positions.size();
  for (int p : tangent_positions) consistent &= p >= -1 && p < outputs;
  for (int p : non_differentiable) consistent &= p >= 0 && p < outputs;
  return consistent;
}

std::vector<at::Tensor> RunTraining(
    const std::shared_ptr<const TrainingStep>& step,
    const std::vector<at::Tensor>& inputs,
    const std::vector<at::Tensor>& differentiable, uint64_t seed,
    const std::vector<int64_t>& origins) {
  // Recorded whatever the caller's grad mode: the function's own
  // enable_grad regions made outputs that require grad (the epilogue
  // detaches those that must not).
  if (inputs.size() != step->plan.member.size()) {
    throw std::invalid_argument(
        "the training step takes " + std::to_string(step->plan.member.size()) +
        " inputs, not " + std::to_string(inputs.size()));
  }
  at::AutoGradMode enable_grad(true);
  return CompiledStep::apply(step, Memory{inputs, origins, seed},
                             at::TensorList(differentiable));
}

}  // namespace aotcache
