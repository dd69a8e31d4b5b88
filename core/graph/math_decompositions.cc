// The decompositions of clamps (and their in-place forms), full_like,
// scalar_tensor, the selecting reductions (max.dim, min.dim, min),
// var_mean, logsumexp, baddbmm and
// binary_cross_entropy_with_logits (decompositions.h). Each keeps torch's
// gradient: a clamp passes it where min <= x <= max, max.dim sends it to the
// selected index only, max() spreads it over ties (max is an op of the
// registry, with that rule).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using decompositions_internal::InPlaceOf;
using decompositions_internal::ReduceLoss;
using decompositions_internal::WrapDim;
using Results = absl::StatusOr<std::vector<int>>;

// clamp(self, min?, max?): where(x < min, min, x), then where(> max, max),
// as torch's min(max(x, min), max): max wins when min > max, NaN stays NaN.
Results Clamp(Decomposer& d, const BoundArg& lo, const BoundArg& hi) {
  const Meta self = d.tensor(0);
  if (self.dtype == v1::DTYPE_BOOL) return ArgError("self", "bool input");
  if (lo.is_none() && hi.is_none()) {
    return ArgError("min", "one of min and max must not be None");
  }
  for (const BoundArg* bound : {&lo, &hi}) {  // Numbers, by the schema.
    if (!bound->is_none() && std::isnan(bound->AsDouble())) {
      return ArgError(bound == &lo ? "min" : "max", "a NaN bound");
    }
  }
  BoundArg x = d.arg(0);
  const char* tests[] = {"aten.lt.Scalar", "aten.gt.Scalar"};
  const BoundArg* bounds[] = {&lo, &hi};
  for (int k = 0; k < 2; ++k) {
    if (bounds[k]->is_none()) continue;
    AOTCACHE_ASSIGN_OR_RETURN(int past, d.EmitOne(tests[k], {x, *bounds[k]}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int clamped,
        d.EmitOne("aten.where.self", {TensorArg(past), *bounds[k], x}));
    x = TensorArg(clamped);
  }
  return std::vector<int>{x.values[0]};
}
Results ClampBoth(Decomposer& d) { return Clamp(d, d.arg(1), d.arg(2)); }
Results ClampMin(Decomposer& d) { return Clamp(d, d.arg(1), NoneArg()); }

// clamp_min.Tensor(self, min) (torch 2.x's cosine_similarity): max(self,
// min) with NaN from either, and torch's gradient: to self where self >=
// min (ties included), to min where self < min, to neither where one is
// NaN. where(self >= min, self, where(self < min, min, m)), with m the
// detached maximum, which only the NaN positions read.
Results ClampMinTensor(Decomposer& d) {
  const Meta self = d.tensor(0);
  if (self.dtype == v1::DTYPE_BOOL) return ArgError("self", "bool input");
  if (d.tensor(1).dtype != self.dtype) {
    return ArgError("min", "must have self's dtype");
  }
  AOTCACHE_ASSIGN_OR_RETURN(int keep,
                            d.EmitOne("aten.ge.Tensor", {d.arg(0), d.arg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int raise,
                            d.EmitOne("aten.lt.Tensor", {d.arg(0), d.arg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int larger, d.EmitOne("aten.maximum.default", {d.arg(0), d.arg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int nan, d.EmitOne("aten.detach.default", {TensorArg(larger)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int raised, d.EmitOne("aten.where.self",
                            {TensorArg(raise), d.arg(1), TensorArg(nan)}));
  return d.Emit("aten.where.self",
                {TensorArg(keep), d.arg(0), TensorArg(raised)});
}
Results ClampMax(Decomposer& d) { return Clamp(d, NoneArg(), d.arg(1)); }

// full_like(self, value, dtype?, ...): fill(empty_like(self, dtype?, ...)).
Results FullLike(Decomposer& d) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int empty,
      d.EmitOne("aten.empty_like.default",
                {d.arg(0), d.arg(2), d.arg(3), d.arg(4), d.arg(5), d.arg(6)}));
  return d.Emit("aten.fill.Scalar", {TensorArg(empty), d.arg(1)});
}

// scalar_tensor(s, dtype?, ...): full([], s), float32 unless dtype says.
Results ScalarTensor(Decomposer& d) {
  BoundArg dtype = d.arg(1);
  if (dtype.is_none()) dtype = DTypeArg(v1::DTYPE_FLOAT32);
  return d.Emit("aten.full.default",
                {IntsArg({}), d.arg(0), dtype, d.arg(2), d.arg(3), d.arg(4)});
}

// sort.stable(self, *, stable, dim, descending): the registry's sort, which
// is stable whatever `stable` says (torch leaves the order of ties
// unspecified without it).
Results SortStable(Decomposer& d) {
  return d.Emit("aten.sort.default", {d.arg(0), d.arg(2), d.arg(3)});
}

// argsort.stable(self, *, stable, dim, descending): that sort's indices.
Results ArgsortStable(Decomposer& d) {
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int> sorted, SortStable(d));
  return std::vector<int>{sorted[1]};
}

// max.dim(self, dim, keepdim) and min.dim: (gather(self, dim, i), i) for
// i = argmax(self, dim, keepdim), so that the gradient reaches the selected
// element only (torch's value_selecting_reduction_backward).
Results SelectingReduction(Decomposer& d, bool max) {
  const Meta self = d.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                            WrapDim("dim", d.arg(1).i, self.dim()));
  bool keepdim = d.arg(2).b;
  AOTCACHE_ASSIGN_OR_RETURN(
      int indices,
      d.EmitOne(max ? "aten.argmax.default" : "aten.argmin.default",
                {d.arg(0), IntArg(dim), BoolArg(keepdim)}));
  int index = indices;
  if (!keepdim) {
    AOTCACHE_ASSIGN_OR_RETURN(
        index,
        d.EmitOne("aten.unsqueeze.default", {TensorArg(indices), IntArg(dim)}));
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int values,
      d.EmitOne("aten.gather.default",
                {d.arg(0), IntArg(dim), TensorArg(index), BoolArg(false)}));
  if (!keepdim) {
    // A fresh result, as torch's, not a view of the gathered values.
    AOTCACHE_ASSIGN_OR_RETURN(
        values, d.EmitOne("aten._unsafe_view.default",
                          {TensorArg(values), IntsArg(d.meta(indices).shape)}));
  }
  return std::vector<int>{values, indices};
}
Results MaxDim(Decomposer& d) { return SelectingReduction(d, true); }
Results MinDim(Decomposer& d) { return SelectingReduction(d, false); }

// min(self) = -max(-self): the same ties, the same NaNs.
Results MinAll(Decomposer& d) {
  AOTCACHE_ASSIGN_OR_RETURN(int negated,
                            d.EmitOne("aten.neg.default", {d.arg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int max, d.EmitOne("aten.max.default", {TensorArg(negated)}));
  return d.Emit("aten.neg.default", {TensorArg(max)});
}
Results MaxOther(Decomposer& d) {
  return d.Emit("aten.maximum.default", {d.arg(0), d.arg(1)});
}
Results MinOther(Decomposer& d) {
  return d.Emit("aten.minimum.default", {d.arg(0), d.arg(1)});
}

// var_mean.correction(self, dim?, correction?, keepdim): (var, mean).
Results VarMean(Decomposer& d) {
  BoundArg dims = d.arg(1);
  if (dims.is_none()) {
    std::vector<int64_t> all;
    for (int64_t k = 0; k < d.tensor(0).dim(); ++k) all.push_back(k);
    dims = IntsArg(all);
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int var,
      d.EmitOne("aten.var.correction", {d.arg(0), dims, d.arg(2), d.arg(3)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int mean,
      d.EmitOne("aten.mean.dim", {d.arg(0), dims, d.arg(3), NoneArg()}));
  return std::vector<int>{var, mean};
}

// logsumexp(self, dim, keepdim).
Results Logsumexp(Decomposer& d) {
  AOTCACHE_ASSIGN_OR_RETURN(int result, decompositions_internal::LogSumExp(
                                            d, d.arg(0), d.arg(1), d.arg(2).b));
  return std::vector<int>{result};
}

// baddbmm(self, batch1, batch2, beta, alpha): alpha * bmm + beta * self;
// self is not read when beta is 0 (a NaN there does not propagate).
Results Baddbmm(Decomposer& d) {
  const Meta self = d.tensor(0);
  double beta = d.arg(3).AsDouble(), alpha = d.arg(4).AsDouble();
  AOTCACHE_ASSIGN_OR_RETURN(
      int product, d.EmitOne("aten.bmm.default", {d.arg(1), d.arg(2)}));
  const Meta out = d.meta(product);
  if (self.dtype != out.dtype) {
    return ArgError(
        "self", absl::StrCat("dtype ", DTypeName(self.dtype),
                             " is not the batches' ", DTypeName(out.dtype)));
  }
  bool broadcasts = self.dim() <= out.dim();
  for (int64_t k = 1; broadcasts && k <= self.dim(); ++k) {
    int64_t s = self.shape[self.dim() - k];
    broadcasts = s == 1 || s == out.shape[out.dim() - k];
  }
  if (!broadcasts) {
    return ArgError("self", "does not broadcast to the product's shape");
  }
  int result = product;
  if (alpha != 1) {
    AOTCACHE_ASSIGN_OR_RETURN(
        result, d.EmitOne("aten.mul.Scalar", {TensorArg(result), d.arg(4)}));
  }
  if (beta != 0) {
    AOTCACHE_ASSIGN_OR_RETURN(
        result,
        d.EmitOne("aten.add.Tensor", {TensorArg(result), d.arg(0), d.arg(3)}));
  } else {
    // where(true, result, self): self's values unread, its gradient zero
    // (as torch's grad * beta), not none.
    AOTCACHE_ASSIGN_OR_RETURN(
        int yes,
        d.EmitOne("aten.full.default",
                  {IntsArg({}), BoolArg(true), DTypeArg(v1::DTYPE_BOOL),
                   NoneArg(), NoneArg(), NoneArg()}));
    AOTCACHE_ASSIGN_OR_RETURN(
        result, d.EmitOne("aten.where.self",
                          {TensorArg(yes), TensorArg(result), d.arg(0)}));
  }
  return std::vector<int>{result};
}

// binary_cross_entropy_with_logits(x, t, weight?, pos_weight?, reduction):
// (1 - t) x + lw softplus(-x), lw = 1 + (pos_weight - 1) t, softplus(-x) =
// m + log(exp(-m) + exp(-x - m)) for m = max(-x, 0), as torch computes it
// (no overflow for large |x|), times weight, then reduced.
Results BceWithLogits(Decomposer& d) {
  const Meta x = d.tensor(0);
  if (d.tensor(1).shape != x.shape) {
    return ArgError("target", "must have the input's shape");
  }
  int64_t reduction = d.arg(4).i;
  if (reduction < 0 || reduction > 2) {
    return ArgError("reduction", "must be 0 (none), 1 (mean) or 2 (sum)");
  }
  auto op = [&](absl::string_view name, std::vector<BoundArg> args) {
    return d.EmitOne(name, std::move(args));
  };
  AOTCACHE_ASSIGN_OR_RETURN(int neg_x, op("aten.neg.default", {d.arg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(int m, op("aten.relu.default", {TensorArg(neg_x)}));
  AOTCACHE_ASSIGN_OR_RETURN(int neg_m, op("aten.neg.default", {TensorArg(m)}));
  AOTCACHE_ASSIGN_OR_RETURN(int a, op("aten.exp.default", {TensorArg(neg_m)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int shifted,
      op("aten.sub.Tensor", {TensorArg(neg_x), TensorArg(m), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int b,
                            op("aten.exp.default", {TensorArg(shifted)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int ab, op("aten.add.Tensor", {TensorArg(a), TensorArg(b), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int log_ab,
                            op("aten.log.default", {TensorArg(ab)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int softplus,
      op("aten.add.Tensor", {TensorArg(m), TensorArg(log_ab), IntArg(1)}));
  if (!d.arg(3).is_none()) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int pw_1, op("aten.sub.Scalar", {d.arg(3), IntArg(1), IntArg(1)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int scaled, op("aten.mul.Tensor", {TensorArg(pw_1), d.arg(1)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int lw,
        op("aten.add.Scalar", {TensorArg(scaled), IntArg(1), IntArg(1)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        softplus, op("aten.mul.Tensor", {TensorArg(lw), TensorArg(softplus)}));
  }
  AOTCACHE_ASSIGN_OR_RETURN(int neg_t, op("aten.neg.default", {d.arg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int one_minus_t,
      op("aten.add.Scalar", {TensorArg(neg_t), IntArg(1), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int linear, op("aten.mul.Tensor", {TensorArg(one_minus_t), d.arg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int loss, op("aten.add.Tensor",
                   {TensorArg(linear), TensorArg(softplus), IntArg(1)}));
  if (!d.arg(2).is_none()) {
    AOTCACHE_ASSIGN_OR_RETURN(
        loss, op("aten.mul.Tensor", {TensorArg(loss), d.arg(2)}));
  }
  if (d.meta(loss).shape != x.shape) {
    return ArgError("weight", "weights must broadcast to the input's shape");
  }
  return ReduceLoss(d, loss, d.arg(4));
}

}  // namespace

namespace decompositions_internal {

absl::StatusOr<int> LogSumExp(Decomposer& d, const BoundArg& x,
                              const BoundArg& dims, bool keepdim) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int m, d.EmitOne("aten.amax.default", {x, dims, BoolArg(true)}));
  AOTCACHE_ASSIGN_OR_RETURN(int abs,
                            d.EmitOne("aten.abs.default", {TensorArg(m)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int infinite,
      d.EmitOne("aten.eq.Scalar", {TensorArg(abs), NumberArg(INFINITY)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int shift, d.EmitOne("aten.where.self",
                           {TensorArg(infinite), NumberArg(0), TensorArg(m)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int centered,
      d.EmitOne("aten.sub.Tensor", {x, TensorArg(shift), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int e, d.EmitOne("aten.exp.default", {TensorArg(centered)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int sum, d.EmitOne("aten.sum.dim_IntList",
                         {TensorArg(e), dims, BoolArg(keepdim), NoneArg()}));
  AOTCACHE_ASSIGN_OR_RETURN(int log,
                            d.EmitOne("aten.log.default", {TensorArg(sum)}));
  int offset = shift;
  if (!keepdim) {
    AOTCACHE_ASSIGN_OR_RETURN(
        offset, d.EmitOne("aten._unsafe_view.default",
                          {TensorArg(shift), IntsArg(d.meta(log).shape)}));
  }
  return d.EmitOne("aten.add.Tensor",
                   {TensorArg(log), TensorArg(offset), NumberArg(1)});
}

const std::vector<Decomposition>& MathDecompositions() {
  static const auto* table = new std::vector<Decomposition>{
      {"clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
       ClampBoth},
      {"clamp_min(Tensor self, Scalar min) -> Tensor", ClampMin},
      {"sort.stable(Tensor self, *, bool? stable, int dim=-1, bool "
       "descending=False) -> (Tensor, Tensor)",
       SortStable},
      {"argsort.stable(Tensor self, *, bool stable, int dim=-1, bool "
       "descending=False) -> Tensor",
       ArgsortStable},
      {"clamp_max(Tensor self, Scalar max) -> Tensor", ClampMax},
      {"clamp_min.Tensor(Tensor self, Tensor min) -> Tensor", ClampMinTensor},
      {"clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> "
       "Tensor(a!)",
       InPlaceOf<ClampBoth>},
      {"clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)",
       InPlaceOf<ClampMin>},
      {"clamp_min_.Tensor(Tensor(a!) self, Tensor min) -> Tensor(a!)",
       InPlaceOf<ClampMinTensor>},
      {"clamp_max_(Tensor(a!) self, Scalar max) -> Tensor(a!)",
       InPlaceOf<ClampMax>},
      {"logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
       Logsumexp},
      {"full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None, "
       "MemoryFormat? memory_format=None) -> Tensor",
       FullLike},
      {"scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? "
       "layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
       ScalarTensor},
      {"max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor, "
       "Tensor)",
       MaxDim},
      {"min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor, "
       "Tensor)",
       MinDim},
      {"min(Tensor self) -> Tensor", MinAll},
      {"max.other(Tensor self, Tensor other) -> Tensor", MaxOther},
      {"min.other(Tensor self, Tensor other) -> Tensor", MinOther},
      {"var_mean.correction(Tensor self, int[1]? dim=None, *, int? "
       "correction=None, bool keepdim=False) -> (Tensor, Tensor)",
       VarMean},
      {"baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
       "Scalar alpha=1) -> Tensor",
       Baddbmm},
      {"binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? "
       "weight=None, Tensor? pos_weight=None, int reduction=Mean) -> Tensor",
       BceWithLogits},
  };
  return *table;
}

}  // namespace decompositions_internal
}  // namespace aotcache
