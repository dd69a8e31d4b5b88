// The native backend's var.correction: per node, the shape of its generated
// kernel (or no, for another op or a layout the kernel does not take: the
// runtime's own kernel runs such a node), and the kernel's body (see
// kernel_source.h), which computes as the runtime's kernel does.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_REDUCTION_KERNELS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_REDUCTION_KERNELS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/dtype.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// var.correction over a contiguous input seen as [pre, outer, reduced,
// inner], reduced over pre and reduced, into a contiguous [outer, inner]:
// per output, in double as the runtime's kernel and in its order, the mean,
// then the squared deviations over max(0, count - correction).
struct VarShape {
  int64_t pre = 1, outer = 1, reduced = 1, inner = 1;
  double correction = 1;
};
std::string VarSource(const VarShape& shape);

// var.correction(self, dim?, correction?, keepdim) of a contiguous floating
// tensor over dims that form at most two blocks, the first leading.
std::optional<VarShape> VarOf(const ResolvedGraph& g, const ResolvedNode& node);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_REDUCTION_KERNELS_H_
