// Shape and dtype inference for the batch norm family:
// _native_batch_norm_legit.no_stats (training on the batch's statistics),
// _native_batch_norm_legit_no_training (eval on running statistics) and
// native_batch_norm_backward. torch 1.13's native_batch_norm, which writes
// the running statistics without saying so in its schema, is decomposed
// into these (decompositions.h). native_layer_norm lives in
// shape_inference.h.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_NORM_INFERENCE_H_
#define AOTCACHE_CORE_GRAPH_NORM_INFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/shape_inference.h"

namespace aotcache::infer {

// Both batch norm forwards: (output like input, mean (C), invstd (C)); the
// eval form's mean and invstd are empty ([0]), as torch's CPU kernel's.
absl::StatusOr<std::vector<Meta>> BatchNorm(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> BatchNormBackward(const InferContext& ctx);

}  // namespace aotcache::infer

#endif  // AOTCACHE_CORE_GRAPH_NORM_INFERENCE_H_
