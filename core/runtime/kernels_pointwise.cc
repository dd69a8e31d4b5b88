// Pointwise kernels: arithmetic, unary math, comparisons, where, casts.
// Arithmetic computes in the result dtype; comparisons in float64.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;

template <typename C, typename F>
void Unary(const Tensor& a, const Tensor& out, F f) {
  const Meta& m = out.meta();
  ForEachIndex(m.shape, {m.stride, BroadcastStrides(a.meta(), m.shape)},
               {m.offset, a.meta().offset}, [&](const int64_t* pos) {
                 StoreFrom<C>(
                     out.storage_data(), m.dtype, pos[0],
                     f(LoadAs<C>(a.storage_data(), a.dtype(), pos[1])));
               });
}

template <typename C, typename F>
void Binary(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const Meta& m = out.meta();
  ForEachIndex(
      m.shape,
      {m.stride, BroadcastStrides(a.meta(), m.shape),
       BroadcastStrides(b.meta(), m.shape)},
      {m.offset, a.meta().offset, b.meta().offset}, [&](const int64_t* pos) {
        StoreFrom<C>(out.storage_data(), m.dtype, pos[0],
                     f(LoadAs<C>(a.storage_data(), a.dtype(), pos[1]),
                       LoadAs<C>(b.storage_data(), b.dtype(), pos[2])));
      });
}

Tensor NewResult(const KernelArgs& k) { return k.NewResult(0); }

// Applies f in the result's dtype to self (arg 0).
template <typename F>
Results UnaryOp(const KernelArgs& k, F f) {
  Tensor out = NewResult(k);
  DispatchDType(out.dtype(), [&](auto tag) {
    using C = typename decltype(tag)::type;
    Unary<C>(k.tensor(0), out, [&](C x) { return static_cast<C>(f(x)); });
  });
  return std::vector<Tensor>{out};
}

template <typename F>
Results BinaryOp(const KernelArgs& k, F f) {
  Tensor out = NewResult(k);
  DispatchDType(out.dtype(), [&](auto tag) {
    using C = typename decltype(tag)::type;
    Binary<C>(k.tensor(0), k.tensor(1), out,
              [&](C x, C y) { return static_cast<C>(f(x, y)); });
  });
  return std::vector<Tensor>{out};
}

template <typename F>
Results CompareOp(const KernelArgs& k, F f) {
  Tensor out = NewResult(k);
  Binary<double>(k.tensor(0), k.tensor(1), out,
                 [&](double x, double y) { return f(x, y) ? 1.0 : 0.0; });
  return std::vector<Tensor>{out};
}

// add/sub: self + alpha * other (alpha is argument 2).
Results Add(const KernelArgs& k) {
  double alpha = k.number(2);
  return BinaryOp(k, [alpha](auto x, auto y) { return x + alpha * y; });
}
Results Sub(const KernelArgs& k) {
  double alpha = k.number(2);
  return BinaryOp(k, [alpha](auto x, auto y) { return x - alpha * y; });
}
Results Mul(const KernelArgs& k) {
  return BinaryOp(k, [](auto x, auto y) { return x * y; });
}
Results Div(const KernelArgs& k) {
  return BinaryOp(k, [](auto x, auto y) { return x / y; });
}
Results Atan2(const KernelArgs& k) {
  return BinaryOp(k, [](auto y, auto x) { return std::atan2(y, x); });
}
Results Maximum(const KernelArgs& k) {
  return BinaryOp(k, [](auto x, auto y) {
    if (x != x) return x;  // NaN propagates.
    if (y != y) return y;
    return x > y ? x : y;
  });
}
Results Minimum(const KernelArgs& k) {
  return BinaryOp(k, [](auto x, auto y) {
    if (x != x) return x;
    if (y != y) return y;
    return x < y ? x : y;
  });
}
Results PowScalar(const KernelArgs& k) {
  double e = k.number(1);
  Tensor out = NewResult(k);
  DispatchDType(out.dtype(), [&](auto tag) {
    using C = typename decltype(tag)::type;
    Unary<C>(k.tensor(0), out, [&](C x) {
      if constexpr (std::is_floating_point_v<C>) {
        if (e == 2) return static_cast<C>(x * x);
        return static_cast<C>(std::pow(x, static_cast<C>(e)));
      } else {
        return static_cast<C>(std::pow(static_cast<double>(x), e));
      }
    });
  });
  return std::vector<Tensor>{out};
}

