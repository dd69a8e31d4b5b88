// Kernels of the batch norm family: _native_batch_norm_legit.no_stats,
// _native_batch_norm_legit_no_training and native_batch_norm_backward, with
// torch's formulas (biased batch variance, invstd = 1 / sqrt(var + eps)).
// Computed in float64.
#include <cmath>
#include <vector>

#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;

// Per-channel values of an optional tensor, or `fill` for each channel.
std::vector<double> PerChannel(const Tensor& t, int64_t channels, double fill) {
  return t.defined() ? t.ToDoubles() : std::vector<double>(channels, fill);
}

// An input (N, C, spatial...) seen as N blocks of C channels of `inner`.
struct Channels {
  int64_t batch, channels, inner;
  explicit Channels(const Tensor& t)
      : batch(t.shape()[0]), channels(t.shape()[1]), inner(1) {
    for (size_t d = 2; d < t.shape().size(); ++d) inner *= t.shape()[d];
  }
  int64_t count() const { return batch * inner; }  // Elements per channel.
  template <typename F>
  void ForEach(int64_t c, F f) const {
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t i = 0; i < inner; ++i) f((n * channels + c) * inner + i);
    }
  }
};

// y = (x - mean) * invstd * weight + bias, per channel.
std::vector<double> Normalize(const std::vector<double>& x, const Channels& s,
                              const std::vector<double>& mean,
                              const std::vector<double>& invstd,
                              const std::vector<double>& weight,
                              const std::vector<double>& bias) {
  std::vector<double> y(x.size());
  for (int64_t c = 0; c < s.channels; ++c) {
    double scale = invstd[c] * weight[c];
    s.ForEach(c, [&](int64_t i) { y[i] = (x[i] - mean[c]) * scale + bias[c]; });
  }
  return y;
}

// no_stats(input, weight?, bias?, training, momentum, eps).
Results BatchNormTrain(const KernelArgs& k) {
  const Tensor& input = k.tensor(0);
  Channels s(input);
  std::vector<double> x = input.ToDoubles();
  std::vector<double> mean(s.channels, 0.0), invstd(s.channels, 0.0);
  double eps = k.number(5);
  for (int64_t c = 0; c < s.channels; ++c) {
    double sum = 0, sq = 0;
    s.ForEach(c, [&](int64_t i) { sum += x[i]; });
    mean[c] = sum / s.count();
    s.ForEach(c, [&](int64_t i) { sq += (x[i] - mean[c]) * (x[i] - mean[c]); });
    invstd[c] = 1.0 / std::sqrt(sq / s.count() + eps);
  }
  std::vector<Tensor> out = {k.NewResult(0), k.NewResult(1), k.NewResult(2)};
  StoreDoubles(
      Normalize(x, s, mean, invstd, PerChannel(k.tensor(1), s.channels, 1),
                PerChannel(k.tensor(2), s.channels, 0)),
      out[0]);
  StoreDoubles(mean, out[1]);
  StoreDoubles(invstd, out[2]);
  return out;
}

// no_training(input, weight?, bias?, running_mean, running_var, momentum,
// eps).
Results BatchNormEval(const KernelArgs& k) {
  const Tensor& input = k.tensor(0);
  Channels s(input);
  std::vector<double> mean = k.tensor(3).ToDoubles(),
                      var = k.tensor(4).ToDoubles();
  std::vector<double> invstd(s.channels);
  for (int64_t c = 0; c < s.channels; ++c) {
    invstd[c] = 1.0 / std::sqrt(var[c] + k.number(6));
  }
  std::vector<Tensor> out = {k.NewResult(0), k.NewResult(1), k.NewResult(2)};
  StoreDoubles(Normalize(input.ToDoubles(), s, mean, invstd,
                         PerChannel(k.tensor(1), s.channels, 1),
                         PerChannel(k.tensor(2), s.channels, 0)),
               out[0]);
  return out;
}

// native_batch_norm_backward(grad_out, input, weight?, running_mean?,
// running_var?, save_mean?, save_invstd?, train, eps, output_mask).
Results BatchNormBackward(const KernelArgs& k) {
  const Tensor& input = k.tensor(1);
  Channels s(input);
  std::vector<double> g = k.tensor(0).ToDoubles(), x = input.ToDoubles();
  std::vector<double> weight = PerChannel(k.tensor(2), s.channels, 1);
  bool train = k.arg(7).b;
  std::vector<double> mean, invstd;
  if (train) {
    mean = k.tensor(5).ToDoubles();
    invstd = k.tensor(6).ToDoubles();
  } else {
    mean = k.tensor(3).ToDoubles();
    invstd = k.tensor(4).ToDoubles();
    for (double& v : invstd) v = 1.0 / std::sqrt(v + k.number(8));
  }
  std::vector<double> gx(x.size(), 0.0), gw(s.channels), gb(s.channels);
  for (int64_t c = 0; c < s.channels; ++c) {
    double gsum = 0, dot = 0;
    s.ForEach(c, [&](int64_t i) {
      gsum += g[i];
      dot += g[i] * (x[i] - mean[c]);
    });
    gw[c] = dot * invstd[c];
    gb[c] = gsum;
    double scale = invstd[c] * weight[c];
    if (train) {
      double m = static_cast<double>(s.count());
      double proj = dot * invstd[c] * invstd[c] / m, gmean = gsum / m;
      s.ForEach(c, [&](int64_t i) {
        gx[i] = (g[i] - gmean - (x[i] - mean[c]) * proj) * scale;
      });
    } else {
      s.ForEach(c, [&](int64_t i) { gx[i] = g[i] * scale; });
    }
  }
  const std::vector<int64_t>& mask = k.arg(9).ints;
  std::vector<Tensor> out = {k.NewResult(0), k.NewResult(1), k.NewResult(2)};
  const std::vector<double>* values[] = {&gx, &gw, &gb};
  for (int r = 0; r < 3; ++r) {
    if (mask[r]) StoreDoubles(*values[r], out[r]);
  }
  return out;
}

}  // namespace

namespace kernels {

const std::vector<Entry>& NormKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten._native_batch_norm_legit.no_stats", BatchNormTrain},
      {"aten._native_batch_norm_legit_no_training.default", BatchNormEval},
      {"aten.native_batch_norm_backward.default", BatchNormBackward},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
