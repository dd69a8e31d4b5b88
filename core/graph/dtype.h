// Element types of tensors and torch's type promotion over them.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_DTYPE_H_
#define AOTCACHE_CORE_GRAPH_DTYPE_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "aotcache/v1/graph.pb.h"

namespace aotcache {

using DType = v1::DType;

// bool < int64 < float32 < float64: for the supported dtypes torch's
// promote_types is the larger of the two in this order.
int DTypeRank(DType dtype);
bool IsFloating(DType dtype);
bool IsIntegral(DType dtype);  // int64 and bool.
int64_t ItemSize(DType dtype);
absl::string_view DTypeName(DType dtype);  // "float32", as torch prints it.
DType PromoteTypes(DType a, DType b);

// The dtype of a Python number passed where a tensor goes.
enum class ScalarKind { kBool, kInt, kFloat };

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_DTYPE_H_
