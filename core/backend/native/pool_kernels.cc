#include "core/backend/native/pool_kernels.h"

#include "absl/strings/str_cat.h"
#include "core/backend/native/kernel_patterns.h"

namespace aotcache {
namespace {

using Kind = PoolShape::Kind;

constexpr int64_t kMaxPlane = int64_t{1} << 24;

const Meta& ArgMeta(const ResolvedGraph& g, const ResolvedNode& node, int k) {
  return g.values[node.args[k].values[0]].meta;
}

bool IsTensor(const ResolvedNode& node, int k) {
  return node.args[k].kind == BoundArg::Kind::kTensor;
}

// The window's geometry from argument `first` on (kernel_size, stride,
// padding, then for max dilation, then ceil_mode) over `self`.
bool WindowOf(const ResolvedNode& node, const Meta& self, int first, bool max,
              PoolGeometry* geometry) {
  absl::StatusOr<PoolGeometry> g =
      PoolGeometryOf(self.shape, node.args[first].ints,
                     node.args[first + 1].ints, node.args[first + 2].ints,
                     max ? node.args[first + 3].ints : std::vector<int64_t>{1},
                     node.args[first + (max ? 4 : 3)].b);
  if (!g.ok()) return false;
  *geometry = *g;
  return true;
}

// Whether the max backward's indices (argument 7) are the results of a
// max_pool2d_with_indices of this graph over the same input, with the
// backward's window `geometry`.
bool IndicesFromForward(const ResolvedGraph& g, const ResolvedNode& node,
                        const PoolGeometry& geometry) {
  const ValueInfo& indices = g.values[node.args[7].values[0]];
  if (indices.source != ValueInfo::Source::kNode || indices.result != 1) {
    return false;
  }
  const ResolvedNode& forward = g.nodes[indices.index];
  PoolGeometry own;
  if (forward.op->qualified_name != "aten.max_pool2d_with_indices.default" ||
      !IsTensor(forward, 0) ||
      forward.args[0].values[0] != node.args[1].values[0] ||
      !WindowOf(forward, g.values[forward.args[0].values[0]].meta, 1, true,
                &own)) {
    return false;
  }
  for (int d = 0; d < 2; ++d) {
    if (own.kernel[d] != geometry.kernel[d] ||
        own.stride[d] != geometry.stride[d] ||
        own.padding[d] != geometry.padding[d] ||
        own.dilation[d] != geometry.dilation[d] ||
        own.out[d] != geometry.out[d]) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<PoolShape> PoolOf(const ResolvedGraph& g,
                                const ResolvedNode& node) {
  const std::string& op = node.op->qualified_name;
  PoolShape s;
  if (op == "aten.max_pool2d_with_indices.default") {
    s.kind = Kind::kMax;
  } else if (op == "aten.max_pool2d_with_indices_backward.default") {
    s.kind = Kind::kMax;
    s.backward = true;
  } else if (op == "aten.avg_pool2d.default") {
    s.kind = Kind::kAvg;
  } else if (op == "aten.avg_pool2d_backward.default") {
    s.kind = Kind::kAvg;
    s.backward = true;
  } else if (op == "aten._adaptive_avg_pool2d.default") {
    s.kind = Kind::kAdaptiveAvg;
  } else if (op == "aten._adaptive_avg_pool2d_backward.default") {
    s.kind = Kind::kAdaptiveAvg;
    s.backward = true;
  } else {
    return std::nullopt;
  }
  const int self = s.backward ? 1 : 0;
  if (!IsTensor(node, self) || (s.backward && !IsTensor(node, 0))) {
    return std::nullopt;
  }
  const Meta& x = ArgMeta(g, node, self);
  if (!IsFloating(x.dtype) || !Plain(x, x.dtype) || x.numel() == 0 ||
      (x.dim() != 3 && x.dim() != 4)) {
    return std::nullopt;
  }
  PoolGeometry& geo = s.geometry;
  const int first = self + 1;
  if (s.kind == Kind::kAdaptiveAvg) {
    const Meta& out =
        s.backward ? ArgMeta(g, node, 0) : g.values[node.results[0]].meta;
    geo.planes = x.numel() / (x.shape[x.dim() - 2] * x.shape[x.dim() - 1]);
    for (int d = 0; d < 2; ++d) {
      geo.in[d] = x.shape[x.dim() - 2 + d];
      geo.out[d] = out.shape[out.dim() - 2 + d];
    }
  } else if (!WindowOf(node, x, first, s.kind == Kind::kMax, &geo)) {
    return std::nullopt;
  }
  if (s.kind == Kind::kAvg) {
    s.count_include_pad = node.args[first + 4].b;
    const BoundArg& divisor = node.args[first + 5];
    if (!divisor.is_none()) s.divisor_override = divisor.i;
  }
  const int64_t pooled = geo.planes * geo.out[0] * geo.out[1];
  if (pooled == 0 || (s.backward && !Plain(ArgMeta(g, node, 0), x.dtype)) ||
      (s.backward && ArgMeta(g, node, 0).numel() != pooled)) {
    return std::nullopt;
  }
  // A backward sums a plane in the thread's scratch buffer: past
  // kMaxPlane elements the runtime's kernel runs the node instead.
  if (s.backward && geo.in[0] * geo.in[1] > kMaxPlane) return std::nullopt;
  if (s.kind == Kind::kMax && s.backward &&
      (!IsTensor(node, 7) || !Plain(ArgMeta(g, node, 7), v1::DTYPE_INT64) ||
       !IndicesFromForward(g, node, geo))) {
    return std::nullopt;
  }
  // y (or the input's gradient), and for the max forward its indices.
  const Meta& y = g.values[node.results[0]].meta;
  if (!Plain(y, x.dtype) || y.numel() != (s.backward ? x.numel() : pooled)) {
    return std::nullopt;
  }
  if (s.kind == Kind::kMax && !s.backward &&
      !Plain(g.values[node.results[1]].meta, v1::DTYPE_INT64)) {
    return std::nullopt;
  }
  return s;
}

std::vector<int> PoolInputs(const ResolvedNode& node, const PoolShape& s) {
  if (!s.backward) return {node.args[0].values[0]};
  if (s.kind == Kind::kMax) {
    return {node.args[0].values[0], node.args[7].values[0]};
  }
  return {node.args[0].values[0]};
}

namespace {

// Loops over every plane p and its output positions (oh, ow), o the
// output's index, running `body`.
std::string OverOutputs(const PoolShape& s, const std::string& body) {
  const PoolGeometry& g = s.geometry;
  return absl::StrCat("    for (int64_t oh = 0; oh < ", g.out[0], "; ++oh)\n",
                      "    for (int64_t ow = 0; ow < ", g.out[1], "; ++ow) {\n",
                      "      const int64_t o = (p * ", g.out[0], " + oh) * ",
                      g.out[1], " + ow;\n", body, "    }\n");
}

// The window of output (oh, ow) of an average: rows [hs, he), columns
// [ws, we) and the divisor, as the runtime's kernel clips and counts them.
std::string AverageWindow(const PoolShape& s) {
  const PoolGeometry& g = s.geometry;
  if (s.kind == Kind::kAdaptiveAvg) {
    return absl::StrCat(
        "      const int64_t hs = oh * ", g.in[0], " / ", g.out[0],
        ", he = ((oh + 1) * ", g.in[0], " + ", g.out[0] - 1, ") / ", g.out[0],
        ";\n", "      const int64_t ws = ow * ", g.in[1], " / ", g.out[1],
        ", we = ((ow + 1) * ", g.in[1], " + ", g.out[1] - 1, ") / ", g.out[1],
        ";\n",
        "      const double divisor = static_cast<double>((he - hs) * (we - "
        "ws));\n");
  }
  std::string out;
  const char* names[] = {"h", "w"};
  const char* outs[] = {"oh", "ow"};
  for (int d = 0; d < 2; ++d) {
    const char* x = names[d];
    absl::StrAppend(
        &out, "      const int64_t ", x, "0 = ", outs[d], " * ", g.stride[d],
        " - ", g.padding[d], ";\n", "      const int64_t ", x, "1 = ", x,
        "0 + ", g.kernel[d], " < ", g.in[d] + g.padding[d], " ? ", x, "0 + ",
        g.kernel[d], " : ", g.in[d] + g.padding[d], ";\n",
        "      const int64_t ", x, "s = ", x, "0 > 0 ? ", x, "0 : 0, ", x,
        "e = ", x, "1 < ", g.in[d], " ? ", x, "1 : ", g.in[d], ";\n");
  }
  std::string divisor = s.divisor_override.has_value()
                            ? absl::StrCat(*s.divisor_override)
                        : s.count_include_pad ? "(h1 - h0) * (w1 - w0)"
                                              : "(he - hs) * (we - ws)";
  absl::StrAppend(&out, "      const double divisor = static_cast<double>(",
                  divisor, ");\n");
  return out;
}

// The window's elements of the plane, h and w their row and column.
std::string OverWindow(const std::string& body) {
  return absl::StrCat("      for (int64_t h = hs; h < he; ++h)\n",
                      "        for (int64_t w = ws; w < we; ++w) ", body, "\n");
}

std::string MaxForward(const PoolShape& s) {
  const PoolGeometry& g = s.geometry;
  return absl::StrCat(
      "    const C* __restrict plane = x + p * ", g.in[0] * g.in[1], ";\n",
      OverOutputs(
          s,
          absl::StrCat(
              "      C best = static_cast<C>(-__builtin_inf());\n",
              "      int64_t at = -1;\n", "      for (int64_t i = 0; i < ",
              g.kernel[0], "; ++i) {\n", "        const int64_t h = oh * ",
              g.stride[0], " - ", g.padding[0], " + i * ", g.dilation[0], ";\n",
              "        if (h < 0 || h >= ", g.in[0], ") continue;\n",
              "        for (int64_t j = 0; j < ", g.kernel[1], "; ++j) {\n",
              "          const int64_t w = ow * ", g.stride[1], " - ",
              g.padding[1], " + j * ", g.dilation[1], ";\n",
              "          if (w < 0 || w >= ", g.in[1], ") continue;\n",
              "          const C v = plane[h * ", g.in[1], " + w];\n",
              "          if (at < 0 || v > best || v != v) {\n",
              "            best = v;\n", "            at = h * ", g.in[1],
              " + w;\n", "            if (v != v) break;\n", "          }\n",
              "        }\n", "        if (best != best) break;\n", "      }\n",
              "      y[o] = best;\n", "      indices[o] = at;\n")));
}

std::string AverageForward(const PoolShape& s) {
  const PoolGeometry& g = s.geometry;
  return absl::StrCat(
      "    const C* __restrict plane = x + p * ", g.in[0] * g.in[1], ";\n",
      OverOutputs(s, absl::StrCat(AverageWindow(s), "      double sum = 0;\n",
                                  OverWindow(absl::StrCat(
                                      "sum += static_cast<double>(plane[h * ",
                                      g.in[1], " + w]);")),
                                  "      y[o] = static_cast<C>(sum / "
                                  "divisor);\n")));
}

// A plane's gradient summed in the thread's buffer `acc`, in the order the
// runtime's kernel adds its contributions, then stored.
std::string Backward(const PoolShape& s) {
  const PoolGeometry& g = s.geometry;
  const int64_t area = g.in[0] * g.in[1];
  std::string add;
  if (s.kind == Kind::kMax) {
    add = "      acc[indices[o]] += static_cast<double>(gy[o]);\n";
  } else {
    add = absl::StrCat(
        AverageWindow(s),
        "      const double share = static_cast<double>(gy[o]) / divisor;\n",
        OverWindow(absl::StrCat("acc[h * ", g.in[1], " + w] += share;")));
  }
  return absl::StrCat("    for (int64_t i = 0; i < ", area,
                      "; ++i) acc[i] = 0;\n", OverOutputs(s, add),
                      "    for (int64_t i = 0; i < ", area, "; ++i) gx[p * ",
                      area, " + i] = static_cast<C>(acc[i]);\n");
}

}  // namespace

std::string PoolSource(const PoolShape& s) {
  std::string out = "  (void)n;\n";
  if (s.backward) {
    absl::StrAppend(
        &out, "  const C* __restrict gy = static_cast<const C*>(inputs[0]);\n",
        s.kind == Kind::kMax ? "  const int64_t* __restrict indices = "
                               "static_cast<const int64_t*>(inputs[1]);\n"
                             : "",
        "  C* __restrict gx = static_cast<C*>(outputs[0]);\n",
        "  double* __restrict acc = static_cast<double*>(aotcache_scratch(0, ",
        s.geometry.in[0] * s.geometry.in[1], " * sizeof(double)));\n");
  } else {
    absl::StrAppend(
        &out, "  const C* __restrict x = static_cast<const C*>(inputs[0]);\n",
        "  C* __restrict y = static_cast<C*>(outputs[0]);\n",
        s.kind == Kind::kMax ? "  int64_t* __restrict indices = "
                               "static_cast<int64_t*>(outputs[1]);\n"
                             : "");
  }
  absl::StrAppend(&out, "  for (int64_t p = 0; p < ", s.geometry.planes,
                  "; ++p) {\n");
  if (s.backward) {
    absl::StrAppend(&out, Backward(s));
  } else {
    absl::StrAppend(&out,
                    s.kind == Kind::kMax ? MaxForward(s) : AverageForward(s));
  }
  return absl::StrCat(out, "  }\n");
}

}  // namespace aotcache
