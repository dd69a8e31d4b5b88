#include "core/backend/native/conv_kernels.h"

#include "absl/strings/str_cat.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/staged_operands.h"
#include "core/graph/conv_inference.h"

namespace aotcache {
namespace {

constexpr int64_t kMaxBuffer = int64_t{1} << 28;

const Meta& TensorMeta(const ResolvedGraph& g, const ResolvedNode& node,
                       int k) {
  return g.values[node.args[k].values[0]].meta;
}

// Whether the kernel takes `m` (input `index` of the kernel, or result
// `index` of the node) as an operand of `dtype`, staged if strided.
bool Layout(const Meta& m, DType dtype, bool result, int index, ConvShape* s) {
  return m.dtype == dtype && StageIfStrided(m, result, index, &s->staged);
}

// The geometry of arguments x (index `x`), weight and the stride,
// padding, dilation, transposed, groups that follow `first`.
bool Geometry(const ResolvedGraph& g, const ResolvedNode& node, int x,
              int first, ConvShape* s) {
  for (int k : {x, x + 1}) {
    if (node.args[k].kind != BoundArg::Kind::kTensor) return false;
  }
  const Meta& input = TensorMeta(g, node, x);
  const Meta& weight = TensorMeta(g, node, x + 1);
  if (!IsFloating(input.dtype) || !Layout(input, input.dtype, false, x, s) ||
      !Layout(weight, input.dtype, false, x + 1, s)) {
    return false;
  }
  absl::StatusOr<ConvGeometry> geo =
      ConvGeometryOf(input.shape, weight.shape, node.args[first].ints,
                     node.args[first + 1].ints, node.args[first + 2].ints,
                     node.args[first + 3].b, node.args[first + 4].ints,
                     node.args[first + 5].i);
  if (!geo.ok() || geo->in_size.size() > 3) return false;
  s->f64 = input.dtype == v1::DTYPE_FLOAT64;
  s->transposed = geo->transposed;
  s->batch = geo->batch;
  s->channels = geo->in_channels;
  s->out_channels = geo->out_channels;
  s->groups = geo->groups;
  size_t lead = 3 - geo->in_size.size();
  for (size_t d = lead; d < 3; ++d) {
    s->in[d] = geo->in_size[d - lead];
    s->kernel[d] = geo->kernel[d - lead];
    s->out[d] = geo->out_size[d - lead];
    s->stride[d] = geo->stride[d - lead];
    s->pad[d] = geo->padding[d - lead];
    s->dilation[d] = geo->dilation[d - lead];
  }
  if (s->batch <= 0 || s->channels <= 0 || s->out_channels <= 0) return false;
  // The buffers of one group, [rows, columns] and [og, columns], whose
  // sizes BLAS takes as int: past kMaxBuffer elements the runtime's kernel
  // (one image at a time, with a bound of its own) runs the node instead.
  int64_t rows = s->channels / s->groups, columns = s->batch;
  for (int d = 0; d < 3; ++d) {
    if (__builtin_mul_overflow(rows, s->kernel[d], &rows) ||
        __builtin_mul_overflow(columns, s->out[d], &columns)) {
      return false;
    }
  }
  int64_t cols, outs;
  return !__builtin_mul_overflow(rows, columns, &cols) && cols <= kMaxBuffer &&
         !__builtin_mul_overflow(s->out_channels, columns, &outs) &&
         outs <= kMaxBuffer;
}

struct Sizes {
  int64_t cg, og, rows, area, in_area;
  int64_t columns;  // Of the im2col matrix: every image's output positions.
  bool direct;      // 1x1, stride 1, no padding: im2col is a copy.
  explicit Sizes(const ConvShape& s)
      : cg(s.channels / s.groups),
        og(s.out_channels / s.groups),
        rows(cg * s.kernel[0] * s.kernel[1] * s.kernel[2]),
        area(s.out[0] * s.out[1] * s.out[2]),
        in_area(s.in[0] * s.in[1] * s.in[2]),
        columns(s.batch * area),
        direct(true) {
    for (int d = 0; d < 3; ++d) {
      direct &= s.kernel[d] == 1 && s.stride[d] == 1 && s.pad[d] == 0;
    }
  }
};

// Loops over one group's im2col matrix `cols` [rows, columns], image b's
// columns from b * area, and the image elements they read, for every
// image b; `body` runs with `c` (the column entry's index) and `i` (the
// image element's, within `image`, group grp of image b). With `pad` (the
// im2col), entries whose window lies in the padding get `pad` instead, so
// every entry is written; without, they are skipped (padding reads
// nothing). `image_base` is the group's image of image b.
std::string ImageLoops(const ConvShape& s, const Sizes& z,
                       const std::string& image_base, const std::string& body,
                       const std::string& pad = "") {
  std::string out =
      absl::StrCat("    for (int64_t b = 0; b < ", s.batch, "; ++b) {\n",
                   "    auto* image = ", image_base, ";\n",
                   "    const int64_t base = b * ", z.area, ";\n");
  if (z.direct) {
    return absl::StrCat(out, "    for (int64_t ch = 0; ch < ", z.cg,
                        "; ++ch)\n", "      for (int64_t p = 0; p < ", z.area,
                        "; ++p) {\n", "        const int64_t c = ch * ",
                        z.columns, " + base + p;\n",
                        "        const int64_t i = ch * ", z.area,
                        " + p;\n        ", body, "\n      }\n    }\n");
  }
  absl::StrAppend(&out, "    for (int64_t ch = 0; ch < ", z.cg, "; ++ch)\n",
                  "    for (int64_t ka = 0; ka < ", s.kernel[0], "; ++ka)\n",
                  "    for (int64_t kb = 0; kb < ", s.kernel[1], "; ++kb)\n",
                  "    for (int64_t ke = 0; ke < ", s.kernel[2], "; ++ke) {\n",
                  "      const int64_t row = ((ch * ", s.kernel[0], " + ka) * ",
                  s.kernel[1], " + kb) * ", s.kernel[2], " + ke;\n");
  // One loop per spatial dim: output position o?, image position i?, and
  // with `pad` whether the window lies inside the image so far (in?).
  const char* dims[] = {"a", "b", "e"};
  std::string indent = "      ";
  std::string inside = "true";
  for (int d = 0; d < 3; ++d) {
    const char* x = dims[d];
    absl::StrAppend(&out, indent, "for (int64_t o", x, " = 0; o", x, " < ",
                    s.out[d], "; ++o", x, ") {\n", indent, "  const int64_t i",
                    x, " = o", x, " * ", s.stride[d], " - ", s.pad[d], " + k",
                    x, " * ", s.dilation[d], ";\n");
    const std::string in_range =
        absl::StrCat("i", x, " >= 0 && i", x, " < ", s.in[d]);
    if (pad.empty()) {
      absl::StrAppend(&out, indent, "  if (!(", in_range, ")) continue;\n");
    } else {
      absl::StrAppend(&out, indent, "  const bool in", x, " = ", inside, " && ",
                      in_range, ";\n");
      inside = absl::StrCat("in", x);
    }
    indent += "  ";
  }
  absl::StrAppend(&out, indent, "const int64_t c = row * ", z.columns,
                  " + base + (oa * ", s.out[1], " + ob) * ", s.out[2],
                  " + oe;\n", indent, "const int64_t i = ((ch * ", s.in[0],
                  " + ia) * ", s.in[1], " + ib) * ", s.in[2], " + ie;\n");
  if (pad.empty()) {
    absl::StrAppend(&out, indent, body, "\n");
  } else {
    absl::StrAppend(&out, indent, "if (ine) ", body, " else ", pad, "\n");
  }
  for (int d = 2; d >= 0; --d) {
    indent.resize(indent.size() - 2);
    absl::StrAppend(&out, indent, "}\n");
  }
  return absl::StrCat(out, "    }\n    }\n");
}

// cblas_?gemm, row-major.
std::string Gemm(const ConvShape& s, bool trans_a, bool trans_b, int64_t m,
                 int64_t n, int64_t k, const std::string& a, int64_t lda,
                 const std::string& b, int64_t ldb, const std::string& c,
                 int64_t ldc) {
  return absl::StrCat("    ", s.f64 ? "cblas_dgemm" : "cblas_sgemm", "(101, ",
                      trans_a ? 112 : 111, ", ", trans_b ? 112 : 111, ", ", m,
                      ", ", n, ", ", k, ", 1.0, ", a, ", ", lda, ", ", b, ", ",
                      ldb, ", 0.0, ", c, ", ", ldc, ");\n");
}

// The thread's buffers of one group (aotcache_scratch, kernel_source.h):
// the im2col matrix `cols` [rows, columns] and `outs` [og, columns], the
// group's output (or its gradient) with every image's positions side by
// side.
std::string Scratch(const Sizes& z) {
  return absl::StrCat(
      "  C* __restrict cols = static_cast<C*>(aotcache_scratch(0, ",
      z.rows * z.columns, " * sizeof(C)));\n",
      "  C* __restrict outs = static_cast<C*>(aotcache_scratch(1, ",
      z.og * z.columns, " * sizeof(C)));\n");
}

// `count` elements from `at` set to `value`.
std::string Fill(const std::string& at, int64_t count,
                 const std::string& value) {
  return absl::StrCat("    for (int64_t f = 0; f < ", count, "; ++f) (", at,
                      ")[f] = ", value, ";\n");
}

// Loops over the group's output positions of every image: `body` with
// `at`, the position in y (or its gradient), and `col` in outs.
std::string OutputLoops(const ConvShape& s, const Sizes& z,
                        const std::string& body) {
  return absl::StrCat("    for (int64_t b = 0; b < ", s.batch, "; ++b)\n",
                      "    for (int64_t o = 0; o < ", z.og, "; ++o)\n",
                      "    for (int64_t p = 0; p < ", z.area, "; ++p) {\n",
                      "      const int64_t at = (b * ", s.out_channels,
                      " + grp * ", z.og, " + o) * ", z.area, " + p;\n",
                      "      const int64_t col = o * ", z.columns, " + b * ",
                      z.area, " + p;\n      ", body, "\n    }\n");
}

// The group's image of image b, in tensor `t`.
std::string GroupImage(const std::string& t, const ConvShape& s,
                       const Sizes& z) {
  return absl::StrCat(t, " + (b * ", s.channels, " + grp * ", z.cg, ") * ",
                      z.in_area);
}

// The im2col of the group's image of every image (of tensor x) into cols:
// every entry written, zeros where the window lies in the padding.
std::string Im2col(const ConvShape& s, const Sizes& z,
                   const std::string& x = "x") {
  return ImageLoops(s, z, GroupImage(x, s, z), "cols[c] = image[i];",
                    "cols[c] = C(0);");
}

// The bias gradient (or a transposed convolution's, from the image-shaped
// gradient `gy` with `channels`), summed in double as the runtime's kernel.
std::string BiasGradient(const std::string& gy, int64_t batch, int64_t channels,
                         int64_t area) {
  return absl::StrCat("  for (int64_t o = 0; o < ", channels, "; ++o) {\n",
                      "    double sum = 0;\n", "    for (int64_t b = 0; b < ",
                      batch, "; ++b)\n", "      for (int64_t i = 0; i < ", area,
                      "; ++i)\n", "        sum += static_cast<double>(", gy,
                      "[(b * ", channels, " + o) * ", area, " + i]);\n",
                      "    gb[o] = static_cast<C>(sum);\n", "  }\n");
}

// Per group: im2col of every image, one GEMM, then the outputs (and bias)
// put in place.
std::string ForwardSource(const ConvShape& s, const Sizes& z) {
  std::string out = absl::StrCat(
      "  (void)n;\n  const C* x = static_cast<const C*>(inputs[0]);\n",
      "  const C* w = static_cast<const C*>(inputs[1]);\n",
      s.bias ? "  const C* bias = static_cast<const C*>(inputs[2]);\n" : "",
      "  C* y = static_cast<C*>(outputs[0]);\n", Scratch(z),
      "  for (int64_t grp = 0; grp < ", s.groups, "; ++grp) {\n");
  absl::StrAppend(
      &out, Im2col(s, z),
      Gemm(s, false, false, z.og, z.columns, z.rows,
           absl::StrCat("w + grp * ", z.og * z.rows), z.rows, "cols", z.columns,
           "outs", z.columns),
      OutputLoops(s, z,
                  s.bias ? absl::StrCat("y[at] = outs[col] + bias[grp * ", z.og,
                                        " + o];")
                         : "y[at] = outs[col];"),
      "  }\n");
  return out;
}

// Per group: the output's gradient gathered into outs, then one GEMM for the
// weight's gradient (with the im2col of every image) and one for the
// input's (then col2im into each image).
std::string BackwardSource(const ConvShape& s, const Sizes& z) {
  std::string out = absl::StrCat(
      "  (void)n;\n  const C* gy = static_cast<const C*>(inputs[0]);\n",
      "  const C* x = static_cast<const C*>(inputs[1]);\n",
      "  const C* w = static_cast<const C*>(inputs[2]);\n",
      "  C* gx = static_cast<C*>(outputs[0]);\n",
      "  C* gw = static_cast<C*>(outputs[1]);\n",
      "  C* gb = static_cast<C*>(outputs[2]);\n",
      "  (void)gx; (void)gw; (void)gb; (void)x; (void)w;\n", Scratch(z));
  // A gradient the mask leaves out is zeros, as the runtime's kernel's.
  const char* names[] = {"gx", "gw", "gb"};
  const int64_t sizes[] = {s.batch * s.channels * z.in_area,
                           s.out_channels * z.rows, s.out_channels};
  for (int r = 0; r < 3; ++r) {
    if (!s.mask[r]) absl::StrAppend(&out, Fill(names[r], sizes[r], "C(0)"));
  }
  if (s.mask[2]) {
    absl::StrAppend(&out, BiasGradient("gy", s.batch, s.out_channels, z.area));
  }
  if (!s.mask[0] && !s.mask[1]) return out;
  const std::string weights = absl::StrCat("w + grp * ", z.og * z.rows);
  absl::StrAppend(&out, "  for (int64_t grp = 0; grp < ", s.groups,
                  "; ++grp) {\n", OutputLoops(s, z, "outs[col] = gy[at];"));
  if (s.mask[1]) {  // gw = outs [og, columns] @ cols^T [columns, rows]
    absl::StrAppend(
        &out, Im2col(s, z),
        Gemm(s, false, true, z.og, z.rows, z.columns, "outs", z.columns, "cols",
             z.columns, absl::StrCat("gw + grp * ", z.og * z.rows), z.rows));
  }
  if (s.mask[0]) {  // cols = w^T [rows, og] @ outs [og, columns]; col2im
    absl::StrAppend(
        &out,
        Gemm(s, true, false, z.rows, z.columns, z.og, weights, z.rows, "outs",
             z.columns, "cols", z.columns),
        "    for (int64_t b = 0; b < ", s.batch, "; ++b)\n",
        Fill(GroupImage("gx", s, z), z.cg * z.in_area, "C(0)"),
        ImageLoops(s, z, GroupImage("gx", s, z), "image[i] += cols[c];"));
  }
  absl::StrAppend(&out, "  }\n");
  return out;
}

// A transposed convolution: its dual's input gradient. Per group: the
// input gathered into outs, cols = w^T [rows, og] @ outs, col2im into y
// (which starts as the bias).
std::string TransposedForwardSource(const ConvShape& s, const Sizes& z) {
  std::string out = absl::StrCat(
      "  (void)n;\n  const C* dy = static_cast<const C*>(inputs[0]);\n",
      "  const C* w = static_cast<const C*>(inputs[1]);\n",
      s.bias ? "  const C* bias = static_cast<const C*>(inputs[2]);\n" : "",
      "  C* y = static_cast<C*>(outputs[0]);\n", Scratch(z),
      "  for (int64_t grp = 0; grp < ", s.groups, "; ++grp) {\n",
      OutputLoops(s, z, "outs[col] = dy[at];"),
      Gemm(s, true, false, z.rows, z.columns, z.og,
           absl::StrCat("w + grp * ", z.og * z.rows), z.rows, "outs", z.columns,
           "cols", z.columns),
      "    for (int64_t b = 0; b < ", s.batch, "; ++b)\n",
      "    for (int64_t ch = 0; ch < ", z.cg, "; ++ch)\n",
      Fill(absl::StrCat(GroupImage("y", s, z), " + ch * ", z.in_area),
           z.in_area,
           s.bias ? absl::StrCat("bias[grp * ", z.cg, " + ch]")
                  : std::string("C(0)")),
      ImageLoops(s, z, GroupImage("y", s, z), "image[i] += cols[c];"), "  }\n");
  return out;
}

// A transposed convolution's backward, from its dual's products: the input's
// gradient is the dual's forward of the output's gradient (x here, the
// dual's input), the weight's the dual's weight gradient with the input
// (dy) as the dual's output gradient.
std::string TransposedBackwardSource(const ConvShape& s, const Sizes& z) {
  std::string out = absl::StrCat(
      "  (void)n;\n  const C* x = static_cast<const C*>(inputs[0]);\n",
      "  const C* dy = static_cast<const C*>(inputs[1]);\n",
      "  const C* w = static_cast<const C*>(inputs[2]);\n",
      "  C* gx = static_cast<C*>(outputs[0]);\n",
      "  C* gw = static_cast<C*>(outputs[1]);\n",
      "  C* gb = static_cast<C*>(outputs[2]);\n",
      "  (void)gx; (void)gw; (void)gb; (void)dy; (void)w;\n", Scratch(z));
  const char* names[] = {"gx", "gw", "gb"};
  const int64_t sizes[] = {s.batch * s.out_channels * z.area,
                           s.out_channels * z.rows, s.channels};
  for (int r = 0; r < 3; ++r) {
    if (!s.mask[r]) absl::StrAppend(&out, Fill(names[r], sizes[r], "C(0)"));
  }
  if (s.mask[2]) {
    absl::StrAppend(&out, BiasGradient("x", s.batch, s.channels, z.in_area));
  }
  if (!s.mask[0] && !s.mask[1]) return out;
  absl::StrAppend(&out, "  for (int64_t grp = 0; grp < ", s.groups,
                  "; ++grp) {\n", Im2col(s, z));
  if (s.mask[1]) {  // gw = gathered dy [og, columns] @ cols^T
    absl::StrAppend(
        &out, OutputLoops(s, z, "outs[col] = dy[at];"),
        Gemm(s, false, true, z.og, z.rows, z.columns, "outs", z.columns, "cols",
             z.columns, absl::StrCat("gw + grp * ", z.og * z.rows), z.rows));
  }
  if (s.mask[0]) {  // outs = w [og, rows] @ cols; scattered into gx
    absl::StrAppend(&out,
                    Gemm(s, false, false, z.og, z.columns, z.rows,
                         absl::StrCat("w + grp * ", z.og * z.rows), z.rows,
                         "cols", z.columns, "outs", z.columns),
                    OutputLoops(s, z, "gx[at] = outs[col];"));
  }
  absl::StrAppend(&out, "  }\n");
  return out;
}

}  // namespace

std::optional<ConvShape> ConvOf(const ResolvedGraph& g,
                                const ResolvedNode& node) {
  const std::string& op = node.op->qualified_name;
  ConvShape s;
  if (op == "aten.convolution.default") {
    if (!Geometry(g, node, 0, 3, &s)) return std::nullopt;
    const DType dtype = TensorMeta(g, node, 0).dtype;
    if (node.args[2].kind == BoundArg::Kind::kTensor) {
      if (!Layout(TensorMeta(g, node, 2), dtype, false, 2, &s)) {
        return std::nullopt;
      }
      s.bias = true;
    } else if (!node.args[2].is_none()) {
      return std::nullopt;
    }
    if (!Layout(g.values[node.results[0]].meta, dtype, true, 0, &s)) {
      return std::nullopt;
    }
    return s;
  }
  if (op == "aten.convolution_backward.default") {
    if (!Geometry(g, node, 1, 4, &s) ||
        node.args[0].kind != BoundArg::Kind::kTensor ||
        node.args[10].ints.size() != 3) {
      return std::nullopt;
    }
    s.backward = true;
    const DType dtype = TensorMeta(g, node, 1).dtype;
    if (!Layout(TensorMeta(g, node, 0), dtype, false, 0, &s)) {
      return std::nullopt;
    }
    for (int r = 0; r < 3; ++r) {
      s.mask[r] = node.args[10].ints[r] != 0;
      if (!Layout(g.values[node.results[r]].meta, dtype, true, r, &s)) {
        return std::nullopt;
      }
    }
    return s;
  }
  return std::nullopt;
}

std::string ConvSource(const ConvShape& s) {
  Sizes z(s);
  std::string body;
  if (s.transposed) {
    body = s.backward ? TransposedBackwardSource(s, z)
                      : TransposedForwardSource(s, z);
  } else {
    body = s.backward ? BackwardSource(s, z) : ForwardSource(s, z);
  }
  return StagedSource(s.backward ? 3 : 2 + s.bias, s.backward ? 3 : 1, s.staged,
                      body);
}

}  // namespace aotcache
