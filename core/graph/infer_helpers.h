// Helpers shared by the shape inference files (shape_inference.cc,
// view_inference.cc and one per op family). Internal to core/graph.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_INFER_HELPERS_H_
#define AOTCACHE_CORE_GRAPH_INFER_HELPERS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/shape_inference.h"

namespace aotcache::infer::internal {

using Metas = std::vector<Meta>;

// InvalidArgument naming schema argument `arg`.
absl::Status ArgError(const InferContext& ctx, int arg,
                      absl::string_view detail);
std::string ShapeString(const std::vector<int64_t>& shape);
// Wraps a possibly negative dim into [0, rank).
absl::StatusOr<int64_t> WrapDim(const InferContext& ctx, int arg, int64_t dim,
                                int64_t rank);
absl::Status CheckSizes(const InferContext& ctx, int arg,
                        const std::vector<int64_t>& sizes);
Meta ContiguousLike(const Meta& in);
// A ScalarType? argument's dtype, or `fallback` when it is None.
inline DType OptionalDType(const BoundArg& a, DType fallback) {
  return a.kind == BoundArg::Kind::kDType ? a.dtype : fallback;
}
// InvalidArgument unless argument `arg` (of dtype `dtype`) is floating.
absl::Status RequireFloat(const InferContext& ctx, int arg, DType dtype);
// InvalidArgument unless tensor argument `arg` has `rank` dims.
absl::Status RequireRank(const InferContext& ctx, int arg, int64_t rank);
// InvalidArgument unless tensor arguments `a` and `b` share a dtype.
absl::Status RequireSameDType(const InferContext& ctx, int a, int b);
inline Metas One(Meta m) { return Metas{std::move(m)}; }

}  // namespace aotcache::infer::internal

#endif  // AOTCACHE_CORE_GRAPH_INFER_HELPERS_H_
