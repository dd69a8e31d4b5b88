// The 2-d pooling family in the native backend: max_pool2d_with_indices,
// avg_pool2d, _adaptive_avg_pool2d and their backwards, over contiguous
// floating (N, C, H, W) or (C, H, W) tensors, generated for their geometry
// one plane (an image's channel) at a time. Each value is computed as the
// runtime's kernel computes it (kernels_pooling.cc): sums and a gradient's
// contributions accumulate in double, the first maximum of a window wins
// and NaN wins. The max backward is taken only when its indices come from
// a max_pool2d_with_indices of the same graph (so each lies in its plane);
// the runtime's kernel, which checks them, runs it otherwise.
// Thread-safety: pure functions; a generated backward sums a plane in the
// thread's scratch buffer (kernel_source.h), so it may run on several
// threads at once.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_POOL_KERNELS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_POOL_KERNELS_H_

#include <optional>
#include <string>
#include <vector>

#include "core/graph/pooling_inference.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

struct PoolShape {
  enum class Kind { kMax, kAvg, kAdaptiveAvg } kind = Kind::kMax;
  bool backward = false;
  // For kAdaptiveAvg only planes, in and out are set.
  PoolGeometry geometry = {};
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override;
};

// The shape of a node of the family the generated kernel takes.
std::optional<PoolShape> PoolOf(const ResolvedGraph& g,
                                const ResolvedNode& node);

// The node's operands, in the order the kernel reads them (value ids): the
// input; or the gradient (then, for max, the indices).
std::vector<int> PoolInputs(const ResolvedNode& node, const PoolShape& shape);

// The kernel's body (see kernel_source.h).
std::string PoolSource(const PoolShape& shape);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_POOL_KERNELS_H_
