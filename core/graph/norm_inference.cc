#include "core/graph/norm_inference.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "core/graph/infer_helpers.h"
#include "core/status_macros.h"

namespace aotcache::infer {

using internal::ArgError;
using internal::Metas;
using internal::RequireFloat;
using internal::RequireSameDType;
using internal::ShapeString;

namespace {

// input (N, C, ...) and the per-channel tensors at `per_channel` (each
// optional): shape (C), input's dtype.
absl::Status CheckChannels(const InferContext& ctx, int input,
                           std::initializer_list<int> per_channel) {
  const Meta& in = ctx.tensor(input);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, input, in.dtype));
  if (in.dim() < 2) {
    return ArgError(
        ctx, input,
        absl::StrCat("shape ", ShapeString(in.shape), " must be (N, C, ...)"));
  }
  for (int k : per_channel) {
    if (ctx.arg(k).is_none()) continue;
    if (ctx.tensor(k).shape != std::vector<int64_t>{in.shape[1]}) {
      return ArgError(ctx, k,
                      absl::StrCat("shape ", ShapeString(ctx.tensor(k).shape),
                                   " must be [", in.shape[1], "]"));
    }
    AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, input, k));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Metas> BatchNorm(const InferContext& ctx) {
  bool eval = ctx.schema().args[3].name == "running_mean";
  if (eval) {
    AOTCACHE_RETURN_IF_ERROR(CheckChannels(ctx, 0, {1, 2, 3, 4}));
  } else {
    AOTCACHE_RETURN_IF_ERROR(CheckChannels(ctx, 0, {1, 2}));
  }
  const Meta& in = ctx.tensor(0);
  std::vector<int64_t> stats = {eval ? 0 : in.shape[1]};
  return Metas{ContiguousMeta(in.shape, in.dtype),
               ContiguousMeta(stats, in.dtype),
               ContiguousMeta(stats, in.dtype)};
}

// native_batch_norm_backward(grad_out, input, weight?, running_mean?,
// running_var?, save_mean?, save_invstd?, train, eps, output_mask).
absl::StatusOr<Metas> BatchNormBackward(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(CheckChannels(ctx, 1, {2, 3, 4}));
  const Meta& in = ctx.tensor(1);
  if (ctx.tensor(0).shape != in.shape) {
    return ArgError(ctx, 0, "must have the input's shape");
  }
  bool train = ctx.arg(7).b;
  // An array, not an initializer_list: a conditional's initializer_list
  // would outlive the array behind it.
  const std::array<int, 2> statistics =
      train ? std::array<int, 2>{5, 6} : std::array<int, 2>{3, 4};
  for (int k : statistics) {
    if (ctx.arg(k).is_none()) {
      return ArgError(ctx, k,
                      train ? "training needs the saved statistics"
                            : "eval needs the running statistics");
    }
  }
  if (train) AOTCACHE_RETURN_IF_ERROR(CheckChannels(ctx, 1, {5, 6}));
  std::vector<int64_t> channels = {in.shape[1]};
  return Metas{ContiguousMeta(in.shape, in.dtype),
               ContiguousMeta(channels, in.dtype),
               ContiguousMeta(channels, in.dtype)};
}

}  // namespace aotcache::infer
