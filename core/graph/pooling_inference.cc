#include "core/graph/pooling_inference.h"

#include "absl/strings/str_cat.h"
#include "core/graph/infer_helpers.h"
#include "core/status_macros.h"

namespace aotcache {

using infer::internal::ArgError;
using infer::internal::Metas;
using infer::internal::One;
using infer::internal::RequireFloat;
using infer::internal::ShapeString;

namespace {

constexpr int64_t kMaxWindowArg = int64_t{1} << 20;

absl::Status Pair(const std::vector<int64_t>& v, const char* what,
                  int64_t least, int64_t out[2]) {
  if (v.size() != 1 && v.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", ShapeString(v), " must have 1 or 2 entries"));
  }
  out[0] = v[0];
  out[1] = v.back();
  // The bound keeps the geometry's products far from overflow.
  for (int d = 0; d < 2; ++d) {
    if (out[d] < least || out[d] > kMaxWindowArg) {
      return absl::InvalidArgumentError(absl::StrCat(what, " ", ShapeString(v),
                                                     " must be in [", least,
                                                     ", ", kMaxWindowArg, "]"));
    }
  }
  return absl::OkStatus();
}

absl::Status RequireImage(const std::vector<int64_t>& input) {
  if (input.size() != 3 && input.size() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input ", ShapeString(input), " must be (N, C, H, W) or (C, H, W)"));
  }
  return absl::OkStatus();
}

std::vector<int64_t> PooledShape(const std::vector<int64_t>& input, int64_t h,
                                 int64_t w) {
  std::vector<int64_t> shape(input.begin(), input.end() - 2);
  shape.push_back(h);
  shape.push_back(w);
  return shape;
}

}  // namespace

absl::StatusOr<PoolGeometry> PoolGeometryOf(
    const std::vector<int64_t>& input, const std::vector<int64_t>& kernel,
    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
    const std::vector<int64_t>& dilation, bool ceil_mode) {
  AOTCACHE_RETURN_IF_ERROR(RequireImage(input));
  PoolGeometry g;
  g.planes = 1;
  for (size_t d = 0; d + 2 < input.size(); ++d) g.planes *= input[d];
  AOTCACHE_RETURN_IF_ERROR(Pair(kernel, "kernel_size", 1, g.kernel));
  AOTCACHE_RETURN_IF_ERROR(
      Pair(stride.empty() ? kernel : stride, "stride", 1, g.stride));
  AOTCACHE_RETURN_IF_ERROR(Pair(padding, "padding", 0, g.padding));
  AOTCACHE_RETURN_IF_ERROR(Pair(dilation, "dilation", 1, g.dilation));
  for (int d = 0; d < 2; ++d) {
    int64_t in = input[input.size() - 2 + d];
    int64_t span = g.dilation[d] * (g.kernel[d] - 1) + 1;
    if (g.padding[d] > span / 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("padding ", g.padding[d],
                       " must be at most half the kernel's span ", span));
    }
    int64_t room = in + 2 * g.padding[d] - span;
    if (room < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel span ", span, " exceeds the padded input ",
                       ShapeString(input)));
    }
    int64_t out = (room + (ceil_mode ? g.stride[d] - 1 : 0)) / g.stride[d] + 1;
    // A last window that starts in the right padding is dropped.
    if (ceil_mode && (out - 1) * g.stride[d] >= in + g.padding[d]) --out;
    g.in[d] = in;
    g.out[d] = out;
  }
  return g;
}

namespace infer {

// max_pool2d_with_indices(self, kernel_size, stride, padding, dilation,
// ceil_mode): values and int64 indices into each plane.
absl::StatusOr<Metas> MaxPool2d(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, 0, self.dtype));
  absl::StatusOr<PoolGeometry> g =
      PoolGeometryOf(self.shape, ctx.arg(1).ints, ctx.arg(2).ints,
                     ctx.arg(3).ints, ctx.arg(4).ints, ctx.arg(5).b);
  if (!g.ok()) return ArgError(ctx, 1, g.status().message());
  std::vector<int64_t> shape = PooledShape(self.shape, g->out[0], g->out[1]);
  return Metas{ContiguousMeta(shape, self.dtype),
               ContiguousMeta(shape, v1::DTYPE_INT64)};
}

