#include "client/python/native/torch_tensors.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/graph/dtype.h"

namespace aotcache {
namespace {

DType DTypeOf(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return v1::DTYPE_FLOAT32;
    case at::kDouble:
      return v1::DTYPE_FLOAT64;
    case at::kLong:
      return v1::DTYPE_INT64;
    case at::kBool:
      return v1::DTYPE_BOOL;
    case at::kInt:
      return v1::DTYPE_INT32;
    case at::kByte:
      return v1::DTYPE_UINT8;
    default:
      throw std::invalid_argument(
          std::string(
              "aotcache supports float32, float64, int64, int32, uint8 and "
              "bool, "
              "not ") +
          c10::toString(type));
  }
}

}  // namespace

at::ScalarType ScalarTypeOf(DType dtype) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return at::kFloat;
    case v1::DTYPE_FLOAT64:
      return at::kDouble;
    case v1::DTYPE_INT64:
      return at::kLong;
    case v1::DTYPE_BOOL:
      return at::kBool;
    case v1::DTYPE_INT32:
      return at::kInt;
    case v1::DTYPE_UINT8:
      return at::kByte;
    default:
      throw std::invalid_argument(
          absl::StrCat("a result of an unsupported dtype ", DTypeName(dtype)));
  }
}

Tensor Borrow(const at::Tensor& t, int64_t origin) {
  if (!t.device().is_cpu()) {
    throw std::invalid_argument("aotcache runs on the CPU; got a " +
                                t.device().str() + " tensor");
  }
  Meta meta;
  meta.dtype = DTypeOf(t.scalar_type());
  meta.shape.assign(t.sizes().begin(), t.sizes().end());
  meta.stride.assign(t.strides().begin(), t.strides().end());
  if (origin < 0 || origin > t.storage_offset()) {
    throw std::invalid_argument("a borrowed tensor's origin lies past it");
  }
  meta.offset = t.storage_offset() - origin;
  const c10::Storage& storage = t.storage();
  const int64_t item = ItemSize(meta.dtype);
  return Tensor::Borrow(
      static_cast<char*>(const_cast<void*>(storage.data())) + origin * item,
      std::max<int64_t>(0,
                        static_cast<int64_t>(storage.nbytes()) / item - origin),
      std::move(meta));
}

std::vector<Tensor> Borrow(const std::vector<at::Tensor>& ts,
                           const std::vector<int64_t>& origins) {
  if (!origins.empty() && origins.size() != ts.size()) {
    throw std::invalid_argument("one origin per borrowed tensor");
  }
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    out.push_back(
        Borrow(ts[i], origins.empty() ? ts[i].storage_offset() : origins[i]));
  }
  return out;
}

TorchResult ToTorch(const Tensor& t, const std::vector<Tensor>& args,
                    const std::vector<at::Tensor>& torch_args) {
  const Meta& m = t.meta();
  for (size_t i = 0; i < args.size(); ++i) {
    if (t.SharesStorageWith(args[i])) {
      const int64_t origin =
          torch_args[i].storage_offset() - args[i].meta().offset;
      return {torch_args[i].detach().as_strided(m.shape, m.stride,
                                                m.offset + origin),
              static_cast<int>(i), origin};
    }
  }
  // Over the runtime's memory; the deleter owns a Tensor (a reference to
  // the runtime's storage). A view keeps its storage offset: a saved value
  // handed back to the backward must have the layout the backward graph
  // was compiled for (a select's offset into its base, say).
  const at::TensorOptions options = at::dtype(ScalarTypeOf(t.dtype()));
  auto* owner = new Tensor(t);
  auto deleter = [owner](void*) { delete owner; };
  if (m.offset == 0) {
    return {
        at::from_blob(t.storage_data(), m.shape, m.stride, deleter, options)};
  }
  return {
      at::from_blob(t.storage_data(), {t.storage_elements()}, deleter, options)
          .as_strided(m.shape, m.stride, m.offset)};
}

}  // namespace aotcache
