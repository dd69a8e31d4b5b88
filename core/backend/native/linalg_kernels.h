// The native backend's dot (matrix products are GEMM calls: kernel_patterns.h's
// GemmOf, kernel_source.h's GemmSource): per node, the shape of its generated
// kernel (or no, for another op or a layout the kernel does not take: the
// runtime's own kernel runs such a node), and the kernel's body (see
// kernel_source.h), which computes as the runtime's kernel does.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_LINALG_KERNELS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_LINALG_KERNELS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/dtype.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// dot(a, b) of two vectors of `n` elements read through their strides,
// into one element: in double, as the runtime's kernel.
struct DotShape {
  int64_t n = 0;
  int64_t a_stride = 1, b_stride = 1;
};
std::string DotSource(const DotShape& shape);

// dot(a, b) of floating vectors of the result's dtype, any strides.
std::optional<DotShape> DotOf(const ResolvedGraph& g, const ResolvedNode& node);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_LINALG_KERNELS_H_
