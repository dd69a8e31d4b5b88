// The decompositions of 2-d upsampling (decompositions.h): nearest (by
// whole factors each pixel repeated, else gathered), bilinear (each output row,
// then column, a weighted sum of its two source rows) and bicubic (each output
// column, then row, of its four), with torch's source indices and weights for
// align_corners true and false. Their gradients are those of
// the ops they become, which are torch's: each output's gradient back to the
// pixels it read, with the same weights.
#include <array>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using decompositions_internal::ClampIndex;
using Results = absl::StatusOr<std::vector<int>>;

// The output (H, W) of an upsample of input (N, C, H, W): output_size, or
// the input's times scale_factors (whole numbers: see op_schema.cc).
absl::StatusOr<std::vector<int64_t>> OutputSize(const Meta& x,
                                                const BoundArg& size,
                                                const BoundArg& factors) {
  if (x.dim() != 4) return ArgError("input", "must be (N, C, H, W)");
  if (!size.is_none()) {
    if (size.ints.size() != 2 || size.ints[0] <= 0 || size.ints[1] <= 0) {
      return ArgError("output_size", "must be two positive sizes");
    }
    return size.ints;
  }
  if (factors.is_none() || factors.ints.size() != 2 || factors.ints[0] < 1 ||
      factors.ints[1] < 1) {
    return ArgError(
        "scale_factors",
        "two whole numbers of at least 1, or an output_size, are needed");
  }
  return std::vector<int64_t>{x.shape[2] * factors.ints[0],
                              x.shape[3] * factors.ints[1]};
}

// The scale the caller gave per spatial dim (H, W), if any: torch computes
// source indices with 1 / scale then, not with input / output size.
using Scales = std::array<std::optional<double>, 2>;

// The .default forms' scales_h and scales_w (torch 2.x's make_fx).
Scales ScalesOf(const BoundArg& h, const BoundArg& w) {
  Scales s;
  if (!h.is_none()) s[0] = h.AsDouble();
  if (!w.is_none()) s[1] = w.AsDouble();
  return s;
}

// The .vec forms' scale_factors (torch 1.13's make_fx; whole numbers).
Scales FactorScales(const BoundArg& factors) {
  Scales s;
  if (!factors.is_none() && factors.ints.size() == 2) {
    s = {static_cast<double>(factors.ints[0]),
         static_cast<double>(factors.ints[1])};
  }
  return s;
}

// torch's area_pixel_compute_scale<float>: (in - 1) / (out - 1) with
// align_corners, else 1 / scale when the caller gave one, else in / out.
float ScaleOf(int64_t in, int64_t out, bool align_corners,
              std::optional<double> given) {
  if (align_corners) {
    return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                   : 0.0f;
  }
  if (given.has_value() && *given > 0) return static_cast<float>(1.0 / *given);
  return static_cast<float>(in) / static_cast<float>(out);
}

// x cast to int64: rounded toward zero.
absl::StatusOr<int> Truncate(Decomposer& d, int x) {
  return d.EmitOne("aten._to_copy.default",
                   {TensorArg(x), DTypeArg(v1::DTYPE_INT64), NoneArg(),
                    NoneArg(), NoneArg(), BoolArg(false), NoneArg()});
}

// One spatial dim of a nearest upsample: output o reads min(floor(o s),
// in - 1) (torch's nearest_idx, s its float scale).
absl::StatusOr<int> NearestAlong(Decomposer& d, int x, int64_t dim, int64_t in,
                                 int64_t out, float scale) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int pos, d.EmitOne("aten.arange.default",
                         {IntArg(out), DTypeArg(v1::DTYPE_FLOAT32), NoneArg(),
                          NoneArg(), NoneArg()}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int src,
      d.EmitOne("aten.mul.Scalar", {TensorArg(pos), NumberArg(scale)}));
  // src >= 0: the cast to int64 rounds down.
  AOTCACHE_ASSIGN_OR_RETURN(int floor, Truncate(d, src));
  AOTCACHE_ASSIGN_OR_RETURN(int at, ClampIndex(d, floor, 0, in - 1));
  return d.EmitOne("aten.index_select.default",
                   {TensorArg(x), IntArg(dim), TensorArg(at)});
}

