#include "core/graph/shape_inference.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/graph/elementwise_layout.h"
#include "core/graph/infer_helpers.h"
#include "core/status_macros.h"

namespace aotcache {
namespace infer {

using internal::ArgError;
using internal::CheckSizes;
using internal::ContiguousLike;
using internal::Metas;
using internal::One;
using internal::OptionalDType;
using internal::RequireFloat;
using internal::RequireRank;
using internal::RequireSameDType;
using internal::ShapeString;
using internal::WrapDim;

namespace {

absl::StatusOr<std::vector<int64_t>> Broadcast(const std::vector<int64_t>& a,
                                               const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", ShapeString(a),
                                                     " and ", ShapeString(b),
                                                     " do not broadcast"));
    }
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

// torch's ResultTypeState over the tensor and number arguments.
struct ResultType {
  DType dim = v1::DTYPE_UNSPECIFIED;
  DType zero_dim = v1::DTYPE_UNSPECIFIED;
  DType wrapped = v1::DTYPE_UNSPECIFIED;

  void Add(const InferContext& ctx, const BoundArg& a) {
    if (a.is_tensor()) {
      const Meta& m = ctx.value(a.values[0]);
      DType& slot = m.dim() == 0 ? zero_dim : dim;
      slot = PromoteTypes(slot, m.dtype);
    } else if (a.kind == BoundArg::Kind::kBool) {
      wrapped = PromoteTypes(wrapped, v1::DTYPE_BOOL);
    } else if (a.kind == BoundArg::Kind::kInt) {
      wrapped = PromoteTypes(wrapped, v1::DTYPE_INT64);
    } else if (a.kind == BoundArg::Kind::kFloat) {
      wrapped = PromoteTypes(wrapped, v1::DTYPE_FLOAT32);  // Default dtype.
    }
  }

  static DType Combine(DType higher, DType lower) {
    if (higher == v1::DTYPE_UNSPECIFIED) return lower;
    if (IsFloating(higher)) return higher;
    if (higher == v1::DTYPE_BOOL || IsFloating(lower)) {
      return PromoteTypes(higher, lower);
    }
    return higher;
  }

  DType Result() const { return Combine(dim, Combine(zero_dim, wrapped)); }
};

// The operands of an elementwise op: every tensor or number argument that is
// not an "alpha"-like coefficient.
bool IsOperand(const InferContext& ctx, int i) {
  const ArgSchema& s = ctx.schema().args[i];
  return (s.type == ArgType::kTensor || s.type == ArgType::kScalar) &&
         s.name != "alpha" && s.name != "beta";
}

// What a plain number is to TensorIterator: a 0-dim tensor.
const Meta& NumberOperand() {
  static const Meta* const kNumber = new Meta{};
  return *kNumber;
}

// Adds argument i, a tensor or a number, to an elementwise op's operands
// (in TensorIterator's order) and broadcasts `shape` with it.
absl::Status AddOperand(const InferContext& ctx, int i,
                        std::vector<int64_t>* shape,
                        std::vector<const Meta*>* operands) {
  const BoundArg& a = ctx.arg(i);
  if (!a.is_tensor()) {
    if (a.is_number()) operands->push_back(&NumberOperand());
    return absl::OkStatus();
  }
  operands->push_back(&ctx.tensor(i));
  absl::StatusOr<std::vector<int64_t>> b =
      Broadcast(*shape, ctx.tensor(i).shape);
  if (!b.ok()) return ArgError(ctx, i, b.status().message());
  *shape = *std::move(b);
  return absl::OkStatus();
}

// The result of an elementwise op over its operands, laid out as eager lays
// it out.
absl::StatusOr<Meta> BroadcastOperands(const InferContext& ctx, bool to_float) {
  std::vector<int64_t> shape;
  ResultType type;
  std::vector<const Meta*> operands;
  for (int i = 0; i < ctx.num_args(); ++i) {
    if (!IsOperand(ctx, i)) continue;
    type.Add(ctx, ctx.arg(i));
    AOTCACHE_RETURN_IF_ERROR(AddOperand(ctx, i, &shape, &operands));
  }
  DType dtype = type.Result();
  if (to_float && !IsFloating(dtype)) dtype = v1::DTYPE_FLOAT32;
  return ElementwiseResult(operands, std::move(shape), dtype);
}

absl::StatusOr<Meta> Reduce(const InferContext& ctx, int dim_arg,
                            const Meta& in, std::vector<int64_t> dims,
                            bool keepdim, DType dtype) {
  std::vector<bool> reduced(in.dim(), dims.empty());
  for (int64_t d : dims) {
    AOTCACHE_ASSIGN_OR_RETURN(int64_t w, WrapDim(ctx, dim_arg, d, in.dim()));
    if (in.dim() == 0) continue;
    if (reduced[w]) {
      return ArgError(ctx, dim_arg, absl::StrCat("dim ", d, " repeated"));
    }
    reduced[w] = true;
  }
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (!reduced[d]) {
      shape.push_back(in.shape[d]);
    } else if (keepdim) {
      shape.push_back(1);
    }
  }
  return ContiguousMeta(std::move(shape), dtype);
}

