#include "core/backend/native/shape_kernels.h"

#include "absl/strings/str_cat.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/kernel_source.h"
#include "core/graph/scatter_view.h"

namespace aotcache {

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

namespace {

// Loops over `shape` (one per dim, innermost last) running `statement`,
// where `dst` and `src` are the index expressions of strides `dst_strides`
// and `src_strides` (plus `dst_offset`).
std::string StridedCopy(const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& dst_strides,
                        int64_t dst_offset,
                        const std::vector<int64_t>& src_strides,
                        const std::string& dst, const std::string& src) {
  std::string out, dst_index = absl::StrCat(dst_offset), src_index = "0";
  for (size_t d = 0; d < shape.size(); ++d) {
    absl::StrAppend(&out, std::string(2 * d + 2, ' '), "for (int64_t i", d,
                    " = 0; i", d, " < ", shape[d], "; ++i", d, ")\n");
    absl::StrAppend(&dst_index, " + i", d, " * ", dst_strides[d]);
    absl::StrAppend(&src_index, " + i", d, " * ", src_strides[d]);
  }
  absl::StrAppend(&out, std::string(2 * shape.size() + 2, ' '), dst, "[",
                  dst_index, "] = static_cast<C>(", src, "[", src_index,
                  "]);\n");
  return out;
}

}  // namespace

std::string ScatterSource(const ScatterShape& s) {
  std::vector<int64_t> contiguous(s.shape.size(), 1);
  for (size_t d = s.shape.size(); d-- > 1;) {
    contiguous[d - 1] = contiguous[d] * s.shape[d];
  }
  return absl::StrCat(
      "  (void)n;\n  const C* __restrict self = static_cast<const "
      "C*>(inputs[0]);\n  const ",
      CppTypeName(s.src_dtype), "* __restrict src = static_cast<const ",
      CppTypeName(s.src_dtype),
      "*>(inputs[1]);\n  C* __restrict out = static_cast<C*>(outputs[0]);\n",
      StridedCopy(s.shape, contiguous, 0, s.self_strides, "out", "self"),
      StridedCopy(s.view_shape, s.view_strides, s.view_offset, s.src_strides,
                  "out", "src"));
}

std::string ConcatSource(const ConcatShape& s) {
  std::string out =
      "  (void)n;\n  C* __restrict out = static_cast<C*>(outputs[0]);\n";
  int64_t at = 0;
  for (size_t k = 0; k < s.widths.size(); ++k) {
    const int64_t w = s.widths[k];
    if (w > 0) {
      absl::StrAppend(&out, "  for (int64_t o = 0; o < ", s.outer,
                      "; ++o) __builtin_memcpy(out + o * ", s.row, " + ", at,
                      ", static_cast<const C*>(inputs[", k, "]) + o * ", w,
                      ", ", w, " * sizeof(C));\n");
    }
    at += w;
  }
  return out;
}

}  // namespace aotcache
