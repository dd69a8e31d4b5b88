#include "core/autodiff/loss_derivatives.h"

namespace aotcache {
namespace {

using C = GradContext;
BoundArg T(int local) { return TensorArg(local); }

// self: nll_loss_backward(grad, self, target, weight, reduction,
// ignore_index, total_weight); target is not differentiable, and torch has
// no formula for weight either.
void NllLoss(C& c) {
  if (!c.grad(0).has_value()) return;  // Only the loss is differentiable.
  bool has_weight = !c.arg(2).is_none();
  if (has_weight && c.needs(2)) {
    c.Unsupported("nll_loss's gradient for weight (torch has none either)");
    return;
  }
  if (!c.needs(0)) return;
  c.SetGrad(0, c.Op("aten.nll_loss_backward.default",
                    {T(*c.grad(0)), T(c.Input(0)), T(c.Input(1)),
                     has_weight ? T(c.Input(2)) : NoneArg(), IntArg(c.arg(3).i),
                     IntArg(c.arg(4).i), T(c.Result(1))}));
}

// self: binary_cross_entropy_backward(grad, self, target, weight,
// reduction); target: -logit(self) grad weight (over the element count for
// mean: +inf or -inf where self is 0 or 1, as torch's); torch has no formula
// for weight.
void BinaryCrossEntropy(C& c) {
  if (!c.grad(0).has_value()) return;
  bool has_weight = !c.arg(2).is_none();
  if (has_weight && c.needs(2)) {
    c.Unsupported(
        "binary_cross_entropy's gradient for weight (torch has none either)");
    return;
  }
  int64_t reduction = c.arg(3).i;
  BoundArg weight = has_weight ? T(c.Input(2)) : NoneArg();
  if (c.needs(0)) {
    c.SetGrad(0, c.Op("aten.binary_cross_entropy_backward.default",
                      {T(*c.grad(0)), T(c.Input(0)), T(c.Input(1)), weight,
                       IntArg(reduction)}));
  }
  if (!c.needs(1)) return;
  int x = c.Input(0);
  int one_minus_x =
      c.Op("aten.add.Scalar",
           {T(c.Op("aten.neg.default", {T(x)})), NumberArg(1), NumberArg(1)});
  int odds = c.Op("aten.div.Tensor", {T(x), T(one_minus_x)});
  int minus_logit =
      c.Op("aten.neg.default", {T(c.Op("aten.log.default", {T(odds)}))});
  int g = c.Op("aten.mul.Tensor", {T(minus_logit), T(*c.grad(0))});
  if (has_weight) g = c.Op("aten.mul.Tensor", {T(g), weight});
  if (reduction == 1) {
    g = c.Op("aten.div.Scalar",
             {T(g), NumberArg(static_cast<double>(c.InputMeta(0).numel()))});
  }
  c.SetGrad(1, g);
}

}  // namespace

void AddLossDerivatives(DerivativeRules* rules) {
  rules->insert({{"aten.nll_loss_forward.default", NllLoss},
                 {"aten.binary_cross_entropy.default", BinaryCrossEntropy}});
}

}  // namespace aotcache
