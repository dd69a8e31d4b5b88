// Kernels of the 2-d pooling family: max_pool2d_with_indices,
// avg_pool2d, _adaptive_avg_pool2d, adaptive_max_pool2d and their
// backwards, as torch's CPU kernels compute them (the first maximum of a
// window wins, NaN wins: max_pool2d's first NaN, adaptive_max_pool2d's last;
// the average's divisor per count_include_pad and divisor_override). Computed
// in float64; each plane (one image's channel) is H x W.
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/pooling_inference.h"
#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;

// Calls f(plane, out_index, h0, w0) for every output element, with the
// top left corner of its window (in the padded input: negative in the
// padding).
template <typename F>
void ForEachWindow(const PoolGeometry& g, F f) {
  for (int64_t p = 0; p < g.planes; ++p) {
    for (int64_t oh = 0; oh < g.out[0]; ++oh) {
      for (int64_t ow = 0; ow < g.out[1]; ++ow) {
        int64_t h0 = oh * g.stride[0] - g.padding[0];
        int64_t w0 = ow * g.stride[1] - g.padding[1];
        f(p, (p * g.out[0] + oh) * g.out[1] + ow, h0, w0);
      }
    }
  }
}

absl::StatusOr<PoolGeometry> MaxGeometry(const KernelArgs& k, int self,
                                         int first) {
  return PoolGeometryOf(k.tensor(self).shape(), k.arg(first).ints,
                        k.arg(first + 1).ints, k.arg(first + 2).ints,
                        k.arg(first + 3).ints, k.arg(first + 4).b);
}

absl::StatusOr<PoolGeometry> AvgGeometry(const KernelArgs& k, int self,
                                         int first) {
  return PoolGeometryOf(k.tensor(self).shape(), k.arg(first).ints,
                        k.arg(first + 1).ints, k.arg(first + 2).ints, {1},
                        k.arg(first + 3).b);
}

// A max pooling's results: its values and int64 indices.
Results ValuesAndIndices(const KernelArgs& k, const std::vector<double>& values,
                         const std::vector<double>& indices) {
  std::vector<Tensor> results = {k.NewResult(0), k.NewResult(1)};
  StoreDoubles(values, results[0]);
  StoreDoubles(indices, results[1]);
  return results;
}

Results MaxPool(const KernelArgs& k) {
  absl::StatusOr<PoolGeometry> g = MaxGeometry(k, 0, 1);
  if (!g.ok()) return g.status();
  std::vector<double> x = k.tensor(0).ToDoubles();
  int64_t area = g->in[0] * g->in[1], n = g->planes * g->out[0] * g->out[1];
  std::vector<double> out(n), index(n);
  ForEachWindow(*g, [&](int64_t p, int64_t o, int64_t h0, int64_t w0) {
    double best = -INFINITY;
    int64_t at = -1;
    for (int64_t i = 0; i < g->kernel[0]; ++i) {
      int64_t h = h0 + i * g->dilation[0];
      if (h < 0 || h >= g->in[0]) continue;
      for (int64_t j = 0; j < g->kernel[1]; ++j) {
        int64_t w = w0 + j * g->dilation[1];
        if (w < 0 || w >= g->in[1]) continue;
        double v = x[p * area + h * g->in[1] + w];
        if (at < 0 || v > best || std::isnan(v)) {
          best = v;
          at = h * g->in[1] + w;
          if (std::isnan(v)) break;
        }
      }
      if (std::isnan(best)) break;
    }
    out[o] = best;
    index[o] = static_cast<double>(at);
  });
  return ValuesAndIndices(k, out, index);
}

// The gradient of a max pooling's self: grad (argument 0) added at each
// output's index into its plane (indices, argument `indices`) of self
// (argument 1).
Results ScatterToIndices(const KernelArgs& k, int indices, const char* op) {
  const std::vector<int64_t>& shape = k.tensor(1).shape();
  int64_t in_h = shape[shape.size() - 2], in_w = shape.back();
  int64_t area = in_h * in_w;
  std::vector<double> grad = k.tensor(0).ToDoubles(),
                      index = k.tensor(indices).ToDoubles();
  int64_t planes = area == 0 ? 0 : k.tensor(1).numel() / area;
  int64_t per_plane =
      planes == 0 ? 0 : static_cast<int64_t>(grad.size()) / planes;
  std::vector<double> gx(k.tensor(1).numel(), 0.0);
  for (int64_t o = 0; o < static_cast<int64_t>(grad.size()); ++o) {
    int64_t at = static_cast<int64_t>(index[o]);
    if (at < 0 || at >= area) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": index ", at, " is outside the ", in_h, "x", in_w, " input"));
    }
    gx[(o / per_plane) * area + at] += grad[o];
  }
  Tensor out = k.NewResult(0);
  StoreDoubles(gx, out);
  return std::vector<Tensor>{out};
}