DType SumDType(DType in) { return IsIntegral(in) ? v1::DTYPE_INT64 : in; }

// A fresh tensor of `dtype` laid out as `format` (a memory_format argument)
// says: as `in` unless told otherwise (torch's preserve_format).
Meta FormattedLike(const Meta& in, DType dtype, const BoundArg& format) {
  if (format.kind == BoundArg::Kind::kString) {
    if (format.s == "torch.contiguous_format") {
      return ContiguousMeta(in.shape, dtype);
    }
    if (format.s == "torch.channels_last") {
      return ChannelsLastMeta(in.shape, dtype);
    }
  }
  return PreservedLayout(in, dtype);
}

}  // namespace

absl::StatusOr<Metas> Elementwise(const InferContext& ctx) {
  AOTCACHE_ASSIGN_OR_RETURN(Meta m, BroadcastOperands(ctx, /*to_float=*/false));
  return One(std::move(m));
}

absl::StatusOr<Metas> ElementwiseFloat(const InferContext& ctx) {
  AOTCACHE_ASSIGN_OR_RETURN(Meta m, BroadcastOperands(ctx, /*to_float=*/true));
  return One(std::move(m));
}

absl::StatusOr<Metas> Comparison(const InferContext& ctx) {
  AOTCACHE_ASSIGN_OR_RETURN(Meta m, BroadcastOperands(ctx, false));
  m.dtype = v1::DTYPE_BOOL;
  return One(std::move(m));
}

absl::StatusOr<Metas> Where(const InferContext& ctx) {
  if (ctx.tensor(0).dtype != v1::DTYPE_BOOL) {
    return ArgError(ctx, 0, "condition must be bool");
  }
  // The condition is an operand, but its dtype does not promote.
  std::vector<int64_t> shape;
  std::vector<const Meta*> operands;
  AOTCACHE_RETURN_IF_ERROR(AddOperand(ctx, 0, &shape, &operands));
  ResultType type;
  for (int i = 1; i < 3; ++i) {
    type.Add(ctx, ctx.arg(i));
    AOTCACHE_RETURN_IF_ERROR(AddOperand(ctx, i, &shape, &operands));
  }
  return One(ElementwiseResult(operands, std::move(shape), type.Result()));
}

absl::StatusOr<Metas> InPlace(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(Meta result, BroadcastOperands(ctx, false));
  if (ctx.schema().name == "div_" && !IsFloating(result.dtype)) {
    result.dtype = v1::DTYPE_FLOAT32;
  }
  if (result.shape != self.shape) {
    return ArgError(
        ctx, 1,
        absl::StrCat("result shape ", ShapeString(result.shape),
                     " does not match self's ", ShapeString(self.shape)));
  }
  // copy_ converts any dtype; arithmetic may not narrow float to integral.
  if (ctx.schema().name.rfind("copy", 0) != 0 && IsFloating(result.dtype) &&
      !IsFloating(self.dtype)) {
    return ArgError(
        ctx, 1,
        absl::StrCat("result type ", DTypeName(result.dtype),
                     " can't be cast to self's ", DTypeName(self.dtype)));
  }
  if (ctx.schema().name == "copy")
    return One(PreservedLayout(self, self.dtype));
  return One(self);
}

