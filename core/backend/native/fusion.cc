#include "core/backend/native/fusion.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/backend/native/kernel_source.h"

namespace aotcache {
namespace {

const Formula* FormulaOf(const ResolvedNode& node) {
  return FindFormula(node.op->qualified_name);
}

bool IsFloating(DType d) {
  return d == v1::DTYPE_FLOAT32 || d == v1::DTYPE_FLOAT64;
}

// An operand every element of which is its first: one element, or all
// strides zero (an expanded scalar, such as the gradient of a sum).
bool ScalarLike(const Meta& m) {
  if (m.numel() == 1) return true;
  for (int64_t s : m.stride) {
    if (s != 0) return false;
  }
  return true;
}

// A sum or mean over a contiguous floating tensor, of its leading dims
// (outer: out[c] = sum over r of in[r * cols + c]) or trailing dims (inner:
// out[r] = sum over c of in[r * cols + c]), accumulated in double as the
// runtime's kernel does.
struct Reduction {
  bool inner = true;
  bool mean = false;
  int64_t rows = 1, cols = 1;
  int input = -1;  // Value id.
};

std::optional<Reduction> ReductionOf(const ResolvedGraph& g,
                                     const ResolvedNode& node) {
  const std::string& op = node.op->qualified_name;
  const bool all = op == "aten.sum.default" || op == "aten.mean.default";
  const bool dims = op == "aten.sum.dim_IntList" || op == "aten.mean.dim";
  if (!all && !dims) return std::nullopt;
  if (node.args[0].kind != BoundArg::Kind::kTensor) return std::nullopt;
  // A dtype argument (sum's and mean's last) must be unset.
  if (!node.args.back().is_none() && node.args.size() > (all ? 1u : 3u)) {
    return std::nullopt;
  }
  Reduction r;
  r.mean = op.rfind("aten.mean", 0) == 0;
  r.input = node.args[0].values[0];
  const Meta& in = g.values[r.input].meta;
  const Meta& out = g.values[node.results[0]].meta;
  if (!IsFloating(in.dtype) || out.dtype != in.dtype || !in.IsContiguous() ||
      in.offset != 0 || !out.IsContiguous() || out.offset != 0) {
    return std::nullopt;
  }
  std::vector<bool> reduced(in.dim(), true);
  if (dims && !node.args[1].is_none() && !node.args[1].ints.empty()) {
    reduced.assign(in.dim(), false);
    for (int64_t d : node.args[1].ints) {
      int64_t w = d < 0 ? d + std::max<int64_t>(in.dim(), 1) : d;
      if (w < 0 || w >= in.dim()) return std::nullopt;
      reduced[w] = true;
    }
  }
  // Reduced dims: a prefix (outer) or a suffix (inner).
  int64_t split = 0;
  while (split < in.dim() && reduced[split]) ++split;
  bool prefix = true;
  for (int64_t d = split; d < in.dim(); ++d) prefix &= !reduced[d];
  int64_t first = in.dim();
  while (first > 0 && reduced[first - 1]) --first;
  bool suffix = true;
  for (int64_t d = 0; d < first; ++d) suffix &= !reduced[d];
  if (!prefix && !suffix) return std::nullopt;
  r.inner = suffix;
  const int64_t at = r.inner ? first : split;
  for (int64_t d = 0; d < in.dim(); ++d) {
    (d < at ? r.rows : r.cols) *= in.shape[d];
  }
  return r;
}

// The node computes elementwise over float or bool operands that are
// contiguous with its result's shape, or scalar-like, or plain numbers; a
// comparison's result is bool, any other's floating.
bool Fusible(const ResolvedGraph& g, const ResolvedNode& node) {
  if (ReductionOf(g, node).has_value()) return true;
  const Formula* f = FormulaOf(node);
  if (f == nullptr || node.results.size() != 1) return false;
  const Meta& out = g.values[node.results[0]].meta;
  const bool compare = f->operands == Formula::Operands::kAsDouble;
  if ((compare ? out.dtype != v1::DTYPE_BOOL : !IsFloating(out.dtype)) ||
      !out.IsContiguous() || out.offset != 0) {
    return false;
  }
  for (int k = 0; k < f->arity; ++k) {
    const BoundArg& a = node.args[k];
    if (a.is_number()) continue;
    if (a.kind != BoundArg::Kind::kTensor) return false;
    const Meta& m = g.values[a.values[0]].meta;
    if (!IsFloating(m.dtype) && m.dtype != v1::DTYPE_BOOL) return false;
    if (ScalarLike(m)) continue;
    if (m.shape != out.shape || !m.IsContiguous() || m.offset != 0) {
      return false;
    }
  }
  return true;
}

// A 2-D operand BLAS can read: row-major (stride 1 across columns) or
// column-major (transposed). Its transpose flag and leading dimension.
bool BlasOperand(const Meta& m, bool* transposed, int64_t* ld) {
  if (m.shape.size() != 2) return false;
  if (m.stride[1] == 1 && m.stride[0] >= std::max<int64_t>(m.shape[1], 1)) {
    *transposed = false;
    *ld = m.stride[0];
    return true;
  }
  if (m.stride[0] == 1 && m.stride[1] >= std::max<int64_t>(m.shape[0], 1)) {
    *transposed = true;
    *ld = m.stride[1];
    return true;
  }
  return false;
}

// mm(a, b) or addmm(bias, a, b, beta, alpha) over floating matrices BLAS
// can read, into a contiguous result; bias [N] or [M, N], contiguous.
bool BlasMatmul(const ResolvedGraph& g, const ResolvedNode& node) {
  const std::string& op = node.op->qualified_name;
  const bool addmm = op == "aten.addmm.default";
  if (op != "aten.mm.default" && !addmm) return false;
  const Meta& out = g.values[node.results[0]].meta;
  if (!IsFloating(out.dtype) || !out.IsContiguous() || out.offset != 0) {
    return false;
  }
  const int first = addmm ? 1 : 0;
  for (int k = 0; k < (addmm ? 3 : 2); ++k) {
    if (node.args[k].kind != BoundArg::Kind::kTensor) return false;
    const Meta& m = g.values[node.args[k].values[0]].meta;
    if (m.dtype != out.dtype) return false;
    bool t;
    int64_t ld;
    if (k >= first && !BlasOperand(m, &t, &ld)) return false;
    if (k < first) {  // The bias.
      bool row = m.shape.size() == 1 && m.shape[0] == out.shape[1];
      if ((!row && m.shape != out.shape) || !m.IsContiguous()) return false;
    }
  }
  return !addmm || (node.args[3].is_number() && node.args[4].is_number());
}

// _softmax (or, `backward`, _softmax_backward_data) over the last dim of
// contiguous floating tensors into one of their dtype: rows and columns.
bool LastDimSoftmax(const ResolvedGraph& g, const ResolvedNode& node,
                    bool backward, int64_t* rows, int64_t* cols) {
  const char* op = backward ? "aten._softmax_backward_data.default"
                            : "aten._softmax.default";
  if (node.op->qualified_name != op) return false;
  const Meta& out = g.values[node.results[0]].meta;
  const int tensors = backward ? 2 : 1;
  for (int k = 0; k < tensors; ++k) {
    if (node.args[k].kind != BoundArg::Kind::kTensor) return false;
    const Meta& in = g.values[node.args[k].values[0]].meta;
    if (!IsFloating(in.dtype) || in.dtype != out.dtype ||
        in.shape != out.shape || !in.IsContiguous() || in.offset != 0) {
      return false;
    }
  }
  if (out.dim() < 1 || !out.IsContiguous() || out.offset != 0) return false;
  int64_t dim = node.args[backward ? 2 : 1].i;
  if (dim < 0) dim += out.dim();
  if (dim != out.dim() - 1 || out.shape.back() == 0) return false;
  *cols = out.shape.back();
  *rows = out.numel() / *cols;
  return true;
}

// native_layer_norm(x, normalized_shape, weight?, bias?, eps) over the
// trailing dims of a contiguous floating x, with weight and bias contiguous
// of those dims and results contiguous in x's dtype.
std::optional<LayerNormShape> LayerNormOf(const ResolvedGraph& g,
                                          const ResolvedNode& node) {
  if (node.op->qualified_name != "aten.native_layer_norm.default" ||
      node.args[0].kind != BoundArg::Kind::kTensor ||
      !node.args[4].is_number() || node.results.size() != 3) {
    return std::nullopt;
  }
  auto plain = [](const Meta& m, DType dtype) {
    return m.dtype == dtype && m.IsContiguous() && m.offset == 0;
  };
  const Meta& x = g.values[node.args[0].values[0]].meta;
  const std::vector<int64_t>& normalized = node.args[1].ints;
  if (!IsFloating(x.dtype) || !plain(x, x.dtype) ||
      normalized.size() > x.shape.size() ||
      !std::equal(normalized.begin(), normalized.end(),
                  x.shape.end() - normalized.size())) {
    return std::nullopt;
  }
  LayerNormShape s;
  s.cols = 1;
  for (int64_t d : normalized) s.cols *= d;
  if (s.cols == 0) return std::nullopt;
  s.rows = x.numel() / s.cols;
  s.eps = node.args[4].AsDouble();
  for (int k : {2, 3}) {
    const BoundArg& a = node.args[k];
    if (a.is_none()) continue;
    if (a.kind != BoundArg::Kind::kTensor) return std::nullopt;
    const Meta& m = g.values[a.values[0]].meta;
    if (!plain(m, x.dtype) || m.shape != normalized) return std::nullopt;
    (k == 2 ? s.weight : s.bias) = true;
  }
  for (int r = 0; r < 3; ++r) {
    const Meta& m = g.values[node.results[r]].meta;
    if (!plain(m, x.dtype) || m.numel() != (r == 0 ? x.numel() : s.rows)) {
      return std::nullopt;
    }
  }
  return s;
}

// native_layer_norm_backward(g, x, normalized_shape, mean, rstd, weight?,
// bias?, output_mask) over contiguous tensors of x's dtype, as for
// LayerNormOf.
std::optional<LayerNormBackwardShape> LayerNormBackwardOf(
    const ResolvedGraph& g, const ResolvedNode& node) {
  if (node.op->qualified_name != "aten.native_layer_norm_backward.default" ||
      node.results.size() != 3 || node.args[7].ints.size() != 3) {
    return std::nullopt;
  }
  for (int k : {0, 1, 3, 4}) {
    if (node.args[k].kind != BoundArg::Kind::kTensor) return std::nullopt;
  }
  auto plain = [](const Meta& m, DType dtype) {
    return m.dtype == dtype && m.IsContiguous() && m.offset == 0;
  };
  auto meta = [&](int k) -> const Meta& {
    return g.values[node.args[k].values[0]].meta;
  };
  const Meta& x = meta(1);
  const std::vector<int64_t>& normalized = node.args[2].ints;
  if (!IsFloating(x.dtype) || !plain(x, x.dtype) || !plain(meta(0), x.dtype) ||
      meta(0).shape != x.shape || normalized.size() > x.shape.size() ||
      !std::equal(normalized.begin(), normalized.end(),
                  x.shape.end() - normalized.size())) {
    return std::nullopt;
  }
  LayerNormBackwardShape s;
  s.cols = 1;
  for (int64_t d : normalized) s.cols *= d;
  if (s.cols == 0) return std::nullopt;
  s.rows = x.numel() / s.cols;
  for (int k : {3, 4}) {
    if (!plain(meta(k), x.dtype) || meta(k).numel() != s.rows) {
      return std::nullopt;
    }
  }
  if (!node.args[5].is_none()) {
    if (node.args[5].kind != BoundArg::Kind::kTensor ||
        !plain(meta(5), x.dtype) || meta(5).shape != normalized) {
      return std::nullopt;
    }
    s.weight = true;
  }
  for (int r = 0; r < 3; ++r) {
    s.mask[r] = node.args[7].ints[r] != 0;
    const Meta& m = g.values[node.results[r]].meta;
    if (!plain(m, x.dtype) || m.numel() != (r == 0 ? x.numel() : s.cols)) {
      return std::nullopt;
    }
  }
  return s;
}

GemmShape GemmOf(const ResolvedGraph& g, const ResolvedNode& node) {
  GemmShape s;
  s.addmm = node.op->qualified_name == "aten.addmm.default";
  const Meta& out = g.values[node.results[0]].meta;
  const Meta& a = g.values[node.args[s.addmm ? 1 : 0].values[0]].meta;
  const Meta& b = g.values[node.args[s.addmm ? 2 : 1].values[0]].meta;
  BlasOperand(a, &s.transpose_a, &s.lda);
  BlasOperand(b, &s.transpose_b, &s.ldb);
  s.f64 = out.dtype == v1::DTYPE_FLOAT64;
  s.m = out.shape[0];
  s.n = out.shape[1];
  s.k = a.shape[1];
  if (s.addmm) {
    s.beta = node.args[3].AsDouble();
    s.alpha = node.args[4].AsDouble();
    s.bias_is_row = g.values[node.args[0].values[0]].meta.shape.size() == 1;
  }
  return s;
}

}  // namespace

std::vector<FusedGroup> FindFusedGroups(const ResolvedGraph& g) {
  // Union-find over nodes: a fusible producer joins the group of its
  // consumers when they are all fusible and in one group (first the single
  // readers, then, to a fixed point, values read several times in a group).
  std::vector<int> parent(g.nodes.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::vector<bool> fusible(g.nodes.size());
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    fusible[n] = Fusible(g, g.nodes[n]);
    for (const BoundArg& a : g.nodes[n].args) {
      for (int v : a.values) readers[v].push_back(static_cast<int>(n));
    }
  }
  std::vector<bool> is_output(g.values.size(), false);
  for (int v : g.outputs) is_output[v] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t p = 0; p < g.nodes.size(); ++p) {
      const int v = g.nodes[p].results[0];
      if (!fusible[p] || is_output[v] || readers[v].empty() ||
          ReductionOf(g, g.nodes[p]).has_value()) {
        continue;  // A reduction ends its group.
      }
      const int group = find(readers[v][0]);
      bool one_group = true;
      for (int r : readers[v]) one_group &= fusible[r] && find(r) == group;
      if (one_group && find(static_cast<int>(p)) != group) {
        parent[find(static_cast<int>(p))] = group;
        changed = true;
      }
    }
  }
  std::map<int, FusedGroup> by_root;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (fusible[n]) by_root[find(static_cast<int>(n))].nodes.push_back(n);
  }
  std::vector<FusedGroup> groups;
  for (auto& [root, group] : by_root) {
    if (group.nodes.empty()) continue;
    group.outputs = {g.nodes[group.nodes.back()].results[0]};
    group.reduction = ReductionOf(g, g.nodes[group.nodes.back()]).has_value();
    std::vector<bool> inside(g.values.size(), false);
    for (int n : group.nodes) inside[g.nodes[n].results[0]] = true;
    for (int n : group.nodes) {
      for (const BoundArg& a : g.nodes[n].args) {
        if (a.kind != BoundArg::Kind::kTensor || inside[a.values[0]]) continue;
        bool seen = false;
        for (int v : group.inputs) seen |= v == a.values[0];
        if (!seen) group.inputs.push_back(a.values[0]);
      }
    }
    groups.push_back(std::move(group));
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ResolvedNode& node = g.nodes[n];
    if (!BlasMatmul(g, node)) continue;
    FusedGroup group;
    group.matmul = true;
    group.nodes = {static_cast<int>(n)};
    for (const BoundArg& a : node.args) {
      if (a.kind == BoundArg::Kind::kTensor)
        group.inputs.push_back(a.values[0]);
    }
    group.outputs = {node.results[0]};
    groups.push_back(std::move(group));
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ResolvedNode& node = g.nodes[n];
    int64_t rows, cols;
    for (bool backward : {false, true}) {
      if (!LastDimSoftmax(g, node, backward, &rows, &cols)) continue;
      FusedGroup group;
      (backward ? group.softmax_backward : group.softmax) = true;
      group.nodes = {static_cast<int>(n)};
      group.inputs = {node.args[0].values[0]};
      if (backward) group.inputs.push_back(node.args[1].values[0]);
      group.outputs = {node.results[0]};
      groups.push_back(std::move(group));
    }
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ResolvedNode& node = g.nodes[n];
    const bool forward = LayerNormOf(g, node).has_value();
    if (!forward && !LayerNormBackwardOf(g, node).has_value()) continue;
    FusedGroup group;
    (forward ? group.layer_norm : group.layer_norm_backward) = true;
    group.nodes = {static_cast<int>(n)};
    for (int k : forward ? std::vector<int>{0, 2, 3}
                         : std::vector<int>{0, 1, 3, 4, 5}) {
      if (!node.args[k].is_none())
        group.inputs.push_back(node.args[k].values[0]);
    }
    group.outputs = node.results;
    groups.push_back(std::move(group));
  }
  return groups;
}