// max_pool2d_with_indices_backward(grad, self, kernel_size, stride,
// padding, dilation, ceil_mode, indices).
Results MaxPoolBackward(const KernelArgs& k) {
  return ScatterToIndices(k, 7, "max_pool2d backward");
}

// The clipped window of an average and its divisor.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double divisor;
};

AvgWindow AvgWindowOf(const PoolGeometry& g, int64_t h0, int64_t w0,
                      bool count_include_pad, const BoundArg& divisor) {
  int64_t h1 = std::min(h0 + g.kernel[0], g.in[0] + g.padding[0]);
  int64_t w1 = std::min(w0 + g.kernel[1], g.in[1] + g.padding[1]);
  int64_t padded = (h1 - h0) * (w1 - w0);
  AvgWindow a{std::max<int64_t>(h0, 0), std::min(h1, g.in[0]),
              std::max<int64_t>(w0, 0), std::min(w1, g.in[1]), 0};
  if (!divisor.is_none()) {
    a.divisor = static_cast<double>(divisor.i);
  } else if (count_include_pad) {
    a.divisor = static_cast<double>(padded);
  } else {
    a.divisor = static_cast<double>((a.h1 - a.h0) * (a.w1 - a.w0));
  }
  return a;
}

// avg_pool2d(self, kernel_size, stride, padding, ceil_mode,
// count_include_pad, divisor_override).
Results AvgPool(const KernelArgs& k) {
  absl::StatusOr<PoolGeometry> g = AvgGeometry(k, 0, 1);
  if (!g.ok()) return g.status();
  std::vector<double> x = k.tensor(0).ToDoubles();
  int64_t area = g->in[0] * g->in[1];
  std::vector<double> out(g->planes * g->out[0] * g->out[1]);
  ForEachWindow(*g, [&](int64_t p, int64_t o, int64_t h0, int64_t w0) {
    AvgWindow a = AvgWindowOf(*g, h0, w0, k.arg(5).b, k.arg(6));
    double sum = 0;
    for (int64_t h = a.h0; h < a.h1; ++h) {
      for (int64_t w = a.w0; w < a.w1; ++w)
        sum += x[p * area + h * g->in[1] + w];
    }
    out[o] = sum / a.divisor;
  });
  Tensor result = k.NewResult(0);
  StoreDoubles(out, result);
  return std::vector<Tensor>{result};
}

// avg_pool2d_backward(grad, self, kernel_size, stride, padding, ceil_mode,
// count_include_pad, divisor_override).
Results AvgPoolBackward(const KernelArgs& k) {
  absl::StatusOr<PoolGeometry> g = AvgGeometry(k, 1, 2);
  if (!g.ok()) return g.status();
  std::vector<double> grad = k.tensor(0).ToDoubles();
  int64_t area = g->in[0] * g->in[1];
  std::vector<double> gx(g->planes * area, 0.0);
  ForEachWindow(*g, [&](int64_t p, int64_t o, int64_t h0, int64_t w0) {
    AvgWindow a = AvgWindowOf(*g, h0, w0, k.arg(6).b, k.arg(7));
    for (int64_t h = a.h0; h < a.h1; ++h) {
      for (int64_t w = a.w0; w < a.w1; ++w) {
        gx[p * area + h * g->in[1] + w] += grad[o] / a.divisor;
      }
    }
  });
  Tensor result = k.NewResult(0);
  StoreDoubles(gx, result);
  return std::vector<Tensor>{result};
}

// Calls f(plane, out_index, h0, h1, w0, w1) with adaptive pooling's window
// of every output element: [floor(o * in / out), ceil((o + 1) * in / out)).
template <typename F>
void ForEachAdaptiveWindow(int64_t planes, int64_t in_h, int64_t in_w,
                           int64_t out_h, int64_t out_w, F f) {
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oh = 0; oh < out_h; ++oh) {
      int64_t h0 = oh * in_h / out_h,
              h1 = ((oh + 1) * in_h + out_h - 1) / out_h;
      for (int64_t ow = 0; ow < out_w; ++ow) {
        int64_t w0 = ow * in_w / out_w;
        int64_t w1 = ((ow + 1) * in_w + out_w - 1) / out_w;
        f(p, (p * out_h + oh) * out_w + ow, h0, h1, w0, w1);
      }
    }
  }
}

