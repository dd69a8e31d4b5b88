// The batch norm family in the native backend: batch norm on the batch's
// statistics (_native_batch_norm_legit.no_stats), on the running ones
// (_native_batch_norm_legit_no_training) and native_batch_norm_backward,
// over contiguous floating (N, C, ...) tensors. Generated for their shape,
// one channel at a time, each image's plane of it a vectorized loop;
// statistics and sums accumulate in double and every value is computed as
// the runtime's kernel computes it (kernels_norm.cc), a following ReLU's
// too.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_NORM_KERNELS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_NORM_KERNELS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/resolved_graph.h"

namespace aotcache {

struct BatchNormShape {
  enum class Kind { kTrain, kEval, kBackward } kind = Kind::kTrain;
  // The backward of a batch norm on the batch's statistics (saved mean and
  // invstd), else on the running ones (mean and var).
  bool train = true;
  bool weight = false, bias = false;
  bool mask[3] = {true, true, true};  // The backward's results computed.
  int64_t batch = 0, channels = 0, inner = 1;  // inner: the spatial size.
  double eps = 0;
  // A forward whose result a ReLU reads writes the ReLU's result (the ReLU
  // absorbed: own_kernels.h) as its first output, and its own result as a
  // fourth if `keep_normalized`.
  bool relu = false, keep_normalized = false;
};

// The shape of a node of the family the generated kernel takes.
std::optional<BatchNormShape> BatchNormOf(const ResolvedGraph& g,
                                          const ResolvedNode& node);

// The node's operands, in the order the kernel reads them (value ids):
// x, weight?, bias?, running mean and var (eval); the gradient, x, weight?,
// then the saved or running statistics (backward).
std::vector<int> BatchNormInputs(const ResolvedNode& node,
                                 const BatchNormShape& shape);

// A backward's gradient computed element by element in its own kernel, by
// the loop that would have written it (fusion.cc): the loop reads inputs
// [0, inputs) and `source` defines `grad_at(i)`; the batch norm's own
// operands follow.
struct GradientPrologue {
  int inputs = 0;
  std::string source;
};

// The kernel's body (see kernel_source.h).
std::string BatchNormSource(const BatchNormShape& shape,
                            const GradientPrologue* gradient = nullptr);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_NORM_KERNELS_H_
