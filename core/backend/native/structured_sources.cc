// The bodies of kernel_source.h's kernels that are not elementwise loops or
// matrix products: softmax and log_softmax and their backward, layer norm
// and its backward, the scatters, dot, cat and mse_loss.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/substitute.h"
#include "core/backend/native/kernel_source.h"

namespace aotcache {

namespace {

// Per row, in double, as the runtime's kernels: the sum of g * y (softmax)
// or of g (log_softmax), then y * (g - sum) or g - exp(y) * sum.
std::string SoftmaxBackwardSource(const SoftmaxShape& s) {
  return absl::Substitute(
      R"(  (void)n;
  const C* __restrict gi = static_cast<const C*>(inputs[0]);
  const C* __restrict yi = static_cast<const C*>(inputs[1]);
  C* __restrict out = static_cast<C*>(outputs[0]);
  for (int64_t r = 0; r < $0; ++r) {
    const C* g = gi + r * $1;
    const C* y = yi + r * $1;
    C* o = out + r * $1;
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < $1; ++c) sum += $2;
#pragma omp simd
    for (int64_t c = 0; c < $1; ++c) o[c] = static_cast<C>($3);
  }
)",
      s.rows, s.cols,
      s.log ? "static_cast<double>(g[c])"
            : "static_cast<double>(g[c]) * static_cast<double>(y[c])",
      s.log ? "static_cast<double>(g[c]) - vm::exp(static_cast<double>(y[c])) "
              "* sum"
            : "static_cast<double>(y[c]) * (static_cast<double>(g[c]) - sum)");
}

}  // namespace

// Per row, in double, as the runtime's kernel: the max (NaN skipped, as
// std::max does), the sum of exp(x - max), then exp(x - max) / sum (each
// exp computed once and kept) or x - max - log(sum).
std::string SoftmaxSource(const SoftmaxShape& s) {
  if (s.backward) return SoftmaxBackwardSource(s);
  return absl::Substitute(
      R"(  (void)n;
  const C* __restrict in = static_cast<const C*>(inputs[0]);
  C* __restrict out = static_cast<C*>(outputs[0]);
$2  for (int64_t r = 0; r < $0; ++r) {
    const C* x = in + r * $1;
    C* y = out + r * $1;
    double mx = -__builtin_inf();
    for (int64_t c = 0; c < $1; ++c) {
      const double v = static_cast<double>(x[c]);
      mx = mx < v ? v : mx;
    }
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < $1; ++c) {
$3    }
$4  }
$5)",
      s.rows, s.cols,
      s.log ? ""
            : absl::StrCat("  double* __restrict e = new double[", s.cols,
                           "];\n"),
      s.log ? "      sum += vm::exp(static_cast<double>(x[c]) - mx);\n"
            : "      e[c] = vm::exp(static_cast<double>(x[c]) - mx);\n"
              "      sum += e[c];\n",
      absl::StrCat(
          s.log ? "    const double log_sum = vm::log(sum);\n" : "",
          "#pragma omp simd\n    for (int64_t c = 0; c < ", s.cols, "; ++c)\n",
          s.log
              ? "      y[c] = static_cast<C>(static_cast<double>(x[c]) - mx - "
                "log_sum);\n"
              : "      y[c] = static_cast<C>(e[c] / sum);\n"),
      s.log ? "" : "  delete[] e;\n");
}

