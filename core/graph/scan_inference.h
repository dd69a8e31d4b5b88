// Shape and dtype inference for scans: cumsum.
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

}  // namespace aotcache::infer

#endif  // AOTCACHE_CORE_GRAPH_SCAN_INFERENCE_H_
