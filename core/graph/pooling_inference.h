// Shape and dtype inference for the 2-d pooling family: max_pool2d (with
// indices), avg_pool2d, _adaptive_avg_pool2d, adaptive_max_pool2d and their
// backwards, on
// (N, C, H, W) or (C, H, W) inputs.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_POOLING_INFERENCE_H_
#define AOTCACHE_CORE_GRAPH_POOLING_INFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/shape_inference.h"

namespace aotcache {

// One pooling window's geometry over the last two dims.
struct PoolGeometry {
  int64_t planes;  // N * C (or C).
  int64_t in[2], out[2], kernel[2], stride[2], padding[2], dilation[2];
};

// The geometry of a window pooling over `input` (3-d or 4-d) with the
// given lists (1 or 2 entries; an empty stride means the kernel's);
// InvalidArgument saying what does not fit.
absl::StatusOr<PoolGeometry> PoolGeometryOf(
    const std::vector<int64_t>& input, const std::vector<int64_t>& kernel,
    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
    const std::vector<int64_t>& dilation, bool ceil_mode);

namespace infer {

absl::StatusOr<std::vector<Meta>> MaxPool2d(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> AvgPool2d(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> AdaptiveAvgPool2d(const InferContext& ctx);
// Values and int64 indices into each plane.
absl::StatusOr<std::vector<Meta>> AdaptiveMaxPool2d(const InferContext& ctx);
// The backwards: a gradient shaped like self (argument 1).
absl::StatusOr<std::vector<Meta>> PoolBackward(const InferContext& ctx);

}  // namespace infer
}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_POOLING_INFERENCE_H_
