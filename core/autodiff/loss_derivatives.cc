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

}  // namespace

void AddLossDerivatives(DerivativeRules* rules) {
  rules->insert({{"aten.nll_loss_forward.default", NllLoss}});
}

}  // namespace aotcache