// pow(self, exponent), both tensors: std::pow in the result's dtype
// (through double for integers).
Results PowTensor(const KernelArgs& k) {
  return BinaryOp(k, [](auto x, auto y) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) {
      return std::pow(x, y);
    } else {
      return std::pow(static_cast<double>(x), static_cast<double>(y));
    }
  });
}

Results Neg(const KernelArgs& k) {
  return UnaryOp(k, [](auto x) { return -x; });
}
Results Abs(const KernelArgs& k) {
  return UnaryOp(k, [](auto x) {
    if constexpr (std::is_same_v<decltype(x), bool>) {
      return x;  // |true| is true.
    } else {
      return x < 0 ? -x : x;
    }
  });
}
Results Relu(const KernelArgs& k) {
  return UnaryOp(k, [](auto x) {
    if (x != x) return x;
    return x > 0 ? x : decltype(x)(0);
  });
}

// Float functions: the result dtype is floating, so C is float or double.
#define AOTCACHE_FLOAT_UNARY(Name, expr)           \
  Results Name(const KernelArgs& k) {              \
    return UnaryOp(k, [](auto x) {                 \
      using C = decltype(x);                       \
      if constexpr (std::is_floating_point_v<C>) { \
        return static_cast<C>(expr);               \
      } else {                                     \
        return x;                                  \
      }                                            \
    });                                            \
  }
AOTCACHE_FLOAT_UNARY(Exp, std::exp(x))
AOTCACHE_FLOAT_UNARY(Expm1, std::expm1(x))
AOTCACHE_FLOAT_UNARY(Log, std::log(x))
AOTCACHE_FLOAT_UNARY(Log1p, std::log1p(x))
AOTCACHE_FLOAT_UNARY(Sin, std::sin(x))
AOTCACHE_FLOAT_UNARY(Cos, std::cos(x))
AOTCACHE_FLOAT_UNARY(Tanh, std::tanh(x))
AOTCACHE_FLOAT_UNARY(Sigmoid, C(1) / (C(1) + std::exp(-x)))
AOTCACHE_FLOAT_UNARY(Sqrt, std::sqrt(x))
AOTCACHE_FLOAT_UNARY(Rsqrt, C(1) / std::sqrt(x))
AOTCACHE_FLOAT_UNARY(Acos, std::acos(x))
AOTCACHE_FLOAT_UNARY(Asin, std::asin(x))
AOTCACHE_FLOAT_UNARY(Atan, std::atan(x))
// Rounding keeps the dtype: integral values are already whole. round is
// eager's: halves to even (nearbyint in the default rounding mode).
AOTCACHE_FLOAT_UNARY(Floor, std::floor(x))
AOTCACHE_FLOAT_UNARY(Ceil, std::ceil(x))
AOTCACHE_FLOAT_UNARY(Round, std::nearbyint(x))
AOTCACHE_FLOAT_UNARY(Trunc, std::trunc(x))
#undef AOTCACHE_FLOAT_UNARY

Results Gelu(const KernelArgs& k) {
  bool tanh_approx = k.arg(1).s == "tanh";
  return UnaryOp(k, [tanh_approx](auto x) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) {
      if (tanh_approx) {
        const C kBeta = static_cast<C>(M_SQRT2 * M_2_SQRTPI * 0.5);
        const C inner = kBeta * (x + C(0.044715) * x * x * x);
        return C(0.5) * x * (C(1) + std::tanh(inner));
      }
      return x * C(0.5) * (C(1) + std::erf(x * static_cast<C>(M_SQRT1_2)));
    } else {
      return x;
    }
  });
}

