#include "core/graph/decompositions.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace aotcache {

absl::StatusOr<int> Decomposer::EmitOne(absl::string_view op,
                                        std::vector<BoundArg> args) {
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int> results,
                            Emit(op, std::move(args)));
  return results[0];
}

namespace decompositions_internal {

absl::Status ArgError(absl::string_view name, absl::string_view detail) {
  return absl::InvalidArgumentError(
      absl::StrCat("argument '", name, "': ", detail));
}

absl::StatusOr<std::vector<int>> ReduceLoss(Decomposer& d, int loss,
                                            const BoundArg& reduction) {
  if (reduction.i < 0 || reduction.i > 2) {
    return ArgError("reduction", "must be 0 (none), 1 (mean) or 2 (sum)");
  }
  if (reduction.i == 0) return std::vector<int>{loss};
  return d.Emit(reduction.i == 1 ? "aten.mean.default" : "aten.sum.default",
                {TensorArg(loss), NoneArg()});
}

absl::StatusOr<int64_t> WrapDim(absl::string_view name, int64_t dim,
                                int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r) {
    return ArgError(name, absl::StrCat("dim ", dim,
                                       " out of range for a "
                                       "tensor of ",
                                       rank, " dimensions"));
  }
  return dim < 0 ? dim + r : dim;
}

absl::StatusOr<int> ClampIndex(Decomposer& d, int index, int64_t low,
                               int64_t high) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int below, d.EmitOne("aten.lt.Scalar", {TensorArg(index), IntArg(low)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int raised, d.EmitOne("aten.where.self",
                            {TensorArg(below), IntArg(low), TensorArg(index)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int past, d.EmitOne("aten.gt.Scalar", {TensorArg(raised), IntArg(high)}));
  return d.EmitOne("aten.where.self",
                   {TensorArg(past), IntArg(high), TensorArg(raised)});
}

}  // namespace decompositions_internal

namespace {

using decompositions_internal::ArgError;
using decompositions_internal::WrapDim;

// Slices of `self` along `dim` with the given sizes, in order.
absl::StatusOr<std::vector<int>> Slices(Decomposer& d, int64_t dim,
                                        const std::vector<int64_t>& sizes) {
  std::vector<int> parts;
  int64_t at = 0;
  for (int64_t size : sizes) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int part,
        d.EmitOne("aten.slice.Tensor", {d.arg(0), IntArg(dim), IntArg(at),
                                        IntArg(at + size), IntArg(1)}));
    parts.push_back(part);
    at += size;
  }
  return parts;
}

// split(self, split_size, dim): chunks of split_size, the last smaller; one
// (empty) chunk of an empty dim.
absl::StatusOr<std::vector<int>> Split(Decomposer& d) {
  const Meta self = d.tensor(0);
  if (self.dim() == 0) return ArgError("self", "cannot split a 0-d tensor");
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim("dim", d.arg(2).i, self.dim()));
  int64_t length = self.shape[dim], size = d.arg(1).i;
  if (size < 0 || (size == 0 && length != 0)) {
    return ArgError("split_size", absl::StrCat("split_size ", size,
                                               " for a dim of ", length));
  }
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < length; at += size) {
    sizes.push_back(std::min(size, length - at));
  }
  if (sizes.empty()) sizes.push_back(0);
  return Slices(d, dim, sizes);
}

absl::StatusOr<std::vector<int>> SplitWithSizes(Decomposer& d) {
  const Meta self = d.tensor(0);
  if (self.dim() == 0) return ArgError("self", "cannot split a 0-d tensor");
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim("dim", d.arg(2).i, self.dim()));
  const std::vector<int64_t>& sizes = d.arg(1).ints;
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || __builtin_add_overflow(total, s, &total)) {
      return ArgError("split_sizes", "sizes must be non-negative");
    }
  }
  if (total != self.shape[dim]) {
    return ArgError("split_sizes",
                    absl::StrCat("sizes add up to ", total, ", not the dim's ",
                                 self.shape[dim]));
  }
  return Slices(d, dim, sizes);
}

// chunk(self, chunks, dim): split with ceil(length / chunks).
absl::StatusOr<std::vector<int>> Chunk(Decomposer& d) {
  const Meta self = d.tensor(0);
  if (self.dim() == 0) return ArgError("self", "cannot chunk a 0-d tensor");
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim("dim", d.arg(2).i, self.dim()));
  int64_t chunks = d.arg(1).i, length = self.shape[dim];
  if (chunks <= 0) return ArgError("chunks", "must be positive");
  int64_t size = length / chunks + (length % chunks != 0);  // No overflow.
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < length; at += size) {
    sizes.push_back(std::min(size, length - at));
  }
  if (sizes.empty()) sizes.push_back(0);
  return Slices(d, dim, sizes);
}

