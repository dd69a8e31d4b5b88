#include "core/graph/factory_inference.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/graph/infer_helpers.h"
#include "core/status_macros.h"

namespace aotcache::infer {

using internal::ArgError;
using internal::CheckSizes;
using internal::Metas;
using internal::One;
using internal::OptionalDType;

absl::StatusOr<Metas> Factory(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(CheckSizes(ctx, 0, ctx.arg(0).ints));
  return One(ContiguousMeta(ctx.arg(0).ints,
                            OptionalDType(ctx.arg(1), v1::DTYPE_FLOAT32)));
}

absl::StatusOr<Metas> Full(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(CheckSizes(ctx, 0, ctx.arg(0).ints));
  DType inferred = v1::DTYPE_FLOAT32;
  if (ctx.arg(1).kind == BoundArg::Kind::kBool) inferred = v1::DTYPE_BOOL;
  if (ctx.arg(1).kind == BoundArg::Kind::kInt) inferred = v1::DTYPE_INT64;
  return One(
      ContiguousMeta(ctx.arg(0).ints, OptionalDType(ctx.arg(2), inferred)));
}

absl::StatusOr<Metas> Arange(const InferContext& ctx) {
  // arange(end) binds end at 0; arange.start(start, end) and
  // arange.start_step(start, end, step) bind start at 0.
  bool has_start = ctx.schema().args[0].name == "start";
  const BoundArg* start = has_start ? &ctx.arg(0) : nullptr;
  const BoundArg& end = ctx.arg(has_start ? 1 : 0);
  bool has_step = has_start && ctx.schema().args[2].name == "step";
  const BoundArg* step = has_step ? &ctx.arg(2) : nullptr;
  int dtype_arg = has_step ? 3 : (has_start ? 2 : 1);
  bool all_int = end.kind == BoundArg::Kind::kInt &&
                 (start == nullptr || start->kind == BoundArg::Kind::kInt) &&
                 (step == nullptr || step->kind == BoundArg::Kind::kInt);
  double lo = start != nullptr ? start->AsDouble() : 0;
  double hi = end.AsDouble(), by = step != nullptr ? step->AsDouble() : 1;
  if (!std::isfinite(lo) || !std::isfinite(hi) || !std::isfinite(by) ||
      by == 0 || (by > 0 && hi < lo) || (by < 0 && hi > lo)) {
    return ArgError(
        ctx, has_step ? 2 : 0,
        absl::StrCat("cannot step from ", lo, " to ", hi, " by ", by));
  }
  double size = std::ceil((hi - lo) / by);
  if (size > static_cast<double>(int64_t{1} << 53)) {
    return ArgError(ctx, has_step ? 2 : 0, "too many elements");
  }
  DType dtype = OptionalDType(ctx.arg(dtype_arg),
                              all_int ? v1::DTYPE_INT64 : v1::DTYPE_FLOAT32);
  if (dtype == v1::DTYPE_BOOL) {
    return ArgError(ctx, dtype_arg, "arange cannot make bool");
  }
  constexpr double kIntegralBound = 0x1p62;  // Integral values stay exact.
  if (IsIntegral(dtype) &&
      (std::fabs(lo) > kIntegralBound || std::fabs(hi) > kIntegralBound)) {
    return ArgError(ctx, has_start ? 1 : 0,
                    "bounds past 2^62 for an integral arange");
  }
  return One(ContiguousMeta({static_cast<int64_t>(size)}, dtype));
}

}  // namespace aotcache::infer
