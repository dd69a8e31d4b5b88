// Shape and dtype inference for the convolution family: convolution (1, 2
// or 3 spatial dims, stride, padding, dilation, groups, transposed with
// output_padding) and convolution_backward.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_CONV_INFERENCE_H_
#define AOTCACHE_CORE_GRAPH_CONV_INFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/shape_inference.h"

namespace aotcache {

// The geometry of one convolution, every list expanded to the spatial rank.
// A transposed convolution is described by the convolution it is the input
// gradient of (its dual): in_size and in_channels are then the transposed
// convolution's output's, out_size and out_channels its input's, and the
// weight, (in, out / groups, kernel...), has the dual's layout.
struct ConvGeometry {
  int64_t batch, in_channels, out_channels, groups;
  std::vector<int64_t> in_size, kernel, out_size;
  std::vector<int64_t> stride, padding, dilation;
  bool transposed = false;

  // The shape of the op's output, and of its bias.
  std::vector<int64_t> OutputShape() const;
  int64_t OutputChannels() const {
    return transposed ? in_channels : out_channels;
  }
};

// The geometry of a convolution of an input of shape `input` by a weight of
// shape `weight`; InvalidArgument saying what does not fit.
absl::StatusOr<ConvGeometry> ConvGeometryOf(
    const std::vector<int64_t>& input, const std::vector<int64_t>& weight,
    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
    const std::vector<int64_t>& dilation, bool transposed,
    const std::vector<int64_t>& output_padding, int64_t groups);

namespace infer {

absl::StatusOr<std::vector<Meta>> Convolution(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> ConvolutionBackward(const InferContext& ctx);

}  // namespace infer
}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_CONV_INFERENCE_H_
