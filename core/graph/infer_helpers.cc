#include "core/graph/infer_helpers.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace aotcache::infer::internal {

absl::Status ArgError(const InferContext& ctx, int arg,
                      absl::string_view detail) {
  return absl::InvalidArgumentError(
      absl::StrCat("argument '", ctx.schema().args[arg].name, "': ", detail));
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<int64_t> WrapDim(const InferContext& ctx, int arg, int64_t dim,
                                int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);  // Scalars accept dim 0 and -1.
  if (dim < -r || dim >= r) {
    return ArgError(ctx, arg,
                    absl::StrCat("dim ", dim, " out of range for a tensor of ",
                                 rank, " dimensions"));
  }
  return dim < 0 ? dim + r : dim;
}

absl::Status CheckSizes(const InferContext& ctx, int arg,
                        const std::vector<int64_t>& sizes) {
  for (int64_t s : sizes) {
    if (s < 0) {
      return ArgError(ctx, arg,
                      absl::StrCat("negative size in ", ShapeString(sizes)));
    }
  }
  return absl::OkStatus();
}

Meta ContiguousLike(const Meta& in) {
  return ContiguousMeta(in.shape, in.dtype);
}

absl::Status RequireFloat(const InferContext& ctx, int arg, DType dtype) {
  if (!IsFloating(dtype)) {
    return ArgError(
        ctx, arg,
        absl::StrCat("needs a floating dtype, got ", DTypeName(dtype)));
  }
  return absl::OkStatus();
}

absl::Status RequireRank(const InferContext& ctx, int arg, int64_t rank) {
  if (ctx.tensor(arg).dim() != rank) {
    return ArgError(ctx, arg,
                    absl::StrCat("expected ", rank, "-D tensor, got shape ",
                                 ShapeString(ctx.tensor(arg).shape)));
  }
  return absl::OkStatus();
}

absl::Status RequireSameDType(const InferContext& ctx, int a, int b) {
  if (ctx.tensor(a).dtype != ctx.tensor(b).dtype) {
    return ArgError(
        ctx, b,
        absl::StrCat("dtype ", DTypeName(ctx.tensor(b).dtype), " differs from ",
                     DTypeName(ctx.tensor(a).dtype)));
  }
  return absl::OkStatus();
}

}  // namespace aotcache::infer::internal
