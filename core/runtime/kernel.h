// The kernel interface: one function per op overload, computing a node's
// results from its input tensors and bound scalar arguments. Results are
// allocated with the metas shape inference gave the node (views return views
// of their input's storage).
// Thread-safety: kernels are pure functions of their arguments.
#ifndef AOTCACHE_CORE_RUNTIME_KERNEL_H_
#define AOTCACHE_CORE_RUNTIME_KERNEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/resolved_graph.h"
#include "core/runtime/philox.h"
#include "core/runtime/tensor.h"

namespace aotcache {

struct KernelArgs {
  const ResolvedNode* node;
  // Per schema argument: its tensor (Python numbers in tensor slots arrive
  // as 0-dim float64 tensors), null for non-tensors and None. They point
  // into the run's values, which outlive the kernel's call.
  std::vector<const Tensor*> tensors;
  // Per schema argument: its tensors, for tensor lists.
  std::vector<std::vector<Tensor>> lists;
  const std::vector<Meta>* result_metas;
  // Per result: memory planned for it (zero-filled), or undefined.
  std::vector<Tensor> preallocated;
  // Random ops draw from Philox (philox.h) keyed by the run's seed, with
  // the node's index as the stream and the element as the counter.
  uint64_t seed = 0;
  uint32_t stream = 0;

  const BoundArg& arg(int i) const { return node->args[i]; }
  // Argument i's tensor, undefined for non-tensors and None.
  const Tensor& tensor(int i) const {
    static const Tensor* const kUndefined = new Tensor();
    return tensors[i] != nullptr ? *tensors[i] : *kUndefined;
  }
  const Meta& result_meta(int r) const { return (*result_metas)[r]; }
  // A zero-filled tensor for result r, in planned memory when there is some.
  Tensor NewResult(int r) const {
    if (r < static_cast<int>(preallocated.size()) &&
        preallocated[r].defined()) {
      return preallocated[r];
    }
    return Tensor::Zeros(result_meta(r));
  }
  double number(int i) const { return node->args[i].AsDouble(); }
  double Uniform(int64_t element) const {
    return philox::Uniform(seed, stream, static_cast<uint64_t>(element));
  }
  double Normal(int64_t element) const {
    return philox::Normal(seed, stream, static_cast<uint64_t>(element));
  }
};

using Kernel = absl::StatusOr<std::vector<Tensor>> (*)(const KernelArgs&);

// The kernel for an op ("aten.add.Tensor"), or nullptr.
Kernel FindKernel(absl::string_view qualified_name);

namespace kernels {
// Registration tables, one per kernel file.
struct Entry {
  const char* op;
  Kernel kernel;
};
extern const std::vector<Entry>& PointwiseKernels();
extern const std::vector<Entry>& ReductionKernels();
extern const std::vector<Entry>& LinalgKernels();
extern const std::vector<Entry>& ShapeKernels();
extern const std::vector<Entry>& BackwardKernels();
extern const std::vector<Entry>& LossKernels();
extern const std::vector<Entry>& IndexingKernels();
extern const std::vector<Entry>& ConvKernels();
extern const std::vector<Entry>& NormKernels();
extern const std::vector<Entry>& ScanKernels();
extern const std::vector<Entry>& PoolingKernels();
}  // namespace kernels

}  // namespace aotcache

#endif  // AOTCACHE_CORE_RUNTIME_KERNEL_H_
