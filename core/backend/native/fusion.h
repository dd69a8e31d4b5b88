// Fusion for the native backend: groups of elementwise nodes computed in
// one loop (their C++ source: loop_sources.h).
//
// A group is a connected set of at most 256 elementwise nodes (add, mul,
// sin, tanh, sigmoid, ...) whose results all have one shape, whose intermediate
// results are read only inside the group (only the last node's result, the
// sink, leaves it), and whose operands from outside are read at the loop's
// index, at their one element (scalars), or through their strides
// (broadcast or other layouts: the loop then nests over the result's
// dims). A sum or mean may be the sink. Each group becomes `extern "C" void
// aotcache_kernel_<i>(const void* const* inputs, void* const* outputs,
// int64_t n)`, computing exactly what the runtime's kernels compute (the
// same operations in the same types), in a loop the compiler vectorizes.
// Matrix products (mm, addmm, bmm) become calls to OpenBLAS's
// cblas_sgemm/dgemm (link -lopenblas); softmax, log_softmax and layer norm
// have kernels of their own, as have convolutions and their backward
// (im2col and GEMM, conv_kernels.h), batch norm (norm_kernels.h) and
// pooling (pool_kernels.h): own_kernels.h.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_FUSION_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_FUSION_H_

#include <string>
#include <vector>

#include "core/graph/resolved_graph.h"

namespace aotcache {

struct FusedGroup {
  // Resolved node indices; the kernel runs at the last one's turn. An
  // elementwise group's in graph order; an own kernel's node last, after
  // the node it absorbs.
  std::vector<int> nodes;
  std::vector<int> inputs;   // Value ids read from outside, in first use.
  std::vector<int> outputs;  // Value ids: the last node's results, or, when
                             // it absorbs a node, that node's result first.
  // The last node is a sum or mean over leading or trailing dims of a
  // contiguous tensor; the others compute its input, element by element.
  bool reduction = false;
  // Elementwise with an operand read through its strides (broadcast along
  // some dims, or laid out otherwise): loops over the output's dims.
  bool strided = false;
  // One node with a kernel of its own kind (own_kernels.h): a matrix
  // product, softmax, a norm, a convolution, ...
  bool own_kernel = false;
  // For a batch norm backward: the elementwise loop that made its gradient,
  // absorbed (its nodes first, its inputs the first gradient_inputs), so
  // that the gradient is computed element by element, never stored.
  int gradient_inputs = 0;

  // Generated for its operands' layouts, not elementwise over contiguous
  // operands of its output's size.
  bool any_layout() const { return own_kernel || reduction || strided; }
};

// Elementwise groups (a single node too: one vectorized loop), and the
// nodes with kernels of their own kind (own_kernels.h); a node is in at
// most one group.
std::vector<FusedGroup> FindFusedGroups(const ResolvedGraph& graph);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_FUSION_H_
