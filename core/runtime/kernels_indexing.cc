// Kernels of the indexing family: embedding and embedding_dense_backward,
// gather, scatter_add and scatter_reduce, index_select and index_add, argmax
// and argmin.
// An index out of range is an error, never a read or write past a tensor.
#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;

// The indices, each checked against `rows`.
absl::StatusOr<std::vector<int64_t>> Rows(const Tensor& indices, int64_t rows) {
  Tensor flat = ContiguousForReading(indices);
  std::vector<int64_t> out(flat.numel());
  DispatchDType(flat.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = reinterpret_cast<const T*>(flat.storage_data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(p[i]);
  });
  for (int64_t i : out) {
    if (i < 0 || i >= rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "embedding: index ", i, " is out of range for ", rows, " rows"));
    }
  }
  return out;
}

Results Embedding(const KernelArgs& k) {
  Tensor weight = ContiguousForReading(k.tensor(0));
  int64_t rows = weight.shape()[0], width = weight.shape()[1];
  absl::StatusOr<std::vector<int64_t>> index = Rows(k.tensor(1), rows);
  if (!index.ok()) return index.status();
  Tensor out = k.NewResult(0);
  int64_t item = ItemSize(out.dtype());
  for (size_t i = 0; i < index->size(); ++i) {
    std::copy_n(weight.storage_data() + (*index)[i] * width * item,
                width * item, out.storage_data() + i * width * item);
  }
  return std::vector<Tensor>{out};
}

// Sums each index's gradient rows into its weight row, in the order of the
// indices as eager's index_add does; padding_idx gets none;
// scale_grad_by_freq divides by how often the index occurs.
Results EmbeddingDenseBackward(const KernelArgs& k) {
  Tensor grad = ContiguousForReading(k.tensor(0));
  Tensor out = k.NewResult(0);
  int64_t rows = out.shape()[0], width = out.shape()[1];
  absl::StatusOr<std::vector<int64_t>> index = Rows(k.tensor(1), rows);
  if (!index.ok()) return index.status();
  int64_t padding = k.arg(3).i;
  bool by_freq = k.arg(4).b;
  absl::flat_hash_map<int64_t, int64_t> count;
  if (by_freq) {
    for (int64_t i : *index) ++count[i];
  }
  Tensor acc = out.meta().IsContiguous() && out.meta().offset == 0
                   ? out
                   : Tensor::Zeros(ContiguousMeta(out.shape(), out.dtype()));
  DispatchDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = reinterpret_cast<const T*>(grad.storage_data());
    T* w = reinterpret_cast<T*>(acc.storage_data());
    for (size_t i = 0; i < index->size(); ++i) {
      int64_t row = (*index)[i];
      if (row == padding) continue;
      T scale = by_freq ? T(1) / static_cast<T>(count[row]) : T(1);
      for (int64_t j = 0; j < width; ++j) {
        w[row * width + j] += scale * g[i * width + j];
      }
    }
  });
  if (!acc.SharesStorageWith(out)) CopyInto(acc, out);
  return std::vector<Tensor>{out};
}

// `values` (row-major) as result 0.
Results Stored(const KernelArgs& k, const std::vector<double>& values) {
  Tensor result = k.NewResult(0);
  StoreDoubles(values, result);
  return std::vector<Tensor>{result};
}

// An index element as a position in [0, size), or InvalidArgument.
absl::StatusOr<int64_t> Checked(absl::string_view op, double index,
                                int64_t size) {
  if (!(index >= 0 && index < static_cast<double>(size))) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": index ", index, " is out of range for a dim of size ", size));
  }
  return static_cast<int64_t>(index);
}

// A tensor's sizes as gather and scatter see them: a 0-d tensor as [1].
std::vector<int64_t> AtLeast1d(const Tensor& t) {
  return t.shape().empty() ? std::vector<int64_t>{1} : t.shape();
}

int64_t WrapDim(int64_t dim, int64_t rank) {
  return dim < 0 ? dim + std::max<int64_t>(rank, 1) : dim;
}

