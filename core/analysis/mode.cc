#include "core/analysis/mode.h"

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"

namespace aotcache {

namespace {

// The first output that needs autograd, or -1.
int OutputNeedingGrad(const v1::ViewAndMutationData& vmd) {
  for (int j = 0; j < vmd.outputs_size(); ++j) {
    const v1::OutputAliasInfo& out = vmd.outputs(j);
    bool regenerated_view_of_grad_input =
        (out.output_type() == v1::OUTPUT_TYPE_ALIAS_OF_INPUT ||
         out.output_type() == v1::OUTPUT_TYPE_IS_INPUT) &&
        out.has_base_idx() && out.base_idx() >= 0 &&
        out.base_idx() < vmd.inputs_size() &&
        vmd.inputs(out.base_idx()).requires_grad();
    if (out.requires_grad() && !regenerated_view_of_grad_input) return j;
  }
  return -1;
}

// The first input whose mutation autograd must record, or -1.
int MutationNeedingGrad(const v1::ViewAndMutationData& vmd) {
  for (int i = 0; i < vmd.inputs_size(); ++i) {
    const v1::InputAliasInfo& in = vmd.inputs(i);
    if (in.requires_grad() && in.mutates_data() &&
        !in.mutations_under_no_grad_or_inference_mode() &&
        !in.mutations_hidden_from_autograd()) {
      return i;
    }
  }
  return -1;
}

}  // namespace

v1::Mode DecideMode(const std::vector<bool>& caller_requires_grad,
                    const v1::ViewAndMutationData& vmd) {
  if (!absl::c_linear_search(caller_requires_grad, true)) {
    return v1::MODE_INFERENCE;
  }
  return OutputNeedingGrad(vmd) >= 0 || MutationNeedingGrad(vmd) >= 0
             ? v1::MODE_TRAINING
             : v1::MODE_INFERENCE;
}

std::string ExplainMode(const std::vector<bool>& caller_requires_grad,
                        const v1::ViewAndMutationData& vmd) {
  if (!absl::c_linear_search(caller_requires_grad, true)) {
    return "inference: no input requires grad";
  }
  if (int j = OutputNeedingGrad(vmd); j >= 0) {
    return absl::StrCat("training: output ", j, " requires grad");
  }
  if (int i = MutationNeedingGrad(vmd); i >= 0) {
    return absl::StrCat("training: input ", i,
                        " requires grad and its data is mutated with grad "
                        "mode on");
  }
  return "inference: inputs require grad, but no output needs a gradient "
         "and no mutation of a requires-grad input is recorded";
}

}  // namespace aotcache
