// The native backend's nodes with kernels of their own kind, not fused
// elementwise loops, a file per op family: matrix products (BLAS,
// kernel_patterns.h) and dot (linalg_kernels.h), softmax and log_softmax
// (softmax_kernels.h), layer norm (layer_norm_kernels.h), mse_loss
// (loss_kernels.h), var (reduction_kernels.h), cat and the scatters
// (shape_kernels.h), convolutions (conv_kernels.h), batch norm
// (norm_kernels.h) and pooling (pool_kernels.h), each with its backward. Each
// is a group of one node; fusion.cc asks for the group and for its source.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_OWN_KERNELS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_OWN_KERNELS_H_

#include <optional>
#include <string>
#include <vector>

#include "core/backend/native/fusion.h"
#include "core/backend/native/norm_kernels.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// The group of node `n` when a kernel of its own kind takes it: its inputs
// by position, its results. A batch norm whose result a ReLU reads absorbs
// the ReLU: the group is {relu, n} (run at n's turn), its outputs the
// ReLU's result, the batch norm's other two, then, if anything else reads
// it, the batch norm's first.
std::optional<FusedGroup> OwnKernelGroup(const ResolvedGraph& g, int n);

// The body of such a group's kernel, or "" for an elementwise group.
// `read[v]`: whether value v is read (a masked-out result that is read is
// computed all the same). `gradient`: for a batch norm backward that
// absorbed the loop making its gradient (FusedGroup::gradient_inputs).
std::string OwnKernelSource(const ResolvedGraph& g, const FusedGroup& group,
                            const std::vector<bool>& read,
                            const GradientPrologue* gradient = nullptr);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_OWN_KERNELS_H_
