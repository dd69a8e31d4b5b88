#include "core/autodiff/pooling_derivatives.h"

namespace aotcache {
namespace {

using C = GradContext;
BoundArg T(int local) { return TensorArg(local); }

// self: max_pool2d_with_indices_backward(grad, self, kernel_size, stride,
// padding, dilation, ceil_mode, indices). Only the values are
// differentiable.
void MaxPool2d(C& c) {
  if (!c.grad(0).has_value()) return;
  c.SetGrad(
      0, c.Op("aten.max_pool2d_with_indices_backward.default",
              {T(*c.grad(0)), T(c.Input(0)), IntsArg(c.arg(1).ints),
               IntsArg(c.arg(2).ints), IntsArg(c.arg(3).ints),
               IntsArg(c.arg(4).ints), BoolArg(c.arg(5).b), T(c.Result(1))}));
}

// self: avg_pool2d_backward(grad, self, kernel_size, stride, padding,
// ceil_mode, count_include_pad, divisor_override).
void AvgPool2d(C& c) {
  c.SetGrad(0, c.Op("aten.avg_pool2d_backward.default",
                    {T(*c.grad()), T(c.Input(0)), IntsArg(c.arg(1).ints),
                     IntsArg(c.arg(2).ints), IntsArg(c.arg(3).ints),
                     BoolArg(c.arg(4).b), BoolArg(c.arg(5).b),
                     c.arg(6).is_none() ? NoneArg() : IntArg(c.arg(6).i)}));
}

// self: _adaptive_avg_pool2d_backward(grad, self).
void AdaptiveAvgPool2d(C& c) {
  c.SetGrad(0, c.Op("aten._adaptive_avg_pool2d_backward.default",
                    {T(*c.grad()), T(c.Input(0))}));
}

// self: adaptive_max_pool2d_backward(grad, self, indices). Only the values
// are differentiable.
void AdaptiveMaxPool2d(C& c) {
  if (!c.grad(0).has_value()) return;
  c.SetGrad(0, c.Op("aten.adaptive_max_pool2d_backward.default",
                    {T(*c.grad(0)), T(c.Input(0)), T(c.Result(1))}));
}

}  // namespace

void AddPoolingDerivatives(DerivativeRules* rules) {
  rules->insert({{"aten.max_pool2d_with_indices.default", MaxPool2d},
                 {"aten.avg_pool2d.default", AvgPool2d},
                 {"aten._adaptive_avg_pool2d.default", AdaptiveAvgPool2d},
                 {"aten.adaptive_max_pool2d.default", AdaptiveMaxPool2d}});
}

}  // namespace aotcache
