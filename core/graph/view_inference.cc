// Shape inference of views (exact strides and offsets), of the scatters
// that invert them, and of resize (a new layout of self's elements).
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/graph/infer_helpers.h"
#include "core/graph/shape_inference.h"
#include "core/status_macros.h"

namespace aotcache {
namespace infer {

using internal::ArgError;
using internal::CheckSizes;
using internal::ContiguousLike;
using internal::Metas;
using internal::One;
using internal::ShapeString;
using internal::WrapDim;

namespace {

std::optional<std::vector<int64_t>> ComputeViewStride(
    const Meta& in, const std::vector<int64_t>& shape) {
  if (in.numel() == 0) return ContiguousStrides(shape);
  // A 0-d tensor views as any shape of one element, strides 1 (torch's
  // computeStride).
  if (in.dim() == 0) return std::vector<int64_t>(shape.size(), 1);
  std::vector<int64_t> stride(shape.size());
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = in.stride.empty() ? 1 : in.stride.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t d = in.dim() - 1; d >= 0; --d) {
    tensor_numel *= in.shape[d];
    if (d == 0 || (in.shape[d - 1] != 1 &&
                   in.stride[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        stride[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = in.stride[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return stride;
}

// Resolves one -1 in a view's sizes.
absl::StatusOr<std::vector<int64_t>> InferViewSize(const InferContext& ctx,
                                                   int arg, int64_t numel) {
  std::vector<int64_t> shape = ctx.arg(arg).ints;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) return ArgError(ctx, arg, "more than one -1");
      infer_at = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return ArgError(ctx, arg, absl::StrCat("negative size ", shape[i]));
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      return ArgError(ctx, arg,
                      absl::StrCat("shape ", ShapeString(shape),
                                   " has more elements than int64 counts"));
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0) {
      return ArgError(ctx, arg,
                      absl::StrCat("shape ", ShapeString(shape),
                                   " is invalid for ", numel, " elements"));
    }
    shape[infer_at] = numel / known;
  } else if (known != numel) {
    return ArgError(ctx, arg,
                    absl::StrCat("shape ", ShapeString(shape),
                                 " is invalid for ", numel, " elements"));
  }
  return shape;
}

absl::StatusOr<Meta> SliceMeta(const InferContext& ctx, const Meta& in,
                               int dim_arg) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int64_t dim, WrapDim(ctx, dim_arg, ctx.arg(dim_arg).i, in.dim()));
  if (in.dim() == 0) return ArgError(ctx, 0, "cannot slice a 0-d tensor");
  int64_t size = in.shape[dim];
  const BoundArg& start_arg = ctx.arg(dim_arg + 1);
  const BoundArg& end_arg = ctx.arg(dim_arg + 2);
  int64_t step = ctx.arg(dim_arg + 3).i;
  if (step <= 0) return ArgError(ctx, dim_arg + 3, "step must be positive");
  // A step past the size takes one element as the size would (and keeps
  // the size and stride arithmetic below within int64).
  step = std::min(step, std::max<int64_t>(size, 1));
  int64_t start = start_arg.is_none() ? 0 : start_arg.i;
  int64_t end = end_arg.is_none() ? size : end_arg.i;
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Meta out = in;
  out.offset += start * in.stride[dim];
  out.shape[dim] = (end - start + step - 1) / step;
  out.stride[dim] *= step;
  return out;
}

absl::StatusOr<Meta> SelectMeta(const InferContext& ctx, const Meta& in) {
  if (in.dim() == 0) return ArgError(ctx, 0, "cannot select from a 0-d tensor");
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim(ctx, 1, ctx.arg(1).i, in.dim()));
  int64_t index = ctx.arg(2).i;
  int64_t size = in.shape[dim];
  if (index < -size || index >= size) {
    return ArgError(
        ctx, 2, absl::StrCat("index ", index, " out of range for size ", size));
  }
  if (index < 0) index += size;
  Meta out = in;
  out.offset += index * in.stride[dim];
  out.shape.erase(out.shape.begin() + dim);
  out.stride.erase(out.stride.begin() + dim);
  return out;
}

absl::StatusOr<Meta> AsStridedMeta(const InferContext& ctx, const Meta& in) {
  Meta out;
  out.shape = ctx.arg(1).ints;
  out.stride = ctx.arg(2).ints;
  out.dtype = in.dtype;
  out.offset = ctx.arg(3).is_none() ? in.offset : ctx.arg(3).i;
  AOTCACHE_RETURN_IF_ERROR(CheckSizes(ctx, 1, out.shape));
  if (out.shape.size() != out.stride.size()) {
    return ArgError(ctx, 2, "size and stride differ in length");
  }
  for (int64_t s : out.stride) {
    if (s < 0) return ArgError(ctx, 2, "negative stride");
  }
  if (out.offset < 0) return ArgError(ctx, 3, "negative storage offset");
  return out;
}

absl::Status RequireSrcShape(const InferContext& ctx, int src_arg,
                             const std::vector<int64_t>& expected) {
  if (ctx.tensor(src_arg).shape != expected) {
    return ArgError(
        ctx, src_arg,
        absl::StrCat("shape ", ShapeString(ctx.tensor(src_arg).shape),
                     " differs from the scattered view's ",
                     ShapeString(expected)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Metas> View(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                            InferViewSize(ctx, 1, self.numel()));
  std::optional<std::vector<int64_t>> stride = ComputeViewStride(self, shape);
  if (!stride.has_value()) {
    return ArgError(ctx, 1,
                    absl::StrCat("view size ", ShapeString(shape),
                                 " is not compatible with the input's size and "
                                 "stride (use reshape)"));
  }
  Meta out = self;
  out.shape = std::move(shape);
  out.stride = *std::move(stride);
  return One(std::move(out));
}

absl::StatusOr<Metas> ReshapeAlias(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  Meta out = self;
  out.shape = ctx.arg(1).ints;
  out.stride = ctx.arg(2).ints;
  AOTCACHE_RETURN_IF_ERROR(CheckSizes(ctx, 1, out.shape));
  if (out.shape.size() != out.stride.size()) {
    return ArgError(ctx, 2, "size and stride differ in length");
  }
  if (out.numel() != self.numel()) {
    return ArgError(
        ctx, 1,
        absl::StrCat("shape ", ShapeString(out.shape), " is invalid for ",
                     self.numel(), " elements"));
  }
  return One(std::move(out));
}

absl::StatusOr<Metas> UnsafeView(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                            InferViewSize(ctx, 1, self.numel()));
  if (!self.IsContiguous()) {
    return ArgError(ctx, 0, "_unsafe_view needs a contiguous input");
  }
  Meta out = ContiguousMeta(std::move(shape), self.dtype);
  out.offset = self.offset;
  return One(std::move(out));
}

absl::StatusOr<Metas> T(const InferContext& ctx) {
  Meta out = ctx.tensor(0);
  if (out.dim() > 2) {
    return ArgError(ctx, 0,
                    absl::StrCat("t() expects a tensor with <= 2 "
                                 "dimensions, got ",
                                 out.dim()));
  }
  std::reverse(out.shape.begin(), out.shape.end());
  std::reverse(out.stride.begin(), out.stride.end());
  return One(std::move(out));
}

absl::StatusOr<Metas> Transpose(const InferContext& ctx) {
  Meta out = ctx.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(int64_t a,
                            WrapDim(ctx, 1, ctx.arg(1).i, out.dim()));
  AOTCACHE_ASSIGN_OR_RETURN(int64_t b,
                            WrapDim(ctx, 2, ctx.arg(2).i, out.dim()));
  if (out.dim() == 0) return One(std::move(out));
  std::swap(out.shape[a], out.shape[b]);
  std::swap(out.stride[a], out.stride[b]);
  return One(std::move(out));
}

absl::StatusOr<Metas> Permute(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  const std::vector<int64_t>& dims = ctx.arg(1).ints;
  if (static_cast<int64_t>(dims.size()) != self.dim()) {
    return ArgError(ctx, 1, "number of dims does not match the tensor's");
  }
  Meta out = self;
  std::vector<bool> seen(self.dim(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    AOTCACHE_ASSIGN_OR_RETURN(int64_t d, WrapDim(ctx, 1, dims[i], self.dim()));
    if (seen[d]) return ArgError(ctx, 1, "repeated dim");
    seen[d] = true;
    out.shape[i] = self.shape[d];
    out.stride[i] = self.stride[d];
  }
  return One(std::move(out));
}

absl::StatusOr<Metas> Expand(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  const std::vector<int64_t>& sizes = ctx.arg(1).ints;
  if (static_cast<int64_t>(sizes.size()) < self.dim()) {
    return ArgError(
        ctx, 1,
        absl::StrCat("expanded size ", ShapeString(sizes),
                     " has fewer dims than ", ShapeString(self.shape)));
  }
  Meta out = self;
  out.shape.assign(sizes.size(), 0);
  out.stride.assign(sizes.size(), 0);
  int64_t lead = static_cast<int64_t>(sizes.size()) - self.dim();
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    int64_t d = i - lead;
    int64_t size = sizes[i];
    if (d < 0) {
      if (size < 0)
        return ArgError(ctx, 1, "-1 not allowed in a new leading dim");
      out.shape[i] = size;
      out.stride[i] = 0;
      continue;
    }
    if (size == -1) size = self.shape[d];
    if (size < 0) return ArgError(ctx, 1, absl::StrCat("negative size ", size));
    if (self.shape[d] == size) {
      out.shape[i] = size;
      out.stride[i] = self.stride[d];
    } else if (self.shape[d] == 1) {
      out.shape[i] = size;
      out.stride[i] = 0;
    } else {
      return ArgError(ctx, 1,
                      absl::StrCat("cannot expand ", ShapeString(self.shape),
                                   " to ", ShapeString(sizes)));
    }
  }
  return One(std::move(out));
}

absl::StatusOr<Metas> Unsqueeze(const InferContext& ctx) {
  Meta out = ctx.tensor(0);
  int64_t rank = out.dim() + 1;
  int64_t dim = ctx.arg(1).i;
  if (dim < -rank || dim >= rank) {
    return ArgError(ctx, 1, absl::StrCat("dim ", dim, " out of range"));
  }
  if (dim < 0) dim += rank;
  int64_t stride = dim >= out.dim() ? 1 : out.shape[dim] * out.stride[dim];
  out.shape.insert(out.shape.begin() + dim, 1);
  out.stride.insert(out.stride.begin() + dim, stride);
  return One(std::move(out));
}

absl::StatusOr<Metas> SqueezeDim(const InferContext& ctx) {
  Meta out = ctx.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim(ctx, 1, ctx.arg(1).i, out.dim()));
  if (out.dim() > 0 && out.shape[dim] == 1) {
    out.shape.erase(out.shape.begin() + dim);
    out.stride.erase(out.stride.begin() + dim);
  }
  return One(std::move(out));
}

absl::StatusOr<Metas> Slice(const InferContext& ctx) {
  AOTCACHE_ASSIGN_OR_RETURN(Meta m, SliceMeta(ctx, ctx.tensor(0), 1));
  return One(std::move(m));
}

absl::StatusOr<Metas> Select(const InferContext& ctx) {
  AOTCACHE_ASSIGN_OR_RETURN(Meta m, SelectMeta(ctx, ctx.tensor(0)));
  return One(std::move(m));
}

absl::StatusOr<Metas> AsStrided(const InferContext& ctx) {
  AOTCACHE_ASSIGN_OR_RETURN(Meta m, AsStridedMeta(ctx, ctx.tensor(0)));
  return One(std::move(m));
}

// resize(self, size): a fresh contiguous tensor of `size` holding self's
// first elements (zeros past them). resize_ gives self that layout in place,
// keeping its offset. Only a contiguous self, in the default memory format:
// eager's resize_ of another layout sees its storage, not its values.
absl::StatusOr<Metas> Resize(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  if (!self.IsContiguous()) {
    return ArgError(ctx, 0,
                    "resize_ of a non-contiguous tensor is not supported");
  }
  const BoundArg& format = ctx.arg(2);
  if (!format.is_none() && !(format.kind == BoundArg::Kind::kString &&
                             format.s == "torch.contiguous_format")) {
    return ArgError(ctx, 2, "only torch.contiguous_format is supported");
  }
  AOTCACHE_RETURN_IF_ERROR(CheckSizes(ctx, 1, ctx.arg(1).ints));
  return One(ContiguousMeta(ctx.arg(1).ints, self.dtype));
}

absl::StatusOr<Metas> ResizeInPlace(const InferContext& ctx) {
  AOTCACHE_ASSIGN_OR_RETURN(Metas out, Resize(ctx));
  out[0].offset = ctx.tensor(0).offset;
  return out;
}

absl::StatusOr<Metas> SelectScatter(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  if (self.dim() == 0)
    return ArgError(ctx, 0, "cannot select from a 0-d tensor");
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim(ctx, 2, ctx.arg(2).i, self.dim()));
  int64_t index = ctx.arg(3).i;
  if (index < -self.shape[dim] || index >= self.shape[dim]) {
    return ArgError(ctx, 3,
                    absl::StrCat("index ", index, " out of range for size ",
                                 self.shape[dim]));
  }
  std::vector<int64_t> view_shape = self.shape;
  view_shape.erase(view_shape.begin() + dim);
  AOTCACHE_RETURN_IF_ERROR(RequireSrcShape(ctx, 1, view_shape));
  return One(ContiguousLike(self));
}

absl::StatusOr<Metas> SliceScatter(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(Meta view, SliceMeta(ctx, self, 2));
  AOTCACHE_RETURN_IF_ERROR(RequireSrcShape(ctx, 1, view.shape));
  return One(ContiguousLike(self));
}

absl::StatusOr<Metas> AsStridedScatter(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  Meta view;
  view.shape = ctx.arg(2).ints;
  view.stride = ctx.arg(3).ints;
  AOTCACHE_RETURN_IF_ERROR(CheckSizes(ctx, 2, view.shape));
  if (view.shape.size() != view.stride.size()) {
    return ArgError(ctx, 3, "size and stride differ in length");
  }
  AOTCACHE_RETURN_IF_ERROR(RequireSrcShape(ctx, 1, view.shape));
  return One(ContiguousLike(self));
}

}  // namespace infer
}  // namespace aotcache
