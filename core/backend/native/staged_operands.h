// Strided operands of the native backend's own kernels (convolutions, layer
// norms), which read and write row-major memory: a channels-last image or a
// permuted view is copied into row-major scratch before the kernel's body
// runs, and a strided result is written there and copied out after it, as
// eager's kernels make their operands contiguous.
// Thread-safety: pure functions; the generated copies work in the thread's
// scratch buffers (kernel_source.h: slots 2-7 for inputs, 8-10 for results;
// a kernel body keeps slots 0 and 1).
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_STAGED_OPERANDS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_STAGED_OPERANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/tensor_meta.h"

namespace aotcache {

// One operand (or result) the kernel stages.
struct StagedTensor {
  bool result = false;
  int index = 0;  // Among the kernel's inputs, or the node's results.
  std::vector<int64_t> shape, stride;
};

// Whether a kernel may take `m` as its input (or result) `index`: true when
// row-major, or when it can be staged (an input with any non-negative
// strides; a result dense: every element a place of its own and no gaps),
// in which case it is appended to `staged`.
bool StageIfStrided(const Meta& m, bool result, int index,
                    std::vector<StagedTensor>* staged);

// `body` (a kernel body over `inputs` and `results` row-major pointers) run
// over the staged copies; `body` itself when nothing is staged.
std::string StagedSource(int inputs, int results,
                         const std::vector<StagedTensor>& staged,
                         const std::string& body);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_STAGED_OPERANDS_H_
