// The decompositions of losses and norms (decompositions.h): smooth_l1_loss,
// huber_loss, binary_cross_entropy, xlogy (kl_div's), nll_loss2d (cross
// entropy over images), std, norm and linalg_vector_norm (p = 1, inf or
// any p > 1), and cdist's _cdist_forward and _euclidean_dist. Each computes
// torch's formula; gradients are those of the formula, which are torch's, with
// the same care at the points where a naive formula's gradient is not finite
// (xlogy at x = 0, the 2-norm of zeros: 0, as torch's); binary_cross_entropy's
// gradient for its input is torch's capped one, put in beside the formula.
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

// max(log(v), -100), as torch clamps binary_cross_entropy's logs.
absl::StatusOr<int> ClampedLog(Decomposer& d, const BoundArg& v) {
  AOTCACHE_ASSIGN_OR_RETURN(int log, d.EmitOne("aten.log.default", {v}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int low, d.EmitOne("aten.lt.Scalar", {TensorArg(log), NumberArg(-100)}));
  return d.EmitOne("aten.where.self",
                   {TensorArg(low), NumberArg(-100), TensorArg(log)});
}

// 1 - v.
absl::StatusOr<int> OneMinus(Decomposer& d, const BoundArg& v) {
  AOTCACHE_ASSIGN_OR_RETURN(int neg, d.EmitOne("aten.neg.default", {v}));
  return d.EmitOne("aten.add.Scalar",
                   {TensorArg(neg), NumberArg(1), NumberArg(1)});
}

// torch's gradient of binary_cross_entropy for its input at `x` (detached):
// (x - y) / max(x (1 - x), 1e-12), not the formula's (finite where x is 0
// or 1, capped where x (1 - x) is tiny).
absl::StatusOr<int> InputGradient(Decomposer& d, int x, int one_minus_x) {
  AOTCACHE_ASSIGN_OR_RETURN(int y,
                            d.EmitOne("aten.detach.default", {d.arg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int diff,
      d.EmitOne("aten.sub.Tensor", {TensorArg(x), TensorArg(y), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int product,
      d.EmitOne("aten.mul.Tensor", {TensorArg(x), TensorArg(one_minus_x)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int small,
      d.EmitOne("aten.lt.Scalar", {TensorArg(product), NumberArg(1e-12)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int denominator,
      d.EmitOne("aten.where.self",
                {TensorArg(small), NumberArg(1e-12), TensorArg(product)}));
  return d.EmitOne("aten.div.Tensor",
                   {TensorArg(diff), TensorArg(denominator)});
}

// binary_cross_entropy(x, y, weight?, reduction):
// -weight (y log x + (1 - y) log(1 - x)), each log at least -100, computed
// on detach(x); the loss then gains (x - detach(x)) g, which adds 0 to its
// value and torch's gradient g (InputGradient) for x.
Results BinaryCrossEntropy(Decomposer& d) {
  if (d.tensor(1).shape != d.tensor(0).shape) {
    return ArgError("target", "must have the input's shape");
  }
  AOTCACHE_ASSIGN_OR_RETURN(int x,
                            d.EmitOne("aten.detach.default", {d.arg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(int log_x, ClampedLog(d, TensorArg(x)));
  AOTCACHE_ASSIGN_OR_RETURN(int one_minus_x, OneMinus(d, TensorArg(x)));
  AOTCACHE_ASSIGN_OR_RETURN(int log_1x, ClampedLog(d, TensorArg(one_minus_x)));
  AOTCACHE_ASSIGN_OR_RETURN(int one_minus_y, OneMinus(d, d.arg(1)));
  AOTCACHE_ASSIGN_OR_RETURN(
      int a, d.EmitOne("aten.mul.Tensor", {d.arg(1), TensorArg(log_x)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int b, d.EmitOne("aten.mul.Tensor",
                       {TensorArg(one_minus_y), TensorArg(log_1x)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int sum,
      d.EmitOne("aten.add.Tensor", {TensorArg(a), TensorArg(b), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int value,
                            d.EmitOne("aten.neg.default", {TensorArg(sum)}));
  AOTCACHE_ASSIGN_OR_RETURN(int gradient, InputGradient(d, x, one_minus_x));
  AOTCACHE_ASSIGN_OR_RETURN(
      int zero,
      d.EmitOne("aten.sub.Tensor", {d.arg(0), TensorArg(x), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int correction,
      d.EmitOne("aten.mul.Tensor", {TensorArg(zero), TensorArg(gradient)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int loss,
      d.EmitOne("aten.add.Tensor",
                {TensorArg(value), TensorArg(correction), NumberArg(1)}));
  if (!d.arg(2).is_none()) {
    AOTCACHE_ASSIGN_OR_RETURN(
        loss, d.EmitOne("aten.mul.Tensor", {TensorArg(loss), d.arg(2)}));
    if (d.meta(loss).shape != d.tensor(0).shape) {
      return ArgError("weight", "must broadcast to the input's shape");
    }
  }
  return ReduceLoss(d, loss, d.arg(3));
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

// sum^(1/p), 0 (with gradient 0, as torch's) where sum is 0.
Results ZeroSafeRoot(Decomposer& d, int sum, double p) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int zero, d.EmitOne("aten.eq.Scalar", {TensorArg(sum), NumberArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int safe, d.EmitOne("aten.where.self",
                          {TensorArg(zero), NumberArg(1), TensorArg(sum)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int root, p == 2 ? d.EmitOne("aten.sqrt.default", {TensorArg(safe)})
                       : d.EmitOne("aten.pow.Tensor_Scalar",
                                   {TensorArg(safe), NumberArg(1 / p)}));
  return d.Emit("aten.where.self",
                {TensorArg(zero), NumberArg(0), TensorArg(root)});
}

// The p-norm of x over `dim` (None: every dim) for p = 1, inf and every p > 1,
// as norm.ScalarOpt_dim (p? = 2) and linalg_vector_norm take it: sum |x|,
// max |x|, or (sum |x|^p)^(1/p) (x^2 and sqrt for p = 2), 0 with gradient 0
// where the sum is 0, as torch's. Below 1 torch's gradient is not the
// formula's at zeros: refused.
Results PNorm(Decomposer& d, const BoundArg& x, double p, BoundArg dim,
              const BoundArg& keepdim) {
  if (dim.is_none()) {  // Every dim.
    std::vector<int64_t> all;
    for (int64_t k = 0; k < d.meta(x.values[0]).dim(); ++k) all.push_back(k);
    dim = IntsArg(all);
  }
  if (std::isinf(p) && p < 0) return ArgError("p", "-inf is not supported");
  if (p < 1) {
    return ArgError("p", absl::StrCat("the ", p,
                                      "-norm is not supported (1, inf and "
                                      "every p > 1 are)"));
  }
  int power;
  if (p == 2) {
    AOTCACHE_ASSIGN_OR_RETURN(power, d.EmitOne("aten.mul.Tensor", {x, x}));
  } else {
    AOTCACHE_ASSIGN_OR_RETURN(int abs, d.EmitOne("aten.abs.default", {x}));
    if (p == 1) {
      return d.Emit("aten.sum.dim_IntList",
                    {TensorArg(abs), dim, keepdim, NoneArg()});
    }
    if (std::isinf(p)) {
      return d.Emit("aten.amax.default", {TensorArg(abs), dim, keepdim});
    }
    AOTCACHE_ASSIGN_OR_RETURN(power, d.EmitOne("aten.pow.Tensor_Scalar",
                                               {TensorArg(abs), NumberArg(p)}));
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int sum, d.EmitOne("aten.sum.dim_IntList",
                         {TensorArg(power), dim, keepdim, NoneArg()}));
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
// linalg_vector_norm(x, ord, dim?, keepdim, dtype?): a dtype is refused.
Results VectorNorm(Decomposer& d) {
  if (!d.arg(4).is_none()) return ArgError("dtype", "is not supported");
  return PNorm(d, d.arg(0), d.arg(1).AsDouble(), d.arg(2), d.arg(3));
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
      {"binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, "
       "int reduction=Mean) -> Tensor",
       BinaryCrossEntropy},
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
