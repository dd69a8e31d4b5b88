#include "core/backend/native/linalg_kernels.h"

#include "absl/strings/str_cat.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/kernel_source.h"

namespace aotcache {

std::optional<DotShape> DotOf(const ResolvedGraph& g,
                              const ResolvedNode& node) {
  if (node.op->qualified_name != "aten.dot.default" ||
      node.args[0].kind != BoundArg::Kind::kTensor ||
      node.args[1].kind != BoundArg::Kind::kTensor) {
    return std::nullopt;
  }
  const Meta& a = g.values[node.args[0].values[0]].meta;
  const Meta& b = g.values[node.args[1].values[0]].meta;
  const Meta& out = g.values[node.results[0]].meta;
  if (!IsFloating(out.dtype) || !Plain(out, out.dtype) || out.numel() != 1 ||
      a.dtype != out.dtype || b.dtype != out.dtype || a.dim() != 1 ||
      b.dim() != 1 || a.shape != b.shape) {
    return std::nullopt;
  }
  DotShape s;
  s.n = a.shape[0];
  s.a_stride = a.stride[0];
  s.b_stride = b.stride[0];
  return s;
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

}  // namespace aotcache
