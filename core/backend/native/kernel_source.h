// The fixed parts of the native backend's generated C++ (fusion.h puts
// them together): the formula of each elementwise op, the preamble every
// source starts with (vector math through libmvec, CBLAS, the threads'
// scratch memory), number literals, the element functions the loops call,
// and the bodies of the kernels that are not elementwise loops (matrix
// products through BLAS; softmax, layer norm, scatters, dot, cat and
// mse_loss in structured_sources.cc). Bodies run inside `extern "C" void
// k(const void* const* inputs, void* const* outputs, int64_t n)` with
// `using C = <the first output's type>;`. Thread-safety: pure functions; an
// ElementFunctions is not thread-safe (one per generated source).
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

// Softmax or log_softmax over rows of `cols` (input 0), or its backward
// (inputs: the output's gradient, the output), in double as the runtime's
// kernels.
struct SoftmaxShape {
  int64_t rows = 0, cols = 0;
  bool log = false;
  bool backward = false;
};
std::string SoftmaxSource(const SoftmaxShape& shape);

// mse_loss(self, target, reduction) over `numel` elements of two contiguous
// tensors of one shape (reduction 0: elementwise, 1: mean, 2: sum), or its
// backward (inputs: the gradient, of that shape or one element, then self
// and target), in double as the runtime's kernels.
struct MseLossShape {
  int64_t numel = 0;
  int reduction = 1;
  bool backward = false;
  bool scalar_grad = false;
};
std::string MseLossSource(const MseLossShape& shape);

// var.correction over a contiguous input seen as [pre, outer, reduced,
// inner], reduced over pre and reduced, into a contiguous [outer, inner]:
// per output, in double as the runtime's kernel and in its order, the mean,
// then the squared deviations over max(0, count - correction).
struct VarShape {
  int64_t pre = 1, outer = 1, reduced = 1, inner = 1;
  double correction = 1;
};
std::string VarSource(const VarShape& shape);

// dot(a, b) of two vectors of `n` elements read through their strides,
// into one element: in double, as the runtime's kernel.
struct DotShape {
  int64_t n = 0;
  int64_t a_stride = 1, b_stride = 1;
};
std::string DotSource(const DotShape& shape);

// select_scatter, slice_scatter and as_strided_scatter into a contiguous
// result of `shape`: self (input 0, of that shape, read through
// `self_strides`) copied, then src (input 1, read through `src_strides`
// over the view's shape) written into the view of the result (`view_shape`,
// `view_strides`, `view_offset`, in the result's elements), in order, as
// the runtime's kernels do.
struct ScatterShape {
  std::vector<int64_t> shape, self_strides;
  std::vector<int64_t> view_shape, view_strides, src_strides;
  int64_t view_offset = 0;
  DType src_dtype = v1::DTYPE_FLOAT32;
};
std::string ScatterSource(const ScatterShape& shape);

// cat of contiguous parts into a contiguous result of their dtype, seen as
// `outer` rows of `row` elements: part k fills `widths[k]` elements of each
// row, after the parts before it (an empty part has width 0).
struct ConcatShape {
  int64_t outer = 1, row = 1;
  std::vector<int64_t> widths;
};
std::string ConcatSource(const ConcatShape& shape);

// native_layer_norm over rows of `cols`: inputs x, then the weight and the
// bias when present; outputs the result, mean and rstd. In double, as the
// runtime's kernel.
struct LayerNormShape {
  int64_t rows = 0, cols = 0;
  double eps = 0;
  bool weight = false, bias = false;
};
std::string LayerNormSource(const LayerNormShape& shape);

// native_layer_norm_backward over rows of `cols`: inputs the output's
// gradient, x, mean, rstd, then the weight when present; outputs the
// gradients of x, weight and bias, each computed only if its mask is set.
struct LayerNormBackwardShape {
  int64_t rows = 0, cols = 0;
  bool weight = false;
  bool mask[3] = {false, false, false};
};
std::string LayerNormBackwardSource(const LayerNormBackwardShape& shape);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_KERNEL_SOURCE_H_
