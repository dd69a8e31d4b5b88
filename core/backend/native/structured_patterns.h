// Recognizers of the native backend's structured kernels (kernel_source.h):
// softmax and log_softmax over the last dim and their backward, layer norm
// and its backward, mse_loss, var, the scatters, cat and dot. Each gives
// the shape of its kernel, or says no for another op or for layouts the
// kernel does not take; the runtime's own kernel runs such a node.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_STRUCTURED_PATTERNS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_STRUCTURED_PATTERNS_H_

#include <optional>

#include "core/backend/native/kernel_source.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

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

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_STRUCTURED_PATTERNS_H_