absl::StatusOr<Metas> SameAsSelf(const InferContext& ctx) {
  return One(ctx.tensor(0));
}

absl::StatusOr<Metas> Fresh(const InferContext& ctx) {
  return One(PreservedLayout(ctx.tensor(0), ctx.tensor(0).dtype));
}

absl::StatusOr<Metas> Clone(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  return One(FormattedLike(self, self.dtype, ctx.arg(1)));
}

// empty_like, zeros_like, ... and _to_copy: (self, dtype, ...,
// memory_format) with memory_format last.
absl::StatusOr<Metas> Like(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  return One(FormattedLike(self, OptionalDType(ctx.arg(1), self.dtype),
                           ctx.arg(ctx.num_args() - 1)));
}

absl::StatusOr<Metas> ToCopy(const InferContext& ctx) { return Like(ctx); }

absl::StatusOr<Metas> SumAll(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  return One(
      ContiguousMeta({}, OptionalDType(ctx.arg(1), SumDType(self.dtype))));
}

absl::StatusOr<Metas> SumDim(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  std::vector<int64_t> dims;
  if (!ctx.arg(1).is_none()) dims = ctx.arg(1).ints;
  AOTCACHE_ASSIGN_OR_RETURN(
      Meta m, Reduce(ctx, 1, self, dims, ctx.arg(2).b,
                     OptionalDType(ctx.arg(3), SumDType(self.dtype))));
  return One(std::move(m));
}

absl::StatusOr<Metas> MeanAll(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  DType dtype = OptionalDType(ctx.arg(1), self.dtype);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, 0, dtype));
  return One(ContiguousMeta({}, dtype));
}

absl::StatusOr<Metas> MaxAll(const InferContext& ctx) {
  if (ctx.tensor(0).numel() == 0) return ArgError(ctx, 0, "an empty tensor");
  if (ctx.tensor(0).dtype == v1::DTYPE_BOOL) return ArgError(ctx, 0, "bool");
  return One(ContiguousMeta({}, ctx.tensor(0).dtype));
}

absl::StatusOr<Metas> MeanDim(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  DType dtype = OptionalDType(ctx.arg(3), self.dtype);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, 0, dtype));
  std::vector<int64_t> dims;
  if (!ctx.arg(1).is_none()) dims = ctx.arg(1).ints;
  AOTCACHE_ASSIGN_OR_RETURN(Meta m,
                            Reduce(ctx, 1, self, dims, ctx.arg(2).b, dtype));
  return One(std::move(m));
}

absl::StatusOr<Metas> VarCorrection(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, 0, self.dtype));
  std::vector<int64_t> dims;
  if (!ctx.arg(1).is_none()) dims = ctx.arg(1).ints;
  AOTCACHE_ASSIGN_OR_RETURN(
      Meta m, Reduce(ctx, 1, self, dims, ctx.arg(3).b, self.dtype));
  return One(std::move(m));
}

absl::StatusOr<Metas> Amax(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(
      Meta m, Reduce(ctx, 1, self, ctx.arg(1).ints, ctx.arg(2).b, self.dtype));
  return One(std::move(m));
}

absl::StatusOr<Metas> Softmax(const InferContext& ctx) {
  const Meta& self = ctx.tensor(0);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, 0, self.dtype));
  AOTCACHE_RETURN_IF_ERROR(WrapDim(ctx, 1, ctx.arg(1).i, self.dim()).status());
  if (ctx.arg(2).b) return ArgError(ctx, 2, "half_to_float needs half input");
  return One(ContiguousLike(self));
}

