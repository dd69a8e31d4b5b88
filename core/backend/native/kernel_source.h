// The fixed parts of the native backend's generated C++ (fusion.h puts
// them together): the formula of each elementwise op, the preamble every
// source starts with (vector math through libmvec, CBLAS, the threads'
// scratch memory), number literals, the element functions the loops call,
// and the body of a matrix product through BLAS. The other kernels' bodies
// are in their family's file (own_kernels.h lists them). Every body runs
// inside `extern "C" void k(const void* const* inputs, void* const*
// outputs, int64_t n)` with `using C = <the first output's type>;`.
// Thread-safety: pure functions; an ElementFunctions is not thread-safe (one
// per generated source).
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_KERNEL_SOURCE_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_KERNEL_SOURCE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/graph/dtype.h"

namespace aotcache {

// How the runtime's kernel computes each op, as a C++ expression over `a`
// and `b` (the node's first two tensor-or-number arguments) in the result
// type C; `alpha` is add/sub's argument 2 (a double, as in the kernel).
struct Formula {
  const char* op;
  int arity;
  const char* expr;
  // The operands' type in the expression: the result's (as the kernels load
  // them), double (comparisons), or where's (bool, then the result's).
  enum class Operands {
    kAsResult,
    kAsDouble,
    kWhere
  } operands = Operands::kAsResult;
  // For a fill (arity 0): the argument whose number is `b`, or -1.
  int value_arg = -1;
};

// The formula of an elementwise op ("aten.add.Tensor"; gelu and
// gelu_backward with approximate="tanh" as "aten.gelu.default(tanh)"), or
// nullptr.
const Formula* FindFormula(absl::string_view op);

// "float", "double" or "bool".
const char* CppTypeName(DType dtype);

// Declarations of the math functions with their OpenMP SIMD variants, of
// cblas_sgemm/dgemm, and namespace vm (exp, log, sin, cos, tanh, erf, sqrt
// and pow for float and double).
std::string KernelPreamble();

// The functions the loops call for their elements, one per formula and
// types, each defined once (a lambda per node made a graph of 20,000 adds
// 20,000 functions for the compiler to inline).
class ElementFunctions {
 public:
  // The name of the function `definition` (its text after the name), for a
  // node of `op`.
  const std::string& Name(const char* op, const std::string& result_type,
                          const std::string& definition);
  // Their definitions, in first use.
  const std::string& source() const { return source_; }

 private:
  std::map<std::string, std::string> names_;
  std::string source_;
};

// `x` as a C++ double expression (inf and NaN included).
std::string CppLiteral(double x);

// out = beta * bias + alpha * op(a) op(b), row-major [m, n], or for each
// of `batch` matrices out[i] = op(a[i]) op(b[i]) (bmm); inputs are (bias,)
// a, b.
struct GemmShape {
  bool f64 = false;
  bool addmm = false;
  bool bias_is_row = false;  // Bias [n], else [m, n].
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0;
  int64_t batch = 1, batch_stride_a = 0, batch_stride_b = 0;  // Elements.
  double alpha = 1, beta = 0;
};
std::string GemmSource(const GemmShape& shape);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_KERNEL_SOURCE_H_
