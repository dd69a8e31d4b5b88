#include "core/graph/indexing_inference.h"

#include "absl/strings/str_cat.h"
#include "core/graph/infer_helpers.h"
#include "core/status_macros.h"

namespace aotcache::infer {

using internal::ArgError;
using internal::ContiguousLike;
using internal::Metas;
using internal::One;
using internal::RequireRank;
using internal::RequireSameDType;
using internal::ShapeString;
using internal::WrapDim;

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

absl::Status RequireInt64(const InferContext& ctx, int arg) {
  if (ctx.tensor(arg).dtype != v1::DTYPE_INT64) {
    return ArgError(
        ctx, arg,
        absl::StrCat("must be int64, got ", DTypeName(ctx.tensor(arg).dtype)));
  }
  return absl::OkStatus();
}

// A tensor's sizes as gather and scatter see them: a 0-d tensor as [1].
std::vector<int64_t> AtLeast1d(const Meta& m) {
  return m.dim() == 0 ? std::vector<int64_t>{1} : m.shape;
}

// index's sizes against `other`'s (argument `arg`): as many dims, and no
// larger in any dim but `dim` (or in any dim, when `dim` is -1).
absl::Status RequireIndexFits(const InferContext& ctx, int arg, int64_t dim,
                              const Meta& index, const Meta& other) {
  std::vector<int64_t> i = AtLeast1d(index), o = AtLeast1d(other);
  if (i.size() != o.size()) {
    return ArgError(
        ctx, 2,
        absl::StrCat("index has ", index.dim(), " dims; it needs as many as ",
                     ctx.schema().args[arg].name, " (", other.dim(), ")"));
  }
  for (size_t d = 0; d < i.size(); ++d) {
    if (static_cast<int64_t>(d) != dim && i[d] > o[d]) {
      return ArgError(
          ctx, 2,
          absl::StrCat("index of shape ", ShapeString(index.shape),
                       " is larger than ", ctx.schema().args[arg].name,
                       " of shape ", ShapeString(other.shape), " in dim ", d));
    }
  }
  return absl::OkStatus();
}

// An index_select or index_add index: 0-d or 1-d, int64 or int32.
absl::Status RequireIndexVector(const InferContext& ctx, int arg) {
  AOTCACHE_RETURN_IF_ERROR(RequireIndices(ctx, arg));
  if (ctx.tensor(arg).dim() > 1) {
    return ArgError(ctx, arg,
                    absl::StrCat("must be a vector, got shape ",
                                 ShapeString(ctx.tensor(arg).shape)));
  }
  return absl::OkStatus();
}

// self's dim `dim` (argument 1), wrapped; self must have a dim.
absl::StatusOr<int64_t> SelfDim(const InferContext& ctx) {
  if (ctx.tensor(0).dim() == 0) {
    return ArgError(ctx, 0, "a 0-d tensor is not supported here");
  }
  return WrapDim(ctx, 1, ctx.arg(1).i, ctx.tensor(0).dim());
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

absl::StatusOr<Metas> ArgReduce(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  if (self.dtype == v1::DTYPE_BOOL) return ArgError(ctx, 0, "bool input");
  bool keepdim = ctx.arg(2).b;
  std::vector<int64_t> shape;
  if (ctx.arg(1).is_none()) {
    if (self.numel() == 0) return ArgError(ctx, 0, "an empty tensor");
    if (keepdim) shape.assign(self.dim(), 1);
  } else {
    AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                              WrapDim(ctx, 1, ctx.arg(1).i, self.dim()));
    if (self.dim() > 0 && self.shape[dim] == 0) {
      return ArgError(ctx, 1, "cannot reduce an empty dim");
    }
    shape = self.shape;
    if (self.dim() > 0) {
      if (keepdim) {
        shape[dim] = 1;
      } else {
        shape.erase(shape.begin() + dim);
      }
    }
  }
  return One(ContiguousMeta(std::move(shape), v1::DTYPE_INT64));
}

absl::StatusOr<Metas> Gather(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim(ctx, 1, ctx.arg(1).i, self.dim()));
  AOTCACHE_RETURN_IF_ERROR(RequireInt64(ctx, 2));
  const Meta& index = ctx.tensor(2);
  AOTCACHE_RETURN_IF_ERROR(RequireIndexFits(ctx, 0, dim, index, self));
  return One(ContiguousMeta(index.shape, self.dtype));
}

absl::StatusOr<Metas> ScatterAdd(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim(ctx, 1, ctx.arg(1).i, self.dim()));
  AOTCACHE_RETURN_IF_ERROR(RequireInt64(ctx, 2));
  AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 3));
  const Meta& index = ctx.tensor(2);
  AOTCACHE_RETURN_IF_ERROR(RequireIndexFits(ctx, 0, dim, index, self));
  AOTCACHE_RETURN_IF_ERROR(RequireIndexFits(ctx, 3, -1, index, ctx.tensor(3)));
  return One(ContiguousLike(self));
}

absl::StatusOr<Metas> ScatterReduce(const InferContext& ctx) {
  const std::string& reduce = ctx.arg(4).s;
  if (reduce != "sum" && reduce != "prod" && reduce != "mean" &&
      reduce != "amax" && reduce != "amin") {
    return ArgError(ctx, 4,
                    absl::StrCat("must be sum, prod, mean, amax or amin, not '",
                                 reduce, "'"));
  }
  return ScatterAdd(ctx);
}

absl::StatusOr<Metas> ScatterAddInPlace(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(ScatterAdd(ctx).status());
  return One(ctx.tensor(0));
}

absl::StatusOr<Metas> ScatterReduceInPlace(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(ScatterReduce(ctx).status());
  return One(ctx.tensor(0));
}

absl::StatusOr<Metas> IndexSelect(const InferContext& ctx) {
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim, SelfDim(ctx));
  AOTCACHE_RETURN_IF_ERROR(RequireIndexVector(ctx, 2));
  std::vector<int64_t> shape = ctx.tensor(0).shape;
  shape[dim] = ctx.tensor(2).numel();
  return One(ContiguousMeta(std::move(shape), ctx.tensor(0).dtype));
}

absl::StatusOr<Metas> IndexAdd(const InferContext& ctx) {
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim, SelfDim(ctx));
  AOTCACHE_RETURN_IF_ERROR(RequireIndexVector(ctx, 2));
  AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 3));
  const Meta& self = ctx.tensor(0);
  const Meta& source = ctx.tensor(3);
  std::vector<int64_t> want = self.shape;
  want[dim] = ctx.tensor(2).numel();
  if (source.shape != want) {
    return ArgError(
        ctx, 3,
        absl::StrCat("shape ", ShapeString(source.shape), " must be ",
                     ShapeString(want),
                     " (self's, with the index's length in dim ", dim, ")"));
  }
  return One(ContiguousLike(self));
}

}  // namespace aotcache::infer
