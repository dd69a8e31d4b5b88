#include "core/backend/native/softmax_kernels.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/substitute.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/kernel_source.h"

namespace aotcache {

std::optional<SoftmaxShape> SoftmaxOf(const ResolvedGraph& g,
                                      const ResolvedNode& node) {
  const std::string& op = node.op->qualified_name;
  SoftmaxShape s;
  s.log = op == "aten._log_softmax.default" ||
          op == "aten._log_softmax_backward_data.default";
  s.backward = op == "aten._softmax_backward_data.default" ||
               op == "aten._log_softmax_backward_data.default";
  if (!s.log && !s.backward && op != "aten._softmax.default") {
    return std::nullopt;
  }
  const Meta& out = g.values[node.results[0]].meta;
  for (int k = 0; k < (s.backward ? 2 : 1); ++k) {
    if (node.args[k].kind != BoundArg::Kind::kTensor) return std::nullopt;
    const Meta& in = g.values[node.args[k].values[0]].meta;
    if (!IsFloating(in.dtype) || in.dtype != out.dtype ||
        in.shape != out.shape || !in.IsContiguous() || in.offset != 0) {
      return std::nullopt;
    }
  }
  if (out.dim() < 1 || !out.IsContiguous() || out.offset != 0) {
    return std::nullopt;
  }
  int64_t dim = node.args[s.backward ? 2 : 1].i;
  if (dim < 0) dim += out.dim();
  if (dim != out.dim() - 1 || out.shape.back() == 0) return std::nullopt;
  s.cols = out.shape.back();
  s.rows = out.numel() / s.cols;
  return s;
}

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

}  // namespace aotcache
