// Shape and dtype inference for the indexing family: embedding and its
// dense backward.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_INDEXING_INFERENCE_H_
#define AOTCACHE_CORE_GRAPH_INDEXING_INFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/shape_inference.h"

namespace aotcache::infer {

// embedding(weight, indices, ...): indices' shape + weight's row.
absl::StatusOr<std::vector<Meta>> Embedding(const InferContext& ctx);
// embedding_dense_backward(grad, indices, num_weights, ...): the weight's
// gradient, (num_weights, D).
absl::StatusOr<std::vector<Meta>> EmbeddingDenseBackward(
    const InferContext& ctx);

}  // namespace aotcache::infer

#endif  // AOTCACHE_CORE_GRAPH_INDEXING_INFERENCE_H_