// As the runtime's kernel: per row, in double, the mean, then the mean of
// squared deviations, then (x - mean) * rstd * weight + bias.
std::string LayerNormSource(const LayerNormShape& s) {
  return absl::Substitute(
      R"(  (void)n;
  const C* __restrict x = static_cast<const C*>(inputs[0]);
  C* __restrict out = static_cast<C*>(outputs[0]);
  C* __restrict mean = static_cast<C*>(outputs[1]);
  C* __restrict rstd = static_cast<C*>(outputs[2]);
$0$1  for (int64_t r = 0; r < $2; ++r) {
    const C* __restrict xr = x + r * $3;
    C* __restrict yr = out + r * $3;
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < $3; ++c) sum += static_cast<double>(xr[c]);
    const double mu = sum / $3;
    double sq = 0;
#pragma omp simd reduction(+ : sq)
    for (int64_t c = 0; c < $3; ++c) {
      const double d = static_cast<double>(xr[c]) - mu;
      sq += d * d;
    }
    const double inv = 1.0 / __builtin_sqrt(sq / $3 + $4);
#pragma omp simd
    for (int64_t c = 0; c < $3; ++c) {
      double v = (static_cast<double>(xr[c]) - mu) * inv;
$5$6      yr[c] = static_cast<C>(v);
    }
    mean[r] = static_cast<C>(mu);
    rstd[r] = static_cast<C>(inv);
  }
)",
      s.weight ? "  const C* __restrict w = static_cast<const C*>(inputs[1]);\n"
               : "",
      s.bias ? absl::StrCat("  const C* __restrict b = static_cast<const "
                            "C*>(inputs[",
                            s.weight ? 2 : 1, "]);\n")
             : "",
      s.rows, s.cols, CppLiteral(s.eps),
      s.weight ? "      v *= static_cast<double>(w[c]);\n" : "",
      s.bias ? "      v += static_cast<double>(b[c]);\n" : "");
}

// As the runtime's kernel, in double: per row, xhat = (x - mean) * rstd;
// the input's gradient from the row's sums of g * w and of g * w * xhat;
// the weight's and the bias's summed over rows (of g * xhat and of g).
std::string LayerNormBackwardSource(const LayerNormBackwardShape& s) {
  const bool params = s.mask[1] || s.mask[2];
  const std::string cols = absl::StrCat(s.cols);
  const char* w = s.weight ? "static_cast<double>(w[c])" : "1.0";
  std::string out =
      "  (void)n;\n"
      "  const C* __restrict g = static_cast<const C*>(inputs[0]);\n"
      "  const C* __restrict x = static_cast<const C*>(inputs[1]);\n"
      "  const C* __restrict mean = static_cast<const C*>(inputs[2]);\n"
      "  const C* __restrict rstd = static_cast<const C*>(inputs[3]);\n";
  if (s.weight) {
    out += "  const C* __restrict w = static_cast<const C*>(inputs[4]);\n";
  }
  if (params) {
    absl::StrAppend(&out, "  double* __restrict acc = new double[2 * ", cols,
                    "]();  // The weight's, then the bias's.\n");
  }
  absl::StrAppend(&out, "  for (int64_t r = 0; r < ", s.rows, "; ++r) {\n",
                  "    const C* __restrict gr = g + r * ", cols, ";\n",
                  "    const C* __restrict xr = x + r * ", cols, ";\n",
                  "    const double mu = static_cast<double>(mean[r]);\n",
                  "    const double inv = static_cast<double>(rstd[r]);\n");
  const std::string xhat =
      "      const double xhat = (static_cast<double>(xr[c]) - mu) * inv;\n";
  if (params) {
    absl::StrAppend(&out, "#pragma omp simd\n    for (int64_t c = 0; c < ",
                    cols, "; ++c) {\n", xhat,
                    "      const double gy = static_cast<double>(gr[c]);\n",
                    "      acc[c] += gy * xhat;\n      acc[", cols,
                    " + c] += gy;\n    }\n");
  }
  if (s.mask[0]) {
    absl::StrAppend(
        &out, "    double sum_gw = 0, sum_gw_xhat = 0;\n",
        "#pragma omp simd reduction(+ : sum_gw, sum_gw_xhat)\n",
        "    for (int64_t c = 0; c < ", cols, "; ++c) {\n", xhat,
        "      const double gwi = static_cast<double>(gr[c]) * ", w, ";\n",
        "      sum_gw += gwi;\n      sum_gw_xhat += gwi * xhat;\n    }\n",
        "    C* __restrict gi = static_cast<C*>(outputs[0]) + r * ", cols,
        ";\n", "#pragma omp simd\n    for (int64_t c = 0; c < ", cols,
        "; ++c) {\n", xhat,
        "      const double gwi = static_cast<double>(gr[c]) * ", w,
        ";\n      gi[c] = static_cast<C>(inv * (gwi - sum_gw / ", cols,
        " - xhat * sum_gw_xhat / ", cols, "));\n    }\n");
  }
  out += "  }\n";
  for (int k : {1, 2}) {
    if (!s.mask[k]) continue;
    absl::StrAppend(&out, "  for (int64_t c = 0; c < ", cols, "; ++c)\n",
                    "    static_cast<C*>(outputs[", k,
                    "])[c] = static_cast<C>(acc[", k == 1 ? "" : cols + " + ",
                    "c]);\n");
  }
  if (params) out += "  delete[] acc;\n";
  return out;
}

