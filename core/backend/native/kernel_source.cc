#include "core/backend/native/kernel_source.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace aotcache {
namespace {

constexpr Formula kFormulas[] = {
    {"aten.add.Tensor", 2, "static_cast<C>(a + alpha * b)"},
    {"aten.add.Scalar", 2, "static_cast<C>(a + alpha * b)"},
    {"aten.sub.Tensor", 2, "static_cast<C>(a - alpha * b)"},
    {"aten.sub.Scalar", 2, "static_cast<C>(a - alpha * b)"},
    {"aten.mul.Tensor", 2, "static_cast<C>(a * b)"},
    {"aten.mul.Scalar", 2, "static_cast<C>(a * b)"},
    {"aten.div.Tensor", 2, "static_cast<C>(a / b)"},
    {"aten.div.Scalar", 2, "static_cast<C>(a / b)"},
    {"aten.neg.default", 1, "static_cast<C>(-a)"},
    {"aten.abs.default", 1, "static_cast<C>(a < 0 ? -a : a)"},
    {"aten.relu.default", 1, "static_cast<C>(a != a ? a : (a > 0 ? a : C(0)))"},
    // As the runtime's kernel (and torch 1.13 on CPU): 0 for NaN.
    {"aten.sign.default", 1,
     "static_cast<C>(a > 0 ? 1.0 : (a < 0 ? -1.0 : 0.0))"},
    {"aten.exp.default", 1, "static_cast<C>(vm::exp(a))"},
    {"aten.log.default", 1, "static_cast<C>(vm::log(a))"},
    {"aten.expm1.default", 1, "static_cast<C>(vm::expm1(a))"},
    {"aten.log1p.default", 1, "static_cast<C>(vm::log1p(a))"},
    {"aten.sin.default", 1, "static_cast<C>(vm::sin(a))"},
    {"aten.cos.default", 1, "static_cast<C>(vm::cos(a))"},
    {"aten.tanh.default", 1, "static_cast<C>(vm::tanh(a))"},
    {"aten.sigmoid.default", 1, "static_cast<C>(C(1) / (C(1) + vm::exp(-a)))"},
    {"aten.sqrt.default", 1, "static_cast<C>(vm::sqrt(a))"},
    {"aten.acos.default", 1, "static_cast<C>(vm::acos(a))"},
    {"aten.asin.default", 1, "static_cast<C>(vm::asin(a))"},
    {"aten.atan.default", 1, "static_cast<C>(vm::atan(a))"},
    // Integral values are whole: kept exactly (no round trip through a
    // float type); floating ones rounded in double, which is exact.
    {"aten.floor.default", 1,
     "static_cast<C>(C(0.5) == C(0) ? a : C(__builtin_floor(a)))"},
    {"aten.ceil.default", 1,
     "static_cast<C>(C(0.5) == C(0) ? a : C(__builtin_ceil(a)))"},
    {"aten.round.default", 1,
     "static_cast<C>(C(0.5) == C(0) ? a : C(__builtin_nearbyint(a)))"},
    {"aten.trunc.default", 1,
     "static_cast<C>(C(0.5) == C(0) ? a : C(__builtin_trunc(a)))"},
    {"aten.rsqrt.default", 1, "static_cast<C>(C(1) / vm::sqrt(a))"},
    // The exponent b is a number: a literal the branches fold on. The
    // exponents eager computes without pow (its pow_tensor_scalar kernel:
    // 2, 3, 0.5, -0.5, -1, -2) as it does; others through libmvec's pow.
    {"aten.pow.Tensor_Scalar", 2,
     "static_cast<C>(b == 2 ? a * a : b == 3 ? a * a * a : b == 1 ? a : "
     "b == 0.5 ? vm::sqrt(a) : b == -0.5 ? C(1) / vm::sqrt(a) : "
     "b == -1 ? C(1) / a : b == -2 ? C(1) / (a * a) : vm::pow(a, b))"},
    // libm's atan2f for float (builtins: the preamble declares no atan2).
    {"aten.atan2.default", 2,
     "static_cast<C>(sizeof(C) == 4 ? __builtin_atan2f(a, b) "
     ": __builtin_atan2(a, b))"},
    {"aten.maximum.default", 2,
     "static_cast<C>(a != a ? a : (b != b ? b : (a > b ? a : b)))"},
    {"aten.minimum.default", 2,
     "static_cast<C>(a != a ? a : (b != b ? b : (a < b ? a : b)))"},
    {"aten.isnan.default", 1, "static_cast<C>(a != a ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.eq.Tensor", 2, "static_cast<C>(a == b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.eq.Scalar", 2, "static_cast<C>(a == b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.ne.Tensor", 2, "static_cast<C>(a != b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.ne.Scalar", 2, "static_cast<C>(a != b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.lt.Tensor", 2, "static_cast<C>(a < b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.lt.Scalar", 2, "static_cast<C>(a < b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.le.Tensor", 2, "static_cast<C>(a <= b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.le.Scalar", 2, "static_cast<C>(a <= b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.gt.Tensor", 2, "static_cast<C>(a > b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.gt.Scalar", 2, "static_cast<C>(a > b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.ge.Tensor", 2, "static_cast<C>(a >= b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.ge.Scalar", 2, "static_cast<C>(a >= b ? 1.0 : 0.0)",
     Formula::Operands::kAsDouble},
    {"aten.where.self", 3, "static_cast<C>(c ? a : b)",
     Formula::Operands::kWhere},
    // Copies and casts: the operand converted as the runtime's kernel
    // converts it (a copy takes src, b, broadcast into self's shape).
    {"aten.clone.default", 1, "static_cast<C>(a)"},
    {"aten.lift_fresh_copy.default", 1, "static_cast<C>(a)"},
    {"aten._to_copy.default", 1, "static_cast<C>(a)"},
    {"aten.copy.default", 2, "static_cast<C>(b)"},
    // Fills, whose size is their result's: no operands; `b` is the value.
    {"aten.zeros.default", 0, "static_cast<C>(0)"},
    {"aten.zeros_like.default", 0, "static_cast<C>(0)"},
    {"aten.ones.default", 0, "static_cast<C>(1)"},
    {"aten.ones_like.default", 0, "static_cast<C>(1)"},
    {"aten.full.default", 0, "static_cast<C>(b)", Formula::Operands::kAsResult,
     1},
    {"aten.fill.Scalar", 0, "static_cast<C>(b)", Formula::Operands::kAsResult,
     1},
    // gelu by its `approximate` argument (FindFormula's name for "tanh"),
    // with M_SQRT1_2, M_SQRT2 and M_2_SQRTPI spelled out as glibc's.
    {"aten.gelu.default", 1,
     "static_cast<C>(a * C(0.5) * (C(1) + vm::erf(a * "
     "static_cast<C>(0.70710678118654752440))))"},
    {"aten.gelu.default(tanh)", 1,
     "static_cast<C>(C(0.5) * a * (C(1) + vm::tanh(static_cast<C>("
     "1.41421356237309504880 * 1.12837916709551257390 * 0.5) * (a + "
     "C(0.044715) * a * a * a))))"},
    // In double: the gradient times gelu's derivative at b.
    {"aten.gelu_backward.default", 2,
     "static_cast<C>(static_cast<double>(a) * [](double v) { return 0.5 * (1 "
     "+ vm::erf(v * 0.70710678118654752440)) + v * (vm::exp(-0.5 * v * v) * "
     "1.12837916709551257390 * 0.70710678118654752440 * 0.5); "
     "}(static_cast<double>(b)))"},
    {"aten.gelu_backward.default(tanh)", 2,
     "static_cast<C>(static_cast<double>(a) * [](double v) { const double "
     "beta = 1.41421356237309504880 * 1.12837916709551257390 * 0.5, kappa = "
     "0.044715; const double t = vm::tanh(beta * (v + kappa * v * v * v)); "
     "return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * beta * (1 + 3 * kappa * "
     "v * v); }(static_cast<double>(b)))"},
};

// The math functions, declared with their OpenMP SIMD variants so that the
// loops vectorize through glibc's libmvec (link -lmvec; GCC's builtins, and
// its merging of sin and cos into scalar sincos, are turned off by flags).
constexpr char kPreamble[] = R"(extern "C" {
#pragma omp declare simd notinbranch
float expf(float);
#pragma omp declare simd notinbranch
float logf(float);
#pragma omp declare simd notinbranch
float sinf(float);
#pragma omp declare simd notinbranch
float cosf(float);
#pragma omp declare simd notinbranch
float tanhf(float);
#pragma omp declare simd notinbranch
float erff(float);
#pragma omp declare simd notinbranch
float expm1f(float);
#pragma omp declare simd notinbranch
float log1pf(float);
#pragma omp declare simd notinbranch
float powf(float, float);
#pragma omp declare simd notinbranch
float acosf(float);
#pragma omp declare simd notinbranch
float asinf(float);
#pragma omp declare simd notinbranch
float atanf(float);
#pragma omp declare simd notinbranch
double exp(double);
#pragma omp declare simd notinbranch
double log(double);
#pragma omp declare simd notinbranch
double sin(double);
#pragma omp declare simd notinbranch
double cos(double);
#pragma omp declare simd notinbranch
double tanh(double);
#pragma omp declare simd notinbranch
double erf(double);
#pragma omp declare simd notinbranch
double expm1(double);
#pragma omp declare simd notinbranch
double log1p(double);
#pragma omp declare simd notinbranch
double pow(double, double);
#pragma omp declare simd notinbranch
double acos(double);
#pragma omp declare simd notinbranch
double asin(double);
#pragma omp declare simd notinbranch
double atan(double);
// CBLAS (OpenBLAS): row-major 101, no transpose 111, transpose 112.
void cblas_sgemm(int, int, int, int, int, int, float, const float*, int,
                 const float*, int, float, float*, int);
void cblas_dgemm(int, int, int, int, int, int, double, const double*, int,
                 const double*, int, double, double*, int);
}
// Scratch memory of the kernels that need it (convolutions, the pooling
// backwards): per thread, buffers grown to the largest size asked and
// shared by this source's kernels, as a thread runs one kernel at a time.
namespace {
struct AotcacheScratch {
  void* buffer[12] = {};
  decltype(sizeof(0)) size[12] = {};
  ~AotcacheScratch() {
    for (void* b : buffer) ::operator delete(b);
  }
};
void* aotcache_scratch(int slot, decltype(sizeof(0)) bytes) {
  static thread_local AotcacheScratch scratch;
  if (scratch.size[slot] < bytes) {
    ::operator delete(scratch.buffer[slot]);
    scratch.size[slot] = 0;
    scratch.buffer[slot] = ::operator new(bytes);
    scratch.size[slot] = bytes;
  }
  return scratch.buffer[slot];
}
}  // namespace
namespace vm {
inline float exp(float x) { return expf(x); }
inline float log(float x) { return logf(x); }
inline float sin(float x) { return sinf(x); }
inline float cos(float x) { return cosf(x); }
inline float tanh(float x) { return tanhf(x); }
inline float erf(float x) { return erff(x); }
inline float expm1(float x) { return expm1f(x); }
inline float log1p(float x) { return log1pf(x); }
inline float sqrt(float x) { return __builtin_sqrtf(x); }
inline float pow(float x, float y) { return powf(x, y); }
inline float acos(float x) { return acosf(x); }
inline float asin(float x) { return asinf(x); }
inline float atan(float x) { return atanf(x); }
inline double exp(double x) { return ::exp(x); }
inline double log(double x) { return ::log(x); }
inline double sin(double x) { return ::sin(x); }
inline double cos(double x) { return ::cos(x); }
inline double tanh(double x) { return ::tanh(x); }
inline double erf(double x) { return ::erf(x); }
inline double expm1(double x) { return ::expm1(x); }
inline double log1p(double x) { return ::log1p(x); }
inline double sqrt(double x) { return __builtin_sqrt(x); }
inline double pow(double x, double y) { return ::pow(x, y); }
inline double acos(double x) { return ::acos(x); }
inline double asin(double x) { return ::asin(x); }
inline double atan(double x) { return ::atan(x); }
}  // namespace vm

)";

}  // namespace