// For gather (scatter = false) and scatter_add: calls f(at, target) for
// every element of index, `at` its row-major position in index (and in
// src), `target` the row-major position in self it names.
template <typename F>
absl::Status ForEachScatterPosition(absl::string_view op, const Tensor& self,
                                    int64_t dim, const Tensor& index, F f) {
  std::vector<int64_t> self_shape = AtLeast1d(self);
  std::vector<int64_t> index_shape = AtLeast1d(index);
  std::vector<int64_t> self_strides = ContiguousStrides(self_shape);
  int64_t dim_stride = self_strides[dim];
  self_strides[dim] = 0;
  std::vector<double> where = index.ToDoubles();
  absl::Status status;
  int64_t at = 0;
  ForEachIndex(index_shape, {self_strides}, {0}, [&](const int64_t* base) {
    if (!status.ok()) return;
    absl::StatusOr<int64_t> i = Checked(op, where[at], self_shape[dim]);
    if (!i.ok()) {
      status = i.status();
      return;
    }
    f(at++, base[0] + *i * dim_stride);
  });
  return status;
}

Results Gather(const KernelArgs& k) {
  const Tensor& self = k.tensor(0);
  std::vector<double> x = self.ToDoubles();
  std::vector<double> out(k.result_meta(0).numel());
  absl::Status status = ForEachScatterPosition(
      "gather", self, WrapDim(k.arg(1).i, self.shape().size()), k.tensor(2),
      [&](int64_t at, int64_t target) { out[at] = x[target]; });
  if (!status.ok()) return status;
  return Stored(k, out);
}

// src's row-major position of each element of index (index may be smaller
// than src).
std::vector<int64_t> SourcePositions(const Tensor& index, const Tensor& src) {
  std::vector<int64_t> src_at;
  ForEachIndex(AtLeast1d(index), {ContiguousStrides(AtLeast1d(src))}, {0},
               [&](const int64_t* p) { src_at.push_back(p[0]); });
  return src_at;
}

// Adds src's elements at index's positions into a copy of self.
Results ScatterAdd(const KernelArgs& k) {
  const Tensor& self = k.tensor(0);
  std::vector<double> out = self.ToDoubles();
  std::vector<double> src = k.tensor(3).ToDoubles();
  std::vector<int64_t> src_at = SourcePositions(k.tensor(2), k.tensor(3));
  absl::Status status = ForEachScatterPosition(
      "scatter_add", self, WrapDim(k.arg(1).i, self.shape().size()),
      k.tensor(2),
      [&](int64_t at, int64_t target) { out[target] += src[src_at[at]]; });
  if (!status.ok()) return status;
  return Stored(k, out);
}

// scatter_reduce(self, dim, index, src, reduce, include_self): each position
// index names reduces src's elements with self's (or, without include_self,
// with the others only) by sum, prod, mean, amax or amin (a NaN wins amax
// and amin, as torch's kernels); mean divides by the count reduced, rounding
// down for integers; positions no index names keep self's value.
Results ScatterReduce(const KernelArgs& k) {
  const Tensor& self = k.tensor(0);
  const std::string& reduce = k.arg(4).s;
  const bool include_self = k.arg(5).b;
  std::vector<double> out = self.ToDoubles();
  std::vector<double> src = k.tensor(3).ToDoubles();
  std::vector<int64_t> src_at = SourcePositions(k.tensor(2), k.tensor(3));
  std::vector<int64_t> count(out.size(), include_self ? 1 : 0);
  const bool adds = reduce == "sum" || reduce == "mean";
  const bool multiplies = reduce == "prod", largest = reduce == "amax";
  auto combine = [&](double a, double b) {
    if (adds) return a + b;
    if (multiplies) return a * b;
    if (std::isnan(a) || std::isnan(b)) return std::nan("");
    return largest ? std::max(a, b) : std::min(a, b);
  };
  absl::Status status = ForEachScatterPosition(
      "scatter_reduce", self, WrapDim(k.arg(1).i, self.shape().size()),
      k.tensor(2), [&](int64_t at, int64_t target) {
        double v = src[src_at[at]];
        out[target] = count[target]++ == 0 ? v : combine(out[target], v);
      });
  if (!status.ok()) return status;
  if (reduce == "mean") {
    const bool integral = !IsFloating(self.dtype());
    for (size_t i = 0; i < out.size(); ++i) {
      if (count[i] > 1) {
        out[i] /= static_cast<double>(count[i]);
        if (integral) out[i] = std::floor(out[i]);
      }
    }
  }
  return Stored(k, out);
}

// self viewed as [outer, size, inner] around `dim`.
struct AroundDim {
  int64_t outer = 1, size = 1, inner = 1;
  AroundDim(const std::vector<int64_t>& shape, int64_t dim) {
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
      (d < dim ? outer : d == dim ? size : inner) *= shape[d];
    }
  }
};

