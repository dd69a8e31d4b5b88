// Kernels of the ATen backward ops that derivative formulas use: sign,
// gelu_backward, _softmax_backward_data, _log_softmax_backward_data,
// native_layer_norm_backward, mse_loss_backward. Computed in float64.
#include <cmath>

#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;

double Get(const Tensor& contiguous, int64_t i) {
  return LoadAs<double>(contiguous.storage_data(), contiguous.dtype(), i);
}

void Set(const Tensor& contiguous, int64_t i, double v) {
  StoreFrom<double>(contiguous.storage_data(), contiguous.dtype(), i, v);
}

Results Sign(const KernelArgs& k) {
  Tensor x = ContiguousForReading(k.tensor(0));
  Tensor out = k.NewResult(0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = Get(x, i);
    Set(out, i, v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0));
  }
  return std::vector<Tensor>{out};
}

Results GeluBackward(const KernelArgs& k) {
  Tensor g = ContiguousForReading(k.tensor(0));
  Tensor x = ContiguousForReading(k.tensor(1));
  bool tanh_approx = k.arg(2).s == "tanh";
  Tensor out = k.NewResult(0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = Get(x, i), d;
    if (tanh_approx) {
      const double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5, kKappa = 0.044715;
      double inner = kBeta * (v + kKappa * v * v * v);
      double t = std::tanh(inner);
      d = 0.5 * (1 + t) +
          0.5 * v * (1 - t * t) * kBeta * (1 + 3 * kKappa * v * v);
    } else {
      double cdf = 0.5 * (1 + std::erf(v * M_SQRT1_2));
      double pdf = std::exp(-0.5 * v * v) * M_2_SQRTPI * M_SQRT1_2 * 0.5;
      d = cdf + v * pdf;
    }
    Set(out, i, Get(g, i) * d);
  }
  return std::vector<Tensor>{out};
}

// Visits the rows along `dim` of a contiguous tensor of `shape`:
// f(first, stride, length).
template <typename F>
void Rows(const std::vector<int64_t>& shape, int64_t dim, F f) {
  int64_t inner = 1, outer = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int64_t>(d) < dim) outer *= shape[d];
    if (static_cast<int64_t>(d) > dim) inner *= shape[d];
  }
  int64_t len = shape.empty() ? 1 : shape[dim];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) f(o * len * inner + i, inner, len);
  }
}

Results SoftmaxBackward(const KernelArgs& k, bool log) {
  Tensor g = ContiguousForReading(k.tensor(0));
  Tensor y = ContiguousForReading(k.tensor(1));
  int64_t dim = k.arg(2).i;
  if (dim < 0) dim += std::max<int64_t>(y.meta().dim(), 1);
  Tensor out = k.NewResult(0);
  Rows(y.shape(), dim, [&](int64_t first, int64_t stride, int64_t len) {
    double sum = 0;
    for (int64_t j = 0; j < len; ++j) {
      int64_t p = first + j * stride;
      sum += log ? Get(g, p) : Get(g, p) * Get(y, p);
    }
    for (int64_t j = 0; j < len; ++j) {
      int64_t p = first + j * stride;
      Set(out, p,
          log ? Get(g, p) - std::exp(Get(y, p)) * sum
              : Get(y, p) * (Get(g, p) - sum));
    }
  });
  return std::vector<Tensor>{out};
}

Results SoftmaxBackwardData(const KernelArgs& k) {
  return SoftmaxBackward(k, false);
}
Results LogSoftmaxBackwardData(const KernelArgs& k) {
  return SoftmaxBackward(k, true);
}

Results LayerNormBackward(const KernelArgs& k) {
  Tensor g = ContiguousForReading(k.tensor(0));
  Tensor x = ContiguousForReading(k.tensor(1));
  Tensor mean = ContiguousForReading(k.tensor(3));
  Tensor rstd = ContiguousForReading(k.tensor(4));
  Tensor w =
      k.tensor(5).defined() ? ContiguousForReading(k.tensor(5)) : Tensor();
  int64_t n = 1;
  for (int64_t s : k.arg(2).ints) n *= s;
  Tensor gi = k.NewResult(0);
  Tensor gw = k.NewResult(1);
  Tensor gb = k.NewResult(2);
  int64_t rows = n == 0 ? 0 : x.numel() / n;
  std::vector<double> acc_w(n, 0), acc_b(n, 0);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = Get(mean, r), inv = Get(rstd, r);
    double sum_gw = 0, sum_gw_xhat = 0;
    for (int64_t i = 0; i < n; ++i) {
      double xhat = (Get(x, r * n + i) - mu) * inv;
      double gy = Get(g, r * n + i);
      double gwi = gy * (w.defined() ? Get(w, i) : 1.0);
      sum_gw += gwi;
      sum_gw_xhat += gwi * xhat;
      acc_w[i] += gy * xhat;
      acc_b[i] += gy;
    }
    for (int64_t i = 0; i < n; ++i) {
      double xhat = (Get(x, r * n + i) - mu) * inv;
      double gwi = Get(g, r * n + i) * (w.defined() ? Get(w, i) : 1.0);
      Set(gi, r * n + i, inv * (gwi - sum_gw / n - xhat * sum_gw_xhat / n));
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    Set(gw, i, acc_w[i]);
    Set(gb, i, acc_b[i]);
  }
  return std::vector<Tensor>{gi, gw, gb};
}

Results MseLossBackward(const KernelArgs& k) {
  const Tensor& g = k.tensor(0);
  const Tensor& a = k.tensor(1);
  const Tensor& b = k.tensor(2);
  Tensor out = k.NewResult(0);
  const Meta& m = out.meta();
  int64_t reduction = k.arg(3).i;
  double scale = reduction == 1 ? 2.0 / std::max<int64_t>(out.numel(), 1) : 2.0;
  ForEachIndex(
      m.shape,
      {m.stride, BroadcastStrides(g.meta(), m.shape),
       BroadcastStrides(a.meta(), m.shape),
       BroadcastStrides(b.meta(), m.shape)},
      {m.offset, g.meta().offset, a.meta().offset, b.meta().offset},
      [&](const int64_t* pos) {
        double d = LoadAs<double>(a.storage_data(), a.dtype(), pos[2]) -
                   LoadAs<double>(b.storage_data(), b.dtype(), pos[3]);
        double gv = LoadAs<double>(g.storage_data(), g.dtype(), pos[1]);
        StoreFrom<double>(out.storage_data(), m.dtype, pos[0], scale * d * gv);
      });
  return std::vector<Tensor>{out};
}

}  // namespace

namespace kernels {

const std::vector<Entry>& BackwardKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.sign.default", Sign},
      {"aten.gelu_backward.default", GeluBackward},
      {"aten._softmax_backward_data.default", SoftmaxBackwardData},
      {"aten._log_softmax_backward_data.default", LogSoftmaxBackwardData},
      {"aten.native_layer_norm_backward.default", LayerNormBackward},
      {"aten.mse_loss_backward.default", MseLossBackward},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
