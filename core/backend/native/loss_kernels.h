// The native backend's mse_loss and mse_loss_backward: per node, the shape of
// its generated kernel (or no, for another op or a layout the kernel does not
// take: the runtime's own kernel runs such a node), and the kernel's body (see
// kernel_source.h), which computes as the runtime's kernel does.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_LOSS_KERNELS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_LOSS_KERNELS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/dtype.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// mse_loss(self, target, reduction) over `numel` elements of two contiguous
// tensors of one shape (reduction 0: elementwise, 1: mean, 2: sum), or its
// backward (inputs: the gradient, of that shape or one element, then self
// and target), in double as the runtime's kernels.
struct MseLossShape {
  int64_t numel = 0;
  int reduction = 1;
  bool backward = false;
  bool scalar_grad = false;
};
std::string MseLossSource(const MseLossShape& shape);

// mse_loss(self, target, reduction) or mse_loss_backward(grad, self,
// target, reduction) over contiguous floating tensors of one shape and
// dtype (the gradient: that shape, or one element).
std::optional<MseLossShape> MseLossOf(const ResolvedGraph& g,
                                      const ResolvedNode& node);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_LOSS_KERNELS_H_
