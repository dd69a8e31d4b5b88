#include "core/backend/native/kernel_patterns.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "core/graph/elementwise_layout.h"

namespace aotcache {

const Formula* FormulaOf(const ResolvedNode& node) {
  const std::string& op = node.op->qualified_name;
  // gelu's and gelu_backward's formula follows their `approximate`.
  const int approximate = op == "aten.gelu.default"            ? 1
                          : op == "aten.gelu_backward.default" ? 2
                                                               : -1;
  if (approximate > 0 && node.args[approximate].s == "tanh") {
    return FindFormula(op + "(tanh)");
  }
  return FindFormula(op);
}

// An operand the elementwise loop reads at i, the output's memory index: of
// the output's shape and strides, dense, from its storage's start.
bool Aligned(const Meta& m, const Meta& out) {
  return m.shape == out.shape && m.stride == out.stride && m.offset == 0 &&
         NonOverlappingAndDense(m);
}

// m's strides over `shape`, 0 along broadcast dims.
std::vector<int64_t> StridesOver(const Meta& m,
                                 const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 0);
  const size_t lead = shape.size() - m.shape.size();
  for (size_t d = 0; d < m.shape.size(); ++d) {
    if (m.shape[d] != 1) strides[lead + d] = m.stride[d];
  }
  return strides;
}

bool Plain(const Meta& m, DType dtype) {
  return m.dtype == dtype && m.IsContiguous() && m.offset == 0;
}

bool Blocks(const Meta& in, const std::vector<bool>& reduced, int64_t* pre,
            int64_t* outer, int64_t* inner_reduced, int64_t* inner) {
  int64_t d = 0;
  for (; d < in.dim() && reduced[d]; ++d) *pre *= in.shape[d];
  for (; d < in.dim() && !reduced[d]; ++d) *outer *= in.shape[d];
  for (; d < in.dim() && reduced[d]; ++d) *inner_reduced *= in.shape[d];
  for (; d < in.dim() && !reduced[d]; ++d) *inner *= in.shape[d];
  return d == in.dim();
}

bool ReducedDims(const Meta& in, const BoundArg& dims,
                 std::vector<bool>* reduced) {
  reduced->assign(in.dim(), true);
  if (dims.is_none() || dims.ints.empty()) return true;
  reduced->assign(in.dim(), false);
  for (int64_t d : dims.ints) {
    int64_t w = d < 0 ? d + std::max<int64_t>(in.dim(), 1) : d;
    if (w < 0 || w >= in.dim()) return false;
    (*reduced)[w] = true;
  }
  return true;
}

bool ScalarLike(const Meta& m) {
  if (m.numel() == 1) return true;
  for (int64_t s : m.stride) {
    if (s != 0) return false;
  }
  return true;
}

namespace {

// The meta of a value: the graph's, or one a caller supposes.
using MetaOf = absl::FunctionRef<const Meta&(int value)>;

auto GraphMetas(const ResolvedGraph& g) {
  return [&g](int v) -> const Meta& { return g.values[v].meta; };
}

bool IsReductionOp(const std::string& op) {
  return op == "aten.sum.default" || op == "aten.mean.default" ||
         op == "aten.sum.dim_IntList" || op == "aten.mean.dim" ||
         op == "aten.amax.default";
}

std::optional<Reduction> ReductionWith(const ResolvedNode& node, MetaOf meta) {
  const std::string& op = node.op->qualified_name;
  if (!IsReductionOp(op)) return std::nullopt;
  const bool all = op == "aten.sum.default" || op == "aten.mean.default";
  if (node.args[0].kind != BoundArg::Kind::kTensor) return std::nullopt;
  // A dtype argument (sum's and mean's last) must be unset.
  if (!node.args.back().is_none() && node.args.size() > (all ? 1u : 3u)) {
    return std::nullopt;
  }
  Reduction r;
  r.mean = op.rfind("aten.mean", 0) == 0;
  r.max = op == "aten.amax.default";
  r.input = node.args[0].values[0];
  const Meta& in = meta(r.input);
  const Meta& out = meta(node.results[0]);
  if (!IsFloating(in.dtype) || out.dtype != in.dtype || !in.IsContiguous() ||
      in.offset != 0 || !out.IsContiguous() || out.offset != 0) {
    return std::nullopt;
  }
  std::vector<bool> reduced(in.dim(), true);
  if (!all && !ReducedDims(in, node.args[1], &reduced)) return std::nullopt;
  if (!Blocks(in, reduced, &r.pre, &r.outer, &r.reduced, &r.inner)) {
    return std::nullopt;
  }
  if (r.reduced == 1) {  // At most one block, leading: [reduced, inner].
    r.inner *= r.outer;
    r.outer = 1;
    std::swap(r.pre, r.reduced);
  }
  return r;
}

// A matrix operand BLAS can read: 2-D, or 3-D as a batch of matrices (any
// batch stride), each row-major (stride 1 across columns) or column-major
// (transposed). Its transpose flag, leading dimension and batch stride.
bool BlasOperand(const Meta& m, bool* transposed, int64_t* ld,
                 int64_t* batch_stride = nullptr) {
  const size_t d = m.shape.size();
  if (d != 2 && d != 3) return false;
  const int64_t rows = m.shape[d - 2], cols = m.shape[d - 1];
  const int64_t row_stride = m.stride[d - 2], col_stride = m.stride[d - 1];
  if (batch_stride != nullptr) *batch_stride = d == 3 ? m.stride[0] : 0;
  if (col_stride == 1 && row_stride >= std::max<int64_t>(cols, 1)) {
    *transposed = false;
    *ld = row_stride;
    return true;
  }
  if (row_stride == 1 && col_stride >= std::max<int64_t>(rows, 1)) {
    *transposed = true;
    *ld = col_stride;
    return true;
  }
  return false;
}

bool BlasMatmulWith(const ResolvedNode& node, MetaOf meta) {
  const std::string& op = node.op->qualified_name;
  const bool addmm = op == "aten.addmm.default";
  const bool bmm = op == "aten.bmm.default";
  if (op != "aten.mm.default" && !addmm && !bmm) return false;
  const Meta& out = meta(node.results[0]);
  if (!IsFloating(out.dtype) || !out.IsContiguous() || out.offset != 0 ||
      out.dim() != (bmm ? 3 : 2)) {
    return false;
  }
  const int first = addmm ? 1 : 0;
  for (int k = 0; k < (addmm ? 3 : 2); ++k) {
    if (node.args[k].kind != BoundArg::Kind::kTensor) return false;
    const Meta& m = meta(node.args[k].values[0]);
    if (m.dtype != out.dtype) return false;
    bool t;
    int64_t ld;
    if (k >= first && (m.dim() != out.dim() || !BlasOperand(m, &t, &ld))) {
      return false;
    }
    if (k < first) {  // The bias.
      bool row = m.shape.size() == 1 && m.shape[0] == out.shape[1];
      if ((!row && m.shape != out.shape) || !m.IsContiguous()) return false;
    }
  }
  return !addmm || (node.args[3].is_number() && node.args[4].is_number());
}

}  // namespace

