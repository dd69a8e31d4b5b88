// Kernels of the convolution family: convolution and convolution_backward
// (1 to 3 spatial dims, stride, padding, dilation, groups, transposed), as
// im2col and matrix products in float64 through BLAS (dgemm): exact enough
// to be the reference, fast enough to train a small CNN.
#include <algorithm>
#include <vector>

#include "core/graph/conv_inference.h"
#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

extern "C" void cblas_dgemm(int order, int trans_a, int trans_b, int m, int n,
                            int k, double alpha, const double* a, int lda,
                            const double* b, int ldb, double beta, double* c,
                            int ldc);

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
constexpr int64_t kMaxColumnElements = int64_t{1} << 31;

// C (m x n) = op(A) op(B) + beta C, row-major, contiguous.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const double* a, const double* b, double beta, double* c) {
  if (m == 0 || n == 0) return;
  cblas_dgemm(kRowMajor, trans_a ? kTrans : kNoTrans,
              trans_b ? kTrans : kNoTrans, m, n, k, 1.0, a, trans_a ? m : k, b,
              trans_b ? k : n, beta, c, n);
}

// One convolution's sizes, with the spatial dims padded to 3 (size 1).
struct Conv3 {
  int64_t batch, channels, out_channels, groups;
  bool transposed;
  int64_t in[3], k[3], out[3], stride[3], pad[3], dil[3];

  explicit Conv3(const ConvGeometry& g)
      : batch(g.batch),
        channels(g.in_channels),
        out_channels(g.out_channels),
        groups(g.groups),
        transposed(g.transposed) {
    size_t lead = 3 - g.in_size.size();
    for (size_t d = 0; d < 3; ++d) {
      bool real = d >= lead;
      size_t s = d - lead;
      in[d] = real ? g.in_size[s] : 1;
      k[d] = real ? g.kernel[s] : 1;
      out[d] = real ? g.out_size[s] : 1;
      stride[d] = real ? g.stride[s] : 1;
      pad[d] = real ? g.padding[s] : 0;
      dil[d] = real ? g.dilation[s] : 1;
    }
  }
  int64_t group_channels() const { return channels / groups; }
  int64_t group_out() const { return out_channels / groups; }
  int64_t in_area() const { return in[0] * in[1] * in[2]; }
  int64_t out_area() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_area() const { return k[0] * k[1] * k[2]; }
  int64_t rows() const { return group_channels() * kernel_area(); }

  // Calls f(col_index, image_index) for every column entry of one group's
  // image that reads the image (padding reads nothing).
  template <typename F>
  void ForEachTap(F f) const {
    int64_t row = 0;
    for (int64_t c = 0; c < group_channels(); ++c) {
      for (int64_t a = 0; a < k[0]; ++a) {
        for (int64_t b = 0; b < k[1]; ++b) {
          for (int64_t e = 0; e < k[2]; ++e, ++row) {
            int64_t col = row * out_area();
            for (int64_t x = 0; x < out[0]; ++x) {
              int64_t i0 = x * stride[0] - pad[0] + a * dil[0];
              for (int64_t y = 0; y < out[1]; ++y) {
                int64_t i1 = y * stride[1] - pad[1] + b * dil[1];
                for (int64_t z = 0; z < out[2]; ++z) {
                  int64_t i2 = z * stride[2] - pad[2] + e * dil[2];
                  int64_t o = col + (x * out[1] + y) * out[2] + z;
                  if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] ||
                      i2 < 0 || i2 >= in[2]) {
                    continue;
                  }
                  f(o, (c * in[0] + i0) * in[1] * in[2] + i1 * in[2] + i2);
                }
              }
            }
          }
        }
      }
    }
  }
};

absl::StatusOr<Conv3> GeometryOf(const Tensor& input, const Tensor& weight,
                                 const KernelArgs& k, int first) {
  absl::StatusOr<ConvGeometry> g = ConvGeometryOf(
      input.shape(), weight.shape(), k.arg(first).ints, k.arg(first + 1).ints,
      k.arg(first + 2).ints, k.arg(first + 3).b, k.arg(first + 4).ints,
      k.arg(first + 5).i);
  if (!g.ok()) return g.status();
  Conv3 conv(*g);
  // The im2col buffer of one image, whose sizes BLAS takes as int: refused
  // past 2^31 elements, instead of overflowing or failing to allocate.
  int64_t cols;
  if (__builtin_mul_overflow(conv.rows(), conv.out_area(), &cols) ||
      cols > kMaxColumnElements) {
    return absl::ResourceExhaustedError(
        "convolution: the im2col buffer of one image exceeds 2^31 elements");
  }
  return conv;
}

// The three products of a convolution y = conv(x, w) (x: batch, channels,
// in area; y: batch, out_channels, out area), per image and group. A
// transposed convolution is its dual's input gradient (ConvGeometry).

// The im2col of one group's image into cols (zeros where it reads padding).
void Im2col(const Conv3& g, const double* image, std::vector<double>& cols) {
  std::fill(cols.begin(), cols.end(), 0.0);
  g.ForEachTap([&](int64_t col, int64_t at) { cols[col] = image[at]; });
}

