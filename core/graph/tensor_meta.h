// Meta: the shape, strides, storage offset and dtype of a tensor value, in the
// form the analysis works on (TensorMeta is its wire form), and BoundArg: one
// argument of a node after it was matched against the op's schema.
// Thread-safety: plain values.
#ifndef AOTCACHE_CORE_GRAPH_TENSOR_META_H_
#define AOTCACHE_CORE_GRAPH_TENSOR_META_H_

#include <cstdint>
#include <string>
#include <vector>

#include "aotcache/v1/graph.pb.h"
#include "core/graph/dtype.h"

namespace aotcache {

struct Meta {
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  int64_t offset = 0;
  DType dtype = v1::DTYPE_UNSPECIFIED;

  // What numel and StorageExtent return when the exact value overflows
  // int64 (so that it fails every bound it is checked against).
  static constexpr int64_t kSaturated = INT64_MAX;

  int64_t dim() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const;
  // The number of storage elements from the start of the storage that the
  // tensor reaches: offset + max index + 1 (offset when empty).
  int64_t StorageExtent() const;
  bool IsContiguous() const;
  bool operator==(const Meta& other) const;
  bool operator!=(const Meta& other) const { return !(*this == other); }
};

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape);
Meta ContiguousMeta(std::vector<int64_t> shape, DType dtype);
// Empty strides in the proto mean contiguous.
Meta MetaFromProto(const v1::TensorMeta& proto);
v1::TensorMeta MetaToProto(const Meta& meta);

// One argument, bound to its schema position, defaults filled in.
struct BoundArg {
  enum class Kind {
    kNone,
    kInt,
    kFloat,
    kBool,
    kString,
    kInts,
    kDType,
    kDevice,
    kTensor,
    kTensorList
  };
  Kind kind = Kind::kNone;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;              // kString, kDevice
  std::vector<int64_t> ints;  // kInts
  DType dtype = v1::DTYPE_UNSPECIFIED;
  std::vector<int> values;  // kTensor (one), kTensorList: value ids

  bool is_none() const { return kind == Kind::kNone; }
  bool is_tensor() const { return kind == Kind::kTensor; }
  bool is_number() const {
    return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool;
  }
  double AsDouble() const;  // For numbers.
};

// Argument constructors, for code that emits nodes.
BoundArg TensorArg(int value);
BoundArg NumberArg(double v);
BoundArg IntArg(int64_t v);
BoundArg IntsArg(std::vector<int64_t> v);
BoundArg BoolArg(bool v);
BoundArg StringArg(std::string s);
BoundArg DTypeArg(DType d);
BoundArg NoneArg();
BoundArg TensorListArg(std::vector<int> values);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_TENSOR_META_H_
