// The convolution family in the native backend: convolution and
// convolution_backward over floating tensors (strided ones staged:
// staged_operands.h; 1 to 3 spatial
// dims, stride, padding, dilation, groups, transposed: as the input
// gradient of its dual, ConvGeometry), generated for their geometry as
// im2col (or col2im) and matrix products through OpenBLAS: sgemm for
// float32, which accumulates in float32 as eager's float32 convolution does
// (the runtime's reference kernel computes in float64), dgemm for float64.
// A 1x1 kernel of stride 1 without padding reads the image as it is.
// Thread-safety: pure functions; a generated kernel works in the thread's
// scratch buffers (kernel_source.h), so it may run on several threads at
// once.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_CONV_KERNELS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_CONV_KERNELS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/native/staged_operands.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// One convolution (inputs x, weight, bias when present; output y) or its
// backward (inputs the output's gradient, x, weight; outputs the gradients
// of x, weight and bias, each computed if its mask is set, else zeros), the
// spatial dims padded to 3 with size 1. A transposed one holds its dual's
// geometry (ConvGeometry).
struct ConvShape {
  bool f64 = false;
  bool transposed = false;
  bool backward = false;
  bool bias = false;
  bool mask[3] = {false, false, false};
  int64_t batch = 0, channels = 0, out_channels = 0, groups = 1;
  int64_t in[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
  std::vector<StagedTensor> staged;  // Strided operands and results.
};

// The shape of a convolution or convolution_backward node the generated
// kernel takes: operands and results of one floating dtype, the results
// each dense (any order of dims, no gaps or overlaps).
std::optional<ConvShape> ConvOf(const ResolvedGraph& g,
                                const ResolvedNode& node);

// The kernel's body (see kernel_source.h).
std::string ConvSource(const ConvShape& shape);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_CONV_KERNELS_H_