namespace {

// `node`'s value for element i, as `const T t<value> = ...;`, reading its
// operands through `names` and adding its own.
void EmitNode(const ResolvedGraph& g, const ResolvedNode& node,
              std::map<int, std::string>& names, std::string& out) {
  const Formula& f = *FormulaOf(node);
  const char* r = CppTypeName(g.values[node.results[0]].meta.dtype);
  // Each operand converted as the runtime's kernel loads it.
  std::vector<std::string> types(3, r);
  if (f.operands == Formula::Operands::kAsDouble) {
    types = {"double", "double", "double"};
  } else if (f.operands == Formula::Operands::kWhere) {
    types[0] = "bool";
  }
  std::vector<std::string> operands;
  for (int k = 0; k < f.arity; ++k) {
    const BoundArg& a = node.args[k];
    // A number is converted as the kernel loads it.
    std::string v =
        a.is_number() ? CppLiteral(a.AsDouble()) : names[a.values[0]];
    operands.push_back(absl::StrCat("static_cast<", types[k], ">(", v, ")"));
  }
  std::string alpha = node.args.size() > 2 && node.args[2].is_number() &&
                              f.operands == Formula::Operands::kAsResult
                          ? CppLiteral(node.args[2].AsDouble())
                          : "1.0";
  const bool where = f.operands == Formula::Operands::kWhere;
  std::string params =
      where ? absl::StrCat("bool c, ", r, " a, ", r, " b")
            : absl::StrCat(types[0], " a, ", types[1], " b, double alpha");
  std::string args =
      where ? absl::StrJoin(operands, ", ")
            : absl::StrCat(operands[0], ", ",
                           f.arity > 1 ? operands[1] : std::string("0"), ", ",
                           alpha);
  std::string t = absl::StrCat("t", node.results[0]);
  names[node.results[0]] = t;
  absl::StrAppend(&out, "    const ", r, " ", t, " = [](", params,
                  ") { using C = ", r, "; ",
                  where ? "" : "(void)b; (void)alpha; ", "return ", f.expr,
                  "; }(", args, ");\n");
}

}  // namespace

