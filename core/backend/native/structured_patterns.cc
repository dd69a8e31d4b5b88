#include "core/backend/native/structured_patterns.h"

#include <algorithm>

#include "core/backend/native/kernel_patterns.h"
#include "core/graph/scatter_view.h"

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

// A layer norm's rows and columns: x floating and plain, `normalized` its
// trailing dims, of at least one element.
bool LayerNormRows(const Meta& x, const std::vector<int64_t>& normalized,
                   int64_t* rows, int64_t* cols) {
  if (!IsFloating(x.dtype) || !Plain(x, x.dtype) ||
      normalized.size() > x.shape.size() ||
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

// Results r of `node`: plain in `dtype`, of numel[r] elements.
bool PlainResults(const ResolvedGraph& g, const ResolvedNode& node, DType dtype,
                  const int64_t (&numel)[3]) {
  for (int r = 0; r < 3; ++r) {
    const Meta& m = g.values[node.results[r]].meta;
    if (!Plain(m, dtype) || m.numel() != numel[r]) return false;
  }
  return true;
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
  if (!LayerNormRows(x, normalized, &s.rows, &s.cols)) return std::nullopt;
  s.eps = node.args[4].AsDouble();
  for (int k : {2, 3}) {
    const BoundArg& a = node.args[k];
    if (a.is_none()) continue;
    if (a.kind != BoundArg::Kind::kTensor) return std::nullopt;
    const Meta& m = g.values[a.values[0]].meta;
    if (!Plain(m, x.dtype) || m.shape != normalized) return std::nullopt;
    (k == 2 ? s.weight : s.bias) = true;
  }
  if (!PlainResults(g, node, x.dtype, {x.numel(), s.rows, s.rows})) {
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
      !Plain(meta(0), x.dtype) || meta(0).shape != x.shape) {
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
  if (!PlainResults(g, node, x.dtype, {x.numel(), s.cols, s.cols})) {
    return std::nullopt;
  }
  return s;
}

std::optional<ScatterShape> ScatterOf(const ResolvedGraph& g,
                                      const ResolvedNode& node) {
  const std::string& op = node.op->qualified_name;
  if (op != "aten.select_scatter.default" &&
      op != "aten.slice_scatter.default" &&
      op != "aten.as_strided_scatter.default") {
    return std::nullopt;
  }
  if (node.args[0].kind != BoundArg::Kind::kTensor ||
      node.args[1].kind != BoundArg::Kind::kTensor) {
    return std::nullopt;
  }
  const Meta& out = g.values[node.results[0]].meta;
  const Meta& self = g.values[node.args[0].values[0]].meta;
  const Meta& src = g.values[node.args[1].values[0]].meta;
  if (!IsFloating(out.dtype) || !Plain(out, out.dtype) ||
      self.dtype != out.dtype || self.shape != out.shape ||
      (!IsFloating(src.dtype) && src.dtype != v1::DTYPE_BOOL)) {
    return std::nullopt;
  }
  // The view of the (contiguous) result, as the runtime's kernels take it.
  std::optional<Meta> found = ScatterView(op, node.args, out);
  if (!found.has_value()) return std::nullopt;  // The runtime's kernel says.
  const Meta& view = *found;
  if (src.dim() > view.dim()) return std::nullopt;
  const size_t lead = view.shape.size() - src.shape.size();
  ScatterShape s;
  s.src_strides.assign(view.shape.size(), 0);
  for (size_t d = 0; d < src.shape.size(); ++d) {
    if (src.shape[d] != view.shape[lead + d] && src.shape[d] != 1) {
      return std::nullopt;
    }
    if (src.shape[d] != 1) s.src_strides[lead + d] = src.stride[d];
  }
  s.shape = out.shape;
  s.self_strides = self.stride;
  s.view_shape = view.shape;
  s.view_strides = view.stride;
  s.view_offset = view.offset;
  s.src_dtype = src.dtype;
  return s;
}

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

std::optional<ConcatShape> ConcatOf(const ResolvedGraph& g,
                                    const ResolvedNode& node) {
  if (node.op->qualified_name != "aten.cat.default" ||
      node.args[0].kind != BoundArg::Kind::kTensorList) {
    return std::nullopt;
  }
  const Meta& out = g.values[node.results[0]].meta;
  if (!Plain(out, out.dtype) || out.dim() == 0) return std::nullopt;
  int64_t dim =
      node.args.size() > 1 && node.args[1].kind == BoundArg::Kind::kInt
          ? node.args[1].i
          : 0;
  if (dim < 0) dim += out.dim();
  if (dim < 0 || dim >= out.dim()) return std::nullopt;
  ConcatShape s;
  int64_t inner = 1;
  for (int64_t d = 0; d < out.dim(); ++d) {
    (d < dim ? s.outer : d > dim ? inner : s.row) *= out.shape[d];
  }
  s.row *= inner;
  int64_t total = 0;
  for (int v : node.args[0].values) {
    const Meta& part = g.values[v].meta;
    if (!Plain(part, out.dtype)) return std::nullopt;
    const int64_t width =
        part.numel() == 0 ? 0 : part.shape[dim] * inner;  // [0]: skipped.
    if (part.numel() != 0 &&
        (part.dim() != out.dim() || part.numel() != s.outer * width)) {
      return std::nullopt;
    }
    s.widths.push_back(width);
    total += width;
  }
  if (out.numel() != 0 && total != s.row) return std::nullopt;
  return s;
}

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

}  // namespace aotcache