std::optional<Reduction> ReductionOf(const ResolvedGraph& g,
                                     const ResolvedNode& node) {
  return ReductionWith(node, GraphMetas(g));
}

bool BlasMatmul(const ResolvedGraph& g, const ResolvedNode& node) {
  return BlasMatmulWith(node, GraphMetas(g));
}

std::vector<int> ValuesToMakeContiguous(const ResolvedGraph& g,
                                        const ResolvedNode& node) {
  const std::string& op = node.op->qualified_name;
  const bool matmul = op == "aten.mm.default" || op == "aten.addmm.default" ||
                      op == "aten.bmm.default";
  if (!matmul && !IsReductionOp(op)) return {};
  if (matmul ? BlasMatmul(g, node) : ReductionOf(g, node).has_value()) {
    return {};
  }
  // The tensor operands in a layout the kernel may not read (a matrix BLAS
  // reads as it is stays), supposed contiguous.
  std::vector<int> values;
  std::vector<Meta> supposed;
  for (const BoundArg& a : node.args) {
    if (a.kind != BoundArg::Kind::kTensor) continue;
    const Meta& m = g.values[a.values[0]].meta;
    bool transposed;
    int64_t ld;
    if ((m.IsContiguous() && m.offset == 0) ||
        (matmul && BlasOperand(m, &transposed, &ld)) ||
        std::find(values.begin(), values.end(), a.values[0]) != values.end()) {
      continue;
    }
    values.push_back(a.values[0]);
    supposed.push_back(ContiguousMeta(m.shape, m.dtype));
  }
  auto meta = [&](int v) -> const Meta& {
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] == v) return supposed[i];
    }
    return g.values[v].meta;
  };
  const bool taken =
      !values.empty() && (matmul ? BlasMatmulWith(node, meta)
                                 : ReductionWith(node, meta).has_value());
  return taken ? values : std::vector<int>{};
}

GemmShape GemmOf(const ResolvedGraph& g, const ResolvedNode& node) {
  GemmShape s;
  s.addmm = node.op->qualified_name == "aten.addmm.default";
  const Meta& out = g.values[node.results[0]].meta;
  const Meta& a = g.values[node.args[s.addmm ? 1 : 0].values[0]].meta;
  const Meta& b = g.values[node.args[s.addmm ? 2 : 1].values[0]].meta;
  BlasOperand(a, &s.transpose_a, &s.lda, &s.batch_stride_a);
  BlasOperand(b, &s.transpose_b, &s.ldb, &s.batch_stride_b);
  s.f64 = out.dtype == v1::DTYPE_FLOAT64;
  const size_t d = out.shape.size();
  s.batch = d == 3 ? out.shape[0] : 1;
  s.m = out.shape[d - 2];
  s.n = out.shape[d - 1];
  s.k = a.shape[d - 1];
  if (s.addmm) {
    s.beta = node.args[3].AsDouble();
    s.alpha = node.args[4].AsDouble();
    s.bias_is_row = g.values[node.args[0].values[0]].meta.shape.size() == 1;
  }
  return s;
}

}  // namespace aotcache
