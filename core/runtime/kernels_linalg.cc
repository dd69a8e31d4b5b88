// Matrix products: mm, addmm, bmm, dot. Plain loops with float64
// accumulation: the reference backend is for correctness; the native
// backend brings BLAS.
#include "core/runtime/kernel.h"
#include "core/runtime/strided.h"

namespace aotcache {
namespace {

using Results = absl::StatusOr<std::vector<Tensor>>;

double At(const Tensor& t, int64_t i, int64_t j) {
  const Meta& m = t.meta();
  return LoadAs<double>(t.storage_data(), m.dtype,
                        m.offset + i * m.stride[0] + j * m.stride[1]);
}

// out[i][j] = beta * bias[i][j] + alpha * sum_k a[i][k] * b[k][j], over
// 2-D views (bias broadcast; undefined bias means none).
void MatMul(const Tensor& a, const Tensor& b, const Tensor& bias, double beta,
            double alpha, const Tensor& out) {
  const Meta& m = out.meta();
  int64_t rows = m.shape[0], cols = m.shape[1], inner = a.shape()[1];
  std::vector<int64_t> bias_strides;
  if (bias.defined()) bias_strides = BroadcastStrides(bias.meta(), m.shape);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < inner; ++p) acc += At(a, i, p) * At(b, p, j);
      double v = alpha * acc;
      if (bias.defined() && beta != 0) {
        v += beta * LoadAs<double>(bias.storage_data(), bias.dtype(),
                                   bias.meta().offset + i * bias_strides[0] +
                                       j * bias_strides[1]);
      }
      StoreFrom<double>(out.storage_data(), m.dtype,
                        m.offset + i * m.stride[0] + j * m.stride[1], v);
    }
  }
}

Results Mm(const KernelArgs& k) {
  Tensor out = k.NewResult(0);
  MatMul(k.tensor(0), k.tensor(1), Tensor(), 0, 1, out);
  return std::vector<Tensor>{out};
}

Results Addmm(const KernelArgs& k) {
  Tensor out = k.NewResult(0);
  MatMul(k.tensor(1), k.tensor(2), k.tensor(0), k.number(3), k.number(4), out);
  return std::vector<Tensor>{out};
}

// The 2-D view of batch `i` of a 3-D tensor.
Tensor Batch(const Tensor& t, int64_t i) {
  Meta m = t.meta();
  m.offset += i * m.stride[0];
  m.shape.erase(m.shape.begin());
  m.stride.erase(m.stride.begin());
  return t.View(m);
}

Results Bmm(const KernelArgs& k) {
  Tensor out = k.NewResult(0);
  for (int64_t i = 0; i < out.shape()[0]; ++i) {
    MatMul(Batch(k.tensor(0), i), Batch(k.tensor(1), i), Tensor(), 0, 1,
           Batch(out, i));
  }
  return std::vector<Tensor>{out};
}

Results Dot(const KernelArgs& k) {
  const Meta& a = k.tensor(0).meta();
  const Meta& b = k.tensor(1).meta();
  double acc = 0;
  for (int64_t i = 0; i < a.shape[0]; ++i) {
    acc += LoadAs<double>(k.tensor(0).storage_data(), a.dtype,
                          a.offset + i * a.stride[0]) *
           LoadAs<double>(k.tensor(1).storage_data(), b.dtype,
                          b.offset + i * b.stride[0]);
  }
  Tensor out = k.NewResult(0);
  StoreFrom<double>(out.storage_data(), out.dtype(), out.meta().offset, acc);
  return std::vector<Tensor>{out};
}

}  // namespace

namespace kernels {

const std::vector<Entry>& LinalgKernels() {
  static const auto* table = new std::vector<Entry>{
      {"aten.mm.default", Mm},
      {"aten.addmm.default", Addmm},
      {"aten.bmm.default", Bmm},
      {"aten.dot.default", Dot},
  };
  return *table;
}

}  // namespace kernels
}  // namespace aotcache
