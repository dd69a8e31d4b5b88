// Reductions and normalizations: sum, mean, var, amax, softmax, log_softmax,
// layer norm, mse_loss. Floating accumulations run in float64.
#include <cmath>
#include <limits>

#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;

// Which dims of `in` a reduction with `dims` (empty: all) reduces.
std::vector<bool> ReducedDims(const Meta& in,
                              const std::vector<int64_t>& dims) {
  std::vector<bool> reduced(in.dim(), dims.empty());
  for (int64_t d : dims) {
    int64_t r = std::max<int64_t>(in.dim(), 1);
    int64_t w = d < 0 ? d + r : d;
    if (w < in.dim()) reduced[w] = true;
  }
  return reduced;
}

// Strides that map each index of `in` to its output position: the output's
// strides for kept dims, 0 for reduced ones.
std::vector<int64_t> ReductionStrides(const Meta& in, const Meta& out,
                                      const std::vector<bool>& reduced) {
  std::vector<int64_t> strides(in.dim(), 0);
  bool keepdim = out.dim() == in.dim();
  int64_t o = 0;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (reduced[d]) {
      if (keepdim) ++o;
      continue;
    }
    strides[d] = out.stride[o++];
  }
  return strides;
}

enum class ReduceKind { kSum, kMean, kMax, kVar };

Results Reduce(const KernelArgs& k, const std::vector<int64_t>& dims,
               ReduceKind kind) {
  const Tensor& in = k.tensor(0);
  const Meta& out_meta = k.result_meta(0);
  std::vector<bool> reduced = ReducedDims(in.meta(), dims);
  int64_t count = 1;
  for (int64_t d = 0; d < in.meta().dim(); ++d) {
    if (reduced[d]) count *= in.shape()[d];
  }
  // Accumulate in float64 in a contiguous buffer shaped like the output.
  Meta acc_meta = ContiguousMeta(out_meta.shape, v1::DTYPE_FLOAT64);
  Tensor acc = Tensor::Zeros(acc_meta);
  double* a = reinterpret_cast<double*>(acc.storage_data());
  double init =
      kind == ReduceKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
  for (int64_t i = 0; i < acc.numel(); ++i) a[i] = init;
  ForEachIndex(
      in.shape(),
      {in.meta().stride, ReductionStrides(in.meta(), acc_meta, reduced)},
      {in.meta().offset, 0}, [&](const int64_t* pos) {
        double x = LoadAs<double>(in.storage_data(), in.dtype(), pos[0]);
        double& slot = a[pos[1]];
        if (kind == ReduceKind::kMax) {
          if (x != x || slot != slot) {
            slot = std::numeric_limits<double>::quiet_NaN();
          } else if (x > slot) {
            slot = x;
          }
        } else {
          slot += x;
        }
      });
  if (kind == ReduceKind::kMean || kind == ReduceKind::kVar) {
    for (int64_t i = 0; i < acc.numel(); ++i)
      a[i] /= static_cast<double>(count);
  }
  if (kind == ReduceKind::kVar) {
    // A second pass: squared deviations from the mean, over count - correction
    // (var.correction's argument 2; None means 1).
    Tensor sq = Tensor::Zeros(acc_meta);
    double* s = reinterpret_cast<double*>(sq.storage_data());
    ForEachIndex(
        in.shape(),
        {in.meta().stride, ReductionStrides(in.meta(), acc_meta, reduced)},
        {in.meta().offset, 0}, [&](const int64_t* pos) {
          double d =
              LoadAs<double>(in.storage_data(), in.dtype(), pos[0]) - a[pos[1]];
          s[pos[1]] += d * d;
        });
    double correction = k.arg(2).is_none() ? 1.0 : k.number(2);
    double divisor = std::max(0.0, static_cast<double>(count) - correction);
    for (int64_t i = 0; i < acc.numel(); ++i) a[i] = s[i] / divisor;
  }
  Tensor out = k.NewResult(0);
  CopyInto(acc, out);
  return std::vector<Tensor>{out};
}

