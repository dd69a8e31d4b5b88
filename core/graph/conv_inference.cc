#include "core/graph/conv_inference.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/graph/infer_helpers.h"
#include "core/status_macros.h"

namespace aotcache {

using infer::internal::ArgError;
using infer::internal::Metas;
using infer::internal::One;
using infer::internal::RequireFloat;
using infer::internal::RequireSameDType;
using infer::internal::ShapeString;

namespace {

constexpr int64_t kMaxWindowArg = int64_t{1} << 20;

// A per-dim list given once for all dims ([1]) or once per dim.
absl::StatusOr<std::vector<int64_t>> PerDim(const std::vector<int64_t>& v,
                                            size_t dims, const char* what,
                                            int64_t least) {
  if (v.size() != 1 && v.size() != dims) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", ShapeString(v), " must have 1 or ", dims, " entries"));
  }
  std::vector<int64_t> out(dims, v[0]);
  if (v.size() == dims) out = v;
  for (int64_t x : out) {
    // The bound keeps the geometry's products far from overflow.
    if (x < least || x > kMaxWindowArg) {
      return absl::InvalidArgumentError(absl::StrCat(what, " ", ShapeString(v),
                                                     " must be in [", least,
                                                     ", ", kMaxWindowArg, "]"));
    }
  }
  return out;
}

}  // namespace

std::vector<int64_t> ConvGeometry::OutputShape() const {
  std::vector<int64_t> shape = {batch, OutputChannels()};
  const std::vector<int64_t>& size = transposed ? in_size : out_size;
  shape.insert(shape.end(), size.begin(), size.end());
  return shape;
}

absl::StatusOr<ConvGeometry> ConvGeometryOf(
    const std::vector<int64_t>& input, const std::vector<int64_t>& weight,
    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
    const std::vector<int64_t>& dilation, bool transposed,
    const std::vector<int64_t>& output_padding, int64_t groups) {
  if (input.size() < 3 || input.size() > 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", ShapeString(input),
                     " must be (N, C, spatial...) with 1 to 3 spatial dims"));
  }
  if (weight.size() != input.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight ", ShapeString(weight), " must have ",
                     input.size(), " dims like the input"));
  }
  size_t dims = input.size() - 2;
  ConvGeometry g;
  g.batch = input[0];
  g.groups = groups;
  g.transposed = transposed;
  if (groups <= 0 || groups > kMaxWindowArg) {
    return absl::InvalidArgumentError(absl::StrCat(
        "groups=", groups, " must be in [1, ", kMaxWindowArg, "]"));
  }
  if (transposed) {  // The dual's input channels are the output's.
    g.in_channels = weight[1] * groups;
    g.out_channels = weight[0];
  } else {
    g.in_channels = input[1];
    g.out_channels = weight[0];
  }
  int64_t input_channels = transposed ? g.out_channels : g.in_channels;
  if (input[1] != input_channels || g.in_channels % groups != 0 ||
      g.out_channels % groups != 0 || weight[1] * groups != g.in_channels) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight ", ShapeString(weight), " with groups=", groups,
                     " does not fit ", input[1], " input channels"));
  }
  AOTCACHE_ASSIGN_OR_RETURN(g.stride, PerDim(stride, dims, "stride", 1));
  AOTCACHE_ASSIGN_OR_RETURN(g.padding, PerDim(padding, dims, "padding", 0));
  AOTCACHE_ASSIGN_OR_RETURN(g.dilation, PerDim(dilation, dims, "dilation", 1));
  if (transposed) {
    AOTCACHE_ASSIGN_OR_RETURN(
        std::vector<int64_t> extra,
        PerDim(output_padding, dims, "output_padding", 0));
    for (size_t d = 0; d < dims; ++d) {
      int64_t in = input[2 + d], k = weight[2 + d];
      // torch's rule, and its message.
      if (extra[d] >= std::max(g.stride[d], g.dilation[d])) {
        return absl::InvalidArgumentError(
            "output padding must be smaller than either stride or dilation");
      }
      int64_t out = (in - 1) * g.stride[d] - 2 * g.padding[d] +
                    g.dilation[d] * (k - 1) + extra[d] + 1;
      if (k <= 0 || out <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("kernel ", ShapeString(weight),
                         " with this padding leaves no "
                         "output for the input ",
                         ShapeString(input)));
      }
      g.in_size.push_back(out);
      g.kernel.push_back(k);
      g.out_size.push_back(in);
    }
    return g;
  }
  for (size_t d = 0; d < dims; ++d) {
    int64_t in = input[2 + d], k = weight[2 + d];
    int64_t span = g.dilation[d] * (k - 1) + 1;
    int64_t padded = in + 2 * g.padding[d];
    if (k <= 0 || padded < span) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel ", ShapeString(weight), " is larger than the padded input ",
          ShapeString(input)));
    }
    g.in_size.push_back(in);
    g.kernel.push_back(k);
    g.out_size.push_back((padded - span) / g.stride[d] + 1);
  }
  return g;
}

namespace infer {

absl::StatusOr<Metas> Convolution(const InferContext& ctx) {
  const Meta& input = ctx.tensor(0);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, 0, input.dtype));
  AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 1));
  absl::StatusOr<ConvGeometry> g = ConvGeometryOf(
      input.shape, ctx.tensor(1).shape, ctx.arg(3).ints, ctx.arg(4).ints,
      ctx.arg(5).ints, ctx.arg(6).b, ctx.arg(7).ints, ctx.arg(8).i);
  if (!g.ok()) return ArgError(ctx, 1, g.status().message());
  if (!ctx.arg(2).is_none()) {
    AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 2));
    if (ctx.tensor(2).shape != std::vector<int64_t>{g->OutputChannels()}) {
      return ArgError(ctx, 2,
                      absl::StrCat("shape ", ShapeString(ctx.tensor(2).shape),
                                   " must be [", g->OutputChannels(), "]"));
    }
  }
  return One(ContiguousMeta(g->OutputShape(), input.dtype));
}

absl::StatusOr<Metas> ConvolutionBackward(const InferContext& ctx) {
  const Meta& input = ctx.tensor(1);
  const Meta& weight = ctx.tensor(2);
  absl::StatusOr<ConvGeometry> g = ConvGeometryOf(
      input.shape, weight.shape, ctx.arg(4).ints, ctx.arg(5).ints,
      ctx.arg(6).ints, ctx.arg(7).b, ctx.arg(8).ints, ctx.arg(9).i);
  if (!g.ok()) return ArgError(ctx, 2, g.status().message());
  std::vector<int64_t> out = g->OutputShape();
  if (ctx.tensor(0).shape != out) {
    return ArgError(ctx, 0,
                    absl::StrCat("shape ", ShapeString(ctx.tensor(0).shape),
                                 " must be the output's, ", ShapeString(out)));
  }
  AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 1, 0));
  AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 1, 2));
  return Metas{ContiguousMeta(input.shape, input.dtype),
               ContiguousMeta(weight.shape, input.dtype),
               ContiguousMeta({g->OutputChannels()}, input.dtype)};
}

}  // namespace infer
}  // namespace aotcache
