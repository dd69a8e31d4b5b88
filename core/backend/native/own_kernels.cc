#include "core/backend/native/own_kernels.h"

#include "absl/strings/str_cat.h"
#include "core/backend/native/conv_kernels.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/kernel_source.h"
#include "core/backend/native/structured_patterns.h"

namespace aotcache {

std::optional<FusedGroup> OwnKernelGroup(const ResolvedGraph& g, int n) {
  // A group of `kind` reading `inputs` (by position), writing the node's
  // results.
  auto single = [&](bool FusedGroup::*kind, std::vector<int> inputs) {
    FusedGroup group;
    group.*kind = true;
    group.nodes = {n};
    group.inputs = std::move(inputs);
    group.outputs = g.nodes[n].results;
    return group;
  };
  auto tensor = [&](const ResolvedNode& node, int k) {
    return node.args[k].values[0];
  };
  const ResolvedNode& node = g.nodes[n];
  if (BlasMatmul(g, node)) {
    std::vector<int> inputs;
    for (const BoundArg& a : node.args) {
      if (a.kind == BoundArg::Kind::kTensor) inputs.push_back(a.values[0]);
    }
    return single(&FusedGroup::matmul, std::move(inputs));
  } else if (std::optional<SoftmaxShape> softmax = SoftmaxOf(g, node)) {
    return single(&FusedGroup::softmax,
                  softmax->backward
                      ? std::vector<int>{tensor(node, 0), tensor(node, 1)}
                      : std::vector<int>{tensor(node, 0)});
  } else if (std::optional<MseLossShape> mse = MseLossOf(g, node)) {
    std::vector<int> inputs;
    for (int k = 0; k < (mse->backward ? 3 : 2); ++k) {
      inputs.push_back(tensor(node, k));
    }
    return single(&FusedGroup::mse_loss, std::move(inputs));
  } else if (DotOf(g, node).has_value()) {
    return single(&FusedGroup::dot, {tensor(node, 0), tensor(node, 1)});
  } else if (VarOf(g, node).has_value()) {
    return single(&FusedGroup::var, {tensor(node, 0)});
  } else if (ConcatOf(g, node).has_value()) {
    // By position: a part may repeat.
    return single(&FusedGroup::concat, node.args[0].values);
  } else if (ScatterOf(g, node).has_value()) {
    return single(&FusedGroup::scatter, {tensor(node, 0), tensor(node, 1)});
  } else if (std::optional<ConvShape> conv = ConvOf(g, node)) {
    // Forward: x, weight, bias?; backward: the gradient, x, weight.
    std::vector<int> inputs = {tensor(node, 0), tensor(node, 1)};
    if (conv->backward || conv->bias) inputs.push_back(tensor(node, 2));
    return single(&FusedGroup::conv, std::move(inputs));
  } else {
    const bool forward = LayerNormOf(g, node).has_value();
    if (!forward && !LayerNormBackwardOf(g, node).has_value()) {
      return std::nullopt;
    }
    std::vector<int> inputs;
    for (int k : forward ? std::vector<int>{0, 2, 3}
                         : std::vector<int>{0, 1, 3, 4, 5}) {
      if (!node.args[k].is_none()) inputs.push_back(tensor(node, k));
    }
    return single(
        forward ? &FusedGroup::layer_norm : &FusedGroup::layer_norm_backward,
        std::move(inputs));
  }
}

std::string OwnKernelSource(const ResolvedGraph& g, const FusedGroup& group,
                            const std::vector<bool>& read) {
  const ResolvedNode& first = g.nodes[group.nodes[0]];
  if (group.softmax) {
    return SoftmaxSource(*SoftmaxOf(g, first));
  } else if (group.mse_loss) {
    return MseLossSource(*MseLossOf(g, first));
  } else if (group.scatter) {
    return ScatterSource(*ScatterOf(g, first));
  } else if (group.dot) {
    return DotSource(*DotOf(g, first));
  } else if (group.var) {
    return VarSource(*VarOf(g, first));
  } else if (group.concat) {
    return ConcatSource(*ConcatOf(g, first));
  } else if (group.layer_norm) {
    return LayerNormSource(*LayerNormOf(g, first));
  } else if (group.layer_norm_backward) {
    LayerNormBackwardShape s = *LayerNormBackwardOf(g, first);
    // A result the mask leaves out is computed all the same if read.
    for (int r = 0; r < 3; ++r) s.mask[r] |= read[first.results[r]];
    return LayerNormBackwardSource(s);
  } else if (group.conv) {
    return ConvSource(*ConvOf(g, first));
  } else if (group.matmul) {
    return absl::StrCat("  (void)n;\n  C* out = static_cast<C*>(outputs[0]);\n",
                        GemmSource(GemmOf(g, first)));
  }
  return "";
}

}  // namespace aotcache