// Nearest: by whole factors each pixel repeated kh x kw times, which is
// torch's nearest (source floor(dst / k)); its gradient sums each block, as
// torch's. Other sizes gather along each dim (NearestAlong).
Results UpsampleNearest(Decomposer& d, const BoundArg& output_size,
                        const BoundArg& scale_factors, const Scales& scales) {
  const Meta x = d.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int64_t> size,
                            OutputSize(x, output_size, scale_factors));
  int64_t h = x.shape[2], w = x.shape[3];
  if (h == 0 || w == 0) return ArgError("input", "must not be empty");
  bool whole = true;
  for (int a = 0; a < 2; ++a) {
    int64_t in = x.shape[2 + a];
    whole = whole && size[a] % in == 0 &&
            (!scales[a].has_value() || *scales[a] * in == size[a]);
  }
  if (!whole) {
    int rows = d.arg(0).values[0];
    if (size[0] != h) {
      AOTCACHE_ASSIGN_OR_RETURN(
          rows, NearestAlong(d, rows, 2, h, size[0],
                             ScaleOf(h, size[0], false, scales[0])));
    }
    AOTCACHE_ASSIGN_OR_RETURN(
        int out, NearestAlong(d, rows, 3, w, size[1],
                              ScaleOf(w, size[1], false, scales[1])));
    return std::vector<int>{out};
  }
  std::vector<int64_t> k = {size[0] / h, size[1] / w};
  AOTCACHE_ASSIGN_OR_RETURN(
      int seen,
      d.EmitOne("aten.view.default",
                {d.arg(0), IntsArg({x.shape[0], x.shape[1], h, 1, w, 1})}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int wide, d.EmitOne("aten.expand.default",
                          {TensorArg(seen),
                           IntsArg({x.shape[0], x.shape[1], h, k[0], w, k[1]}),
                           BoolArg(false)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int dense,
      d.EmitOne("aten.clone.default",
                {TensorArg(wide), StringArg("torch.contiguous_format")}));
  return d.Emit("aten._unsafe_view.default",
                {TensorArg(dense),
                 IntsArg({x.shape[0], x.shape[1], h * k[0], w * k[1]})});
}

// The source position of each of `out` outputs (torch's
// area_pixel_compute_source_index, `scale` from ScaleOf): o s with
// align_corners, else (o + 0.5) s - 0.5, which bilinear clamps at 0 and
// bicubic does not.
absl::StatusOr<int> SourceIndex(Decomposer& d, DType dtype, int64_t out,
                                float scale, bool align_corners,
                                bool clamp_at_zero) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int pos,
      d.EmitOne("aten.arange.default", {IntArg(out), DTypeArg(dtype), NoneArg(),
                                        NoneArg(), NoneArg()}));
  if (align_corners) {
    return d.EmitOne("aten.mul.Scalar", {TensorArg(pos), NumberArg(scale)});
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int half, d.EmitOne("aten.add.Scalar",
                          {TensorArg(pos), NumberArg(0.5), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int scaled,
      d.EmitOne("aten.mul.Scalar", {TensorArg(half), NumberArg(scale)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int shifted,
      d.EmitOne("aten.sub.Scalar",
                {TensorArg(scaled), NumberArg(0.5), NumberArg(1)}));
  if (!clamp_at_zero) return shifted;
  AOTCACHE_ASSIGN_OR_RETURN(
      int negative,
      d.EmitOne("aten.lt.Scalar", {TensorArg(shifted), NumberArg(0)}));
  return d.EmitOne("aten.where.self",
                   {TensorArg(negative), NumberArg(0), TensorArg(shifted)});
}

// One spatial dim of a bilinear upsample: x (N, C, H, W) interpolated along
// `dim` (2 or 3) from `in` to `out` positions. Output o mixes rows
// i0 = floor(src) and i1 = min(i0 + 1, in - 1) of its source index src with
// weights 1 - l and l, l = src - i0.
absl::StatusOr<int> Interpolate(Decomposer& d, int x, int64_t dim, int64_t in,
                                int64_t out, bool align_corners,
                                std::optional<double> given) {
  if (in == out) return x;
  const DType dtype = d.meta(x).dtype;
  AOTCACHE_ASSIGN_OR_RETURN(
      int src,
      SourceIndex(d, dtype, out, ScaleOf(in, out, align_corners, given),
                  align_corners, true));
  // src >= 0: the cast to int64 rounds down.
  AOTCACHE_ASSIGN_OR_RETURN(int i0, Truncate(d, src));
  AOTCACHE_ASSIGN_OR_RETURN(
      int next,
      d.EmitOne("aten.add.Scalar", {TensorArg(i0), IntArg(1), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int past, d.EmitOne("aten.gt.Scalar", {TensorArg(next), IntArg(in - 1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int i1, d.EmitOne("aten.where.self",
                        {TensorArg(past), IntArg(in - 1), TensorArg(next)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int l1, d.EmitOne("aten.sub.Tensor",
                        {TensorArg(src), TensorArg(i0), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int neg,
                            d.EmitOne("aten.neg.default", {TensorArg(l1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int l0, d.EmitOne("aten.add.Scalar",
                        {TensorArg(neg), NumberArg(1), NumberArg(1)}));
  std::vector<int64_t> along = {out, 1};
  if (dim == 3) along = {out};
  AOTCACHE_ASSIGN_OR_RETURN(
      int w0, d.EmitOne("aten.view.default", {TensorArg(l0), IntsArg(along)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int w1, d.EmitOne("aten.view.default", {TensorArg(l1), IntsArg(along)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int a, d.EmitOne("aten.index_select.default",
                       {TensorArg(x), IntArg(dim), TensorArg(i0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int b, d.EmitOne("aten.index_select.default",
                       {TensorArg(x), IntArg(dim), TensorArg(i1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int wa, d.EmitOne("aten.mul.Tensor", {TensorArg(a), TensorArg(w0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int wb, d.EmitOne("aten.mul.Tensor", {TensorArg(b), TensorArg(w1)}));
  return d.EmitOne("aten.add.Tensor",
                   {TensorArg(wa), TensorArg(wb), NumberArg(1)});
}

// ((a3 x + a2) x + a1) x + a0 (a1 = 0 skipped), in torch's order of
// operations for its cubic convolution coefficients.
absl::StatusOr<int> Cubic(Decomposer& d, int x, double a3, double a2, double a1,
                          double a0) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int v, d.EmitOne("aten.mul.Scalar", {TensorArg(x), NumberArg(a3)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      v, d.EmitOne("aten.add.Scalar",
                   {TensorArg(v), NumberArg(a2), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      v, d.EmitOne("aten.mul.Tensor", {TensorArg(v), TensorArg(x)}));
  if (a1 != 0) {
    AOTCACHE_ASSIGN_OR_RETURN(
        v, d.EmitOne("aten.add.Scalar",
                     {TensorArg(v), NumberArg(a1), NumberArg(1)}));
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      v, d.EmitOne("aten.mul.Tensor", {TensorArg(v), TensorArg(x)}));
  return d.EmitOne("aten.add.Scalar",
                   {TensorArg(v), NumberArg(a0), NumberArg(1)});
}

// One spatial dim of a bicubic upsample (as Interpolate): output o reads
// the four positions floor(src) - 1 .. floor(src) + 2, clamped into
// [0, in), weighted by Keys' cubic convolution (A = -0.75) of
// t = src - floor(src): torch's get_cubic_upsample_coefficients, in its
// order of operations.
absl::StatusOr<int> InterpolateCubic(Decomposer& d, int x, int64_t dim,
                                     int64_t in, int64_t out,
                                     bool align_corners,
                                     std::optional<double> given) {
  constexpr double A = -0.75;
  const DType dtype = d.meta(x).dtype;
  AOTCACHE_ASSIGN_OR_RETURN(
      int src,
      SourceIndex(d, dtype, out, ScaleOf(in, out, align_corners, given),
                  align_corners, false));
  // floor(src): the cast to int64 truncates, one less where src < 0 is not
  // whole.
  AOTCACHE_ASSIGN_OR_RETURN(int cut, Truncate(d, src));
  AOTCACHE_ASSIGN_OR_RETURN(
      int above, d.EmitOne("aten.lt.Tensor", {TensorArg(src), TensorArg(cut)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int less,
      d.EmitOne("aten.sub.Scalar", {TensorArg(cut), IntArg(1), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int floor,
      d.EmitOne("aten.where.self",
                {TensorArg(above), TensorArg(less), TensorArg(cut)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int t, d.EmitOne("aten.sub.Tensor",
                       {TensorArg(src), TensorArg(floor), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int t1,
      d.EmitOne("aten.add.Scalar", {TensorArg(t), NumberArg(1), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int neg,
                            d.EmitOne("aten.neg.default", {TensorArg(t)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int rest, d.EmitOne("aten.add.Scalar",
                          {TensorArg(neg), NumberArg(1), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int rest1, d.EmitOne("aten.add.Scalar",
                           {TensorArg(rest), NumberArg(1), NumberArg(1)}));
  // cubic_convolution2 of t + 1 and (1 - t) + 1, cubic_convolution1 of t
  // and 1 - t.
  int weights[4];
  AOTCACHE_ASSIGN_OR_RETURN(weights[0], Cubic(d, t1, A, -5 * A, 8 * A, -4 * A));
  AOTCACHE_ASSIGN_OR_RETURN(weights[1], Cubic(d, t, A + 2, -(A + 3), 0, 1));
  AOTCACHE_ASSIGN_OR_RETURN(weights[2], Cubic(d, rest, A + 2, -(A + 3), 0, 1));
  AOTCACHE_ASSIGN_OR_RETURN(weights[3],
                            Cubic(d, rest1, A, -5 * A, 8 * A, -4 * A));
  std::vector<int64_t> along = {out, 1};
  if (dim == 3) along = {out};
  int sum = -1;
  for (int k = 0; k < 4; ++k) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int at, d.EmitOne("aten.add.Scalar",
                          {TensorArg(floor), IntArg(k - 1), IntArg(1)}));
    AOTCACHE_ASSIGN_OR_RETURN(at, ClampIndex(d, at, 0, in - 1));
    AOTCACHE_ASSIGN_OR_RETURN(
        int tap, d.EmitOne("aten.index_select.default",
                           {TensorArg(x), IntArg(dim), TensorArg(at)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int w, d.EmitOne("aten.view.default",
                         {TensorArg(weights[k]), IntsArg(along)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int term, d.EmitOne("aten.mul.Tensor", {TensorArg(tap), TensorArg(w)}));
    if (sum < 0) {
      sum = term;
    } else {
      AOTCACHE_ASSIGN_OR_RETURN(
          sum, d.EmitOne("aten.add.Tensor",
                         {TensorArg(sum), TensorArg(term), NumberArg(1)}));
    }
  }
  return sum;
}

// One spatial dim of an interpolation (Interpolate, InterpolateCubic).
using InterpolateFn = absl::StatusOr<int> (*)(Decomposer& d, int x, int64_t dim,
                                              int64_t in, int64_t out,
                                              bool align_corners,
                                              std::optional<double> given);

// An interpolating upsample along dim `first` (2 or 3), then the other; a
// copy of the input when both dims keep their sizes.
Results Upsample(Decomposer& d, InterpolateFn along, int first,
                 const BoundArg& output_size, bool align,
                 const BoundArg& scale_factors, const Scales& scales) {
  const Meta x = d.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int64_t> size,
                            OutputSize(x, output_size, scale_factors));
  if (!IsFloating(x.dtype)) return ArgError("input", "must be floating");
  int out = d.arg(0).values[0];
  for (int dim : {first, 5 - first}) {
    AOTCACHE_ASSIGN_OR_RETURN(
        out, along(d, out, dim, x.shape[dim], size[dim - 2], align,
                   scales[dim - 2]));
  }
  if (out == d.arg(0).values[0]) {
    return d.Emit("aten.clone.default", {d.arg(0), NoneArg()});
  }
  return std::vector<int>{out};
}

// Bilinear: rows, then columns.
Results UpsampleBilinear(Decomposer& d, const BoundArg& output_size, bool align,
                         const BoundArg& scale_factors, const Scales& scales) {
  return Upsample(d, Interpolate, 2, output_size, align, scale_factors, scales);
}

// Bicubic: columns, then rows (torch's order: each row interpolated, then
// the rows).
Results UpsampleBicubic(Decomposer& d, const BoundArg& output_size, bool align,
                        const BoundArg& scale_factors, const Scales& scales) {
  return Upsample(d, InterpolateCubic, 3, output_size, align, scale_factors,
                  scales);
}

// upsample_nearest2d.vec(input, output_size?, scale_factors?) (torch 1.13).
Results UpsampleNearest2dVec(Decomposer& d) {
  return UpsampleNearest(d, d.arg(1), d.arg(2), FactorScales(d.arg(2)));
}

// upsample_nearest2d(input, output_size, scales_h?, scales_w?) (torch 2.x).
Results UpsampleNearest2d(Decomposer& d) {
  return UpsampleNearest(d, d.arg(1), NoneArg(), ScalesOf(d.arg(2), d.arg(3)));
}

// upsample_bilinear2d.vec(input, output_size?, align_corners,
// scale_factors?) (torch 1.13).
Results UpsampleBilinear2dVec(Decomposer& d) {
  return UpsampleBilinear(d, d.arg(1), d.arg(2).b, d.arg(3),
                          FactorScales(d.arg(3)));
}

// upsample_bilinear2d(input, output_size, align_corners, scales_h?,
// scales_w?) (torch 2.x).
Results UpsampleBilinear2d(Decomposer& d) {
  return UpsampleBilinear(d, d.arg(1), d.arg(2).b, NoneArg(),
                          ScalesOf(d.arg(3), d.arg(4)));
}

// upsample_bicubic2d.vec(input, output_size?, align_corners,
// scale_factors?) (torch 1.13).
Results UpsampleBicubic2dVec(Decomposer& d) {
  return UpsampleBicubic(d, d.arg(1), d.arg(2).b, d.arg(3),
                         FactorScales(d.arg(3)));
}

// upsample_bicubic2d(input, output_size, align_corners, scales_h?,
// scales_w?) (torch 2.x).
Results UpsampleBicubic2d(Decomposer& d) {
  return UpsampleBicubic(d, d.arg(1), d.arg(2).b, NoneArg(),
                         ScalesOf(d.arg(3), d.arg(4)));
}

}  // namespace

namespace decompositions_internal {

const std::vector<Decomposition>& UpsampleDecompositions() {
  static const auto* table = new std::vector<Decomposition>{
      {"upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? "
       "scale_factors) -> Tensor",
       UpsampleNearest2dVec},
      {"upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool "
       "align_corners, float[]? scale_factors) -> Tensor",
       UpsampleBilinear2dVec},
      {"upsample_nearest2d(Tensor self, SymInt[2] output_size, float? "
       "scales_h=None, float? scales_w=None) -> Tensor",
       UpsampleNearest2d},
      {"upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool "
       "align_corners, float? scales_h=None, float? scales_w=None) -> Tensor",
       UpsampleBilinear2d},
      {"upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, bool "
       "align_corners, float[]? scale_factors) -> Tensor",
       UpsampleBicubic2dVec},
      {"upsample_bicubic2d(Tensor self, SymInt[2] output_size, bool "
       "align_corners, float? scales_h=None, float? scales_w=None) -> Tensor",
       UpsampleBicubic2d},
  };
  return *table;
}

}  // namespace decompositions_internal
}  // namespace aotcache
