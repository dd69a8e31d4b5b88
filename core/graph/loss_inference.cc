#include "core/graph/loss_inference.h"

#include "absl/strings/str_cat.h"
#include "core/graph/infer_helpers.h"
#include "core/status_macros.h"

namespace aotcache::infer {

using internal::ArgError;
using internal::ContiguousLike;
using internal::Metas;
using internal::One;
using internal::RequireFloat;
using internal::RequireSameDType;
using internal::ShapeString;

namespace {

// Checks self, target, weight and reduction at positions `self`, self + 1,
// self + 2 and self + 3, as nll_loss_forward and its backward order them.
absl::Status CheckNllArguments(const InferContext& ctx, int self) {
  const Meta& input = ctx.tensor(self);
  const Meta& target = ctx.tensor(self + 1);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, self, input.dtype));
  if (target.dtype != v1::DTYPE_INT64) {
    return ArgError(ctx, self + 1,
                    absl::StrCat("class indices must be int64, got ",
                                 DTypeName(target.dtype)));
  }
  bool batched = input.dim() == 2 && target.dim() == 1 &&
                 target.shape[0] == input.shape[0];
  bool single = input.dim() == 1 && target.dim() == 0;
  if (!batched && !single) {
    return ArgError(
        ctx, self + 1,
        absl::StrCat("shape ", ShapeString(target.shape),
                     " does not match input ", ShapeString(input.shape),
                     " (expected (N, C) with (N), or (C) with ())"));
  }
  if (!ctx.arg(self + 2).is_none()) {
    const Meta& weight = ctx.tensor(self + 2);
    int64_t classes = input.shape.back();
    if (weight.shape != std::vector<int64_t>{classes}) {
      return ArgError(ctx, self + 2,
                      absl::StrCat("shape ", ShapeString(weight.shape),
                                   " must be [", classes, "], one per class"));
    }
    AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, self, self + 2));
  }
  int64_t reduction = ctx.arg(self + 3).i;
  if (reduction < 0 || reduction > 2) {
    return ArgError(ctx, self + 3,
                    "reduction must be 0 (none), 1 (mean) or 2 (sum)");
  }
  return absl::OkStatus();
}

// Checks self, target, weight and reduction at positions `self`, self + 1,
// self + 2 and self + 3, as binary_cross_entropy and its backward order them.
absl::Status CheckBceArguments(const InferContext& ctx, int self) {
  const Meta& input = ctx.tensor(self);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, self, input.dtype));
  AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, self, self + 1));
  if (ctx.tensor(self + 1).shape != input.shape) {
    return ArgError(
        ctx, self + 1,
        absl::StrCat("shape ", ShapeString(ctx.tensor(self + 1).shape),
                     " must be the input's, ", ShapeString(input.shape)));
  }
  if (!ctx.arg(self + 2).is_none()) {
    const Meta& weight = ctx.tensor(self + 2);
    AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, self, self + 2));
    bool broadcasts = weight.dim() <= input.dim();
    for (int64_t i = 1; broadcasts && i <= weight.dim(); ++i) {
      int64_t w = weight.shape[weight.dim() - i];
      broadcasts = w == 1 || w == input.shape[input.dim() - i];
    }
    if (!broadcasts) {
      return ArgError(ctx, self + 2,
                      absl::StrCat("shape ", ShapeString(weight.shape),
                                   " does not broadcast to the input's, ",
                                   ShapeString(input.shape)));
    }
  }
  int64_t reduction = ctx.arg(self + 3).i;
  if (reduction < 0 || reduction > 2) {
    return ArgError(ctx, self + 3,
                    "reduction must be 0 (none), 1 (mean) or 2 (sum)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Metas> NllLoss(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(CheckNllArguments(ctx, 0));
  const Meta& input = ctx.tensor(0);
  std::vector<int64_t> shape;
  if (ctx.arg(3).i == 0 && input.dim() == 2) shape = {input.shape[0]};
  return Metas{ContiguousMeta(shape, input.dtype),
               ContiguousMeta({}, input.dtype)};
}

absl::StatusOr<Metas> NllLossBackward(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(CheckNllArguments(ctx, 1));
  const Meta& input = ctx.tensor(1);
  std::vector<int64_t> grad_shape;
  if (ctx.arg(4).i == 0 && input.dim() == 2) grad_shape = {input.shape[0]};
  if (ctx.tensor(0).shape != grad_shape) {
    return ArgError(
        ctx, 0,
        absl::StrCat("shape ", ShapeString(ctx.tensor(0).shape),
                     " must be the loss's, ", ShapeString(grad_shape)));
  }
  if (ctx.tensor(6).dim() != 0) {
    return ArgError(ctx, 6, "must be a 0-d tensor");
  }
  return One(ContiguousLike(input));
}

absl::StatusOr<Metas> BinaryCrossEntropy(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(CheckBceArguments(ctx, 0));
  const Meta& input = ctx.tensor(0);
  if (ctx.arg(3).i != 0) return One(ContiguousMeta({}, input.dtype));
  return One(ContiguousLike(input));
}

absl::StatusOr<Metas> BinaryCrossEntropyBackward(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(CheckBceArguments(ctx, 1));
  const Meta& input = ctx.tensor(1);
  std::vector<int64_t> grad_shape;
  if (ctx.arg(4).i == 0) grad_shape = input.shape;
  if (ctx.tensor(0).shape != grad_shape) {
    return ArgError(
        ctx, 0,
        absl::StrCat("shape ", ShapeString(ctx.tensor(0).shape),
                     " must be the loss's, ", ShapeString(grad_shape)));
  }
  return One(ContiguousLike(input));
}

}  // namespace aotcache::infer