absl::StatusOr<Metas> LayerNorm(const InferContext& ctx) {
  const Meta& input = ctx.tensor(0);
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, 0, input.dtype));
  const std::vector<int64_t>& normalized = ctx.arg(1).ints;
  int64_t axis = input.dim() - static_cast<int64_t>(normalized.size());
  if (normalized.empty() || axis < 0 ||
      !std::equal(normalized.begin(), normalized.end(),
                  input.shape.begin() + axis)) {
    return ArgError(
        ctx, 1,
        absl::StrCat("normalized_shape ", ShapeString(normalized),
                     " does not end input shape ", ShapeString(input.shape)));
  }
  for (int i = 2; i <= 3; ++i) {
    if (ctx.arg(i).is_none()) continue;
    if (ctx.tensor(i).shape != normalized) {
      return ArgError(ctx, i,
                      absl::StrCat("shape ", ShapeString(ctx.tensor(i).shape),
                                   " must equal normalized_shape"));
    }
    AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 0, i));
  }
  std::vector<int64_t> stat_shape(input.shape.begin(),
                                  input.shape.begin() + axis);
  stat_shape.resize(input.shape.size(), 1);
  return Metas{ContiguousLike(input), ContiguousMeta(stat_shape, input.dtype),
               ContiguousMeta(stat_shape, input.dtype)};
}

absl::StatusOr<Metas> MseLoss(const InferContext& ctx) {
  AOTCACHE_ASSIGN_OR_RETURN(Meta m, BroadcastOperands(ctx, false));
  AOTCACHE_RETURN_IF_ERROR(RequireFloat(ctx, 0, m.dtype));
  int64_t reduction = ctx.arg(2).i;
  if (reduction < 0 || reduction > 2) {
    return ArgError(ctx, 2, "reduction must be 0 (none), 1 (mean) or 2 (sum)");
  }
  if (reduction != 0) m = ContiguousMeta({}, m.dtype);
  return One(std::move(m));
}

absl::StatusOr<Metas> Mm(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(RequireRank(ctx, 0, 2));
  AOTCACHE_RETURN_IF_ERROR(RequireRank(ctx, 1, 2));
  AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 1));
  const Meta& a = ctx.tensor(0);
  const Meta& b = ctx.tensor(1);
  if (a.shape[1] != b.shape[0]) {
    return ArgError(
        ctx, 1,
        absl::StrCat("shapes ", ShapeString(a.shape), " and ",
                     ShapeString(b.shape), " cannot be multiplied"));
  }
  return One(ContiguousMeta({a.shape[0], b.shape[1]}, a.dtype));
}

absl::StatusOr<Metas> Addmm(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(RequireRank(ctx, 1, 2));
  AOTCACHE_RETURN_IF_ERROR(RequireRank(ctx, 2, 2));
  AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 1, 2));
  AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 1, 0));
  const Meta& a = ctx.tensor(1);
  const Meta& b = ctx.tensor(2);
  if (a.shape[1] != b.shape[0]) {
    return ArgError(
        ctx, 2,
        absl::StrCat("shapes ", ShapeString(a.shape), " and ",
                     ShapeString(b.shape), " cannot be multiplied"));
  }
  std::vector<int64_t> out = {a.shape[0], b.shape[1]};
  absl::StatusOr<std::vector<int64_t>> bias =
      Broadcast(ctx.tensor(0).shape, out);
  if (!bias.ok() || *bias != out) {
    return ArgError(ctx, 0,
                    absl::StrCat("shape ", ShapeString(ctx.tensor(0).shape),
                                 " does not broadcast to ", ShapeString(out)));
  }
  return One(ContiguousMeta(out, a.dtype));
}

