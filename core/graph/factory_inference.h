// Shape and dtype inference for the factories: ones/zeros/empty
// (Factory), full, and arange's three overloads.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_FACTORY_INFERENCE_H_
#define AOTCACHE_CORE_GRAPH_FACTORY_INFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/shape_inference.h"

namespace aotcache::infer {

absl::StatusOr<std::vector<Meta>> Factory(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Full(const InferContext& ctx);
// arange, arange.start, arange.start_step: int64 when every bound is an
// int, else float32, unless dtype says.
absl::StatusOr<std::vector<Meta>> Arange(const InferContext& ctx);

}  // namespace aotcache::infer

#endif  // AOTCACHE_CORE_GRAPH_FACTORY_INFERENCE_H_