absl::StatusOr<std::vector<int>> Unbind(Decomposer& d) {
  const Meta self = d.tensor(0);
  if (self.dim() == 0) return ArgError("self", "cannot unbind a 0-d tensor");
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim("dim", d.arg(1).i, self.dim()));
  std::vector<int> parts;
  for (int64_t i = 0; i < self.shape[dim]; ++i) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int part,
        d.EmitOne("aten.select.int", {d.arg(0), IntArg(dim), IntArg(i)}));
    parts.push_back(part);
  }
  return parts;
}

// stack(tensors, dim): cat of each tensor unsqueezed at dim.
absl::StatusOr<std::vector<int>> Stack(Decomposer& d) {
  const std::vector<int> tensors = d.arg(0).values;
  if (tensors.empty()) return ArgError("tensors", "needs at least one tensor");
  const Meta first = d.meta(tensors[0]);
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim("dim", d.arg(1).i, first.dim() + 1));
  BoundArg parts;
  parts.kind = BoundArg::Kind::kTensorList;
  for (size_t k = 0; k < tensors.size(); ++k) {
    if (d.meta(tensors[k]).shape != first.shape) {
      return ArgError("tensors",
                      absl::StrCat("tensor ", k,
                                   " has another shape than "
                                   "tensor 0 (stack needs equal shapes)"));
    }
    AOTCACHE_ASSIGN_OR_RETURN(int part,
                              d.EmitOne("aten.unsqueeze.default",
                                        {TensorArg(tensors[k]), IntArg(dim)}));
    parts.values.push_back(part);
  }
  return d.Emit("aten.cat.default", {std::move(parts), IntArg(dim)});
}

// `v`, contiguous: eager's layout of the ops that fill a contiguous clone
// or a LEGACY_CONTIGUOUS result (masked_fill, tril, triu), where `where`
// would follow its operands' layout.
absl::StatusOr<std::vector<int>> Contiguous(Decomposer& d, int v) {
  if (d.meta(v).IsContiguous()) return std::vector<int>{v};
  return d.Emit("aten.clone.default",
                {TensorArg(v), StringArg("torch.contiguous_format")});
}

// masked_fill(self, mask, value): where(mask, value, self), in self's shape
// and dtype (the value is cast to self's dtype, as torch does), contiguous.
absl::StatusOr<std::vector<int>> MaskedFill(Decomposer& d) {
  const Meta self = d.tensor(0);
  if (d.tensor(1).dtype != v1::DTYPE_BOOL) {
    return ArgError("mask", absl::StrCat("must be bool, got ",
                                         DTypeName(d.tensor(1).dtype)));
  }
  BoundArg value = d.arg(2);
  if (value.is_tensor()) {
    if (d.tensor(2).dim() != 0) {
      return ArgError("value", "must be a 0-d tensor");
    }
    if (d.tensor(2).dtype != self.dtype) {
      AOTCACHE_ASSIGN_OR_RETURN(
          int cast,
          d.EmitOne("aten._to_copy.default",
                    {value, DTypeArg(self.dtype), NoneArg(), NoneArg(),
                     NoneArg(), BoolArg(false), NoneArg()}));
      value = TensorArg(cast);
    }
  } else if (IsIntegral(self.dtype)) {
    double v = value.AsDouble();
    value = self.dtype == v1::DTYPE_BOOL ? BoolArg(v != 0)
                                         : IntArg(static_cast<int64_t>(v));
  } else {
    value = NumberArg(value.AsDouble());
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int out, d.EmitOne("aten.where.self", {d.arg(1), value, d.arg(0)}));
  if (d.meta(out).shape != self.shape) {
    return ArgError("mask", "does not broadcast to self's shape");
  }
  return Contiguous(d, out);
}

