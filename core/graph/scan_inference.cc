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

}  // namespace aotcache::infer