Results IsNan(const KernelArgs& k) {
  Tensor out = NewResult(k);
  Unary<double>(k.tensor(0), out, [](double x) { return x != x ? 1.0 : 0.0; });
  return std::vector<Tensor>{out};
}
Results Eq(const KernelArgs& k) {
  return CompareOp(k, [](double x, double y) { return x == y; });
}
Results Ne(const KernelArgs& k) {
  return CompareOp(k, [](double x, double y) { return x != y; });
}
Results Lt(const KernelArgs& k) {
  return CompareOp(k, [](double x, double y) { return x < y; });
}
Results Le(const KernelArgs& k) {
  return CompareOp(k, [](double x, double y) { return x <= y; });
}
Results Gt(const KernelArgs& k) {
  return CompareOp(k, [](double x, double y) { return x > y; });
}
Results Ge(const KernelArgs& k) {
  return CompareOp(k, [](double x, double y) { return x >= y; });
}

Results Where(const KernelArgs& k) {
  Tensor out = NewResult(k);
  const Meta& m = out.meta();
  const Tensor& c = k.tensor(0);
  const Tensor& a = k.tensor(1);
  const Tensor& b = k.tensor(2);
  DispatchDType(out.dtype(), [&](auto tag) {
    using C = typename decltype(tag)::type;
    ForEachIndex(
        m.shape,
        {m.stride, BroadcastStrides(c.meta(), m.shape),
         BroadcastStrides(a.meta(), m.shape),
         BroadcastStrides(b.meta(), m.shape)},
        {m.offset, c.meta().offset, a.meta().offset, b.meta().offset},
        [&](const int64_t* pos) {
          bool take_a = LoadAs<bool>(c.storage_data(), c.dtype(), pos[1]);
          C v = take_a ? LoadAs<C>(a.storage_data(), a.dtype(), pos[2])
                       : LoadAs<C>(b.storage_data(), b.dtype(), pos[3]);
          StoreFrom<C>(out.storage_data(), m.dtype, pos[0], v);
        });
  });
  return std::vector<Tensor>{out};
}

}  // namespace

namespace kernels {

const std::vector<Entry>& PointwiseKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.add.Tensor", Add},
      {"aten.add.Scalar", Add},
      {"aten.sub.Tensor", Sub},
      {"aten.sub.Scalar", Sub},
      {"aten.mul.Tensor", Mul},
      {"aten.mul.Scalar", Mul},
      {"aten.div.Tensor", Div},
      {"aten.div.Scalar", Div},
      {"aten.neg.default", Neg},
      {"aten.exp.default", Exp},
      {"aten.expm1.default", Expm1},
      {"aten.log.default", Log},
      {"aten.log1p.default", Log1p},
      {"aten.sin.default", Sin},
      {"aten.cos.default", Cos},
      {"aten.tanh.default", Tanh},
      {"aten.sigmoid.default", Sigmoid},
      {"aten.relu.default", Relu},
      {"aten.gelu.default", Gelu},
      {"aten.sqrt.default", Sqrt},
      {"aten.rsqrt.default", Rsqrt},
      {"aten.abs.default", Abs},
      {"aten.pow.Tensor_Scalar", PowScalar},
      {"aten.pow.Tensor_Tensor", PowTensor},
      {"aten.maximum.default", Maximum},
      {"aten.atan2.default", Atan2},
      {"aten.acos.default", Acos},
      {"aten.asin.default", Asin},
      {"aten.atan.default", Atan},
      {"aten.floor.default", Floor},
      {"aten.ceil.default", Ceil},
      {"aten.round.default", Round},
      {"aten.trunc.default", Trunc},
      {"aten.isnan.default", IsNan},
      {"aten.minimum.default", Minimum},
      {"aten.where.self", Where},
      {"aten.eq.Tensor", Eq},
      {"aten.eq.Scalar", Eq},
      {"aten.ne.Tensor", Ne},
      {"aten.ne.Scalar", Ne},
      {"aten.lt.Tensor", Lt},
      {"aten.lt.Scalar", Lt},
      {"aten.le.Tensor", Le},
      {"aten.le.Scalar", Le},
      {"aten.gt.Tensor", Gt},
      {"aten.gt.Scalar", Gt},
      {"aten.ge.Tensor", Ge},
      {"aten.ge.Scalar", Ge},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
