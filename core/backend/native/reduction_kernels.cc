#include "core/backend/native/reduction_kernels.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/kernel_source.h"

namespace aotcache {

std::optional<VarShape> VarOf(const ResolvedGraph& g,
                              const ResolvedNode& node) {
  if (node.op->qualified_name != "aten.var.correction" ||
      node.args[0].kind != BoundArg::Kind::kTensor) {
    return std::nullopt;
  }
  const Meta& in = g.values[node.args[0].values[0]].meta;
  const Meta& out = g.values[node.results[0]].meta;
  std::vector<bool> reduced;
  VarShape s;
  if (!IsFloating(in.dtype) || !Plain(in, in.dtype) || !Plain(out, in.dtype) ||
      !ReducedDims(in, node.args[1], &reduced) ||
      !Blocks(in, reduced, &s.pre, &s.outer, &s.reduced, &s.inner)) {
    return std::nullopt;
  }
  s.correction = node.args[2].is_none() ? 1.0 : node.args[2].AsDouble();
  return s;
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

}  // namespace aotcache