std::string GenerateKernels(const ResolvedGraph& g,
                            const std::vector<FusedGroup>& groups) {
  auto name = [&](int n) {
    return g.graph->nodes(g.nodes[n].proto_index).name();
  };
  // Nodes that compute data outside the kernels (views cost nothing): what
  // the runtime's own kernels run, named for the reader.
  std::vector<bool> in_kernel(g.nodes.size(), false);
  for (const FusedGroup& group : groups) {
    for (int n : group.nodes) in_kernel[n] = true;
  }
  std::vector<bool> read(g.values.size(), false);
  for (int v : g.outputs) read[v] = true;
  for (const ResolvedNode& node : g.nodes) {
    for (const BoundArg& a : node.args) {
      for (int v : a.values) read[v] = true;
    }
  }
  std::vector<std::string> rest;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const OpInfo& op = *g.nodes[n].op;
    if (in_kernel[n] || op.effect == OpEffect::kView ||
        op.effect == OpEffect::kDetach || op.effect == OpEffect::kUnsafeView) {
      continue;
    }
    rest.push_back(absl::StrCat(name(n), " (", op.qualified_name, ")"));
  }
  std::string out = absl::StrCat(
      "// Generated by aotcache's native backend: one loop per group of\n"
      "// elementwise nodes.\n// Run by the runtime's kernels: ",
      rest.empty() ? "none" : absl::StrJoin(rest, ", "),
      "\n#include <cstdint>\n\n", KernelPreamble());
  for (size_t i = 0; i < groups.size(); ++i) {
    const FusedGroup& group = groups[i];
    std::vector<std::string> node_names;
    for (int n : group.nodes) node_names.push_back(name(n));
    absl::StrAppend(&out, "// ", absl::StrJoin(node_names, ", "), "\n");
    const int output = group.outputs[0];
    const char* c = CppTypeName(g.values[output].meta.dtype);
    absl::StrAppend(&out, "extern \"C\" void aotcache_kernel_", i,
                    "(const void* const* inputs, void* const* outputs, "
                    "int64_t n) {\n",
                    "  using C = ", c, ";\n");
    if (group.softmax || group.softmax_backward) {
      int64_t rows, cols;
      LastDimSoftmax(g, g.nodes[group.nodes[0]], group.softmax_backward, &rows,
                     &cols);
      absl::StrAppend(&out,
                      group.softmax ? SoftmaxSource(rows, cols)
                                    : SoftmaxBackwardSource(rows, cols),
                      "}\n\n");
      continue;
    }
    if (group.layer_norm) {
      absl::StrAppend(&out,
                      LayerNormSource(*LayerNormOf(g, g.nodes[group.nodes[0]])),
                      "}\n\n");
      continue;
    }
    if (group.layer_norm_backward) {
      const ResolvedNode& node = g.nodes[group.nodes[0]];
      LayerNormBackwardShape s = *LayerNormBackwardOf(g, node);
      // A result the mask leaves out is computed all the same if read.
      for (int r = 0; r < 3; ++r) s.mask[r] |= read[node.results[r]];
      absl::StrAppend(&out, LayerNormBackwardSource(s), "}\n\n");
      continue;
    }
    if (group.matmul) {
      absl::StrAppend(&out,
                      "  (void)n;\n  C* out = static_cast<C*>(outputs[0]);\n",
                      GemmSource(GemmOf(g, g.nodes[group.nodes[0]])), "}\n\n");
      continue;
    }
    std::optional<Reduction> reduction;
    if (group.reduction)
      reduction = ReductionOf(g, g.nodes[group.nodes.back()]);
    // The elements the loop runs over: the output's, or the reduced input's.
    const int64_t loop_numel = reduction.has_value()
                                   ? g.values[reduction->input].meta.numel()
                                   : g.values[output].meta.numel();
    std::map<int, std::string> names;
    for (size_t k = 0; k < group.inputs.size(); ++k) {
      // Scalar-like operands are read at their one element (an expanded
      // scalar has the loop's size but one element of memory).
      const Meta& m = g.values[group.inputs[k]].meta;
      const bool scalar =
          ScalarLike(m) && !(m.IsContiguous() && m.numel() == loop_numel);
      names[group.inputs[k]] = absl::StrCat("in", k, scalar ? "[0]" : "[i]");
      const char* t = CppTypeName(g.values[group.inputs[k]].meta.dtype);
      absl::StrAppend(&out, "  const ", t, "* __restrict in", k,
                      " = static_cast<const ", t, "*>(inputs[", k, "]);\n");
    }
    absl::StrAppend(&out,
                    "  C* __restrict out = static_cast<C*>(outputs[0]);\n");
    std::string body;  // The element computations, for index i.
    for (int n : group.nodes) {
      if (reduction.has_value() && n == group.nodes.back()) break;
      EmitNode(g, g.nodes[n], names, body);
    }
    if (!reduction.has_value()) {
      absl::StrAppend(&out,
                      "#pragma omp simd\n  for (int64_t i = 0; i < n; ++i) {\n",
                      body, "    out[i] = ", names[output], ";\n  }\n}\n\n");
      continue;
    }
    const Reduction& r = *reduction;
    const std::string value =
        absl::StrCat("static_cast<double>(", names[r.input], ")");
    const int64_t count = r.inner ? r.cols : r.rows;
    const std::string scale =
        r.mean ? absl::StrCat(" / static_cast<double>(", count, ")") : "";
    if (r.inner) {
      absl::StrAppend(
          &out, "  (void)n;\n  for (int64_t r = 0; r < ", r.rows, "; ++r) {\n",
          "    double acc = 0;\n#pragma omp simd reduction(+ : acc)\n",
          "    for (int64_t c = 0; c < ", r.cols, "; ++c) {\n",
          "    const int64_t i = r * ", r.cols, " + c;\n", body,
          "    acc += ", value, ";\n    }\n", "    out[r] = static_cast<C>(acc",
          scale, ");\n  }\n}\n\n");
    } else {
      absl::StrAppend(&out, "  (void)n;\n  double* acc = new double[", r.cols,
                      "]();\n", "  for (int64_t r = 0; r < ", r.rows,
                      "; ++r) {\n#pragma omp simd\n",
                      "    for (int64_t c = 0; c < ", r.cols, "; ++c) {\n",
                      "    const int64_t i = r * ", r.cols, " + c;\n", body,
                      "    acc[c] += ", value, ";\n    }\n  }\n",
                      "  for (int64_t c = 0; c < ", r.cols,
                      "; ++c) out[c] = static_cast<C>(acc[c]", scale,
                      ");\n  delete[] acc;\n}\n\n");
    }
  }
  return out;
}

}  // namespace aotcache
