// The native backend's softmax and log_softmax over the last dim, and their
// backward: per node, the shape of its generated kernel (or no, for another op
// or a layout the kernel does not take: the runtime's own kernel runs such a
// node), and the kernel's body (see kernel_source.h), which computes as the
// runtime's kernel does. Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_SOFTMAX_KERNELS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_SOFTMAX_KERNELS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/dtype.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// Softmax or log_softmax over rows of `cols` (input 0), or its backward
// (inputs: the output's gradient, the output), in double as the runtime's
// kernels.
struct SoftmaxShape {
  int64_t rows = 0, cols = 0;
  bool log = false;
  bool backward = false;
};
std::string SoftmaxSource(const SoftmaxShape& shape);

// _softmax or _log_softmax, or their backward (_softmax_backward_data,
// _log_softmax_backward_data), over the last dim of contiguous floating
// tensors into one of their dtype.
std::optional<SoftmaxShape> SoftmaxOf(const ResolvedGraph& g,
                                      const ResolvedNode& node);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_SOFTMAX_KERNELS_H_