// avg_pool2d(self, kernel_size, stride, padding, ceil_mode,
// count_include_pad, divisor_override).
absl::StatusOr<Metas> AvgPool2d(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, 0, self.dtype));
  absl::StatusOr<PoolGeometry> g =
      PoolGeometryOf(self.shape, ctx.arg(1).ints, ctx.arg(2).ints,
                     ctx.arg(3).ints, {1}, ctx.arg(4).b);
  if (!g.ok()) return ArgError(ctx, 1, g.status().message());
  if (!ctx.arg(6).is_none() && ctx.arg(6).i == 0) {
    return ArgError(ctx, 6, "divisor must be non-zero");
  }
  return One(ContiguousMeta(PooledShape(self.shape, g->out[0], g->out[1]),
                            self.dtype));
}

namespace {

// The pooled shape of an adaptive pooling's self (argument 0) to its
// output_size (argument 1).
absl::StatusOr<std::vector<int64_t>> AdaptiveShape(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, 0, self.dtype));
  absl::Status image = RequireImage(self.shape);
  if (!image.ok()) return ArgError(ctx, 0, image.message());
  const std::vector<int64_t>& size = ctx.arg(1).ints;
  if (size.size() != 2 || size[0] < 0 || size[1] < 0) {
    return ArgError(
        ctx, 1,
        absl::StrCat("output_size ", ShapeString(size), " must be two sizes"));
  }
  return PooledShape(self.shape, size[0], size[1]);
}

}  // namespace

absl::StatusOr<Metas> AdaptiveAvgPool2d(const InferContext& ctx) {
  absl::StatusOr<std::vector<int64_t>> shape = AdaptiveShape(ctx);
  if (!shape.ok()) return shape.status();
  return One(ContiguousMeta(*shape, ctx.tensor(0).dtype));
}

absl::StatusOr<Metas> AdaptiveMaxPool2d(const InferContext& ctx) {
  absl::StatusOr<std::vector<int64_t>> shape = AdaptiveShape(ctx);
  if (!shape.ok()) return shape.status();
  const Meta& self = ctx.tensor(0);
  if (self.shape[self.dim() - 2] == 0 || self.shape[self.dim() - 1] == 0) {
    return ArgError(ctx, 0, "must have non-empty height and width");
  }
  return Metas{ContiguousMeta(*shape, self.dtype),
               ContiguousMeta(*shape, v1::DTYPE_INT64)};
}

absl::StatusOr<Metas> PoolBackward(const InferContext& ctx) {
  const Meta& self = ctx.tensor(1);
  const Meta& grad = ctx.tensor(0);
  absl::Status image = RequireImage(self.shape);
  if (!image.ok()) return ArgError(ctx, 1, image.message());
  std::vector<int64_t> expected;
  const std::string& op = ctx.schema().name;
  if (op == "_adaptive_avg_pool2d_backward" ||
      op == "adaptive_max_pool2d_backward") {
    if (grad.dim() != self.dim()) {
      return ArgError(ctx, 0, "must have the input's rank");
    }
    expected = PooledShape(self.shape, grad.shape[grad.dim() - 2],
                           grad.shape[grad.dim() - 1]);
    if (op == "adaptive_max_pool2d_backward" &&
        (ctx.tensor(2).shape != expected ||
         ctx.tensor(2).dtype != v1::DTYPE_INT64)) {
      return ArgError(ctx, 2, "must be the forward's int64 indices");
    }
  } else {
    bool max = op == "max_pool2d_with_indices_backward";
    absl::StatusOr<PoolGeometry> g = PoolGeometryOf(
        self.shape, ctx.arg(2).ints, ctx.arg(3).ints, ctx.arg(4).ints,
        max ? ctx.arg(5).ints : std::vector<int64_t>{1},
        ctx.arg(max ? 6 : 5).b);
    if (!g.ok()) return ArgError(ctx, 2, g.status().message());
    expected = PooledShape(self.shape, g->out[0], g->out[1]);
    if (max && (ctx.tensor(7).shape != expected ||
                ctx.tensor(7).dtype != v1::DTYPE_INT64)) {
      return ArgError(ctx, 7, "must be the forward's int64 indices");
    }
  }
  if (grad.shape != expected) {
    return ArgError(
        ctx, 0,
        absl::StrCat("shape ", ShapeString(grad.shape),
                     " must be the output's, ", ShapeString(expected)));
  }
  return One(ContiguousMeta(self.shape, self.dtype));
}

}  // namespace infer
}  // namespace aotcache