Results AdaptiveAvgPool(const KernelArgs& k) {
  const Tensor& self = k.tensor(0);
  const std::vector<int64_t>& shape = self.shape();
  int64_t in_h = shape[shape.size() - 2], in_w = shape.back();
  int64_t planes = in_h * in_w == 0 ? 0 : self.numel() / (in_h * in_w);
  const std::vector<int64_t>& size = k.arg(1).ints;
  std::vector<double> x = self.ToDoubles(), out(planes * size[0] * size[1]);
  ForEachAdaptiveWindow(planes, in_h, in_w, size[0], size[1],
                        [&](int64_t p, int64_t o, int64_t h0, int64_t h1,
                            int64_t w0, int64_t w1) {
                          double sum = 0;
                          for (int64_t h = h0; h < h1; ++h) {
                            for (int64_t w = w0; w < w1; ++w)
                              sum += x[(p * in_h + h) * in_w + w];
                          }
                          out[o] =
                              sum / static_cast<double>((h1 - h0) * (w1 - w0));
                        });
  Tensor result = k.NewResult(0);
  StoreDoubles(out, result);
  return std::vector<Tensor>{result};
}

// _adaptive_avg_pool2d_backward(grad, self).
Results AdaptiveAvgPoolBackward(const KernelArgs& k) {
  const std::vector<int64_t>& shape = k.tensor(1).shape();
  const std::vector<int64_t>& gshape = k.tensor(0).shape();
  int64_t in_h = shape[shape.size() - 2], in_w = shape.back();
  int64_t out_h = gshape[gshape.size() - 2], out_w = gshape.back();
  int64_t planes = in_h * in_w == 0 ? 0 : k.tensor(1).numel() / (in_h * in_w);
  std::vector<double> grad = k.tensor(0).ToDoubles();
  std::vector<double> gx(k.tensor(1).numel(), 0.0);
  ForEachAdaptiveWindow(
      planes, in_h, in_w, out_h, out_w,
      [&](int64_t p, int64_t o, int64_t h0, int64_t h1, int64_t w0,
          int64_t w1) {
        double share = grad[o] / static_cast<double>((h1 - h0) * (w1 - w0));
        for (int64_t h = h0; h < h1; ++h) {
          for (int64_t w = w0; w < w1; ++w)
            gx[(p * in_h + h) * in_w + w] += share;
        }
      });
  Tensor result = k.NewResult(0);
  StoreDoubles(gx, result);
  return std::vector<Tensor>{result};
}

// adaptive_max_pool2d(self, output_size): each window's maximum, the
// window's first element's index when every element is -inf.
Results AdaptiveMaxPool(const KernelArgs& k) {
  const Tensor& self = k.tensor(0);
  const std::vector<int64_t>& shape = self.shape();
  int64_t in_h = shape[shape.size() - 2], in_w = shape.back();
  int64_t planes = in_h * in_w == 0 ? 0 : self.numel() / (in_h * in_w);
  const std::vector<int64_t>& size = k.arg(1).ints;
  std::vector<double> x = self.ToDoubles(), out(planes * size[0] * size[1]),
                      index(out.size());
  ForEachAdaptiveWindow(planes, in_h, in_w, size[0], size[1],
                        [&](int64_t p, int64_t o, int64_t h0, int64_t h1,
                            int64_t w0, int64_t w1) {
                          double best = -INFINITY;
                          int64_t at = h0 * in_w + w0;
                          for (int64_t h = h0; h < h1; ++h) {
                            for (int64_t w = w0; w < w1; ++w) {
                              double v = x[(p * in_h + h) * in_w + w];
                              if (v > best || std::isnan(v)) {
                                best = v;
                                at = h * in_w + w;
                              }
                            }
                          }
                          out[o] = best;
                          index[o] = static_cast<double>(at);
                        });
  return ValuesAndIndices(k, out, index);
}

// adaptive_max_pool2d_backward(grad, self, indices).
Results AdaptiveMaxPoolBackward(const KernelArgs& k) {
  return ScatterToIndices(k, 2, "adaptive_max_pool2d backward");
}

}  // namespace

namespace kernels {

const std::vector<Entry>& PoolingKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.max_pool2d_with_indices.default", MaxPool},
      {"aten.max_pool2d_with_indices_backward.default", MaxPoolBackward},
      {"aten.avg_pool2d.default", AvgPool},
      {"aten.avg_pool2d_backward.default", AvgPoolBackward},
      {"aten._adaptive_avg_pool2d.default", AdaptiveAvgPool},
      {"aten._adaptive_avg_pool2d_backward.default", AdaptiveAvgPoolBackward},
      {"aten.adaptive_max_pool2d.default", AdaptiveMaxPool},
      {"aten.adaptive_max_pool2d_backward.default", AdaptiveMaxPoolBackward},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
