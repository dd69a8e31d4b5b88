#include "client/python/native/call_signature.h"

#include <ATen/ATen.h>
#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace py = pybind11;

namespace aotcache {
namespace {

// Record kinds in the signature's bytes.
enum class Kind : int64_t { kTensorLeaf = 1, kOtherLeaf = 2, kCaptured = 3 };

// A storage as signature_in_python keys it: its device and data
// pointer, or, for a storage with no memory, the tensor itself.
struct StorageKey {
  const void* address;
  int64_t device;  // -1: `address` is the tensor's.
  bool operator==(const StorageKey& o) const {
    return address == o.address && device == o.device;
  }
  template <typename H>
  friend H AbslHashValue(H h, const StorageKey& k) {
    return H::combine(std::move(h), k.address, k.device);
  }
};

int64_t DeviceCode(const at::Tensor& t) {
  return static_cast<int64_t>(t.device().type()) * 256 + t.device().index() + 1;
}

StorageKey KeyOf(const at::Tensor& t) {
  const void* data = t.storage().data();
  if (data == nullptr) return {t.unsafeGetTensorImpl(), -1};
  return {data, DeviceCode(t)};
}

void AppendLayout(const at::Tensor& t, int64_t origin,
                  std::vector<int64_t>& out) {
  out.push_back(t.dim());
  for (int64_t s : t.sizes()) out.push_back(s);
  for (int64_t s : t.strides()) out.push_back(s);
  out.push_back(t.storage_offset() - origin);
  out.push_back(static_cast<int64_t>(t.scalar_type()));
  out.push_back(DeviceCode(t));
  out.push_back(t.requires_grad());
  out.push_back(t.is_leaf());
}

bool IsScalarLeaf(PyObject* a) {
  return a == Py_None || PyBool_Check(a) || PyLong_Check(a) ||
         PyFloat_Check(a) || PyUnicode_Check(a) || THPDtype_Check(a) ||
         THPDevice_Check(a);
}

}  // namespace

py::tuple CallSignature(const py::list& leaves, const py::object& spec,
                        const py::list& captured) {
  std::vector<const at::Tensor*> tensors;
  tensors.reserve(leaves.size() + captured.size());
  for (const py::handle a : leaves) {
    if (THPVariable_Check(a.ptr())) {
      tensors.push_back(&THPVariable_Unpack(a.ptr()));
    }
  }
  const size_t num_leaf_tensors = tensors.size();
  for (const py::handle t : captured) {
    if (!THPVariable_Check(t.ptr())) throw py::type_error("captured: a tensor");
    tensors.push_back(&THPVariable_Unpack(t.ptr()));
  }
  // Per storage: its number, and the first element its tensors reach (a
  // storage with a tensor that requires grad: its start).
  absl::flat_hash_map<StorageKey, int64_t> storages;
  std::vector<int64_t> origins;
  std::vector<int64_t> group_of;  // Per tensor.
  group_of.reserve(tensors.size());
  for (const at::Tensor* t : tensors) {
    const int64_t offset = t->requires_grad() ? 0 : t->storage_offset();
    auto [it, added] = storages.try_emplace(KeyOf(*t), origins.size());
    if (added) {
      origins.push_back(offset);
    } else if (offset < origins[it->second]) {
      origins[it->second] = offset;
    }
    group_of.push_back(it->second);
  }

  std::vector<int64_t> record;
  py::list parts;
  parts.append(py::bool_(at::GradMode::is_enabled()));
  parts.append(spec);
  absl::flat_hash_map<const void*, int64_t> first;  // The same tensor twice.
  size_t k = 0;
  std::vector<py::object> others;
  for (const py::handle a : leaves) {
    if (THPVariable_Check(a.ptr())) {
      const at::Tensor& t = *tensors[k];
      const int64_t group = group_of[k++];
      record.push_back(static_cast<int64_t>(Kind::kTensorLeaf));
      AppendLayout(t, origins[group], record);
      record.push_back(group);
      auto [it, added] = first.try_emplace(t.unsafeGetTensorImpl(),
                                           static_cast<int64_t>(first.size()));
      record.push_back(it->second);
    } else if (IsScalarLeaf(a.ptr())) {
      record.push_back(static_cast<int64_t>(Kind::kOtherLeaf));
      others.push_back(py::make_tuple(py::type::of(a), a));
    } else {
      throw py::type_error(
          "aot_function takes tensors, numbers, strings and (nested) lists, "
          "tuples and dicts of them, not " +
          std::string(Py_TYPE(a.ptr())->tp_name));
    }
  }
  for (size_t n = num_leaf_tensors; n < tensors.size(); ++n) {
    const at::Tensor& t = *tensors[n];
    record.push_back(static_cast<int64_t>(Kind::kCaptured));
    record.push_back(
        reinterpret_cast<int64_t>(t.unsafeGetTensorImpl()));  // Identity.
    AppendLayout(t, origins[group_of[n]], record);
    record.push_back(group_of[n]);
  }
  parts.append(py::bytes(reinterpret_cast<const char*>(record.data()),
                         record.size() * sizeof(int64_t)));
  for (py::object& o : others) parts.append(std::move(o));
  return py::tuple(parts);
}

}  // namespace aotcache
