#include "core/backend/native/own_kernels.h"

#include "absl/strings/str_cat.h"
#include "core/backend/native/conv_kernels.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/kernel_source.h"
#include "core/backend/native/layer_norm_kernels.h"
#include "core/backend/native/linalg_kernels.h"
#include "core/backend/native/loss_kernels.h"
#include "core/backend/native/norm_kernels.h"
#include "core/backend/native/pool_kernels.h"
#include "core/backend/native/reduction_kernels.h"
#include "core/backend/native/shape_kernels.h"
#include "core/backend/native/softmax_kernels.h"

namespace aotcache {
namespace {

// A node's kernel of its own kind: the values it reads (by position: one
// may repeat) and its body; the node a batch norm absorbs, or -1, and
// whether the batch norm's own result is written too.
struct OwnKernel {
  std::vector<int> inputs;
  std::string source;
  int absorbed = -1;
  bool keeps_result = false;
};

// The ReLU that reads a batch norm's result, of its shape and dtype: the
// batch norm's kernel computes it too, in the same pass. -1 if none.
// `*kept`: whether the result itself is read by another node or returned.
int AbsorbedRelu(const ResolvedGraph& g, const ResolvedNode& bn, bool* kept) {
  const int y = bn.results[0];
  const Meta& m = g.values[y].meta;
  int relu = -1;
  *kept = false;
  for (int v : g.outputs) *kept = *kept || v == y;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ResolvedNode& node = g.nodes[n];
    int reads = 0;
    for (const BoundArg& a : node.args) {
      for (int v : a.values) reads += v == y;
    }
    if (reads == 0) continue;
    if (relu < 0 && node.op->qualified_name == "aten.relu.default" &&
        Plain(g.values[node.results[0]].meta, m.dtype) &&
        g.values[node.results[0]].meta.numel() == m.numel()) {
      relu = static_cast<int>(n);
    } else {
      *kept = true;
    }
  }
  return relu;
}

// The node's own kernel, if one takes it. `read[v]`: whether value v is
// read; empty for the node's masks as they are (a masked-out result that is
// read is computed all the same).
std::optional<OwnKernel> OwnKernelOf(const ResolvedGraph& g,
                                     const ResolvedNode& node,
                                     const std::vector<bool>& read,
                                     const GradientPrologue* gradient) {
  auto tensor = [&](int k) { return node.args[k].values[0]; };
  auto tensors = [&](std::initializer_list<int> positions) {
    std::vector<int> inputs;
    for (int k : positions) {
      if (!node.args[k].is_none()) inputs.push_back(tensor(k));
    }
    return inputs;
  };
  auto is_read = [&](int r) { return !read.empty() && read[node.results[r]]; };
  if (BlasMatmul(g, node)) {
    std::vector<int> inputs;
    for (const BoundArg& a : node.args) {
      if (a.kind == BoundArg::Kind::kTensor) inputs.push_back(a.values[0]);
    }
    return OwnKernel{std::move(inputs),
                     absl::StrCat("  (void)n;\n  C* out = "
                                  "static_cast<C*>(outputs[0]);\n",
                                  GemmSource(GemmOf(g, node)))};
  } else if (std::optional<SoftmaxShape> s = SoftmaxOf(g, node)) {
    return OwnKernel{s->backward ? tensors({0, 1}) : tensors({0}),
                     SoftmaxSource(*s)};
  } else if (std::optional<MseLossShape> s = MseLossOf(g, node)) {
    return OwnKernel{s->backward ? tensors({0, 1, 2}) : tensors({0, 1}),
                     MseLossSource(*s)};
  } else if (std::optional<DotShape> s = DotOf(g, node)) {
    return OwnKernel{tensors({0, 1}), DotSource(*s)};
  } else if (std::optional<VarShape> s = VarOf(g, node)) {
    return OwnKernel{tensors({0}), VarSource(*s)};
  } else if (std::optional<ConcatShape> s = ConcatOf(g, node)) {
    return OwnKernel{node.args[0].values, ConcatSource(*s)};
  } else if (std::optional<ScatterShape> s = ScatterOf(g, node)) {
    return OwnKernel{tensors({0, 1}), ScatterSource(*s)};
  } else if (std::optional<ConvShape> s = ConvOf(g, node)) {
    // Forward: x, weight, bias?; backward: the gradient, x, weight.
    return OwnKernel{tensors({0, 1, 2}), ConvSource(*s)};
  } else if (std::optional<BatchNormShape> s = BatchNormOf(g, node)) {
    bool kept = true;
    const int relu = s->kind == BatchNormShape::Kind::kBackward
                         ? -1
                         : AbsorbedRelu(g, node, &kept);
    s->relu = relu >= 0;
    s->keep_normalized = s->relu && kept;
    return OwnKernel{BatchNormInputs(node, *s), BatchNormSource(*s, gradient),
                     relu, s->keep_normalized};
  } else if (std::optional<PoolShape> s = PoolOf(g, node)) {
    return OwnKernel{PoolInputs(node, *s), PoolSource(*s)};
  } else if (std::optional<LayerNormShape> s = LayerNormOf(g, node)) {
    return OwnKernel{tensors({0, 2, 3}), LayerNormSource(*s)};
  } else if (std::optional<LayerNormBackwardShape> s =
                 LayerNormBackwardOf(g, node)) {
    for (int r = 0; r < 3; ++r) s->mask[r] |= is_read(r);
    return OwnKernel{tensors({0, 1, 3, 4, 5}), LayerNormBackwardSource(*s)};
  }
  return std::nullopt;
}

}  // namespace

std::optional<FusedGroup> OwnKernelGroup(const ResolvedGraph& g, int n) {
  std::optional<OwnKernel> own = OwnKernelOf(g, g.nodes[n], {}, nullptr);
  if (!own.has_value()) return std::nullopt;
  FusedGroup group;
  group.own_kernel = true;
  group.nodes = {n};
  group.inputs = std::move(own->inputs);
  group.outputs = g.nodes[n].results;
  if (own->absorbed >= 0) {
    // Run at the node's turn (the last of nodes): its other results may be
    // read before the absorbed node's. The absorbed node's result first;
    // the node's own first result last, if it is read.
    group.nodes.insert(group.nodes.begin(), own->absorbed);
    if (own->keeps_result) group.outputs.push_back(group.outputs[0]);
    group.outputs[0] = g.nodes[own->absorbed].results[0];
  }
  return group;
}

std::string OwnKernelSource(const ResolvedGraph& g, const FusedGroup& group,
                            const std::vector<bool>& read,
                            const GradientPrologue* gradient) {
  if (!group.own_kernel) return "";
  return OwnKernelOf(g, g.nodes[group.nodes.back()], read, gradient)->source;
}

}  // namespace aotcache
