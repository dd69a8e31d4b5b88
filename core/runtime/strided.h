// The loops kernels are written with: dtype dispatch and element-wise
// iteration over strided, broadcast and zero-size tensors.
// Thread-safety: functions only.
#ifndef AOTCACHE_CORE_RUNTIME_STRIDED_H_
#define AOTCACHE_CORE_RUNTIME_STRIDED_H_

#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/runtime/tensor.h"

namespace aotcache {

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with T the C++ type of `dtype`.
template <typename F>
decltype(auto) DispatchDType(DType dtype, F&& f) {
  switch (dtype) {
    case v1::DTYPE_FLOAT64:
      return f(TypeTag<double>{});
    case v1::DTYPE_INT64:
      return f(TypeTag<int64_t>{});
    case v1::DTYPE_INT32:
      return f(TypeTag<int32_t>{});
    case v1::DTYPE_UINT8:
      return f(TypeTag<uint8_t>{});
    case v1::DTYPE_BOOL:
      return f(TypeTag<bool>{});
    default:
      return f(TypeTag<float>{});
  }
}

// Reads element at storage position `pos` of a tensor of dtype `dtype`,
// converted to T.
template <typename T>
inline T LoadAs(const char* storage, DType dtype, int64_t pos) {
  switch (dtype) {
    case v1::DTYPE_FLOAT64:
      return static_cast<T>(reinterpret_cast<const double*>(storage)[pos]);
    case v1::DTYPE_INT64:
      return static_cast<T>(reinterpret_cast<const int64_t*>(storage)[pos]);
    case v1::DTYPE_INT32:
      return static_cast<T>(reinterpret_cast<const int32_t*>(storage)[pos]);
    case v1::DTYPE_UINT8:
      return static_cast<T>(reinterpret_cast<const uint8_t*>(storage)[pos]);
    case v1::DTYPE_BOOL:
      return static_cast<T>(reinterpret_cast<const bool*>(storage)[pos]);
    default:
      return static_cast<T>(reinterpret_cast<const float*>(storage)[pos]);
  }
}

template <typename T>
inline void StoreFrom(char* storage, DType dtype, int64_t pos, T value) {
  switch (dtype) {
    case v1::DTYPE_FLOAT64:
      reinterpret_cast<double*>(storage)[pos] = static_cast<double>(value);
      break;
    case v1::DTYPE_INT64:
      reinterpret_cast<int64_t*>(storage)[pos] = static_cast<int64_t>(value);
      break;
    case v1::DTYPE_INT32:
      reinterpret_cast<int32_t*>(storage)[pos] = static_cast<int32_t>(value);
      break;
    case v1::DTYPE_UINT8:
      reinterpret_cast<uint8_t*>(storage)[pos] = static_cast<uint8_t>(value);
      break;
    case v1::DTYPE_BOOL:
      reinterpret_cast<bool*>(storage)[pos] = static_cast<bool>(value);
      break;
    default:
      reinterpret_cast<float*>(storage)[pos] = static_cast<float>(value);
  }
}

// The strides of `in` seen through a broadcast to `shape` (0 where `in` has
// size 1 or lacks the dim).
std::vector<int64_t> BroadcastStrides(const Meta& in,
                                      const std::vector<int64_t>& shape);

// Calls f(positions) for every index of `shape` in row-major order, where
// positions[k] is the storage position of that index in operand k (offset +
// sum(index * strides[k])). Zero-size shapes call nothing.
template <typename F>
void ForEachIndex(const std::vector<int64_t>& shape,
                  const std::vector<std::vector<int64_t>>& strides,
                  const std::vector<int64_t>& offsets, F&& f) {
  const size_t n = strides.size();
  const int64_t rank = static_cast<int64_t>(shape.size());
  for (int64_t s : shape) {
    if (s == 0) return;
  }
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> pos = offsets;
  while (true) {
    f(pos.data());
    int64_t d = rank - 1;
    for (; d >= 0; --d) {
      if (++index[d] < shape[d]) {
        for (size_t k = 0; k < n; ++k) pos[k] += strides[k][d];
        break;
      }
      for (size_t k = 0; k < n; ++k) pos[k] -= (shape[d] - 1) * strides[k][d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// Copies `src` (broadcast to dst's shape, any dtype) into `dst`.
void CopyInto(const Tensor& src, const Tensor& dst);

// Writes `values` (dst's elements in row-major order, as
// Tensor::ToDoubles reads them) into `dst`, whatever its strides and dtype.
void StoreDoubles(const std::vector<double>& values, const Tensor& dst);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_RUNTIME_STRIDED_H_
