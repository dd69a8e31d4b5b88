// Shape and dtype inference for scans and sorts: cumsum, sort, topk.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_SCAN_INFERENCE_H_
#define AOTCACHE_CORE_GRAPH_SCAN_INFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/shape_inference.h"

namespace aotcache::infer {

// cumsum(self, dim, dtype?): self's shape, contiguous (as torch's CPU
// kernel allocates it); dtype as given, else int64 for integers and bools
// (torch's promotion), else self's.
absl::StatusOr<std::vector<Meta>> Cumsum(const InferContext& ctx);
// sort(self, dim, descending): (values like self, int64 indices), both
// contiguous.
absl::StatusOr<std::vector<Meta>> Sort(const InferContext& ctx);
// topk(self, k, dim, largest, sorted): the same with dim of size k.
absl::StatusOr<std::vector<Meta>> Topk(const InferContext& ctx);

}  // namespace aotcache::infer

#endif  // AOTCACHE_CORE_GRAPH_SCAN_INFERENCE_H_
