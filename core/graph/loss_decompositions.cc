// The decompositions of losses and norms (decompositions.h): smooth_l1_loss,
// huber_loss, xlogy (kl_div's), nll_loss2d (cross entropy over images),
// std, norm and linalg_vector_norm (every p), and cdist's _cdist_forward and
// _euclidean_dist. Each computes torch's formula; gradients are those of the
// formula, which are torch's, with the same care at the points where a naive
// formula's gradient is not finite (xlogy at x = 0, the 2-norm of zeros and
// the zeros of a norm below 1: 0, as torch's).
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using decompositions_internal::ReduceLoss;
using Results = absl::StatusOr<std::vector<int>>;

// |x - y| < bound ? quadratic : linear, for smooth_l1 and huber:
// quadratic = q * d^2, linear = l * (|d| - c).
Results Piecewise(Decomposer& d, double bound, double q, double l, double c) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int diff,
      d.EmitOne("aten.sub.Tensor", {d.arg(0), d.arg(1), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int abs,
                            d.EmitOne("aten.abs.default", {TensorArg(diff)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int shifted, d.EmitOne("aten.sub.Scalar",
                             {TensorArg(abs), NumberArg(c), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int linear,
      d.EmitOne("aten.mul.Scalar", {TensorArg(shifted), NumberArg(l)}));
  int loss = linear;
  if (bound > 0) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int square,
        d.EmitOne("aten.mul.Tensor", {TensorArg(diff), TensorArg(diff)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int quadratic,
        d.EmitOne("aten.mul.Scalar", {TensorArg(square), NumberArg(q)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int inside,
        d.EmitOne("aten.lt.Scalar", {TensorArg(abs), NumberArg(bound)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        loss,
        d.EmitOne("aten.where.self", {TensorArg(inside), TensorArg(quadratic),
                                      TensorArg(linear)}));
  }
  return ReduceLoss(d, loss, d.arg(2));
}

// smooth_l1_loss(x, y, reduction, beta): 0.5 d^2 / beta where |d| < beta,
// else |d| - 0.5 beta; beta 0 is the l1 loss.
Results SmoothL1(Decomposer& d) {
  double beta = d.arg(3).AsDouble();
  if (beta < 0) return ArgError("beta", "must not be negative");
  return Piecewise(d, beta, beta > 0 ? 0.5 / beta : 0, 1, 0.5 * beta);
}

// huber_loss(x, y, reduction, delta): 0.5 d^2 where |d| < delta, else
// delta (|d| - 0.5 delta).
Results Huber(Decomposer& d) {
  double delta = d.arg(3).AsDouble();
  if (delta <= 0) return ArgError("delta", "must be positive");
  return Piecewise(d, delta, 0.5, delta, 0.5 * delta);
}

// xlogy(x, y) = x * l, l = log(y) except where x is 0 and log(y) infinite
// (there 0): 0 where x is 0, NaN where y is NaN, and torch's gradients:
// log(y) for x (also at x = 0), x / y for y.
Results Xlogy(Decomposer& d) {
  AOTCACHE_ASSIGN_OR_RETURN(int log, d.EmitOne("aten.log.default", {d.arg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int abs,
                            d.EmitOne("aten.abs.default", {TensorArg(log)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int infinite,
      d.EmitOne("aten.eq.Scalar",
                {TensorArg(abs),
                 NumberArg(std::numeric_limits<double>::infinity())}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int finite_log,
      d.EmitOne("aten.where.self",
                {TensorArg(infinite), NumberArg(0), TensorArg(log)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int zero, d.EmitOne("aten.eq.Scalar", {d.arg(0), NumberArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int l,
      d.EmitOne("aten.where.self",
                {TensorArg(zero), TensorArg(finite_log), TensorArg(log)}));
  return d.Emit("aten.mul.Tensor", {d.arg(0), TensorArg(l)});
}

// nll_loss2d_forward(self (N, C, H, W), target (N, H, W), weight?,
// reduction, ignore_index): nll_loss_forward over the pixels, self seen as
// (N H W, C) (channels last, made contiguous) and target as (N H W); a
// result per pixel (reduction none) seen as (N, H, W) again.
Results NllLoss2d(Decomposer& d) {
  const Meta self = d.tensor(0), target = d.tensor(1);
  if (self.dim() != 4 || target.dim() != 3 ||
      target.shape[0] != self.shape[0] || target.shape[1] != self.shape[2] ||
      target.shape[2] != self.shape[3]) {
    return ArgError("target", "must be (N, H, W) for an input (N, C, H, W)");
  }
  const int64_t pixels = self.shape[0] * self.shape[2] * self.shape[3];
  AOTCACHE_ASSIGN_OR_RETURN(
      int last,
      d.EmitOne("aten.permute.default", {d.arg(0), IntsArg({0, 2, 3, 1})}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int dense,
      d.EmitOne("aten.clone.default",
                {TensorArg(last), StringArg("torch.contiguous_format")}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int rows,
      d.EmitOne("aten._unsafe_view.default",
                {TensorArg(dense), IntsArg({pixels, self.shape[1]})}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int dense_target,
      d.EmitOne("aten.clone.default",
                {d.arg(1), StringArg("torch.contiguous_format")}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int flat_target, d.EmitOne("aten._unsafe_view.default",
                                 {TensorArg(dense_target), IntsArg({pixels})}));
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int> loss,
                            d.Emit("aten.nll_loss_forward.default",
                                   {TensorArg(rows), TensorArg(flat_target),
                                    d.arg(2), d.arg(3), d.arg(4)}));
  if (d.arg(3).i == 0) {
    AOTCACHE_ASSIGN_OR_RETURN(
        loss[0], d.EmitOne("aten._unsafe_view.default",
                           {TensorArg(loss[0]), IntsArg(target.shape)}));
  }
  return loss;
}

// std.correction = sqrt(var.correction), as torch computes it.
Results Std(Decomposer& d) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int var, d.EmitOne("aten.var.correction",
                         {d.arg(0), d.arg(1), d.arg(2), d.arg(3)}));
  return d.Emit("aten.sqrt.default", {TensorArg(var)});
}

// v^e where v is not 0, and 1^e (finite, with a finite gradient) where it
// is (sqrt when `square_root`): the callers put their own value at the
// zeros, whose mask comes along.
struct OffZero {
  int zero;
  int power;
};
absl::StatusOr<OffZero> PowerOffZero(Decomposer& d, int v, double e,
                                     bool square_root = false) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int zero, d.EmitOne("aten.eq.Scalar", {TensorArg(v), NumberArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int safe, d.EmitOne("aten.where.self",
                          {TensorArg(zero), NumberArg(1), TensorArg(v)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int power, square_root ? d.EmitOne("aten.sqrt.default", {TensorArg(safe)})
                             : d.EmitOne("aten.pow.Tensor_Scalar",
                                         {TensorArg(safe), NumberArg(e)}));
  return OffZero{zero, power};
}

// sum^(1/p), 0 (with gradient 0, as torch's) where sum is 0.
Results ZeroSafeRoot(Decomposer& d, int sum, double p) {
  AOTCACHE_ASSIGN_OR_RETURN(OffZero root, PowerOffZero(d, sum, 1 / p, p == 2));
  return d.Emit("aten.where.self",
                {TensorArg(root.zero), NumberArg(0), TensorArg(root.power)});
}

// |x|^p for p < 1 where the formula's gradient at x = 0 is not finite:
// there the power is 0 (p > 0) or inf (p < 0), its value, taken as
// |x| * 0 (+ inf): the gradient there is 0 times the norm's, which is
// torch's (0, or NaN when the norm's gradient is NaN or infinite).
absl::StatusOr<int> PowerBelowOne(Decomposer& d, int abs, double p) {
  AOTCACHE_ASSIGN_OR_RETURN(OffZero power, PowerOffZero(d, abs, p));
  AOTCACHE_ASSIGN_OR_RETURN(
      int at_zero,
      d.EmitOne("aten.mul.Scalar", {TensorArg(abs), NumberArg(0)}));
  if (p < 0) {
    AOTCACHE_ASSIGN_OR_RETURN(
        at_zero, d.EmitOne("aten.add.Scalar",
                           {TensorArg(at_zero),
                            NumberArg(std::numeric_limits<double>::infinity()),
                            NumberArg(1)}));
  }
  return d.EmitOne(
      "aten.where.self",
      {TensorArg(power.zero), TensorArg(at_zero), TensorArg(power.power)});
}

// The 0-"norm": how many elements are not 0 (NaN counts), with gradient 0
// for x as torch's: 1 or 0 read from x through a where nothing selects.
Results CountNonzero(Decomposer& d, const BoundArg& x, const BoundArg& dim,
                     const BoundArg& keepdim) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int never,
      d.EmitOne("aten.lt.Scalar",
                {x, NumberArg(-std::numeric_limits<double>::infinity())}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int zeros,
      d.EmitOne("aten.where.self", {TensorArg(never), x, NumberArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int ones, d.EmitOne("aten.add.Scalar",
                          {TensorArg(zeros), NumberArg(1), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int nonzero,
                            d.EmitOne("aten.ne.Scalar", {x, NumberArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int counted,
      d.EmitOne("aten.where.self",
                {TensorArg(nonzero), TensorArg(ones), TensorArg(zeros)}));
  return d.Emit("aten.sum.dim_IntList",
                {TensorArg(counted), dim, keepdim, NoneArg()});
}

// The p-norm of x over `dim` (None: every dim) for every p, as
// norm.ScalarOpt_dim (p? = 2) and linalg_vector_norm take it: sum |x|,
// max |x|, min |x| (p = -inf), the count of nonzeros (p = 0), or
// (sum |x|^p)^(1/p) (x^2 and sqrt for p = 2), 0 with gradient 0 where the
// sum is 0, as torch's; below 1, torch's gradient 0 at the zeros of x.
Results PNorm(Decomposer& d, const BoundArg& x, double p, BoundArg dim,
              const BoundArg& keepdim) {
  if (dim.is_none()) {  // Every dim.
    std::vector<int64_t> all;
    for (int64_t k = 0; k < d.meta(x.values[0]).dim(); ++k) all.push_back(k);
    dim = IntsArg(all);
  }
  if (p == 0) return CountNonzero(d, x, dim, keepdim);
  int power;
  if (p == 2) {
    AOTCACHE_ASSIGN_OR_RETURN(power, d.EmitOne("aten.mul.Tensor", {x, x}));
  } else {
    AOTCACHE_ASSIGN_OR_RETURN(int abs, d.EmitOne("aten.abs.default", {x}));
    if (p == 1) {
      return d.Emit("aten.sum.dim_IntList",
                    {TensorArg(abs), dim, keepdim, NoneArg()});
    }
    if (std::isinf(p) && p > 0) {
      return d.Emit("aten.amax.default", {TensorArg(abs), dim, keepdim});
    }
    if (std::isinf(p)) {  // min |x| = -max(-|x|)
      AOTCACHE_ASSIGN_OR_RETURN(
          int neg, d.EmitOne("aten.neg.default", {TensorArg(abs)}));
      AOTCACHE_ASSIGN_OR_RETURN(
          int max,
          d.EmitOne("aten.amax.default", {TensorArg(neg), dim, keepdim}));
      return d.Emit("aten.neg.default", {TensorArg(max)});
    }
    if (p < 1) {
      AOTCACHE_ASSIGN_OR_RETURN(power, PowerBelowOne(d, abs, p));
    } else {
      AOTCACHE_ASSIGN_OR_RETURN(
          power,
          d.EmitOne("aten.pow.Tensor_Scalar", {TensorArg(abs), NumberArg(p)}));
    }
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int sum, d.EmitOne("aten.sum.dim_IntList",
                         {TensorArg(power), dim, keepdim, NoneArg()}));
  if (p < 0) {  // sum >= 1 term > 0, or inf: no 0 to guard.
    return d.Emit("aten.pow.Tensor_Scalar", {TensorArg(sum), NumberArg(1 / p)});
  }
  return ZeroSafeRoot(d, sum, p);
}

// _cdist_forward(x1, x2, p, compute_mode): per pair of rows the p-norm of
// their difference (PNorm's p), as torch computes it for small inputs (it
// records _euclidean_dist for the large ones with p = 2).
Results CdistForward(Decomposer& d) {
  const Meta x1 = d.tensor(0), x2 = d.tensor(1);
  if (x1.dim() < 2 || x1.dim() != x2.dim() ||
      x1.shape.back() != x2.shape.back()) {
    return ArgError("x2", "must have x1's rank (at least 2) and row size");
  }
  if (d.arg(2).AsDouble() < 0) {
    return ArgError("p", "cdist only supports non-negative p values");
  }
  const int64_t rank = x1.dim();
  AOTCACHE_ASSIGN_OR_RETURN(
      int rows, d.EmitOne("aten.unsqueeze.default", {d.arg(0), IntArg(-2)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int columns, d.EmitOne("aten.unsqueeze.default", {d.arg(1), IntArg(-3)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int diff, d.EmitOne("aten.sub.Tensor",
                          {TensorArg(rows), TensorArg(columns), NumberArg(1)}));
  return PNorm(d, TensorArg(diff), d.arg(2).AsDouble(), IntsArg({rank}),
               BoolArg(false));
}

// _euclidean_dist(x1, x2) for 2-d or 3-d x1, x2, as torch computes it:
// sqrt(max(0, |a|^2 + |b|^2 - 2 a.b)) by one matrix product of
// [-2 x1, |x1|^2, 1] and [x2, 1, |x2|^2]; 0 with gradient 0 where that is 0.
Results EuclideanDist(Decomposer& d) {
  const Meta x1 = d.tensor(0), x2 = d.tensor(1);
  if ((x1.dim() != 2 && x1.dim() != 3) || x1.dim() != x2.dim() ||
      x1.shape.back() != x2.shape.back()) {
    return ArgError("x2", "must have x1's rank (2 or 3) and row size");
  }
  auto padded = [&](const BoundArg& x, double scale,
                    bool norm_first) -> absl::StatusOr<int> {
    AOTCACHE_ASSIGN_OR_RETURN(int square, d.EmitOne("aten.mul.Tensor", {x, x}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int norm,
        d.EmitOne("aten.sum.dim_IntList", {TensorArg(square), IntsArg({-1}),
                                           BoolArg(true), NoneArg()}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int ones, d.EmitOne("aten.ones_like.default",
                            {TensorArg(norm), NoneArg(), NoneArg(), NoneArg(),
                             NoneArg(), NoneArg()}));
    int scaled = x.values[0];
    if (scale != 1) {
      AOTCACHE_ASSIGN_OR_RETURN(
          scaled, d.EmitOne("aten.mul.Scalar", {x, NumberArg(scale)}));
    }
    std::vector<int> parts = {scaled, norm_first ? norm : ones,
                              norm_first ? ones : norm};
    return d.EmitOne("aten.cat.default", {TensorListArg(parts), IntArg(-1)});
  };
  AOTCACHE_ASSIGN_OR_RETURN(int a, padded(d.arg(0), -2, true));
  AOTCACHE_ASSIGN_OR_RETURN(int b, padded(d.arg(1), 1, false));
  AOTCACHE_ASSIGN_OR_RETURN(
      int b_t,
      d.EmitOne("aten.transpose.int", {TensorArg(b), IntArg(-1), IntArg(-2)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int product,
      d.EmitOne(x1.dim() == 2 ? "aten.mm.default" : "aten.bmm.default",
                {TensorArg(a), TensorArg(b_t)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int negative,
      d.EmitOne("aten.lt.Scalar", {TensorArg(product), NumberArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int clamped,
      d.EmitOne("aten.where.self",
                {TensorArg(negative), NumberArg(0), TensorArg(product)}));
  return ZeroSafeRoot(d, clamped, 2);
}

Results Norm(Decomposer& d) {
  return PNorm(d, d.arg(0), d.arg(1).is_none() ? 2 : d.arg(1).AsDouble(),
               d.arg(2), d.arg(3));
}

// linalg_vector_norm(x, ord, dim?, keepdim, dtype?): x cast to dtype first.
Results VectorNorm(Decomposer& d) {
  BoundArg x = d.arg(0);
  if (!d.arg(4).is_none()) {  // Computed in `dtype`, as torch does.
    AOTCACHE_ASSIGN_OR_RETURN(
        int cast, d.EmitOne("aten._to_copy.default",
                            {x, d.arg(4), NoneArg(), NoneArg(), NoneArg(),
                             BoolArg(false), NoneArg()}));
    x = TensorArg(cast);
  }
  return PNorm(d, x, d.arg(1).AsDouble(), d.arg(2), d.arg(3));
}

}  // namespace

namespace decompositions_internal {

const std::vector<Decomposition>& LossDecompositions() {
  static const auto* table = new std::vector<Decomposition>{
      {"smooth_l1_loss(Tensor self, Tensor target, int reduction=Mean, float "
       "beta=1.0) -> Tensor",
       SmoothL1},
      {"huber_loss(Tensor self, Tensor target, int reduction=Mean, float "
       "delta=1.0) -> Tensor",
       Huber},
      {"xlogy.Tensor(Tensor self, Tensor other) -> Tensor", Xlogy},
      {"nll_loss2d_forward(Tensor self, Tensor target, Tensor? weight, int "
       "reduction, SymInt ignore_index) -> (Tensor, Tensor)",
       NllLoss2d},
      {"std.correction(Tensor self, int[1]? dim=None, *, int? correction=None, "
       "bool keepdim=False) -> Tensor",
       Std},
      {"norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool "
       "keepdim=False) -> Tensor",
       Norm},
      {"linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool "
       "keepdim=False, *, ScalarType? dtype=None) -> Tensor",
       VectorNorm},
      {"_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> "
       "Tensor",
       CdistForward},
      {"_euclidean_dist(Tensor x1, Tensor x2) -> Tensor", EuclideanDist},
  };
  return *table;
}

}  // namespace decompositions_internal
}  // namespace aotcache
