// The native backend's native_layer_norm and native_layer_norm_backward: per
// node, the shape of its generated kernel (or no, for another op or a layout
// the kernel does not take: the runtime's own kernel runs such a node), and the
// kernel's body (see kernel_source.h), which computes as the runtime's kernel
// does. Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_LAYER_NORM_KERNELS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_LAYER_NORM_KERNELS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/native/staged_operands.h"
#include "core/graph/dtype.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// native_layer_norm over rows of `cols`: inputs x, then the weight and the
// bias when present; outputs the result, mean and rstd. In double, as the
// runtime's kernel.
struct LayerNormShape {
  int64_t rows = 0, cols = 0;
  double eps = 0;
  bool weight = false, bias = false;
  std::vector<StagedTensor> staged;  // A strided x or result.
};
std::string LayerNormSource(const LayerNormShape& shape);

// native_layer_norm_backward over rows of `cols`: inputs the output's
// gradient, x, mean, rstd, then the weight when present; outputs the
// gradients of x, weight and bias, each computed only if its mask is set.
struct LayerNormBackwardShape {
  int64_t rows = 0, cols = 0;
  bool weight = false;
  bool mask[3] = {false, false, false};
  std::vector<StagedTensor> staged;  // A strided gradient, x or x's gradient.
};
std::string LayerNormBackwardSource(const LayerNormBackwardShape& shape);

// native_layer_norm(x, normalized_shape, weight?, bias?, eps) over the
// trailing dims of a floating x (staged when strided: staged_operands.h),
// with weight and bias contiguous of those dims and results in x's dtype,
// the first staged when strided, the mean and rstd contiguous.
std::optional<LayerNormShape> LayerNormOf(const ResolvedGraph& g,
                                          const ResolvedNode& node);

// native_layer_norm_backward(g, x, normalized_shape, mean, rstd, weight?,
// bias?, output_mask) over contiguous tensors of x's dtype, as for
// LayerNormOf. The mask is the node's.
std::optional<LayerNormBackwardShape> LayerNormBackwardOf(
    const ResolvedGraph& g, const ResolvedNode& node);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_LAYER_NORM_KERNELS_H_
