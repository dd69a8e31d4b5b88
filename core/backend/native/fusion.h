// Fusion for the native backend: groups of elementwise nodes computed in
// one loop, and the C++ source of those loops.
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
// (im2col and GEMM, conv_kernels.h).
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_FUSION_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_FUSION_H_

#include <string>
#include <vector>

#include "core/graph/resolved_graph.h"

namespace aotcache {

struct FusedGroup {
  std::vector<int> nodes;    // Resolved node indices, in graph order.
  std::vector<int> inputs;   // Value ids read from outside, in first use.
  std::vector<int> outputs;  // The sink's results (value ids).
  // One mm or addmm node through BLAS (cblas_?gemm), generated for its
  // operands' layouts: each a row- or column-major matrix.
  bool matmul = false;
  // The last node is a sum or mean over leading or trailing dims of a
  // contiguous tensor; the others compute its input, element by element.
  bool reduction = false;
  // Elementwise with an operand read through its strides (broadcast along
  // some dims, or laid out otherwise): loops over the output's dims.
  bool strided = false;
  // One softmax or log_softmax, or the backward of one, over the last dim
  // of contiguous tensors.
  bool softmax = false;
  // One native_layer_norm over trailing dims of a contiguous tensor, with
  // its three results.
  bool layer_norm = false;
  // One native_layer_norm_backward over the same, with its three results.
  bool layer_norm_backward = false;
  // One select_scatter, slice_scatter or as_strided_scatter.
  bool scatter = false;
  // One mse_loss, or its backward.
  bool mse_loss = false;
  // One cat: a copy of each part into its columns of the result.
  bool concat = false;
  // One dot of two vectors, read through their strides.
  bool dot = false;
  // One var.correction over blocks of dims of a contiguous tensor.
  bool var = false;
  // One convolution or convolution_backward (conv_kernels.h).
  bool conv = false;

  // Generated for its operands' layouts, not elementwise over contiguous
  // operands of its output's size.
  bool any_layout() const {
    return matmul || reduction || strided || softmax || layer_norm ||
           layer_norm_backward || scatter || mse_loss || concat || dot || var ||
           conv;
  }
};

// Elementwise groups (a single node too: one vectorized loop), and the
// nodes with kernels of their own kind (kernel_patterns.h: matrix products,
// softmax, layer norm); a node is in at most one group.
std::vector<FusedGroup> FindFusedGroups(const ResolvedGraph& graph);

// The C++ source of the groups' kernels, aotcache_kernel_<index>.
std::string GenerateKernels(const ResolvedGraph& graph,
                            const std::vector<FusedGroup>& groups);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_FUSION_H_
