#include "core/graph/indexing_inference.h"

#include "absl/strings/str_cat.h"
#include "core/graph/infer_helpers.h"
#include "core/status_macros.h"

namespace aotcache::infer {

using internal::ArgError;
using internal::Metas;
using internal::One;
using internal::RequireRank;
using internal::ShapeString;

namespace {

absl::Status RequireIndices(const InferContext& ctx, int arg) {
  DType dtype = ctx.tensor(arg).dtype;
  if (dtype != v1::DTYPE_INT64 && dtype != v1::DTYPE_INT32) {
    return ArgError(ctx, arg,
                    absl::StrCat("indices must be int64 or int32, got ",
                                 DTypeName(ctx.tensor(arg).dtype)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Metas> Embedding(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(RequireRank(ctx, 0, 2));
  AOTCACHE_RETURN_IF_ERROR(RequireIndices(ctx, 1));
  std::vector<int64_t> shape = ctx.tensor(1).shape;
  shape.push_back(ctx.tensor(0).shape[1]);
  return One(ContiguousMeta(std::move(shape), ctx.tensor(0).dtype));
}

absl::StatusOr<Metas> EmbeddingDenseBackward(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(RequireIndices(ctx, 1));
  const Meta& grad = ctx.tensor(0);
  const Meta& indices = ctx.tensor(1);
  if (grad.dim() != indices.dim() + 1 ||
      !std::equal(indices.shape.begin(), indices.shape.end(),
                  grad.shape.begin())) {
    return ArgError(ctx, 0,
                    absl::StrCat("shape ", ShapeString(grad.shape),
                                 " must be the indices' ",
                                 ShapeString(indices.shape), " and a row"));
  }
  int64_t num_weights = ctx.arg(2).i;
  if (num_weights < 0) return ArgError(ctx, 2, "must be non-negative");
  return One(ContiguousMeta({num_weights, grad.shape.back()}, grad.dtype));
}

}  // namespace aotcache::infer
