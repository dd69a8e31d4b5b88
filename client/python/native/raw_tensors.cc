#include "client/python/native/raw_tensors.h"

#include <dlpack/dlpack.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/graph/dtype.h"

namespace py = pybind11;

namespace aotcache {
namespace {

constexpr DType kDTypes[] = {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64,
                             v1::DTYPE_INT64,   v1::DTYPE_INT32,
                             v1::DTYPE_UINT8,   v1::DTYPE_BOOL};

DType DTypeNamed(const std::string& name) {
  for (DType d : kDTypes) {
    if (DTypeName(d) == name) return d;
  }
  throw std::invalid_argument(
      "aotcache supports float32, float64, int64, int32, uint8 and bool, "
      "not " +
      name);
}

DLDataType DLDTypeOf(DType dtype) {
  const uint8_t bits = static_cast<uint8_t>(8 * ItemSize(dtype));
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
    case v1::DTYPE_FLOAT64:
      return {kDLFloat, bits, 1};
    case v1::DTYPE_INT64:
    case v1::DTYPE_INT32:
      return {kDLInt, bits, 1};
    case v1::DTYPE_UINT8:
    case v1::DTYPE_BOOL:  // DLPack 0.6 has no bool: uint8, viewed as bool.
      return {kDLUInt, bits, 1};
    default:
      throw std::invalid_argument(
          absl::StrCat("a result of an unsupported dtype ", DTypeName(dtype)));
  }
}

// A DLPack tensor that owns a reference to a runtime storage.
struct Managed {
  DLManagedTensor dl;
  Tensor owner;
  std::vector<int64_t> shape, stride;
};

void DeleteManaged(DLManagedTensor* dl) {
  delete static_cast<Managed*>(dl->manager_ctx);
}

// A capsule as torch.utils.dlpack.from_dlpack takes it ("dltensor"; the
// consumer renames it "used_dltensor" and frees it itself).
py::capsule Capsule(const Tensor& t, std::vector<int64_t> shape,
                    std::vector<int64_t> stride) {
  auto* m = new Managed{{}, t, std::move(shape), std::move(stride)};
  m->dl.manager_ctx = m;
  m->dl.deleter = &DeleteManaged;
  DLTensor& d = m->dl.dl_tensor;
  d.data = t.storage_data();
  d.device = {kDLCPU, 0};
  d.ndim = static_cast<int32_t>(m->shape.size());
  d.dtype = DLDTypeOf(t.dtype());
  d.shape = m->shape.data();
  d.strides = m->stride.data();
  d.byte_offset = 0;
  return py::capsule(&m->dl, "dltensor", [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor")) {  // Never consumed.
      auto* dl = static_cast<DLManagedTensor*>(
          PyCapsule_GetPointer(capsule, "dltensor"));
      dl->deleter(dl);
    }
  });
}

}  // namespace

Tensor Borrow(const RawTensor& t) {
  Meta meta;
  meta.dtype = DTypeNamed(t.dtype);
  meta.shape = t.shape;
  meta.stride = t.stride;
  if (t.origin < 0 || t.origin > t.offset) {
    throw std::invalid_argument("a borrowed tensor's origin lies past it");
  }
  meta.offset = t.offset - t.origin;
  const int64_t item = ItemSize(meta.dtype);
  return Tensor::Borrow(reinterpret_cast<char*>(t.storage) + t.origin * item,
                        std::max<int64_t>(0, t.storage_bytes / item - t.origin),
                        std::move(meta));
}

std::vector<Tensor> Borrow(const std::vector<RawTensor>& ts) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const RawTensor& t : ts) out.push_back(Borrow(t));
  return out;
}

int LiesIn(const Tensor& t, const std::vector<Tensor>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (t.SharesStorageWith(args[i])) return static_cast<int>(i);
  }
  return -1;
}

py::tuple ToPython(const Tensor& t, const std::vector<Tensor>& args,
                   const std::vector<RawTensor>& raw_args) {
  const Meta& m = t.meta();
  const int i = LiesIn(t, args);
  if (i >= 0) {
    return py::make_tuple(i, m.shape, m.stride, m.offset + raw_args[i].origin);
  }
  // A view keeps its storage offset: a saved value handed back to the
  // backward must have the layout the backward graph was compiled for.
  py::capsule capsule = m.offset == 0 ? Capsule(t, m.shape, m.stride)
                                      : Capsule(t, {t.storage_elements()}, {1});
  return py::make_tuple(capsule, std::string(DTypeName(t.dtype())), m.shape,
                        m.stride, m.offset);
}

}  // namespace aotcache
