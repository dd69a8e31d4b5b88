#include "core/graph/tensor_meta.h"

namespace aotcache {

int64_t Meta::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) {
    if (__builtin_mul_overflow(n, s, &n)) return kSaturated;
  }
  return n;
}

int64_t Meta::StorageExtent() const {
  if (numel() == 0) return offset;
  int64_t last = offset;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t step;
    if (__builtin_mul_overflow(shape[d] - 1, stride[d], &step) ||
        __builtin_add_overflow(last, step, &last) || last == kSaturated) {
      return kSaturated;
    }
  }
  return last + 1;
}

bool Meta::IsContiguous() const { return stride == ContiguousStrides(shape); }

bool Meta::operator==(const Meta& other) const {
  return shape == other.shape && stride == other.stride &&
         offset == other.offset && dtype == other.dtype;
}

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> stride(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    stride[d] = s;
    // Saturates: only an empty tensor gets this far (validation refuses
    // the others), and its strides address nothing.
    if (__builtin_mul_overflow(s, shape[d] > 1 ? shape[d] : 1, &s)) {
      s = Meta::kSaturated;
    }
  }
  return stride;
}

Meta ContiguousMeta(std::vector<int64_t> shape, DType dtype) {
  Meta meta;
  meta.stride = ContiguousStrides(shape);
  meta.shape = std::move(shape);
  meta.dtype = dtype;
  return meta;
}

Meta MetaFromProto(const v1::TensorMeta& proto) {
  Meta meta;
  meta.shape.assign(proto.shape().begin(), proto.shape().end());
  if (proto.stride_size() == 0) {
    meta.stride = ContiguousStrides(meta.shape);
  } else {
    meta.stride.assign(proto.stride().begin(), proto.stride().end());
  }
  meta.offset = proto.storage_offset();
  meta.dtype = proto.dtype();
  return meta;
}

v1::TensorMeta MetaToProto(const Meta& meta) {
  v1::TensorMeta proto;
  for (int64_t s : meta.shape) proto.add_shape(s);
  for (int64_t s : meta.stride) proto.add_stride(s);
  proto.set_storage_offset(meta.offset);
  proto.set_dtype(meta.dtype);
  proto.set_device("cpu");
  return proto;
}

double BoundArg::AsDouble() const {
  switch (kind) {
    case Kind::kInt:
      return static_cast<double>(i);
    case Kind::kFloat:
      return f;
    case Kind::kBool:
      return b ? 1.0 : 0.0;
    default:
      return 0;
  }
}

using Kind = BoundArg::Kind;

BoundArg TensorArg(int local) {
  BoundArg b;
  b.kind = Kind::kTensor;
  b.values = {local};
  return b;
}
BoundArg NumberArg(double v) {
  BoundArg b;
  b.kind = Kind::kFloat;
  b.f = v;
  return b;
}
BoundArg IntArg(int64_t v) {
  BoundArg b;
  b.kind = Kind::kInt;
  b.i = v;
  return b;
}
BoundArg IntsArg(std::vector<int64_t> v) {
  BoundArg b;
  b.kind = Kind::kInts;
  b.ints = std::move(v);
  return b;
}
BoundArg BoolArg(bool v) {
  BoundArg b;
  b.kind = Kind::kBool;
  b.b = v;
  return b;
}
BoundArg StringArg(std::string s) {
  BoundArg b;
  b.kind = Kind::kString;
  b.s = std::move(s);
  return b;
}
BoundArg DTypeArg(DType d) {
  BoundArg b;
  b.kind = Kind::kDType;
  b.dtype = d;
  return b;
}
BoundArg NoneArg() { return BoundArg(); }
BoundArg TensorListArg(std::vector<int> values) {
  BoundArg b;
  b.kind = BoundArg::Kind::kTensorList;
  b.values = std::move(values);
  return b;
}

}  // namespace aotcache