std::vector<int64_t> OptionalDims(const BoundArg& a) {
  return a.is_none() ? std::vector<int64_t>{} : a.ints;
}

Results SumAll(const KernelArgs& k) { return Reduce(k, {}, ReduceKind::kSum); }
Results SumDim(const KernelArgs& k) {
  return Reduce(k, OptionalDims(k.arg(1)), ReduceKind::kSum);
}
Results MeanAll(const KernelArgs& k) {
  return Reduce(k, {}, ReduceKind::kMean);
}
Results MeanDim(const KernelArgs& k) {
  return Reduce(k, OptionalDims(k.arg(1)), ReduceKind::kMean);
}
Results VarCorrection(const KernelArgs& k) {
  return Reduce(k, OptionalDims(k.arg(1)), ReduceKind::kVar);
}
Results MaxAll(const KernelArgs& k) { return Reduce(k, {}, ReduceKind::kMax); }
Results Amax(const KernelArgs& k) {
  return Reduce(k, k.arg(1).ints, ReduceKind::kMax);
}

// Calls f(row) for every 1-D slice of `t` along `dim`, with positions
// row[i] of its elements.
template <typename F>
void ForEachRow(const Meta& t, int64_t dim, F f) {
  std::vector<int64_t> outer = t.shape;
  int64_t len = t.dim() == 0 ? 1 : t.shape[dim];
  int64_t stride = t.dim() == 0 ? 0 : t.stride[dim];
  if (t.dim() > 0) outer[dim] = 1;
  std::vector<int64_t> row(len);
  ForEachIndex(outer, {t.stride}, {t.offset}, [&](const int64_t* pos) {
    for (int64_t i = 0; i < len; ++i) row[i] = pos[0] + i * stride;
    f(row);
  });
}

Results Softmax(const KernelArgs& k, bool log) {
  const Tensor& in = k.tensor(0);
  Tensor out = k.NewResult(0);
  int64_t dim = k.arg(1).i;
  int64_t rank = std::max<int64_t>(in.meta().dim(), 1);
  if (dim < 0) dim += rank;
  // Rows of the input and the output visited in the same order.
  std::vector<std::vector<int64_t>> out_rows;
  ForEachRow(out.meta(), dim,
             [&](const std::vector<int64_t>& r) { out_rows.push_back(r); });
  size_t next = 0;
  std::vector<double> x;
  ForEachRow(in.meta(), dim, [&](const std::vector<int64_t>& row) {
    x.resize(row.size());
    double max = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < row.size(); ++i) {
      x[i] = LoadAs<double>(in.storage_data(), in.dtype(), row[i]);
      max = std::max(max, x[i]);
    }
    double sum = 0;
    for (double v : x) sum += std::exp(v - max);
    const std::vector<int64_t>& dst = out_rows[next++];
    for (size_t i = 0; i < row.size(); ++i) {
      double y = log ? x[i] - max - std::log(sum) : std::exp(x[i] - max) / sum;
      StoreFrom<double>(out.storage_data(), out.dtype(), dst[i], y);
    }
  });
  return std::vector<Tensor>{out};
}

Results SoftmaxKernel(const KernelArgs& k) { return Softmax(k, false); }
Results LogSoftmaxKernel(const KernelArgs& k) { return Softmax(k, true); }

