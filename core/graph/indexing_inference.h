// Shape and dtype inference for the indexing family: embedding and its
// dense backward, gather, scatter_add and scatter_reduce, index_select and
// index_add, and the ops that produce indices (argmax, argmin). Thread-safety:
// pure functions.
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

// argmax(self, dim?, keepdim) and argmin: int64, self reduced over dim (or
// over every dim when dim is None).
absl::StatusOr<std::vector<Meta>> ArgReduce(const InferContext& ctx);
// gather(self, dim, index, sparse_grad): index's shape, self's dtype.
absl::StatusOr<std::vector<Meta>> Gather(const InferContext& ctx);
// scatter_add(self, dim, index, src): self's shape and dtype.
absl::StatusOr<std::vector<Meta>> ScatterAdd(const InferContext& ctx);
// scatter_reduce(self, dim, index, src, reduce, include_self): as
// scatter_add, with reduce one of sum, prod, mean, amax, amin.
absl::StatusOr<std::vector<Meta>> ScatterReduce(const InferContext& ctx);
// scatter_add_ and scatter_reduce_: checked as above; self's meta.
absl::StatusOr<std::vector<Meta>> ScatterAddInPlace(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> ScatterReduceInPlace(const InferContext& ctx);
// index_select(self, dim, index): self with dim resized to index's length.
absl::StatusOr<std::vector<Meta>> IndexSelect(const InferContext& ctx);
// index_add(self, dim, index, source, alpha): self's shape and dtype.
absl::StatusOr<std::vector<Meta>> IndexAdd(const InferContext& ctx);

}  // namespace aotcache::infer

#endif  // AOTCACHE_CORE_GRAPH_INDEXING_INFERENCE_H_
