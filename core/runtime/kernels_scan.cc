// Kernels of scans and sorts: cumsum along a dim, accumulated in double for
// floats and in int64 for integers (torch's CPU accumulation types), each
// partial sum stored in the result's dtype; sort along a dim, a stable sort
// that puts NaN above every number (torch's order of ties without
// stable=True is unspecified and differs between its CPU kernels); topk with
// torch's CPU algorithm step for step, so ties pick the same indices.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
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

// The rows of self (argument 0) along `dim`, and where each row's values
// and indices (results 0 and 1) go.
struct Rows {
  Tensor in, values, indices;
  std::vector<int64_t> outer;  // self's shape, 1 along dim.
  int64_t len = 0, in_step = 0, v_step = 0, ix_step = 0;

  // Calls f(pos) for each row, pos the storage positions of its first
  // element in self, values and indices.
  template <typename F>
  void ForEach(F f) const {
    ForEachIndex(
        outer, {in.meta().stride, values.meta().stride, indices.meta().stride},
        {in.meta().offset, values.meta().offset, indices.meta().offset}, f);
  }
};

Rows RowsOf(const KernelArgs& k, int64_t dim) {
  Rows r;
  r.in = k.tensor(0);
  r.values = k.NewResult(0);
  r.indices = k.NewResult(1);
  const Meta& a = r.in.meta();
  if (dim < 0) dim += std::max<int64_t>(a.dim(), 1);
  auto step = [dim](const Meta& m) { return m.dim() == 0 ? 0 : m.stride[dim]; };
  r.outer = a.shape;
  if (a.dim() > 0) r.outer[dim] = 1;
  r.len = a.dim() == 0 ? 1 : a.shape[dim];
  r.in_step = step(a);
  r.v_step = step(r.values.meta());
  r.ix_step = step(r.indices.meta());
  return r;
}

// values, indices of each row of self along `dim`: the first `keep` of its
// elements in order (descending or ascending).
Results SortRows(const KernelArgs& k, int64_t dim, bool descending,
                 int64_t keep) {
  Rows r = RowsOf(k, dim);
  std::vector<double> row(r.len);
  std::vector<int64_t> order(r.len);
  auto before = [&](int64_t p, int64_t q) {
    double x = row[p], y = row[q];
    if (std::isnan(x) || std::isnan(y))
      return descending ? !std::isnan(y) : !std::isnan(x) && std::isnan(y);
    return descending ? x > y : x < y;
  };
  r.ForEach([&](const int64_t* pos) {
    for (int64_t i = 0; i < r.len; ++i) {
      row[i] = LoadAs<double>(r.in.storage_data(), r.in.dtype(),
                              pos[0] + i * r.in_step);
    }
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), before);
    for (int64_t i = 0; i < keep; ++i) {
      StoreFrom<double>(r.values.storage_data(), r.values.dtype(),
                        pos[1] + i * r.v_step, row[order[i]]);
      StoreFrom<int64_t>(r.indices.storage_data(), r.indices.dtype(),
                         pos[2] + i * r.ix_step, order[i]);
    }
  });
  return std::vector<Tensor>{r.values, r.indices};
}

Results Sort(const KernelArgs& k) {
  const Meta& a = k.tensor(0).meta();
  int64_t dim = k.arg(1).i;
  int64_t len = a.dim() == 0 ? 1 : a.shape[dim < 0 ? dim + a.dim() : dim];
  return SortRows(k, dim, k.arg(2).b, len);
}

// topk(self, k, dim, largest, sorted) as torch's CPU kernel does it: on
// (value, index) pairs, std::partial_sort of the first k when 64 k <= n, else
// std::nth_element at k - 1 and, when sorted, std::sort of the k - 1 before
// it. The same calls on the same sequence leave ties, and an unsorted
// result, in the same order as eager.
Results Topk(const KernelArgs& k) {
  Rows r = RowsOf(k, k.arg(2).i);
  const int64_t keep = k.arg(1).i;
  const bool largest = k.arg(3).b, sorted = k.arg(4).b;
  if (keep == 0) return std::vector<Tensor>{r.values, r.indices};
  DispatchDType(r.in.dtype(), [&](auto tag) {
    using C = typename decltype(tag)::type;
    using Elem = std::pair<C, int64_t>;
    // x != x: NaN, which torch puts above every number.
    auto before = [largest](const Elem& x, const Elem& y) {
      bool x_nan = x.first != x.first, y_nan = y.first != y.first;
      return largest ? (x_nan && !y_nan) || x.first > y.first
                     : (!x_nan && y_nan) || x.first < y.first;
    };
    std::vector<Elem> queue(r.len);
    r.ForEach([&](const int64_t* pos) {
      for (int64_t i = 0; i < r.len; ++i) {
        queue[i] = {LoadAs<C>(r.in.storage_data(), r.in.dtype(),
                              pos[0] + i * r.in_step),
                    i};
      }
      if (keep * 64 <= r.len) {
        std::partial_sort(queue.begin(), queue.begin() + keep, queue.end(),
                          before);
      } else {
        std::nth_element(queue.begin(), queue.begin() + keep - 1, queue.end(),
                         before);
        if (sorted) std::sort(queue.begin(), queue.begin() + keep - 1, before);
      }
      for (int64_t i = 0; i < keep; ++i) {
        StoreFrom<C>(r.values.storage_data(), r.values.dtype(),
                     pos[1] + i * r.v_step, queue[i].first);
        StoreFrom<int64_t>(r.indices.storage_data(), r.indices.dtype(),
                           pos[2] + i * r.ix_step, queue[i].second);
      }
    });
  });
  return std::vector<Tensor>{r.values, r.indices};
}

}  // namespace

namespace kernels {

const std::vector<Entry>& ScanKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.cumsum.default", Cumsum},
      {"aten.sort.default", Sort},
      {"aten.topk.default", Topk},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
