// The decompositions of activations (decompositions.h): softplus,
// leaky_relu, elu (selu is one), celu, hardtanh (relu6), hardswish, mish,
// log_sigmoid_forward, glu, prelu and _prelu_kernel (and the in-place forms of
// leaky_relu, elu and hardtanh). Each computes torch's values with torch's
// formula and keeps torch's gradient, boundaries included: a branch that a
// where does not take never sees an argument where its gradient is not
// finite (exp of a large input), so its zero gradient stays zero.
#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using decompositions_internal::InPlaceOf;
using decompositions_internal::WrapDim;
using Results = absl::StatusOr<std::vector<int>>;

// softplus(x, beta, threshold): x where x * beta > threshold, else
// log1p(exp(x * beta)) / beta, whose exp reads min(x * beta, threshold).
absl::StatusOr<int> SoftplusOf(Decomposer& d, const BoundArg& x, double beta,
                               double threshold) {
  AOTCACHE_ASSIGN_OR_RETURN(int bx,
                            d.EmitOne("aten.mul.Scalar", {x, NumberArg(beta)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int over,
      d.EmitOne("aten.gt.Scalar", {TensorArg(bx), NumberArg(threshold)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int capped,
      d.EmitOne("aten.where.self",
                {TensorArg(over), NumberArg(threshold), TensorArg(bx)}));
  AOTCACHE_ASSIGN_OR_RETURN(int e,
                            d.EmitOne("aten.exp.default", {TensorArg(capped)}));
  AOTCACHE_ASSIGN_OR_RETURN(int l,
                            d.EmitOne("aten.log1p.default", {TensorArg(e)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int soft, d.EmitOne("aten.div.Scalar", {TensorArg(l), NumberArg(beta)}));
  return d.EmitOne("aten.where.self", {TensorArg(over), x, TensorArg(soft)});
}

Results Softplus(Decomposer& d) {
  double beta = d.arg(1).AsDouble();
  if (beta == 0) return ArgError("beta", "must not be 0");
  AOTCACHE_ASSIGN_OR_RETURN(int out,
                            SoftplusOf(d, d.arg(0), beta, d.arg(2).AsDouble()));
  return std::vector<int>{out};
}

// leaky_relu(x, slope): x where x > 0, else x * slope (a NaN stays NaN).
Results LeakyRelu(Decomposer& d) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int pos, d.EmitOne("aten.gt.Scalar", {d.arg(0), NumberArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(int scaled,
                            d.EmitOne("aten.mul.Scalar", {d.arg(0), d.arg(1)}));
  return d.Emit("aten.where.self",
                {TensorArg(pos), d.arg(0), TensorArg(scaled)});
}

// elu(x, alpha, scale, input_scale): x * scale where x > 0, else
// expm1(x * input_scale) * alpha * scale, whose expm1 reads min(x, 0).
Results EluOf(Decomposer& d, double alpha, double scale, double input_scale) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int pos, d.EmitOne("aten.gt.Scalar", {d.arg(0), NumberArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int linear, d.EmitOne("aten.mul.Scalar", {d.arg(0), NumberArg(scale)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int nonpos,
      d.EmitOne("aten.where.self", {TensorArg(pos), NumberArg(0), d.arg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int inner, d.EmitOne("aten.mul.Scalar",
                           {TensorArg(nonpos), NumberArg(input_scale)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int e, d.EmitOne("aten.expm1.default", {TensorArg(inner)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int curved,
      d.EmitOne("aten.mul.Scalar", {TensorArg(e), NumberArg(alpha * scale)}));
  return d.Emit("aten.where.self",
                {TensorArg(pos), TensorArg(linear), TensorArg(curved)});
}
Results Elu(Decomposer& d) {
  return EluOf(d, d.arg(1).AsDouble(), d.arg(2).AsDouble(),
               d.arg(3).AsDouble());
}
// celu(x, alpha) = elu(x, alpha, 1, 1 / alpha).
Results Celu(Decomposer& d) {
  double alpha = d.arg(1).AsDouble();
  if (alpha == 0) return ArgError("alpha", "must not be 0");
  return EluOf(d, alpha, 1, 1 / alpha);
}

// hardtanh(x, lo, hi): lo where x <= lo, hi where x >= hi, else x: the
// gradient is zero at the bounds, as torch's hardtanh_backward.
Results Hardtanh(Decomposer& d) {
  AOTCACHE_ASSIGN_OR_RETURN(int high,
                            d.EmitOne("aten.ge.Scalar", {d.arg(0), d.arg(2)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int upper,
      d.EmitOne("aten.where.self", {TensorArg(high), d.arg(2), d.arg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(int low,
                            d.EmitOne("aten.le.Scalar", {d.arg(0), d.arg(1)}));
  return d.Emit("aten.where.self",
                {TensorArg(low), d.arg(1), TensorArg(upper)});
}

// hardswish(x) = x * c / 6, c = x + 3 clamped to [0, 6] with its gradient
// passing at the bounds: torch's hardswish_backward, x/3 + 0.5 on [-3, 3].
Results Hardswish(Decomposer& d) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int t,
      d.EmitOne("aten.add.Scalar", {d.arg(0), NumberArg(3), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int below, d.EmitOne("aten.lt.Scalar", {TensorArg(t), NumberArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int floor, d.EmitOne("aten.where.self",
                           {TensorArg(below), NumberArg(0), TensorArg(t)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int above, d.EmitOne("aten.gt.Scalar", {TensorArg(floor), NumberArg(6)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int c, d.EmitOne("aten.where.self",
                       {TensorArg(above), NumberArg(6), TensorArg(floor)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int xc, d.EmitOne("aten.mul.Tensor", {d.arg(0), TensorArg(c)}));
  return d.Emit("aten.div.Scalar", {TensorArg(xc), NumberArg(6)});
}

// mish(x) = x * tanh(softplus(x)); torch's log1p(exp(x)) equals x in
// float32 and float64 past softplus's threshold of 20.
Results Mish(Decomposer& d) {
  AOTCACHE_ASSIGN_OR_RETURN(int soft, SoftplusOf(d, d.arg(0), 1, 20));
  AOTCACHE_ASSIGN_OR_RETURN(int t,
                            d.EmitOne("aten.tanh.default", {TensorArg(soft)}));
  return d.Emit("aten.mul.Tensor", {d.arg(0), TensorArg(t)});
}

// log_sigmoid_forward(x) = (-softplus(-x), buffer). The buffer only feeds
// torch's log_sigmoid_backward, which aotcache derives instead: zeros.
Results LogSigmoidForward(Decomposer& d) {
  const Meta x = d.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(int neg, d.EmitOne("aten.neg.default", {d.arg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(int soft, SoftplusOf(d, TensorArg(neg), 1, 20));
  AOTCACHE_ASSIGN_OR_RETURN(int out,
                            d.EmitOne("aten.neg.default", {TensorArg(soft)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int buffer, d.EmitOne("aten.full.default",
                            {IntsArg(x.shape), NumberArg(0), DTypeArg(x.dtype),
                             NoneArg(), NoneArg(), NoneArg()}));
  return std::vector<int>{out, buffer};
}

// prelu(x, weight): x where x > 0, else weight * x, one weight per channel
// (dim 1) or one for all.
Results Prelu(Decomposer& d) {
  const Meta x = d.tensor(0), w = d.tensor(1);
  int64_t channels = x.dim() >= 2 ? x.shape[1] : 1;
  if (w.dim() > 1 || (w.numel() != 1 && w.numel() != channels)) {
    return ArgError("weight",
                    absl::StrCat("must hold 1 or ", channels, " values"));
  }
  BoundArg weight = d.arg(1);
  if (x.dim() >= 2) {  // (C) seen as (C, 1, ...) to broadcast over dim 1.
    std::vector<int64_t> shape(x.dim() - 1, 1);
    shape[0] = w.numel();
    AOTCACHE_ASSIGN_OR_RETURN(
        int seen, d.EmitOne("aten.view.default", {d.arg(1), IntsArg(shape)}));
    weight = TensorArg(seen);
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int pos, d.EmitOne("aten.gt.Scalar", {d.arg(0), NumberArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(int scaled,
                            d.EmitOne("aten.mul.Tensor", {d.arg(0), weight}));
  return d.Emit("aten.where.self",
                {TensorArg(pos), d.arg(0), TensorArg(scaled)});
}

// _prelu_kernel(x, weight) (torch 2.x's prelu, after it has shaped the
// weight to broadcast over x): x where x > 0, else weight * x.
Results PreluKernel(Decomposer& d) {
  const Meta x = d.tensor(0), w = d.tensor(1);
  bool broadcasts = w.dim() <= x.dim();
  for (int64_t i = 1; broadcasts && i <= w.dim(); ++i) {
    const int64_t n = w.shape[w.dim() - i];
    broadcasts = n == 1 || n == x.shape[x.dim() - i];
  }
  if (!broadcasts) return ArgError("weight", "must broadcast to self's shape");
  AOTCACHE_ASSIGN_OR_RETURN(
      int pos, d.EmitOne("aten.gt.Scalar", {d.arg(0), NumberArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(int scaled,
                            d.EmitOne("aten.mul.Tensor", {d.arg(0), d.arg(1)}));
  return d.Emit("aten.where.self",
                {TensorArg(pos), d.arg(0), TensorArg(scaled)});
}

// glu(x, dim) = a * sigmoid(b), a and b the halves of x along dim.
Results Glu(Decomposer& d) {
  const Meta x = d.tensor(0);
  AOTCACHE_ASSIGN_OR_RETURN(int64_t dim, WrapDim("dim", d.arg(1).i, x.dim()));
  if (x.dim() == 0) return ArgError("self", "glu does not take a 0-d tensor");
  int64_t n = x.shape[dim];
  if (n % 2 != 0) {
    return ArgError("self", absl::StrCat("halving dim ", dim, " of size ", n,
                                         ": the size must be even"));
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int a, d.EmitOne("aten.slice.Tensor", {d.arg(0), IntArg(dim), IntArg(0),
                                             IntArg(n / 2), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int b,
      d.EmitOne("aten.slice.Tensor",
                {d.arg(0), IntArg(dim), IntArg(n / 2), IntArg(n), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int gate,
                            d.EmitOne("aten.sigmoid.default", {TensorArg(b)}));
  return d.Emit("aten.mul.Tensor", {TensorArg(a), TensorArg(gate)});
}

}  // namespace

namespace decompositions_internal {

const std::vector<Decomposition>& ActivationDecompositions() {
  static const auto* table = new std::vector<Decomposition>{
      {"softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor",
       Softplus},
      {"leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor",
       LeakyRelu},
      {"leaky_relu_(Tensor(a!) self, Scalar negative_slope=0.01) -> "
       "Tensor(a!)",
       InPlaceOf<LeakyRelu>},
      {"elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar "
       "input_scale=1) -> Tensor",
       Elu},
      {"elu_(Tensor(a!) self, Scalar alpha=1, Scalar scale=1, Scalar "
       "input_scale=1) -> Tensor(a!)",
       InPlaceOf<Elu>},
      {"celu(Tensor self, Scalar alpha=1.0) -> Tensor", Celu},
      {"hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
       Hardtanh},
      {"hardtanh_(Tensor(a!) self, Scalar min_val=-1, Scalar max_val=1) -> "
       "Tensor(a!)",
       InPlaceOf<Hardtanh>},
      {"hardswish(Tensor self) -> Tensor", Hardswish},
      {"mish(Tensor self) -> Tensor", Mish},
      {"log_sigmoid_forward(Tensor self) -> (Tensor, Tensor)",
       LogSigmoidForward},
      {"glu(Tensor self, int dim=-1) -> Tensor", Glu},
      {"prelu(Tensor self, Tensor weight) -> Tensor", Prelu},
      {"_prelu_kernel(Tensor self, Tensor weight) -> Tensor", PreluKernel},
  };
  return *table;
}

}  // namespace decompositions_internal
}  // namespace aotcache