absl::StatusOr<std::vector<int64_t>> IndexVector(absl::string_view op,
                                                 const Tensor& index,
                                                 int64_t size) {
  std::vector<int64_t> out;
  for (double v : index.ToDoubles()) {
    absl::StatusOr<int64_t> i = Checked(op, v, size);
    if (!i.ok()) return i.status();
    out.push_back(*i);
  }
  return out;
}

// For index_select and index_add: calls f(at_self, at_other) for slice j
// of index (of `inner` elements each, at every outer position): at_self
// where it lies in self (slice index[j] along dim), at_other in the
// result or source (slice j). `inner` is set before the first call.
template <typename F>
absl::Status ForEachIndexedSlice(absl::string_view op, const KernelArgs& k,
                                 int64_t* inner, F f) {
  const Tensor& self = k.tensor(0);
  AroundDim in(self.shape(), WrapDim(k.arg(1).i, self.shape().size()));
  absl::StatusOr<std::vector<int64_t>> index =
      IndexVector(op, k.tensor(2), in.size);
  if (!index.ok()) return index.status();
  *inner = in.inner;
  int64_t n = static_cast<int64_t>(index->size());
  for (int64_t o = 0; o < in.outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      f((o * in.size + (*index)[j]) * in.inner, (o * n + j) * in.inner);
    }
  }
  return absl::OkStatus();
}

Results IndexSelect(const KernelArgs& k) {
  std::vector<double> x = k.tensor(0).ToDoubles();
  std::vector<double> out(k.result_meta(0).numel());
  int64_t inner = 0;
  absl::Status status = ForEachIndexedSlice(
      "index_select", k, &inner, [&](int64_t at_self, int64_t at_out) {
        std::copy_n(&x[at_self], inner, &out[at_out]);
      });
  if (!status.ok()) return status;
  return Stored(k, out);
}

// self + alpha * source, source's slice j added at self's slice index[j].
Results IndexAdd(const KernelArgs& k) {
  std::vector<double> out = k.tensor(0).ToDoubles();
  std::vector<double> source = k.tensor(3).ToDoubles();
  double alpha = k.number(4);
  int64_t inner = 0;
  absl::Status status = ForEachIndexedSlice(
      "index_add", k, &inner, [&](int64_t at_self, int64_t at_source) {
        for (int64_t i = 0; i < inner; ++i) {
          out[at_self + i] += alpha * source[at_source + i];
        }
      });
  if (!status.ok()) return status;
  return Stored(k, out);
}

// argmax (max = true) or argmin over one dim or all: the first index of the
// extreme, a NaN counting as the extreme (as torch's kernels).
Results ArgReduce(const KernelArgs& k, bool max) {
  const Tensor& self = k.tensor(0);
  std::vector<double> x = self.ToDoubles();
  AroundDim in =
      k.arg(1).is_none()
          ? AroundDim({self.numel()}, 0)
          : AroundDim(self.shape(), WrapDim(k.arg(1).i, self.shape().size()));
  std::vector<double> out(in.outer * in.inner);
  for (int64_t o = 0; o < in.outer; ++o) {
    for (int64_t i = 0; i < in.inner; ++i) {
      const double* row = &x[o * in.size * in.inner + i];
      int64_t best = 0;
      for (int64_t j = 1; j < in.size && !std::isnan(row[best * in.inner]);
           ++j) {
        double v = row[j * in.inner], b = row[best * in.inner];
        if (std::isnan(v) || (max ? v > b : v < b)) best = j;
      }
      out[o * in.inner + i] = static_cast<double>(best);
    }
  }
  return Stored(k, out);
}
Results ArgMax(const KernelArgs& k) { return ArgReduce(k, true); }
Results ArgMin(const KernelArgs& k) { return ArgReduce(k, false); }

}  // namespace

namespace kernels {

const std::vector<Entry>& IndexingKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.embedding.default", Embedding},
      {"aten.embedding_dense_backward.default", EmbeddingDenseBackward},
      {"aten.gather.default", Gather},
      {"aten.scatter_add.default", ScatterAdd},
      {"aten.scatter_reduce.two", ScatterReduce},
      {"aten.index_select.default", IndexSelect},
      {"aten.index_add.default", IndexAdd},
      {"aten.argmax.default", ArgMax},
      {"aten.argmin.default", ArgMin},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
