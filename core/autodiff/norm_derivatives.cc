#include "core/autodiff/norm_derivatives.h"

namespace aotcache {
namespace {

using C = GradContext;
BoundArg T(int local) { return TensorArg(local); }

// input, weight, bias: native_batch_norm_backward(grad, input, weight,
// running_mean, running_var, save_mean, save_invstd, train, eps, mask).
// Only the normalized output is differentiable; the running statistics get
// no gradient (torch has none for them).
void BatchNorm(C& c, bool train) {
  if (!c.grad(0).has_value()) return;
  bool has_weight = !c.arg(1).is_none(), has_bias = !c.arg(2).is_none();
  if (!train && (c.needs(3) || c.needs(4))) {
    c.Unsupported("a gradient for the running statistics");
    return;
  }
  bool want[3] = {c.needs(0), has_weight && c.needs(1), has_bias && c.needs(2)};
  BoundArg weight = has_weight ? T(c.Input(1)) : NoneArg();
  std::vector<BoundArg> args = {T(*c.grad(0)), T(c.Input(0)), weight};
  if (train) {
    args.insert(args.end(),
                {NoneArg(), NoneArg(), T(c.Result(1)), T(c.Result(2)),
                 BoolArg(true), NumberArg(c.Number(5))});
  } else {
    args.insert(args.end(), {T(c.Input(3)), T(c.Input(4)), NoneArg(), NoneArg(),
                             BoolArg(false), NumberArg(c.Number(6))});
  }
  args.push_back(IntsArg({want[0], want[1], want[2]}));
  std::vector<int> r =
      c.OpN("aten.native_batch_norm_backward.default", std::move(args));
  for (int k = 0; k < 3; ++k) {
    if (want[k]) c.SetGrad(k, r[k]);
  }
}

void BatchNormTrain(C& c) { BatchNorm(c, true); }
void BatchNormEval(C& c) { BatchNorm(c, false); }

}  // namespace

void AddNormDerivatives(DerivativeRules* rules) {
  rules->insert(
      {{"aten._native_batch_norm_legit.no_stats", BatchNormTrain},
       {"aten._native_batch_norm_legit_no_training.default", BatchNormEval}});
}

}  // namespace aotcache
