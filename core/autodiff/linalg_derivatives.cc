#include "core/autodiff/linalg_derivatives.h"

namespace aotcache {
namespace {

using C = GradContext;
BoundArg T(int local) { return TensorArg(local); }
BoundArg N(double v) { return NumberArg(v); }

int Tr(C& c, int x) { return c.Op("aten.t.default", {T(x)}); }

// A matrix laid out column-major: the transpose of a contiguous one, as
// nn.Linear's t(weight) is.
bool ColumnMajor(const Meta& m) {
  return m.dim() == 2 && m.stride[0] == 1 && m.stride[1] == m.shape[0];
}

// The gradients of a = arguments a_arg and b = b_arg of a product a @ b
// (FunctionsManual's mm_mat1_backward and mm_mat2_backward): g @ b^T and
// a^T @ g, computed transposed when that operand is column-major so that the
// gradient has the operand's layout (nn.Linear's weight gradient then comes
// back contiguous, as eager's does, and accumulates without a copy).
int MatmulGradA(C& c, int g, int a_arg, int b_arg) {
  if (ColumnMajor(c.InputMeta(a_arg))) {
    return Tr(c, c.Op("aten.mm.default", {T(c.Input(b_arg)), T(Tr(c, g))}));
  }
  return c.Op("aten.mm.default", {T(g), T(Tr(c, c.Input(b_arg)))});
}
int MatmulGradB(C& c, int g, int a_arg, int b_arg) {
  if (ColumnMajor(c.InputMeta(b_arg))) {
    return Tr(c, c.Op("aten.mm.default", {T(Tr(c, g)), T(c.Input(a_arg))}));
  }
  return c.Op("aten.mm.default", {T(Tr(c, c.Input(a_arg))), T(g)});
}

void Mm(C& c) {
  int g = *c.grad();
  if (c.needs(0)) c.SetGrad(0, MatmulGradA(c, g, 0, 1));
  if (c.needs(1)) c.SetGrad(1, MatmulGradB(c, g, 0, 1));
}

void Addmm(C& c) {
  int g = *c.grad();
  double beta = c.Number(3), alpha = c.Number(4);
  auto scaled = [&](int x, double s) {
    return s == 1 ? x : c.Op("aten.mul.Tensor", {T(x), N(s)});
  };
  if (c.needs(0)) c.SetGrad(0, scaled(g, beta));
  if (c.needs(1)) c.SetGrad(1, scaled(MatmulGradA(c, g, 1, 2), alpha));
  if (c.needs(2)) c.SetGrad(2, scaled(MatmulGradB(c, g, 1, 2), alpha));
}

void Bmm(C& c) {
  int g = *c.grad();
  auto tr = [&](int x) {
    return c.Op("aten.transpose.int", {T(x), IntArg(1), IntArg(2)});
  };
  if (c.needs(0))
    c.SetGrad(0, c.Op("aten.bmm.default", {T(g), T(tr(c.Input(1)))}));
  if (c.needs(1))
    c.SetGrad(1, c.Op("aten.bmm.default", {T(tr(c.Input(0))), T(g)}));
}

void Dot(C& c) {
  int g = *c.grad();
  if (c.needs(0)) c.SetGrad(0, c.Op("aten.mul.Tensor", {T(g), T(c.Input(1))}));
  if (c.needs(1)) c.SetGrad(1, c.Op("aten.mul.Tensor", {T(g), T(c.Input(0))}));
}

}  // namespace

void AddLinalgDerivatives(DerivativeRules* rules) {
  rules->insert({{"aten.mm.default", Mm},
                 {"aten.addmm.default", Addmm},
                 {"aten.bmm.default", Bmm},
                 {"aten.dot.default", Dot}});
}

}  // namespace aotcache