namespace {

// Loops over `shape` (one per dim, innermost last) running `statement`,
// where `dst` and `src` are the index expressions of strides `dst_strides`
// and `src_strides` (plus `dst_offset`).
std::string StridedCopy(const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& dst_strides,
                        int64_t dst_offset,
                        const std::vector<int64_t>& src_strides,
                        const std::string& dst, const std::string& src) {
  std::string out, dst_index = absl::StrCat(dst_offset), src_index = "0";
  for (size_t d = 0; d < shape.size(); ++d) {
    absl::StrAppend(&out, std::string(2 * d + 2, ' '), "for (int64_t i", d,
                    " = 0; i", d, " < ", shape[d], "; ++i", d, ")\n");
    absl::StrAppend(&dst_index, " + i", d, " * ", dst_strides[d]);
    absl::StrAppend(&src_index, " + i", d, " * ", src_strides[d]);
  }
  absl::StrAppend(&out, std::string(2 * shape.size() + 2, ' '), dst, "[",
                  dst_index, "] = static_cast<C>(", src, "[", src_index,
                  "]);\n");
  return out;
}

}  // namespace

std::string ScatterSource(const ScatterShape& s) {
  std::vector<int64_t> contiguous(s.shape.size(), 1);
  for (size_t d = s.shape.size(); d-- > 1;) {
    contiguous[d - 1] = contiguous[d] * s.shape[d];
  }
  return absl::StrCat(
      "  (void)n;\n  const C* __restrict self = static_cast<const "
      "C*>(inputs[0]);\n  const ",
      CppTypeName(s.src_dtype), "* __restrict src = static_cast<const ",
      CppTypeName(s.src_dtype),
      "*>(inputs[1]);\n  C* __restrict out = static_cast<C*>(outputs[0]);\n",
      StridedCopy(s.shape, contiguous, 0, s.self_strides, "out", "self"),
      StridedCopy(s.view_shape, s.view_strides, s.view_offset, s.src_strides,
                  "out", "src"));
}

std::string VarSource(const VarShape& s) {
  const int64_t count = s.pre * s.reduced;
  // Every element of one output, p-major as the runtime visits them.
  const std::string loops = absl::StrCat(
      "    for (int64_t p = 0; p < ", s.pre, "; ++p)\n",
      "#pragma omp simd reduction(+ : acc)\n", "      for (int64_t r = 0; r < ",
      s.reduced, "; ++r) {\n",
      "        const double v = static_cast<double>(x[((p * ", s.outer,
      " + o) * ", s.reduced, " + r) * ", s.inner, " + c]);\n");
  return absl::StrCat(
      "  (void)n;\n  const C* __restrict x = static_cast<const "
      "C*>(inputs[0]);\n",
      "  C* __restrict out = static_cast<C*>(outputs[0]);\n",
      "  for (int64_t o = 0; o < ", s.outer, "; ++o)\n",
      "  for (int64_t c = 0; c < ", s.inner, "; ++c) {\n",
      "    double acc = 0;\n", loops, "        acc += v;\n      }\n",
      "    const double mean = acc / ", CppLiteral(static_cast<double>(count)),
      ";\n    acc = 0;\n", loops,
      "        acc += (v - mean) * (v - mean);\n      }\n", "    out[o * ",
      s.inner, " + c] = static_cast<C>(acc / ",
      CppLiteral(std::max(0.0, static_cast<double>(count) - s.correction)),
      ");\n  }\n");
}

