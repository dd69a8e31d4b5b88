#include "core/autodiff/pointwise_derivatives.h"

namespace aotcache {
namespace {

using C = GradContext;
BoundArg T(int local) { return TensorArg(local); }
BoundArg N(double v) { return NumberArg(v); }

void AddRule(C& c, double sign) {
  int g = *c.grad();
  c.SetGrad(0, g);
  if (c.needs(1)) {
    double alpha = sign * c.Number(2);
    c.SetGrad(1, alpha == 1 ? g : c.Op("aten.mul.Tensor", {T(g), N(alpha)}));
  }
}
void Add(C& c) { AddRule(c, 1); }
void Sub(C& c) { AddRule(c, -1); }

void Mul(C& c) {
  int g = *c.grad();
  if (c.needs(0)) c.SetGrad(0, c.Op("aten.mul.Tensor", {T(g), c.Operand(1)}));
  if (c.needs(1)) c.SetGrad(1, c.Op("aten.mul.Tensor", {T(g), c.Operand(0)}));
}

void Div(C& c) {
  int g = *c.grad();
  if (c.needs(0)) c.SetGrad(0, c.Op("aten.div.Tensor", {T(g), c.Operand(1)}));
  if (c.needs(1)) {
    // -g * a / b^2
    int q = c.Op("aten.div.Tensor", {c.Operand(0), c.Operand(1)});
    int q2 = c.Op("aten.div.Tensor", {T(q), c.Operand(1)});
    c.SetGrad(1, c.Op("aten.neg.default",
                      {T(c.Op("aten.mul.Tensor", {T(g), T(q2)}))}));
  }
}

// atan2(a, b): g b / (a^2 + b^2) for a, -g a / (a^2 + b^2) for b
// (derivatives.yaml; NaN at (0, 0), as torch's).
void Atan2(C& c) {
  int a2 = c.Op("aten.mul.Tensor", {c.Operand(0), c.Operand(0)});
  int b2 = c.Op("aten.mul.Tensor", {c.Operand(1), c.Operand(1)});
  int norm = c.Op("aten.add.Tensor", {T(a2), T(b2), N(1)});
  int scale = c.Op("aten.div.Tensor", {T(*c.grad()), T(norm)});
  if (c.needs(0)) {
    c.SetGrad(0, c.Op("aten.mul.Tensor", {T(scale), c.Operand(1)}));
  }
  if (c.needs(1)) {
    int ga = c.Op("aten.mul.Tensor", {T(scale), c.Operand(0)});
    c.SetGrad(1, c.Op("aten.neg.default", {T(ga)}));
  }
}

void Neg(C& c) { c.SetGrad(0, c.Op("aten.neg.default", {T(*c.grad())})); }
void Exp(C& c) {
  c.SetGrad(0, c.Op("aten.mul.Tensor", {T(*c.grad()), T(c.Result())}));
}
// d expm1(x) = exp(x) = expm1(x) + 1, as torch's formula reads the result.
void Expm1(C& c) {
  int e = c.Op("aten.add.Scalar", {T(c.Result()), N(1), N(1)});
  c.SetGrad(0, c.Op("aten.mul.Tensor", {T(*c.grad()), T(e)}));
}
void Log(C& c) {
  c.SetGrad(0, c.Op("aten.div.Tensor", {T(*c.grad()), T(c.Input(0))}));
}
void Log1p(C& c) {
  int x1 = c.Op("aten.add.Scalar", {T(c.Input(0)), N(1), N(1)});
  c.SetGrad(0, c.Op("aten.div.Tensor", {T(*c.grad()), T(x1)}));
}
void Sin(C& c) {
  int cos = c.Op("aten.cos.default", {T(c.Input(0))});
  c.SetGrad(0, c.Op("aten.mul.Tensor", {T(*c.grad()), T(cos)}));
}
void Cos(C& c) {
  int sin = c.Op("aten.sin.default", {T(c.Input(0))});
  int gs = c.Op("aten.mul.Tensor", {T(*c.grad()), T(sin)});
  c.SetGrad(0, c.Op("aten.neg.default", {T(gs)}));
}
// 1 - y * y
int OneMinusSquare(C& c, int y) {
  int sq = c.Op("aten.mul.Tensor", {T(y), T(y)});
  return c.Op("aten.add.Scalar",
              {T(c.Op("aten.neg.default", {T(sq)})), N(1), N(1)});
}
void Tanh(C& c) {
  c.SetGrad(0, c.Op("aten.mul.Tensor",
                    {T(*c.grad()), T(OneMinusSquare(c, c.Result()))}));
}
void Sigmoid(C& c) {
  int y = c.Result();
  int one_minus = c.Op("aten.add.Scalar",
                       {T(c.Op("aten.neg.default", {T(y)})), N(1), N(1)});
  int d = c.Op("aten.mul.Tensor", {T(y), T(one_minus)});
  c.SetGrad(0, c.Op("aten.mul.Tensor", {T(*c.grad()), T(d)}));
}
void Relu(C& c) {
  int mask = c.Op("aten.gt.Scalar", {T(c.Result()), N(0)});
  c.SetGrad(0, c.Op("aten.mul.Tensor", {T(*c.grad()), T(mask)}));
}
void Gelu(C& c) {
  c.SetGrad(0, c.Op("aten.gelu_backward.default",
                    {T(*c.grad()), T(c.Input(0)), StringArg(c.arg(1).s)}));
}
void Sqrt(C& c) {
  int two_y = c.Op("aten.mul.Tensor", {T(c.Result()), N(2)});
  c.SetGrad(0, c.Op("aten.div.Tensor", {T(*c.grad()), T(two_y)}));
}
void Rsqrt(C& c) {
  int y3 = c.Op("aten.pow.Tensor_Scalar", {T(c.Result()), N(3)});
  int d = c.Op("aten.mul.Tensor", {T(y3), N(-0.5)});
  c.SetGrad(0, c.Op("aten.mul.Tensor", {T(*c.grad()), T(d)}));
}
void Abs(C& c) {
  int sign = c.Op("aten.sign.default", {T(c.Input(0))});
  c.SetGrad(0, c.Op("aten.mul.Tensor", {T(*c.grad()), T(sign)}));
}
// sign and the rounding ops: zeros_like(grad) (their result requires
// grad, as eager's does).
void Sign(C& c) { c.SetGrad(0, c.Zeros(c.InputMeta(0))); }
// (1 - x * x).rsqrt(), written as derivatives.yaml does: (-x * x + 1).
int OneMinusSquareRsqrt(C& c) {
  int neg = c.Op("aten.neg.default", {T(c.Input(0))});
  int square = c.Op("aten.mul.Tensor", {T(neg), T(c.Input(0))});
  int one_minus = c.Op("aten.add.Scalar", {T(square), N(1), N(1)});
  return c.Op("aten.rsqrt.default", {T(one_minus)});
}
void Asin(C& c) {
  c.SetGrad(0,
            c.Op("aten.mul.Tensor", {T(*c.grad()), T(OneMinusSquareRsqrt(c))}));
}
void Acos(C& c) {
  int d = c.Op("aten.neg.default", {T(OneMinusSquareRsqrt(c))});
  c.SetGrad(0, c.Op("aten.mul.Tensor", {T(*c.grad()), T(d)}));
}
// atan: grad / (x * x + 1).
void Atan(C& c) {
  int square = c.Op("aten.mul.Tensor", {T(c.Input(0)), T(c.Input(0))});
  int plus_one = c.Op("aten.add.Scalar", {T(square), N(1), N(1)});
  c.SetGrad(0, c.Op("aten.div.Tensor", {T(*c.grad()), T(plus_one)}));
}
void Pow(C& c) {
  double e = c.Number(1);
  if (e == 0) {
    c.SetGrad(0, c.Zeros(c.InputMeta(0)));
    return;
  }
  int p = c.Op("aten.pow.Tensor_Scalar", {T(c.Input(0)), N(e - 1)});
  int d = c.Op("aten.mul.Tensor", {T(p), N(e)});
  c.SetGrad(0, c.Op("aten.mul.Tensor", {T(*c.grad()), T(d)}));
}

// pow(self, exponent), both tensors (derivatives.yaml's pow_backward_self
// and pow_backward_exponent): g * e * self^(e - 1), 0 where e is 0; and
// g * result * log(self), 0 where self is 0 and e >= 0.
void PowTensor(C& c) {
  int g = *c.grad();
  BoundArg self = T(c.Input(0)), e = T(c.Input(1));
  if (c.needs(0)) {
    int e1 = c.Op("aten.sub.Scalar", {e, N(1), N(1)});
    int p = c.Op("aten.pow.Tensor_Tensor", {self, T(e1)});
    int d =
        c.Op("aten.mul.Tensor", {T(c.Op("aten.mul.Tensor", {T(g), e})), T(p)});
    int zero_e = c.Op("aten.eq.Scalar", {e, N(0)});
    c.SetGrad(0, c.Op("aten.where.self", {T(zero_e), N(0), T(d)}));
  }
  if (c.needs(1)) {
    int log = c.Op("aten.log.default", {self});
    int rl = c.Op("aten.mul.Tensor", {T(c.Result()), T(log)});
    int nonneg = c.Op("aten.ge.Scalar", {e, N(0)});
    int inner = c.Op("aten.where.self", {T(nonneg), N(0), T(rl)});
    int zero_self = c.Op("aten.eq.Scalar", {self, N(0)});
    int masked = c.Op("aten.where.self", {T(zero_self), T(inner), T(rl)});
    c.SetGrad(1, c.Op("aten.mul.Tensor", {T(g), T(masked)}));
  }
}

// maximum/minimum: ties share the gradient equally (derivatives.yaml).
void MaxMin(C& c, bool max) {
  int g = *c.grad();
  // Either operand may be a Python number.
  BoundArg a = c.Operand(0), b = c.Operand(1);
  int half = c.Op("aten.div.Tensor", {T(g), N(2)});
  int w = c.Op("aten.where.self",
               {T(c.Op("aten.eq.Tensor", {a, b})), T(half), T(g)});
  int a_loses = c.Op(max ? "aten.lt.Tensor" : "aten.gt.Tensor", {a, b});
  int b_loses = c.Op(max ? "aten.gt.Tensor" : "aten.lt.Tensor", {a, b});
  if (c.needs(0))
    c.SetGrad(0, c.Op("aten.where.self", {T(a_loses), N(0), T(w)}));
  if (c.needs(1))
    c.SetGrad(1, c.Op("aten.where.self", {T(b_loses), N(0), T(w)}));
}
void Maximum(C& c) { MaxMin(c, true); }
void Minimum(C& c) { MaxMin(c, false); }

void Where(C& c) {
  int g = *c.grad();
  int cond = c.Input(0);
  if (c.needs(1)) c.SetGrad(1, c.Op("aten.where.self", {T(cond), T(g), N(0)}));
  if (c.needs(2)) c.SetGrad(2, c.Op("aten.where.self", {T(cond), N(0), T(g)}));
}

void Identity(C& c) { c.SetGrad(0, *c.grad()); }

// copy(self, src) and the in-place ops that overwrite self (fill_, zero_):
// self's old values no longer matter, so its gradient is zero (not none).
void Copy(C& c) {
  if (c.needs(0)) c.SetGrad(0, c.Zeros(c.InputMeta(0)));
  if (c.needs(1)) c.SetGrad(1, *c.grad());
}
void Overwrite(C& c) { c.SetGrad(0, c.Zeros(c.InputMeta(0))); }

}  // namespace

void AddPointwiseDerivatives(DerivativeRules* rules) {
  (*rules)["aten.add.Tensor"] = Add;
  (*rules)["aten.add.Scalar"] = Add;
  (*rules)["aten.sub.Tensor"] = Sub;
  (*rules)["aten.sub.Scalar"] = Sub;
  (*rules)["aten.mul.Tensor"] = Mul;
  (*rules)["aten.mul.Scalar"] = Mul;
  (*rules)["aten.div.Tensor"] = Div;
  (*rules)["aten.div.Scalar"] = Div;
  (*rules)["aten.neg.default"] = Neg;
  (*rules)["aten.exp.default"] = Exp;
  (*rules)["aten.log.default"] = Log;
  (*rules)["aten.expm1.default"] = Expm1;
  (*rules)["aten.log1p.default"] = Log1p;
  (*rules)["aten.sin.default"] = Sin;
  (*rules)["aten.cos.default"] = Cos;
  (*rules)["aten.tanh.default"] = Tanh;
  (*rules)["aten.sigmoid.default"] = Sigmoid;
  (*rules)["aten.relu.default"] = Relu;
  (*rules)["aten.gelu.default"] = Gelu;
  (*rules)["aten.sqrt.default"] = Sqrt;
  (*rules)["aten.rsqrt.default"] = Rsqrt;
  (*rules)["aten.abs.default"] = Abs;
  (*rules)["aten.sign.default"] = Sign;
  for (const char* op : {"aten.floor.default", "aten.ceil.default",
                         "aten.round.default", "aten.trunc.default"}) {
    (*rules)[op] = Sign;
  }
  (*rules)["aten.asin.default"] = Asin;
  (*rules)["aten.acos.default"] = Acos;
  (*rules)["aten.atan.default"] = Atan;
  (*rules)["aten.pow.Tensor_Scalar"] = Pow;
  (*rules)["aten.pow.Tensor_Tensor"] = PowTensor;
  (*rules)["aten.maximum.default"] = Maximum;
  (*rules)["aten.atan2.default"] = Atan2;
  (*rules)["aten.minimum.default"] = Minimum;
  (*rules)["aten.where.self"] = Where;
  (*rules)["aten.clone.default"] = Identity;
  (*rules)["aten.lift_fresh_copy.default"] = Identity;
  (*rules)["aten._to_copy.default"] = Identity;
  (*rules)["aten.alias.default"] = Identity;
  (*rules)["aten.copy.default"] = Copy;
  (*rules)["aten.fill.Scalar"] = Overwrite;
  (*rules)["aten.zeros_like.default"] = Overwrite;
}

}  // namespace aotcache
