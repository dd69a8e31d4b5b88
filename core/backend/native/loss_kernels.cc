#include "core/backend/native/loss_kernels.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/kernel_source.h"

namespace aotcache {

std::optional<MseLossShape> MseLossOf(const ResolvedGraph& g,
                                      const ResolvedNode& node) {
  const std::string& op = node.op->qualified_name;
  MseLossShape s;
  s.backward = op == "aten.mse_loss_backward.default";
  if (!s.backward && op != "aten.mse_loss.default") return std::nullopt;
  const int first = s.backward ? 1 : 0;
  for (int k = 0; k < first + 2; ++k) {
    if (node.args[k].kind != BoundArg::Kind::kTensor) return std::nullopt;
  }
  auto meta = [&](int k) -> const Meta& {
    return g.values[node.args[k].values[0]].meta;
  };
  const Meta& a = meta(first);
  const Meta& out = g.values[node.results[0]].meta;
  if (!IsFloating(a.dtype) || !Plain(a, a.dtype) ||
      !Plain(meta(first + 1), a.dtype) || meta(first + 1).shape != a.shape ||
      !Plain(out, a.dtype) || !node.args[first + 2].is_number()) {
    return std::nullopt;
  }
  s.reduction = static_cast<int>(node.args[first + 2].AsDouble());
  if (s.reduction < 0 || s.reduction > 2) return std::nullopt;
  s.numel = a.numel();
  if (s.backward) {
    const Meta& grad = meta(0);
    s.scalar_grad = grad.numel() == 1;
    if (!Plain(grad, a.dtype) || (!s.scalar_grad && grad.shape != a.shape) ||
        out.shape != a.shape) {
      return std::nullopt;
    }
  } else if (out.numel() != (s.reduction == 0 ? s.numel : 1)) {
    return std::nullopt;
  }
  return s;
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