const Formula* FindFormula(absl::string_view op) {
  for (const Formula& f : kFormulas) {
    if (op == f.op) return &f;
  }
  return nullptr;
}

const char* CppTypeName(DType d) {
  switch (d) {
    case v1::DTYPE_FLOAT64:
      return "double";
    case v1::DTYPE_BOOL:
      return "bool";
    case v1::DTYPE_INT64:
      return "int64_t";
    case v1::DTYPE_INT32:
      return "int32_t";
    case v1::DTYPE_UINT8:
      return "uint8_t";
    default:
      return "float";
  }
}

std::string KernelPreamble() { return kPreamble; }

const std::string& ElementFunctions::Name(const char* op,
                                          const std::string& result_type,
                                          const std::string& definition) {
  auto [it, inserted] =
      names_.try_emplace(absl::StrCat(result_type, " ", definition),
                         absl::StrCat("e", names_.size()));
  if (inserted) {
    absl::StrAppend(&source_, "// ", op,
                    "\nstatic inline __attribute__((always_inline)) ",
                    result_type, " ", it->second, definition, "\n");
  }
  return it->second;
}

std::string CppLiteral(double x) {
  if (std::isnan(x)) return "__builtin_nan(\"\")";
  if (std::isinf(x)) return x > 0 ? "__builtin_inf()" : "(-__builtin_inf())";
  return absl::StrFormat("%.17g", x);
}