// y = conv(x, w).
std::vector<double> ConvForward(const Conv3& g, const std::vector<double>& x,
                                const std::vector<double>& w) {
  int64_t cg = g.group_channels(), og = g.group_out(), area = g.out_area();
  std::vector<double> y(g.batch * g.out_channels * area, 0.0);
  std::vector<double> cols(g.rows() * area);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      Im2col(g, &x[(n * g.channels + grp * cg) * g.in_area()], cols);
      Gemm(false, false, og, area, g.rows(), &w[grp * og * g.rows()],
           cols.data(), 0.0, &y[(n * g.out_channels + grp * og) * area]);
    }
  }
  return y;
}

// The gradient of x from y's: w^T @ gy, then col2im.
std::vector<double> ConvInputGrad(const Conv3& g, const std::vector<double>& gy,
                                  const std::vector<double>& w) {
  int64_t cg = g.group_channels(), og = g.group_out(), area = g.out_area();
  std::vector<double> gx(g.batch * g.channels * g.in_area(), 0.0);
  std::vector<double> cols(g.rows() * area);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const double* dy = &gy[(n * g.out_channels + grp * og) * area];
      double* image = &gx[(n * g.channels + grp * cg) * g.in_area()];
      Gemm(true, false, g.rows(), area, og, &w[grp * og * g.rows()], dy, 0.0,
           cols.data());
      g.ForEachTap([&](int64_t col, int64_t at) { image[at] += cols[col]; });
    }
  }
  return gx;
}

// The gradient of w from y's: gy @ im2col(x)^T.
std::vector<double> ConvWeightGrad(const Conv3& g, const std::vector<double>& x,
                                   const std::vector<double>& gy) {
  int64_t cg = g.group_channels(), og = g.group_out(), area = g.out_area();
  std::vector<double> gw(g.out_channels * g.rows(), 0.0);
  std::vector<double> cols(g.rows() * area);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      Im2col(g, &x[(n * g.channels + grp * cg) * g.in_area()], cols);
      Gemm(false, true, og, g.rows(), area,
           &gy[(n * g.out_channels + grp * og) * area], cols.data(), 1.0,
           &gw[grp * og * g.rows()]);
    }
  }
  return gw;
}

// Per channel of y (batch, channels, area): its sum (a bias's gradient).
std::vector<double> ChannelSums(const std::vector<double>& y, int64_t batch,
                                int64_t channels) {
  std::vector<double> sums(channels, 0.0);
  int64_t area = channels == 0 ? 0 : y.size() / (batch * channels);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < area; ++i) {
        sums[c] += y[(n * channels + c) * area + i];
      }
    }
  }
  return sums;
}

// y (batch, channels, area) plus bias[channel].
void AddBias(std::vector<double>& y, int64_t batch,
             const std::vector<double>& bias) {
  int64_t channels = bias.size();
  int64_t area = channels == 0 ? 0 : y.size() / (batch * channels);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < area; ++i)
        y[(n * channels + c) * area + i] += bias[c];
    }
  }
}

Results Convolution(const KernelArgs& k) {
  absl::StatusOr<Conv3> g = GeometryOf(k.tensor(0), k.tensor(1), k, 3);
  if (!g.ok()) return g.status();
  std::vector<double> x = k.tensor(0).ToDoubles(), w = k.tensor(1).ToDoubles();
  std::vector<double> out =
      g->transposed ? ConvInputGrad(*g, x, w) : ConvForward(*g, x, w);
  if (k.tensor(2).defined() && g->batch > 0) {
    AddBias(out, g->batch, k.tensor(2).ToDoubles());
  }
  Tensor result = k.NewResult(0);
  StoreDoubles(out, result);
  return std::vector<Tensor>{result};
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride,
// padding, dilation, transposed, output_padding, groups, output_mask).
Results ConvolutionBackward(const KernelArgs& k) {
  absl::StatusOr<Conv3> g = GeometryOf(k.tensor(1), k.tensor(2), k, 4);
  if (!g.ok()) return g.status();
  const std::vector<int64_t>& mask = k.arg(10).ints;
  std::vector<double> gy = k.tensor(0).ToDoubles(), x = k.tensor(1).ToDoubles(),
                      w = k.tensor(2).ToDoubles();
  std::vector<double> gx, gw, gb;
  if (g->transposed) {  // y = the dual's input gradient of x.
    if (mask[0]) gx = ConvForward(*g, gy, w);
    if (mask[1]) gw = ConvWeightGrad(*g, gy, x);
  } else {
    if (mask[0]) gx = ConvInputGrad(*g, gy, w);
    if (mask[1]) gw = ConvWeightGrad(*g, x, gy);
  }
  if (mask[2]) {
    gb = ChannelSums(gy, g->batch,
                     g->transposed ? g->channels : g->out_channels);
  }
  std::vector<Tensor> results;
  const std::vector<double>* values[] = {&gx, &gw, &gb};
  for (int r = 0; r < 3; ++r) {
    results.push_back(k.NewResult(r));
    if (mask[r]) StoreDoubles(*values[r], results.back());
  }
  return results;
}

}  // namespace

namespace kernels {

const std::vector<Entry>& ConvKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.convolution.default", Convolution},
      {"aten.convolution_backward.default", ConvolutionBackward},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
