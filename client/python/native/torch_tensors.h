// Tensors across the boundary between torch and aotcache's runtime, without
// copies: a torch tensor is borrowed as a runtime Tensor over the same
// memory, and a runtime result becomes a torch tensor over the runtime's
// memory (which it keeps alive) starting at its first element, or, when the
// result lies in an argument's memory, a view of that argument. Thread-safety:
// the functions are pure; the caller keeps the torch tensors alive while the
// borrowed Tensors are used.
#ifndef AOTCACHE_CLIENT_PYTHON_NATIVE_TORCH_TENSORS_H_
#define AOTCACHE_CLIENT_PYTHON_NATIVE_TORCH_TENSORS_H_

#include <ATen/ATen.h>

#include <vector>

#include "core/runtime/tensor.h"

namespace aotcache {

// The torch dtype of a runtime dtype; throws std::invalid_argument for
// DTYPE_UNSPECIFIED.
at::ScalarType ScalarTypeOf(DType dtype);

// `t`'s memory as a runtime Tensor, whose storage begins at element
// `origin` of t's (t lies at storage_offset - origin there): the inputs of
// one storage are compiled as if it began at the first element any of them
// reaches (aotcache.input_copies.storage_spans) and are borrowed with that
// element as their origin. Throws
// std::invalid_argument (a Python ValueError through pybind11) for a tensor
// that is not on the CPU, or of a dtype aotcache does not support.
Tensor Borrow(const at::Tensor& t, int64_t origin = 0);
// ts[i] with origins[i]; with no `origins`, each at its own storage offset
// (its storage seen from its first element: inputs that share no storage).
std::vector<Tensor> Borrow(const std::vector<at::Tensor>& ts,
                           const std::vector<int64_t>& origins = {});

// A runtime result as a torch tensor, and which argument's memory it lies
// in: then it is a view of that argument (detached), else it owns (shares)
// the runtime's storage.
struct TorchResult {
  at::Tensor tensor;
  int arg = -1;        // The argument it lies in; -1: none.
  int64_t origin = 0;  // That argument's origin (see Borrow).
};
TorchResult ToTorch(const Tensor& t, const std::vector<Tensor>& args,
                    const std::vector<at::Tensor>& torch_args);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_PYTHON_NATIVE_TORCH_TENSORS_H_