// fill.Tensor(self, value): the 0-d value cast to self's dtype and expanded
// to self's shape, contiguous (`y[0, 1:] = 2.0` traces to fill_.Tensor); its
// gradient is the sum of the result's, as torch's.
absl::StatusOr<std::vector<int>> FillTensor(Decomposer& d) {
  const Meta self = d.tensor(0);
  if (d.tensor(1).dim() != 0) return ArgError("value", "must be a 0-d tensor");
  BoundArg value = d.arg(1);
  if (d.tensor(1).dtype != self.dtype) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int cast, d.EmitOne("aten._to_copy.default",
                            {value, DTypeArg(self.dtype), NoneArg(), NoneArg(),
                             NoneArg(), BoolArg(false), NoneArg()}));
    value = TensorArg(cast);
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int out, d.EmitOne("aten.expand.default", {value, IntsArg(self.shape)}));
  return Contiguous(d, out);
}

// A zero of `dtype` as a where operand that keeps that dtype.
BoundArg ZeroOf(DType dtype) {
  if (dtype == v1::DTYPE_BOOL) return BoolArg(false);
  return IsIntegral(dtype) ? IntArg(0) : NumberArg(0);
}

// tril(self, diagonal) and triu: where(col - row <= diagonal, self, 0) over
// the last two dims (>= for triu), contiguous.
absl::StatusOr<std::vector<int>> Triangle(Decomposer& d, bool lower) {
  const Meta self = d.tensor(0);
  if (self.dim() < 2) {
    return ArgError("self", "needs at least 2 dimensions");
  }
  auto arange = [&](int64_t n) {
    return d.EmitOne("aten.arange.default",
                     {IntArg(n), DTypeArg(v1::DTYPE_INT64), NoneArg(),
                      NoneArg(), NoneArg()});
  };
  AOTCACHE_ASSIGN_OR_RETURN(int rows, arange(self.shape[self.dim() - 2]));
  AOTCACHE_ASSIGN_OR_RETURN(int cols, arange(self.shape[self.dim() - 1]));
  AOTCACHE_ASSIGN_OR_RETURN(
      int column,
      d.EmitOne("aten.unsqueeze.default", {TensorArg(rows), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int offset, d.EmitOne("aten.sub.Tensor",
                            {TensorArg(cols), TensorArg(column), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int keep, d.EmitOne(lower ? "aten.le.Scalar" : "aten.ge.Scalar",
                          {TensorArg(offset), IntArg(d.arg(1).i)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int out, d.EmitOne("aten.where.self",
                         {TensorArg(keep), d.arg(0), ZeroOf(self.dtype)}));
  return Contiguous(d, out);
}
absl::StatusOr<std::vector<int>> Tril(Decomposer& d) {
  return Triangle(d, true);
}
absl::StatusOr<std::vector<int>> Triu(Decomposer& d) {
  return Triangle(d, false);
}

// bitwise_not of a bool tensor: self == false. (Of integers it would need
// exact integer kernels, which the runtime's float64 ones are not.)
absl::StatusOr<std::vector<int>> BitwiseNot(Decomposer& d) {
  if (d.tensor(0).dtype != v1::DTYPE_BOOL) {
    return ArgError(
        "self", absl::StrCat("bitwise_not of ", DTypeName(d.tensor(0).dtype),
                             " is not supported (bool only)"));
  }
  return d.Emit("aten.eq.Scalar", {d.arg(0), BoolArg(false)});
}

// silu(x) = x * sigmoid(x); its gradient follows from mul's and sigmoid's.
absl::StatusOr<std::vector<int>> Silu(Decomposer& d) {
  AOTCACHE_ASSIGN_OR_RETURN(int s,
                            d.EmitOne("aten.sigmoid.default", {d.arg(0)}));
  return d.Emit("aten.mul.Tensor", {d.arg(0), TensorArg(s)});
}

// native_batch_norm(input, weight?, bias?, running_mean?, running_var?,
// training, momentum, eps), whose torch 1.13 schema does not say that
// training writes the running statistics: the batch norm on the batch's
// statistics, then the updates written with copy_ under no_grad, as
// torch's kernel writes them (the variance unbiased); or, in eval, the
// batch norm on the running statistics.
absl::StatusOr<std::vector<int>> NativeBatchNorm(Decomposer& d) {
  bool training = d.arg(5).b;
  double momentum = d.arg(6).AsDouble(), eps = d.arg(7).AsDouble();
  if (!training) {
    if (d.arg(3).is_none() || d.arg(4).is_none()) {
      return ArgError("running_mean", "eval needs the running statistics");
    }
    return d.Emit("aten._native_batch_norm_legit_no_training.default",
                  {d.arg(0), d.arg(1), d.arg(2), d.arg(3), d.arg(4),
                   NumberArg(momentum), NumberArg(eps)});
  }
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int> results,
                            d.Emit("aten._native_batch_norm_legit.no_stats",
                                   {d.arg(0), d.arg(1), d.arg(2), BoolArg(true),
                                    NumberArg(momentum), NumberArg(eps)}));
  d.DisableGrad();
  // running = (1 - momentum) * running + momentum * batch.
  auto update = [&](const BoundArg& running, int batch) -> absl::Status {
    AOTCACHE_ASSIGN_OR_RETURN(
        int kept,
        d.EmitOne("aten.mul.Tensor", {running, NumberArg(1 - momentum)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int added,
        d.EmitOne("aten.mul.Tensor", {TensorArg(batch), NumberArg(momentum)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int sum, d.EmitOne("aten.add.Tensor",
                           {TensorArg(kept), TensorArg(added), IntArg(1)}));
    return d
        .Emit("aten.copy_.default", {running, TensorArg(sum), BoolArg(false)})
        .status();
  };
  if (!d.arg(3).is_none()) {
    AOTCACHE_RETURN_IF_ERROR(update(d.arg(3), results[1]));
  }
  if (!d.arg(4).is_none()) {
    std::vector<int64_t> dims = {0};
    for (int64_t k = 2; k < d.tensor(0).dim(); ++k) dims.push_back(k);
    AOTCACHE_ASSIGN_OR_RETURN(
        int var, d.EmitOne("aten.var.correction", {d.arg(0), IntsArg(dims),
                                                   IntArg(1), BoolArg(false)}));
    AOTCACHE_RETURN_IF_ERROR(update(d.arg(4), var));
  }
  return results;
}

const std::vector<Decomposition>& CoreDecompositions() {
  static const auto* table = new std::vector<Decomposition>{
      {"split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]",
       Split},
      // unsafe_split's chunks share self's memory as split's do; torch only
      // hides them from autograd's view tracking, which changes no value.
      {"unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> "
       "Tensor[]",
       Split},
      {"split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> "
       "Tensor[]",
       SplitWithSizes},
      {"unsafe_split_with_sizes(Tensor self, SymInt[] split_sizes, int "
       "dim=0) -> Tensor[]",
       SplitWithSizes},
      {"chunk(Tensor self, int chunks, int dim=0) -> Tensor[]", Chunk},
      {"unbind.int(Tensor self, int dim=0) -> Tensor[]", Unbind},
      {"stack(Tensor[] tensors, int dim=0) -> Tensor", Stack},
      {"masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
       MaskedFill},
      {"masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
       MaskedFill},
      {"fill.Tensor(Tensor self, Tensor value) -> Tensor", FillTensor},
      {"fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)",
       decompositions_internal::InPlaceOf<FillTensor>},
      {"masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> "
       "Tensor(a!)",
       decompositions_internal::InPlaceOf<MaskedFill>},
      {"masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> "
       "Tensor(a!)",
       decompositions_internal::InPlaceOf<MaskedFill>},
      {"tril(Tensor self, int diagonal=0) -> Tensor", Tril},
      {"triu(Tensor self, int diagonal=0) -> Tensor", Triu},
      {"bitwise_not(Tensor self) -> Tensor", BitwiseNot},
      {"silu(Tensor self) -> Tensor", Silu},
      {"native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, "
       "Tensor? running_mean, Tensor? running_var, bool training, float "
       "momentum, float eps) -> (Tensor, Tensor, Tensor)",
       NativeBatchNorm},
  };
  return *table;
}

}  // namespace

const std::vector<Decomposition>& Decompositions() {
  static const auto* table = [] {
    auto* all = new std::vector<Decomposition>(CoreDecompositions());
    for (const std::vector<Decomposition>* family :
         {&decompositions_internal::MathDecompositions(),
          &decompositions_internal::ActivationDecompositions(),
          &decompositions_internal::ReshapingDecompositions(),
          &decompositions_internal::UpsampleDecompositions(),
          &decompositions_internal::FoldDecompositions(),
          &decompositions_internal::EmbeddingBagDecompositions(),
          &decompositions_internal::LossDecompositions(),
          &decompositions_internal::NormDecompositions(),
          &decompositions_internal::AttentionDecompositions(),
          &decompositions_internal::RnnDecompositions()}) {
      all->insert(all->end(), family->begin(), family->end());
    }
    return all;
  }();
  return *table;
}

}  // namespace aotcache
