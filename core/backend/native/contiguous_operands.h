// A rewrite of the native backend: operands its kernels read only when
// contiguous (kernel_patterns.h, ValuesToMakeContiguous) are first copied
// by a clone into contiguous memory, as eager's kernels copy them, so that
// a matrix product whose operand is the expanded gradient of a sum runs
// through BLAS instead of the runtime's reference kernel. The copy is an
// elementwise loop of its own (fusion.h). Deterministic, and it keeps the
// graph's inputs and outputs.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_CONTIGUOUS_OPERANDS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_CONTIGUOUS_OPERANDS_H_

#include "absl/status/statusor.h"
#include "aotcache/v1/graph.pb.h"

namespace aotcache {

// `graph` (valid under InternalGraphLimits) with the clones inserted, each
// just before the first node that needs it; `graph` itself when none is.
absl::StatusOr<v1::Graph> MakeOperandsContiguous(const v1::Graph& graph);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_CONTIGUOUS_OPERANDS_H_
