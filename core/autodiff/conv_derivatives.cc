#include "core/autodiff/conv_derivatives.h"

namespace aotcache {
namespace {

using C = GradContext;
BoundArg T(int local) { return TensorArg(local); }

// input, weight, bias: convolution_backward(grad, input, weight, bias_sizes,
// stride, padding, dilation, transposed, output_padding, groups, mask).
void Convolution(C& c) {
  bool has_bias = !c.arg(2).is_none();
  bool want[3] = {c.needs(0), c.needs(1), has_bias && c.needs(2)};
  BoundArg bias_sizes = has_bias ? IntsArg(c.InputMeta(2).shape) : NoneArg();
  std::vector<int> r = c.OpN(
      "aten.convolution_backward.default",
      {T(*c.grad()), T(c.Input(0)), T(c.Input(1)), bias_sizes,
       IntsArg(c.arg(3).ints), IntsArg(c.arg(4).ints), IntsArg(c.arg(5).ints),
       BoolArg(c.arg(6).b), IntsArg(c.arg(7).ints), IntArg(c.arg(8).i),
       IntsArg({want[0], want[1], want[2]})});
  for (int k = 0; k < 3; ++k) {
    if (want[k]) c.SetGrad(k, r[k]);
  }
}

}  // namespace

void AddConvDerivatives(DerivativeRules* rules) {
  rules->insert({{"aten.convolution.default", Convolution}});
}

}  // namespace aotcache