Results LayerNorm(const KernelArgs& k) {
  const Tensor& in = k.tensor(0);
  int64_t n = 1;
  for (int64_t s : k.arg(1).ints) n *= s;
  double eps = k.number(4);
  Tensor x = Tensor::Zeros(ContiguousMeta(in.shape(), in.dtype()));
  CopyInto(in, x);
  auto contiguous = [](const Tensor& t) {
    if (!t.defined()) return t;
    Tensor c = Tensor::Zeros(ContiguousMeta(t.shape(), t.dtype()));
    CopyInto(t, c);
    return c;
  };
  Tensor w = contiguous(k.tensor(2));
  Tensor b = contiguous(k.tensor(3));
  Tensor out = k.NewResult(0);
  Tensor mean = k.NewResult(1);
  Tensor rstd = k.NewResult(2);
  int64_t rows = n == 0 ? 0 : x.numel() / n;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i) {
      double v = LoadAs<double>(x.storage_data(), x.dtype(), r * n + i);
      sum += v;
    }
    double mu = sum / n;
    for (int64_t i = 0; i < n; ++i) {
      double v = LoadAs<double>(x.storage_data(), x.dtype(), r * n + i) - mu;
      sq += v * v;
    }
    double inv = 1.0 / std::sqrt(sq / n + eps);
    for (int64_t i = 0; i < n; ++i) {
      double v =
          (LoadAs<double>(x.storage_data(), x.dtype(), r * n + i) - mu) * inv;
      if (w.defined()) v *= LoadAs<double>(w.storage_data(), w.dtype(), i);
      if (b.defined()) v += LoadAs<double>(b.storage_data(), b.dtype(), i);
      StoreFrom<double>(out.storage_data(), out.dtype(), r * n + i, v);
    }
    StoreFrom<double>(mean.storage_data(), mean.dtype(), r, mu);
    StoreFrom<double>(rstd.storage_data(), rstd.dtype(), r, inv);
  }
  return std::vector<Tensor>{out, mean, rstd};
}

Results MseLoss(const KernelArgs& k) {
  const Tensor& a = k.tensor(0);
  const Tensor& b = k.tensor(1);
  std::vector<int64_t> shape = a.shape();
  if (b.meta().dim() > a.meta().dim()) shape = b.shape();
  // Broadcast shape: the larger of the two per dim.
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t d = shape.size() - 1 - i;
    auto dim_of = [&](const Meta& m) {
      return i < m.shape.size() ? m.shape[m.shape.size() - 1 - i] : 1;
    };
    shape[d] = std::max(dim_of(a.meta()), dim_of(b.meta()));
  }
  Tensor sq = Tensor::Zeros(ContiguousMeta(shape, v1::DTYPE_FLOAT64));
  const Meta& m = sq.meta();
  double total = 0;
  ForEachIndex(m.shape,
               {m.stride, BroadcastStrides(a.meta(), m.shape),
                BroadcastStrides(b.meta(), m.shape)},
               {0, a.meta().offset, b.meta().offset}, [&](const int64_t* pos) {
                 double d =
                     LoadAs<double>(a.storage_data(), a.dtype(), pos[1]) -
                     LoadAs<double>(b.storage_data(), b.dtype(), pos[2]);
                 reinterpret_cast<double*>(sq.storage_data())[pos[0]] = d * d;
                 total += d * d;
               });
  Tensor out = k.NewResult(0);
  int64_t reduction = k.arg(2).i;
  if (reduction == 0) {
    CopyInto(sq, out);
  } else {
    double v =
        reduction == 1 ? total / std::max<int64_t>(sq.numel(), 1) : total;
    if (reduction == 1 && sq.numel() == 0)
      v = std::numeric_limits<double>::quiet_NaN();
    StoreFrom<double>(out.storage_data(), out.dtype(), 0, v);
  }
  return std::vector<Tensor>{out};
}

}  // namespace

namespace kernels {

const std::vector<Entry>& ReductionKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.sum.default", SumAll},
      {"aten.sum.dim_IntList", SumDim},
      {"aten.mean.default", MeanAll},
      {"aten.mean.dim", MeanDim},
      {"aten.var.correction", VarCorrection},
      {"aten.amax.default", Amax},
      {"aten.max.default", MaxAll},
      {"aten._softmax.default", SoftmaxKernel},
      {"aten._log_softmax.default", LogSoftmaxKernel},
      {"aten.native_layer_norm.default", LayerNorm},
      {"aten.mse_loss.default", MseLoss},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
