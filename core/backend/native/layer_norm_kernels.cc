#include "core/backend/native/layer_norm_kernels.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/substitute.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/kernel_source.h"

namespace aotcache {

namespace {

// A layer norm's rows and columns: x floating, `normalized` its trailing
// dims, of at least one element.
bool LayerNormRows(const Meta& x, const std::vector<int64_t>& normalized,
                   int64_t* rows, int64_t* cols) {
  if (!IsFloating(x.dtype) || normalized.size() > x.shape.size() ||
      !std::equal(normalized.begin(), normalized.end(),
                  x.shape.end() - normalized.size())) {
    return false;
  }
  *cols = 1;
  for (int64_t d : normalized) *cols *= d;
  if (*cols == 0) return false;
  *rows = x.numel() / *cols;
  return true;
}

// Results r of `node`: in `dtype`, of numel[r] elements, plain but for the
// first (x's shape), which may be staged.
bool TakenResults(const ResolvedGraph& g, const ResolvedNode& node, DType dtype,
                  const int64_t (&numel)[3],
                  std::vector<StagedTensor>* staged) {
  for (int r = 0; r < 3; ++r) {
    const Meta& m = g.values[node.results[r]].meta;
    if (m.dtype != dtype || m.numel() != numel[r]) return false;
    if (r == 0 ? !StageIfStrided(m, true, 0, staged) : !Plain(m, dtype)) {
      return false;
    }
  }
  return true;
}

// As the runtime's kernel: per row, in double, the mean, then the mean of
// squared deviations, then (x - mean) * rstd * weight + bias.
std::string LayerNormBody(const LayerNormShape& s) {
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
std::string LayerNormBackwardBody(const LayerNormBackwardShape& s) {
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

}  // namespace

std::optional<LayerNormShape> LayerNormOf(const ResolvedGraph& g,
                                          const ResolvedNode& node) {
  if (node.op->qualified_name != "aten.native_layer_norm.default" ||
      node.args[0].kind != BoundArg::Kind::kTensor ||
      !node.args[4].is_number() || node.results.size() != 3) {
    return std::nullopt;
  }
  const Meta& x = g.values[node.args[0].values[0]].meta;
  const std::vector<int64_t>& normalized = node.args[1].ints;
  LayerNormShape s;
  if (!LayerNormRows(x, normalized, &s.rows, &s.cols) ||
      !StageIfStrided(x, false, 0, &s.staged)) {
    return std::nullopt;
  }
  s.eps = node.args[4].AsDouble();
  for (int k : {2, 3}) {
    const BoundArg& a = node.args[k];
    if (a.is_none()) continue;
    if (a.kind != BoundArg::Kind::kTensor) return std::nullopt;
    const Meta& m = g.values[a.values[0]].meta;
    if (!Plain(m, x.dtype) || m.shape != normalized) return std::nullopt;
    (k == 2 ? s.weight : s.bias) = true;
  }
  if (!TakenResults(g, node, x.dtype, {x.numel(), s.rows, s.rows}, &s.staged)) {
    return std::nullopt;
  }
  return s;
}

std::optional<LayerNormBackwardShape> LayerNormBackwardOf(
    const ResolvedGraph& g, const ResolvedNode& node) {
  if (node.op->qualified_name != "aten.native_layer_norm_backward.default" ||
      node.results.size() != 3 || node.args[7].ints.size() != 3) {
    return std::nullopt;
  }
  for (int k : {0, 1, 3, 4}) {
    if (node.args[k].kind != BoundArg::Kind::kTensor) return std::nullopt;
  }
  auto meta = [&](int k) -> const Meta& {
    return g.values[node.args[k].values[0]].meta;
  };
  const Meta& x = meta(1);
  const std::vector<int64_t>& normalized = node.args[2].ints;
  LayerNormBackwardShape s;
  if (!LayerNormRows(x, normalized, &s.rows, &s.cols) ||
      meta(0).dtype != x.dtype || meta(0).shape != x.shape ||
      !StageIfStrided(meta(0), false, 0, &s.staged) ||
      !StageIfStrided(x, false, 1, &s.staged)) {
    return std::nullopt;
  }
  for (int k : {3, 4}) {
    if (!Plain(meta(k), x.dtype) || meta(k).numel() != s.rows) {
      return std::nullopt;
    }
  }
  if (!node.args[5].is_none()) {
    if (node.args[5].kind != BoundArg::Kind::kTensor ||
        !Plain(meta(5), x.dtype) || meta(5).shape != normalized) {
      return std::nullopt;
    }
    s.weight = true;
  }
  for (int r = 0; r < 3; ++r) s.mask[r] = node.args[7].ints[r] != 0;
  if (!TakenResults(g, node, x.dtype, {x.numel(), s.cols, s.cols}, &s.staged)) {
    return std::nullopt;
  }
  return s;
}

std::string LayerNormSource(const LayerNormShape& s) {
  return StagedSource(1 + s.weight + s.bias, 3, s.staged, LayerNormBody(s));
}

std::string LayerNormBackwardSource(const LayerNormBackwardShape& s) {
  return StagedSource(4 + s.weight, 3, s.staged, LayerNormBackwardBody(s));
}

}  // namespace aotcache
