// Tensors across the boundary between Python and aotcache's runtime without
// torch's C++ API, so that the binding works with every torch release: a
// caller's tensor arrives as a RawTensor (its storage's address and size,
// its layout and dtype), borrowed without a copy; a result goes back as a
// view of the argument whose memory it lies in, or as a DLPack capsule over
// the runtime's memory (which it keeps alive) that torch.from_dlpack takes
// without a copy. Thread-safety: the functions are pure; the caller keeps
// the tensors alive while the borrowed Tensors are used.
#ifndef AOTCACHE_CLIENT_PYTHON_NATIVE_RAW_TENSORS_H_
#define AOTCACHE_CLIENT_PYTHON_NATIVE_RAW_TENSORS_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/runtime/tensor.h"

namespace aotcache {

// A torch tensor as aotcache/_torch_node.py describes it.
struct RawTensor {
  uintptr_t storage = 0;      // The storage's first byte.
  int64_t storage_bytes = 0;  // Its size.
  int64_t offset = 0;         // In elements, as torch's storage_offset().
  std::vector<int64_t> shape, stride;
  std::string dtype;   // torch's name without "torch.": "float32", "bool".
  int64_t origin = 0;  // Where the runtime sees the storage begin (elements).
};

// `t`'s memory as a runtime Tensor whose storage begins at element
// `t.origin`. Throws std::invalid_argument (ValueError) for a dtype
// aotcache does not support or an origin past the tensor.
Tensor Borrow(const RawTensor& t);
std::vector<Tensor> Borrow(const std::vector<RawTensor>& ts);

// A runtime result for Python: (i, shape, stride, offset) when it lies in
// args[i]'s memory (offset in that tensor's storage, as torch counts it;
// an undefined args[i] is never matched); else (capsule, dtype, shape,
// stride, offset): a DLPack capsule over the runtime's storage, whole
// (offset != 0) or as the result (offset == 0), bool results carried as
// uint8.
pybind11::tuple ToPython(const Tensor& t, const std::vector<Tensor>& args,
                         const std::vector<RawTensor>& raw_args);

// Which of args `t` lies in; -1 for none.
int LiesIn(const Tensor& t, const std::vector<Tensor>& args);

// A forward's result kept in the runtime's memory for the backward (a
// value saved for it that lies in no input): Python holds it as it is and
// hands it back to the backward, never converting it to a torch tensor.
struct KeptTensor {
  Tensor tensor;
};

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_PYTHON_NATIVE_RAW_TENSORS_H_
