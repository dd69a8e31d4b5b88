// Recognizers for the native backend (fusion.h): whether a node is one its
// kernels compute, and the shape of that kernel. Elementwise operands,
// reductions over leading or trailing dims, matrix products BLAS can read,
// softmax and log_softmax over the last dim and their backward, layer norm
// and its backward, mse_loss, scatters, cat and dot. Each says no for
// another op or for layouts its kernel does not take; the runtime's own
// kernel runs such a node.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_KERNEL_PATTERNS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_KERNEL_PATTERNS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "core/backend/native/kernel_source.h"
#include "core/graph/dtype.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// An operand every element of which is its first: one element, or all
// strides zero (an expanded scalar, such as the gradient of a sum).
bool ScalarLike(const Meta& m);

// A sum, mean or amax over a contiguous floating tensor of consecutive
// dims, or of two blocks of them the first of which leads: the input is
// [pre, outer, reduced, inner] and out[o, c] = sum (or max) over p and r of
// in[p, o, r, c], accumulated in double as the runtime's kernel does (amax:
// from -inf, NaN if any element is NaN). pre is 1 unless the reduced dims
// are two blocks.
struct Reduction {
  bool mean = false;
  bool max = false;
  int64_t pre = 1, outer = 1, reduced = 1, inner = 1;
  int input = -1;  // Value id.
};
std::optional<Reduction> ReductionOf(const ResolvedGraph& g,
                                     const ResolvedNode& node);

// mm(a, b), addmm(bias, a, b, beta, alpha) or bmm(a, b) over floating
// matrices BLAS can read (for bmm, batches of them), into a contiguous
// result; bias [N] or [M, N], contiguous. Its call, for a node BlasMatmul
// takes.
bool BlasMatmul(const ResolvedGraph& g, const ResolvedNode& node);
GemmShape GemmOf(const ResolvedGraph& g, const ResolvedNode& node);

// The operands (value ids) of a matrix product or a reduction that its
// kernel above takes once they are copied into contiguous memory: a matrix
// BLAS cannot read (the expanded, stride-0 gradient of a sum), the strided
// input of a sum. Empty when the kernel takes the node as it is, or would
// not take it in any layout.
std::vector<int> ValuesToMakeContiguous(const ResolvedGraph& g,
                                        const ResolvedNode& node);

// _softmax or _log_softmax, or their backward (_softmax_backward_data,
// _log_softmax_backward_data), over the last dim of contiguous floating
// tensors into one of their dtype.
std::optional<SoftmaxShape> SoftmaxOf(const ResolvedGraph& g,
                                      const ResolvedNode& node);

// mse_loss(self, target, reduction) or mse_loss_backward(grad, self,
// target, reduction) over contiguous floating tensors of one shape and
// dtype (the gradient: that shape, or one element).
std::optional<MseLossShape> MseLossOf(const ResolvedGraph& g,
                                      const ResolvedNode& node);

// select_scatter(self, src, dim, index), slice_scatter(self, src, dim,
// start, end, step) or as_strided_scatter(self, src, size, stride,
// storage_offset) into a contiguous floating result of self's dtype, src
// floating or bool and broadcasting to the view's shape.
std::optional<ScatterShape> ScatterOf(const ResolvedGraph& g,
                                      const ResolvedNode& node);

// var.correction(self, dim?, correction?, keepdim) of a contiguous floating
// tensor over dims that form at most two blocks, the first leading.
std::optional<VarShape> VarOf(const ResolvedGraph& g, const ResolvedNode& node);

// dot(a, b) of floating vectors of the result's dtype, any strides.
std::optional<DotShape> DotOf(const ResolvedGraph& g, const ResolvedNode& node);

// cat(tensors, dim) of contiguous parts of the result's dtype (any dtype)
// into a contiguous result; empty parts are skipped, as the runtime's
// kernel skips them.
std::optional<ConcatShape> ConcatOf(const ResolvedGraph& g,
                                    const ResolvedNode& node);

// native_layer_norm(x, normalized_shape, weight?, bias?, eps) over the
// trailing dims of a contiguous floating x, with weight and bias contiguous
// of those dims and results contiguous in x's dtype.
std::optional<LayerNormShape> LayerNormOf(const ResolvedGraph& g,
                                          const ResolvedNode& node);

// native_layer_norm_backward(g, x, normalized_shape, mean, rstd, weight?,
// bias?, output_mask) over contiguous tensors of x's dtype, as for
// LayerNormOf. The mask is the node's.
std::optional<LayerNormBackwardShape> LayerNormBackwardOf(
    const ResolvedGraph& g, const ResolvedNode& node);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_KERNEL_PATTERNS_H_