absl::StatusOr<Metas> Bmm(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(RequireRank(ctx, 0, 3));
  AOTCACHE_RETURN_IF_ERROR(RequireRank(ctx, 1, 3));
  AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 1));
  const Meta& a = ctx.tensor(0);
  const Meta& b = ctx.tensor(1);
  if (a.shape[0] != b.shape[0] || a.shape[2] != b.shape[1]) {
    return ArgError(
        ctx, 1,
        absl::StrCat("shapes ", ShapeString(a.shape), " and ",
                     ShapeString(b.shape), " cannot be batch-multiplied"));
  }
  return One(ContiguousMeta({a.shape[0], a.shape[1], b.shape[2]}, a.dtype));
}

absl::StatusOr<Metas> Dot(const InferContext& ctx) {
  AOTCACHE_RETURN_IF_ERROR(RequireRank(ctx, 0, 1));
  AOTCACHE_RETURN_IF_ERROR(RequireRank(ctx, 1, 1));
  AOTCACHE_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 1));
  if (ctx.tensor(0).shape != ctx.tensor(1).shape) {
    return ArgError(ctx, 1, "dot needs two 1-D tensors of the same size");
  }
  return One(ContiguousMeta({}, ctx.tensor(0).dtype));
}

absl::StatusOr<Metas> Cat(const InferContext& ctx) {
  const std::vector<int>& parts = ctx.arg(0).values;
  if (parts.empty()) return ArgError(ctx, 0, "needs at least one tensor");
  // Legacy: 1-D empty tensors are skipped.
  const Meta* ref = nullptr;
  DType dtype = v1::DTYPE_UNSPECIFIED;
  for (int id : parts) {
    const Meta& m = ctx.value(id);
    dtype = PromoteTypes(dtype, m.dtype);
    if (!(m.dim() == 1 && m.shape[0] == 0) && ref == nullptr) ref = &m;
  }
  if (ref == nullptr) return One(ContiguousMeta({0}, dtype));
  if (ref->dim() == 0)
    return ArgError(ctx, 0, "cannot concatenate 0-d tensors");
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim(ctx, 1, ctx.arg(1).i, ref->dim()));
  std::vector<int64_t> shape = ref->shape;
  shape[dim] = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const Meta& m = ctx.value(parts[k]);
    if (m.dim() == 1 && m.shape[0] == 0) continue;
    for (int64_t d = 0; d < ref->dim(); ++d) {
      if (m.dim() != ref->dim() || (d != dim && m.shape[d] != ref->shape[d])) {
        return ArgError(
            ctx, 0,
            absl::StrCat("tensor ", k, " has shape ", ShapeString(m.shape),
                         ", incompatible with ", ShapeString(ref->shape)));
      }
    }
    shape[dim] += m.shape[dim];
  }
  return One(ContiguousMeta(std::move(shape), dtype));
}

absl::StatusOr<Metas> Dropout(const InferContext& ctx) {
  const Meta& in = ctx.tensor(0);
  return Metas{ContiguousLike(in), ContiguousMeta(in.shape, v1::DTYPE_BOOL)};
}

absl::StatusOr<Metas> SameAsFirstFresh(const InferContext& ctx) {
  return One(ContiguousLike(ctx.tensor(0)));
}

absl::StatusOr<Metas> LayerNormBackward(const InferContext& ctx) {
  const Meta& input = ctx.tensor(1);
  if (ctx.tensor(0).shape != input.shape) {
    return ArgError(ctx, 0, "grad_out must have the input's shape");
  }
  std::vector<int64_t> normalized = ctx.arg(2).ints;
  return Metas{ContiguousLike(input), ContiguousMeta(normalized, input.dtype),
               ContiguousMeta(normalized, input.dtype)};
}

absl::StatusOr<Metas> MseLossBackward(const InferContext& ctx) {
  std::vector<int64_t> shape = ctx.tensor(1).shape;
  absl::StatusOr<std::vector<int64_t>> b =
      Broadcast(shape, ctx.tensor(2).shape);
  if (!b.ok()) return ArgError(ctx, 2, b.status().message());
  return One(ContiguousMeta(*std::move(b), ctx.tensor(1).dtype));
}

}  // namespace infer
}  // namespace aotcache
