#include "core/graph/dtype.h"

#include <algorithm>

namespace aotcache {

int DTypeRank(DType dtype) {
  switch (dtype) {
    case v1::DTYPE_BOOL:
      return 0;
    case v1::DTYPE_UINT8:
      return 1;
    case v1::DTYPE_INT32:
      return 2;
    case v1::DTYPE_INT64:
      return 3;
    case v1::DTYPE_FLOAT32:
      return 4;
    case v1::DTYPE_FLOAT64:
      return 5;
    default:
      return -1;
  }
}

bool IsFloating(DType dtype) {
  return dtype == v1::DTYPE_FLOAT32 || dtype == v1::DTYPE_FLOAT64;
}

bool IsIntegral(DType dtype) {
  return dtype == v1::DTYPE_INT64 || dtype == v1::DTYPE_INT32 ||
         dtype == v1::DTYPE_UINT8 || dtype == v1::DTYPE_BOOL;
}

int64_t ItemSize(DType dtype) {
  switch (dtype) {
    case v1::DTYPE_BOOL:
    case v1::DTYPE_UINT8:
      return 1;
    case v1::DTYPE_FLOAT32:
    case v1::DTYPE_INT32:
      return 4;
    case v1::DTYPE_INT64:
    case v1::DTYPE_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case v1::DTYPE_BOOL:
      return "bool";
    case v1::DTYPE_UINT8:
      return "uint8";
    case v1::DTYPE_INT32:
      return "int32";
    case v1::DTYPE_INT64:
      return "int64";
    case v1::DTYPE_FLOAT32:
      return "float32";
    case v1::DTYPE_FLOAT64:
      return "float64";
    default:
      return "unspecified";
  }
}

DType PromoteTypes(DType a, DType b) {
  return DTypeRank(a) >= DTypeRank(b) ? a : b;
}

}  // namespace aotcache