std::string GemmSource(const GemmShape& s) {
  std::string body;
  const int in_a = s.addmm ? 1 : 0;
  if (s.addmm) {
    absl::StrAppend(
        &body, "  const C* bias = static_cast<const C*>(inputs[0]);\n",
        "  for (int64_t i = 0; i < ", s.m, "; ++i)\n",
        "    for (int64_t j = 0; j < ", s.n, "; ++j)\n", "      out[i * ", s.n,
        " + j] = bias[",
        s.bias_is_row ? "j" : absl::StrCat("i * ", s.n, " + j"), "];\n");
  }
  const bool batched = s.batch != 1;
  if (batched) {
    absl::StrAppend(&body, "  for (int64_t b = 0; b < ", s.batch, "; ++b)\n");
  }
  const std::string a_offset =
      batched ? absl::StrCat(" + b * ", s.batch_stride_a) : "";
  const std::string b_offset =
      batched ? absl::StrCat(" + b * ", s.batch_stride_b) : "";
  const std::string out_offset =
      batched ? absl::StrCat(" + b * ", s.m * s.n) : "";
  absl::StrAppend(&body, "  ", s.f64 ? "cblas_dgemm" : "cblas_sgemm", "(101, ",
                  s.transpose_a ? 112 : 111, ", ", s.transpose_b ? 112 : 111,
                  ", ", s.m, ", ", s.n, ", ", s.k, ", ", CppLiteral(s.alpha),
                  ", static_cast<const C*>(inputs[", in_a, "])", a_offset, ", ",
                  s.lda, ", static_cast<const C*>(inputs[", in_a + 1, "])",
                  b_offset, ", ", s.ldb, ", ",
                  s.addmm ? CppLiteral(s.beta) : "0.0", ", out", out_offset,
                  ", ", s.n, ");\n");
  return body;
}

}  // namespace aotcache
