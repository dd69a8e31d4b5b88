#include "core/graph/scan_inference.h"

#include "core/graph/infer_helpers.h"
#include "core/status_macros.h"

namespace aotcache::infer {

using internal::ContiguousLike;
using internal::Metas;
using internal::OptionalDType;
using internal::WrapDim;

absl::StatusOr<Metas> Cumsum(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_RETURN_IF_ERROR(WrapDim(ctx, 1, ctx.arg(1).i, self.dim()).status());
  Meta out = ContiguousLike(self);
  out.dtype = OptionalDType(
      ctx.arg(2), IsFloating(self.dtype) ? self.dtype : v1::DTYPE_INT64);
  return internal::One(std::move(out));
}

namespace {

// (values, indices) of self's shape with dim `dim` of size `size` (-1: as
// self's), contiguous.
absl::StatusOr<Metas> Sorted(const InferContext& ctx, int dim_arg,
                             int64_t size) {
  const Meta& self = ctx.tensor(0);
  if (self.dtype == v1::DTYPE_BOOL) {
    return internal::ArgError(ctx, 0, "sorting bools is not supported");
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int64_t dim, WrapDim(ctx, dim_arg, ctx.arg(dim_arg).i, self.dim()));
  Meta values = ContiguousLike(self);
  if (size >= 0 && self.dim() > 0) {
    if (size > self.shape[dim]) {
      return internal::ArgError(ctx, 1, "k is larger than the dim's size");
    }
    values.shape[dim] = size;
    values = ContiguousLike(values);
  }
  Meta indices = values;
  indices.dtype = v1::DTYPE_INT64;
  return Metas{values, indices};
}

}  // namespace

absl::StatusOr<Metas> Sort(const InferContext& ctx) {
  return Sorted(ctx, 1, -1);
}

absl::StatusOr<Metas> Topk(const InferContext& ctx) {
  if (ctx.arg(1).i < 0)
    return internal::ArgError(ctx, 1, "k must not be negative");
  return Sorted(ctx, 2, ctx.arg(1).i);
}

}  // namespace aotcache::infer
