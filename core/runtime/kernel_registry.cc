#include "absl/container/flat_hash_map.h"
#include "core/runtime/kernel.h"

namespace aotcache {

Kernel FindKernel(absl::string_view qualified_name) {
  static const auto* kernels = [] {
    auto* map = new absl::flat_hash_map<std::string, Kernel>();
    for (const auto* table :
         {&kernels::PointwiseKernels(), &kernels::ReductionKernels(),
          &kernels::LinalgKernels(), &kernels::ShapeKernels(),
          &kernels::BackwardKernels(), &kernels::LossKernels(),
          &kernels::IndexingKernels(), &kernels::ConvKernels(),
          &kernels::NormKernels(), &kernels::PoolingKernels(),
          &kernels::ScanKernels()}) {
      for (const kernels::Entry& e : *table) map->emplace(e.op, e.kernel);
    }
    return map;
  }();
  auto it = kernels->find(qualified_name);
  return it == kernels->end() ? nullptr : it->second;
}

}  // namespace aotcache
