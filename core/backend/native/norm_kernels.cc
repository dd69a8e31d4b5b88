#include "core/backend/native/norm_kernels.h"

#include "absl/strings/str_cat.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/kernel_source.h"

namespace aotcache {
namespace {

using Kind = BatchNormShape::Kind;

// The positions of a node's tensor arguments: x, weight, bias, the two
// statistics (running or saved), and the gradient (backward only, else -1).
struct Positions {
  int grad, x, weight, bias, stats;
};

Positions PositionsOf(const BatchNormShape& s) {
  if (s.kind != Kind::kBackward) return {-1, 0, 1, 2, 3};
  return {0, 1, 2, -1, s.train ? 5 : 3};
}

// Whether argument k is a tensor plain in `dtype` with `numel` elements.
bool PlainArg(const ResolvedGraph& g, const ResolvedNode& node, int k,
              DType dtype, int64_t numel) {
  if (node.args[k].kind != BoundArg::Kind::kTensor) return false;
  const Meta& m = g.values[node.args[k].values[0]].meta;
  return Plain(m, dtype) && m.numel() == numel;
}

}  // namespace

std::optional<BatchNormShape> BatchNormOf(const ResolvedGraph& g,
                                          const ResolvedNode& node) {
  const std::string& op = node.op->qualified_name;
  BatchNormShape s;
  int eps;
  if (op == "aten._native_batch_norm_legit.no_stats") {
    s.kind = Kind::kTrain;
    eps = 5;
  } else if (op == "aten._native_batch_norm_legit_no_training.default") {
    s.kind = Kind::kEval;
    s.train = false;
    eps = 6;
  } else if (op == "aten.native_batch_norm_backward.default") {
    s.kind = Kind::kBackward;
    if (node.args[9].ints.size() != 3) return std::nullopt;
    s.train = node.args[7].b;
    for (int r = 0; r < 3; ++r) s.mask[r] = node.args[9].ints[r] != 0;
    eps = 8;
  } else {
    return std::nullopt;
  }
  const Positions at = PositionsOf(s);
  if (node.args[at.x].kind != BoundArg::Kind::kTensor ||
      !node.args[eps].is_number()) {
    return std::nullopt;
  }
  const Meta& x = g.values[node.args[at.x].values[0]].meta;
  if (!IsFloating(x.dtype) || !Plain(x, x.dtype) || x.dim() < 2) {
    return std::nullopt;
  }
  s.batch = x.shape[0];
  s.channels = x.shape[1];
  for (int d = 2; d < x.dim(); ++d) s.inner *= x.shape[d];
  s.eps = node.args[eps].AsDouble();
  const int64_t c = s.channels;
  for (int k : {at.weight, at.bias}) {
    if (k < 0 || node.args[k].is_none()) continue;
    if (!PlainArg(g, node, k, x.dtype, c)) return std::nullopt;
    (k == at.weight ? s.weight : s.bias) = true;
  }
  if ((s.kind != Kind::kTrain &&
       (!PlainArg(g, node, at.stats, x.dtype, c) ||
        !PlainArg(g, node, at.stats + 1, x.dtype, c))) ||
      (at.grad >= 0 && !PlainArg(g, node, at.grad, x.dtype, x.numel()))) {
    return std::nullopt;
  }
  // The results the kernel writes: y (or the input's gradient), then the
  // per-channel ones (none in eval, whose are empty).
  const int written = s.kind == Kind::kEval ? 1 : 3;
  for (int r = 0; r < written; ++r) {
    const Meta& m = g.values[node.results[r]].meta;
    if (!Plain(m, x.dtype) || m.numel() != (r == 0 ? x.numel() : c)) {
      return std::nullopt;
    }
  }
  return s;
}

std::vector<int> BatchNormInputs(const ResolvedNode& node,
                                 const BatchNormShape& s) {
  const Positions at = PositionsOf(s);
  std::vector<int> inputs;
  for (int k : {at.grad, at.x, at.weight, at.bias}) {
    if (k >= 0 && !node.args[k].is_none())
      inputs.push_back(node.args[k].values[0]);
  }
  if (s.kind != Kind::kTrain) {
    inputs.push_back(node.args[at.stats].values[0]);
    inputs.push_back(node.args[at.stats + 1].values[0]);
  }
  return inputs;
}

namespace {

// Loops over channel c's elements, image by image: `body` with i, the
// element's index, in a vectorized loop (`reduction`: its clause, or "").
std::string OverChannel(const BatchNormShape& s, const std::string& reduction,
                        const std::string& body) {
  return absl::StrCat("    for (int64_t b = 0; b < ", s.batch, "; ++b) {\n",
                      "      const int64_t row = (b * ", s.channels, " + c) * ",
                      s.inner, ";\n", "#pragma omp simd",
                      reduction.empty() ? "" : " reduction(+ : ", reduction,
                      reduction.empty() ? "" : ")", "\n",
                      "      for (int64_t i = row; i < row + ", s.inner,
                      "; ++i) ", body, "\n    }\n");
}

// Declarations of the inputs, in BatchNormInputs' order; with `gradient`,
// its inputs first in place of the gradient's.
std::string Inputs(const BatchNormShape& s,
                   const GradientPrologue* gradient = nullptr) {
  std::vector<std::string> names;
  if (s.kind == Kind::kBackward && gradient == nullptr) names.push_back("g");
  names.push_back("x");
  if (s.weight) names.push_back("w");
  if (s.bias) names.push_back("bias");
  if (s.kind != Kind::kTrain) {
    names.push_back(s.train ? "saved_mean" : "running_mean");
    names.push_back(s.train ? "saved_invstd" : "running_var");
  }
  const int first = gradient != nullptr ? gradient->inputs : 0;
  std::string out = "  (void)n;\n";
  for (size_t k = 0; k < names.size(); ++k) {
    absl::StrAppend(&out, "  const C* __restrict ", names[k],
                    " = static_cast<const C*>(inputs[", first + k, "]);\n");
  }
  if (gradient != nullptr) out += gradient->source;
  return out;
}

// Channel c's mean and invstd from the running statistics.
std::string RunningStatistics(const BatchNormShape& s) {
  return absl::StrCat(
      "    const double mean = static_cast<double>(running_mean[c]);\n",
      "    const double invstd = 1.0 / __builtin_sqrt(static_cast<double>("
      "running_var[c]) + ",
      CppLiteral(s.eps), ");\n");
}

std::string ForwardSource(const BatchNormShape& s) {
  const int64_t count = s.batch * s.inner;
  std::string out = absl::StrCat(
      Inputs(s), "  C* __restrict y = static_cast<C*>(outputs[0]);\n",
      s.keep_normalized
          ? "  C* __restrict normalized = static_cast<C*>(outputs[3]);\n"
          : "",
      "  for (int64_t c = 0; c < ", s.channels, "; ++c) {\n");
  if (s.kind == Kind::kTrain) {
    absl::StrAppend(
        &out, "    double sum = 0;\n",
        OverChannel(s, "sum", "sum += static_cast<double>(x[i]);"),
        "    const double mean = sum / ", count, ";\n", "    double sq = 0;\n",
        OverChannel(s, "sq",
                    "{\n        const double d = static_cast<double>(x[i]) - "
                    "mean;\n        sq += d * d;\n      }"),
        "    const double invstd = 1.0 / __builtin_sqrt(sq / ", count, " + ",
        CppLiteral(s.eps), ");\n",
        "    static_cast<C*>(outputs[1])[c] = static_cast<C>(mean);\n",
        "    static_cast<C*>(outputs[2])[c] = static_cast<C>(invstd);\n");
  } else {
    absl::StrAppend(&out, RunningStatistics(s));
  }
  absl::StrAppend(
      &out, "    const double scale = invstd",
      s.weight ? " * static_cast<double>(w[c])" : "", ";\n",
      "    const double shift = ",
      s.bias ? "static_cast<double>(bias[c])" : "0.0", ";\n",
      OverChannel(
          s, "",
          absl::StrCat(
              "{\n        const C v = static_cast<C>((static_cast<"
              "double>(x[i]) - mean) * scale + shift);\n        y[i] = ",
              // As the runtime's relu: NaN stays NaN.
              s.relu ? "v != v ? v : (v > 0 ? v : C(0))" : "v",
              s.keep_normalized ? ";\n        normalized[i] = v" : "",
              ";\n      }")),
      "  }\n");
  return out;
}

// Per channel: the sums of g and of g * (x - mean), then the input's
// gradient; a result the mask leaves out is zeros, as the runtime's.
std::string BackwardSource(const BatchNormShape& s,
                           const GradientPrologue* gradient) {
  const int64_t count = s.batch * s.inner;
  const std::string g = gradient != nullptr ? "grad_at(i)" : "g[i]";
  std::string out =
      absl::StrCat(Inputs(s, gradient),
                   "  C* __restrict gx = static_cast<C*>(outputs[0]);\n",
                   "  C* __restrict gw = static_cast<C*>(outputs[1]);\n",
                   "  C* __restrict gb = static_cast<C*>(outputs[2]);\n",
                   "  for (int64_t c = 0; c < ", s.channels, "; ++c) {\n");
  if (s.train) {
    absl::StrAppend(
        &out, "    const double mean = static_cast<double>(saved_mean[c]);\n",
        "    const double invstd = static_cast<double>(saved_invstd[c]);\n");
  } else {
    absl::StrAppend(&out, RunningStatistics(s));
  }
  absl::StrAppend(
      &out, "    double gsum = 0, dot = 0;\n",
      OverChannel(s, "gsum, dot",
                  absl::StrCat("{\n        const double gi = static_cast<"
                               "double>(",
                               g,
                               ");\n"
                               "        gsum += gi;\n"
                               "        dot += gi * (static_cast<double>(x[i]) "
                               "- mean);\n"
                               "      }")),
      "    gw[c] = static_cast<C>(", s.mask[1] ? "dot * invstd" : "0", ");\n",
      "    gb[c] = static_cast<C>(", s.mask[2] ? "gsum" : "0", ");\n");
  if (!s.mask[0]) {
    absl::StrAppend(&out, OverChannel(s, "", "gx[i] = C(0);"), "  }\n");
    return out;
  }
  absl::StrAppend(&out, "    const double scale = invstd",
                  s.weight ? " * static_cast<double>(w[c])" : "", ";\n");
  if (s.train) {
    absl::StrAppend(
        &out, "    const double proj = dot * invstd * invstd / ", count,
        ", gmean = gsum / ", count, ";\n",
        OverChannel(
            s, "",
            absl::StrCat("gx[i] = static_cast<C>((static_cast<double>(", g,
                         ") - gmean - (static_cast<double>(x[i]) - "
                         "mean) * proj) * scale);")));
  } else {
    absl::StrAppend(
        &out, OverChannel(s, "",
                          absl::StrCat("gx[i] = static_cast<C>(static_cast<"
                                       "double>(",
                                       g, ") * scale);")));
  }
  absl::StrAppend(&out, "  }\n");
  return out;
}

}  // namespace

std::string BatchNormSource(const BatchNormShape& s,
                            const GradientPrologue* gradient) {
  return s.kind == Kind::kBackward ? BackwardSource(s, gradient)
                                   : ForwardSource(s);
}

}  // namespace aotcache
