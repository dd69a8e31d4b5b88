#include "core/autodiff/random_derivatives.h"

namespace aotcache {
namespace {

using C = GradContext;
BoundArg T(int local) { return TensorArg(local); }
BoundArg N(double v) { return NumberArg(v); }

// input: the gradient where the mask kept an element, scaled by 1/(1-p);
// in eval (train=False) the gradient itself. The mask is result 1.
void Dropout(C& c) {
  if (!c.grad(0).has_value()) return;
  double p = c.Number(1);
  bool train = c.arg(2).is_none() || c.arg(2).b;
  if (!train) {
    c.SetGrad(0, *c.grad(0));
    return;
  }
  int kept = c.Op("aten.mul.Tensor", {T(*c.grad(0)), T(c.Result(1))});
  c.SetGrad(
      0, c.Op("aten.mul.Tensor", {T(kept), N(p < 1 ? 1.0 / (1.0 - p) : 0.0)}));
}

// self: zeros_like(grad). bernoulli_(p) on a tensor that requires grad
// keeps its history with a zero gradient (the in-place form's rule is its
// functional counterpart's).
void Bernoulli(C& c) { c.SetGrad(0, c.Zeros(c.InputMeta(0))); }

}  // namespace

void AddRandomDerivatives(DerivativeRules* rules) {
  (*rules)["aten.native_dropout.default"] = Dropout;
  (*rules)["aten.bernoulli.default"] = Bernoulli;
  (*rules)["aten.bernoulli.p"] = Bernoulli;
}

}  // namespace aotcache
