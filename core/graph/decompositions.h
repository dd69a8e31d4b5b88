// Decompositions: ops a graph may use that validation rewrites into ops of
// the registry, as torch's decomposition tables do. split, unbind and chunk
// become slices and selects (views of self, as in torch), stack becomes
// unsqueezes and a cat; masked_fill, tril and triu become a where, silu
// x * sigmoid(x), native_batch_norm the batch norm and its running
// statistics' updates; math_decompositions.cc holds clamps, reductions that
// select (max.dim becomes argmax and gather), baddbmm and
// binary_cross_entropy_with_logits; activation_decompositions.cc,
// reshaping_decompositions.cc, upsample_decompositions.cc,
// fold_decompositions.cc, embedding_bag_decompositions.cc,
// loss_decompositions.cc and norm_decompositions.cc the families their names
// say. Everything downstream
// (the analysis, autodiff, the backends, the key) sees only the rewritten
// graph, so these ops need no kernels or derivative rules of their own.
// Thread-safety: the table is immutable; a Decomposer is used by one thread.
#ifndef AOTCACHE_CORE_GRAPH_DECOMPOSITIONS_H_
#define AOTCACHE_CORE_GRAPH_DECOMPOSITIONS_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/tensor_meta.h"

namespace aotcache {

// What a decomposition sees of the node it rewrites, and how it emits the
// ops that replace it.
class Decomposer {
 public:
  virtual ~Decomposer() = default;
  // Bound arguments of the node, by schema position.
  virtual const BoundArg& arg(int i) const = 0;
  // Metas are returned by value: emitting adds values, which may move the
  // ones already there.
  virtual Meta meta(int value) const = 0;
  Meta tensor(int i) const { return meta(arg(i).values[0]); }
  // The meta the graph declares for the node's result `r` (its
  // output_meta), if it declares one: for a result no op defines the
  // contents of (an RNN's workspace for its own backward).
  virtual std::optional<Meta> declared(int r) const = 0;
  // Emits op(args) (a registry op, arguments bound by schema position) with
  // the node's grad mode; returns its results' value ids.
  virtual absl::StatusOr<std::vector<int>> Emit(absl::string_view op,
                                                std::vector<BoundArg> args) = 0;
  absl::StatusOr<int> EmitOne(absl::string_view op, std::vector<BoundArg> args);
  // Ops emitted from now on run with grad mode off (writes that autograd
  // does not see, as batch norm's running statistics).
  void DisableGrad() { grad_disabled_ = true; }

 protected:
  bool grad_disabled_ = false;
};

// Returns the value ids that stand for the node's results, or
// InvalidArgument naming the argument at fault.
using DecomposeFn = absl::StatusOr<std::vector<int>> (*)(Decomposer& d);

struct Decomposition {
  const char* schema;  // torch's schema; a Tensor[] return is a list.
  DecomposeFn decompose;
};

// Every decomposition: those of decompositions.cc and of
// math_decompositions.cc.
const std::vector<Decomposition>& Decompositions();

namespace decompositions_internal {
// InvalidArgument naming argument `name`.
absl::Status ArgError(absl::string_view name, absl::string_view detail);
// A loss's elements reduced by argument `reduction` (0 none, 1 mean, 2
// sum); InvalidArgument naming it for any other value.
absl::StatusOr<std::vector<int>> ReduceLoss(Decomposer& d, int loss,
                                            const BoundArg& reduction);
// The in-place form of the functional decomposition `Functional` (same
// arguments): its result copied into self (copy_), which it returns.
template <DecomposeFn Functional>
absl::StatusOr<std::vector<int>> InPlaceOf(Decomposer& d) {
  absl::StatusOr<std::vector<int>> result = Functional(d);
  if (!result.ok()) return result.status();
  return d.Emit("aten.copy_.default",
                {d.arg(0), TensorArg((*result)[0]), BoolArg(false)});
}
// logsumexp of x over dims = log(sum(exp(x - m))) + m for m the maximum
// over dims (0 where it is infinite), as torch computes it; m's gradient
// cancels, leaving the softmax.
absl::StatusOr<int> LogSumExp(Decomposer& d, const BoundArg& x,
                              const BoundArg& dims, bool keepdim);
// `dim` wrapped into [0, rank) (a 0-d tensor has one dim here).
absl::StatusOr<int64_t> WrapDim(absl::string_view name, int64_t dim,
                                int64_t rank);
// An int64 index tensor clamped into [low, high] (two wheres).
absl::StatusOr<int> ClampIndex(Decomposer& d, int index, int64_t low,
                               int64_t high);
// sort.stable, argsort.stable, clamp, clamp_min, clamp_max (and in place),
// full_like, scalar_tensor, max and min (all, dim, other), var_mean, logsumexp,
// baddbmm, binary_cross_entropy_with_logits.
const std::vector<Decomposition>& MathDecompositions();
// softplus, leaky_relu, elu, celu, hardtanh (leaky_relu, elu and hardtanh
// also in place), hardswish, mish, log_sigmoid_forward, glu, prelu
// (activation_decompositions.cc).
const std::vector<Decomposition>& ActivationDecompositions();
// flip, roll, repeat, constant_pad_nd, pixel_shuffle, pixel_unshuffle
// (reshaping_decompositions.cc).
const std::vector<Decomposition>& ReshapingDecompositions();
// upsample_nearest2d, upsample_bilinear2d, upsample_bicubic2d
// (upsample_decompositions.cc).
const std::vector<Decomposition>& UpsampleDecompositions();
// im2col, col2im (F.unfold, F.fold; fold_decompositions.cc).
const std::vector<Decomposition>& FoldDecompositions();
// _embedding_bag, _embedding_bag_forward_only in modes sum, mean and max
// (embedding_bag_decompositions.cc).
const std::vector<Decomposition>& EmbeddingBagDecompositions();
// _scaled_dot_product_flash_attention_for_cpu (attention_decompositions.cc).
const std::vector<Decomposition>& AttentionDecompositions();
// mkldnn_rnn_layer (an LSTM layer, as torch 2.x records nn.LSTM;
// rnn_decompositions.cc).
const std::vector<Decomposition>& RnnDecompositions();
// native_group_norm (norm_decompositions.cc).
const std::vector<Decomposition>& NormDecompositions();
// smooth_l1_loss, huber_loss, xlogy, nll_loss2d,
// std, norm, linalg_vector_norm, _cdist_forward, _euclidean_dist
// (loss_decompositions.cc).
const std::vector<Decomposition>& LossDecompositions();
}  // namespace decompositions_internal

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_DECOMPOSITIONS_H_