std::string DotSource(const DotShape& s) {
  return absl::StrCat(
      "  (void)n;\n  const C* __restrict a = static_cast<const "
      "C*>(inputs[0]);\n",
      "  const C* __restrict b = static_cast<const C*>(inputs[1]);\n",
      "  double acc = 0;\n#pragma omp simd reduction(+ : acc)\n",
      "  for (int64_t i = 0; i < ", s.n, "; ++i) {\n",
      "    acc += static_cast<double>(a[i * ", s.a_stride,
      "]) * static_cast<double>(b[i * ", s.b_stride, "]);\n  }\n",
      "  static_cast<C*>(outputs[0])[0] = static_cast<C>(acc);\n");
}

std::string ConcatSource(const ConcatShape& s) {
  std::string out =
      "  (void)n;\n  C* __restrict out = static_cast<C*>(outputs[0]);\n";
  int64_t at = 0;
  for (size_t k = 0; k < s.widths.size(); ++k) {
    const int64_t w = s.widths[k];
    if (w > 0) {
      absl::StrAppend(&out, "  for (int64_t o = 0; o < ", s.outer,
                      "; ++o) __builtin_memcpy(out + o * ", s.row, " + ", at,
                      ", static_cast<const C*>(inputs[", k, "]) + o * ", w,
                      ", ", w, " * sizeof(C));\n");
    }
    at += w;
  }
  return out;
}

std::string MseLossSource(const MseLossShape& s) {
  const int first = s.backward ? 1 : 0;  // Where self is among the inputs.
  std::string out = absl::StrCat(
      "  (void)n;\n  const C* __restrict a = static_cast<const C*>(inputs[",
      first, "]);\n  const C* __restrict b = static_cast<const C*>(inputs[",
      first + 1, "]);\n  C* __restrict out = static_cast<C*>(outputs[0]);\n");
  const std::string d =
      "      const double d = static_cast<double>(a[i]) - "
      "static_cast<double>(b[i]);\n";
  if (s.backward) {
    const double scale =
        s.reduction == 1 ? 2.0 / std::max<int64_t>(s.numel, 1) : 2.0;
    absl::StrAppend(
        &out, "  const C* __restrict g = static_cast<const C*>(inputs[0]);\n",
        "#pragma omp simd\n  for (int64_t i = 0; i < ", s.numel, "; ++i) {\n",
        d, "      out[i] = static_cast<C>(", CppLiteral(scale), " * d * ",
        "static_cast<double>(g[", s.scalar_grad ? "0" : "i", "]));\n  }\n");
  } else if (s.reduction == 0) {
    absl::StrAppend(&out, "#pragma omp simd\n  for (int64_t i = 0; i < ",
                    s.numel, "; ++i) {\n", d,
                    "      out[i] = static_cast<C>(d * d);\n  }\n");
  } else {
    absl::StrAppend(
        &out, "  double total = 0;\n#pragma omp simd reduction(+ : total)\n",
        "  for (int64_t i = 0; i < ", s.numel, "; ++i) {\n", d,
        "      total += d * d;\n  }\n  out[0] = static_cast<C>(",
        s.reduction == 1 ? absl::StrCat("total / ", s.numel, ".0") : "total",
        ");\n");
  }
  return out;
}

}  // namespace aotcache
