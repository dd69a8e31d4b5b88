// Shape and dtype inference for the loss family: nll_loss_forward and its
// backward (what F.cross_entropy and F.nll_loss trace to),
// binary_cross_entropy and its backward. mse_loss lives with the
// reductions in shape_inference.h.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_LOSS_INFERENCE_H_
#define AOTCACHE_CORE_GRAPH_LOSS_INFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/shape_inference.h"

namespace aotcache::infer {

// nll_loss_forward(self, target, weight?, reduction, ignore_index): self is
// (N, C) with target (N), or (C) with a 0-d target; results (output,
// total_weight).
absl::StatusOr<std::vector<Meta>> NllLoss(const InferContext& ctx);
// nll_loss_backward(grad_output, self, target, weight?, reduction,
// ignore_index, total_weight): a gradient shaped like self.
absl::StatusOr<std::vector<Meta>> NllLossBackward(const InferContext& ctx);
// binary_cross_entropy(self, target, weight?, reduction): target of self's
// shape and dtype, weight broadcasting to it; the loss per element or 0-d.
absl::StatusOr<std::vector<Meta>> BinaryCrossEntropy(const InferContext& ctx);
// binary_cross_entropy_backward(grad_output, self, target, weight?,
// reduction): a gradient shaped like self.
absl::StatusOr<std::vector<Meta>> BinaryCrossEntropyBackward(
    const InferContext& ctx);

}  // namespace aotcache::infer

#endif  // AOTCACHE_CORE_GRAPH_LOSS_INFERENCE_H_
