// Kernels of scans: cumsum along a dim, accumulated in double for floats
// and in int64 for integers (torch's CPU accumulation types), each partial
// sum stored in the result's dtype.
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;

Results Cumsum(const KernelArgs& k) {
  const Tensor& in = k.tensor(0);
  Tensor out = k.NewResult(0);
  const Meta& a = in.meta();
  const Meta& b = out.meta();
  int64_t dim = k.arg(1).i;
  if (dim < 0) dim += std::max<int64_t>(a.dim(), 1);
  std::vector<int64_t> outer = a.shape;
  int64_t len = a.dim() == 0 ? 1 : a.shape[dim];
  int64_t in_step = a.dim() == 0 ? 0 : a.stride[dim];
  int64_t out_step = b.dim() == 0 ? 0 : b.stride[dim];
  if (a.dim() > 0) outer[dim] = 1;
  DispatchDType(out.dtype(), [&](auto tag) {
    using C = typename decltype(tag)::type;
    using Acc =
        std::conditional_t<std::is_floating_point_v<C>, double, int64_t>;
    ForEachIndex(outer, {a.stride, b.stride}, {a.offset, b.offset},
                 [&](const int64_t* pos) {
                   Acc sum = 0;
                   for (int64_t i = 0; i < len; ++i) {
                     sum += LoadAs<Acc>(in.storage_data(), in.dtype(),
                                        pos[0] + i * in_step);
                     StoreFrom<Acc>(out.storage_data(), b.dtype,
                                    pos[1] + i * out_step, sum);
                   }
                 });
  });
  return std::vector<Tensor>{out};
}

}  // namespace

namespace kernels {

const std::vector<Entry>& ScanKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.cumsum.default", Cumsum},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
