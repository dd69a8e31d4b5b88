#include "core/runtime/tensor.h"

#include <cstring>

#include "core/runtime/strided.h"

namespace aotcache {

Tensor Tensor::Allocate(const Meta& meta, bool zeroed) {
  auto storage = std::make_shared<Storage>();
  storage->elements = meta.StorageExtent();
  const size_t bytes = storage->elements * ItemSize(meta.dtype);
  storage->owned = AllocateAligned(bytes);
  if (zeroed) std::memset(storage->owned.get(), 0, bytes);
  storage->data = storage->owned.get();
  return Tensor(std::move(storage), meta);
}

Tensor Tensor::Zeros(const Meta& meta) { return Allocate(meta, true); }

Tensor Tensor::Uninitialized(const Meta& meta) { return Allocate(meta, false); }

Tensor Tensor::Contiguous(std::vector<int64_t> shape, DType dtype) {
  return Zeros(ContiguousMeta(std::move(shape), dtype));
}

Tensor Tensor::Borrow(void* storage_data, int64_t storage_elements, Meta meta) {
  auto storage = std::make_shared<Storage>();
  storage->data = static_cast<char*>(storage_data);
  storage->elements = storage_elements;
  return Tensor(std::move(storage), std::move(meta));
}

Tensor Tensor::View(Meta meta) const {
  return Tensor(storage_, std::move(meta));
}

std::vector<double> Tensor::ToDoubles() const {
  std::vector<double> out;
  out.reserve(numel());
  if (meta_.IsContiguous()) {  // The common case, without the index walk.
    DispatchDType(dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = reinterpret_cast<const T*>(storage_data()) + meta_.offset;
      out.assign(p, p + numel());
    });
    return out;
  }
  ForEachIndex(meta_.shape, {meta_.stride}, {meta_.offset},
               [&](const int64_t* pos) {
                 out.push_back(LoadAs<double>(storage_data(), dtype(), pos[0]));
               });
  return out;
}

std::vector<int64_t> BroadcastStrides(const Meta& in,
                                      const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 0);
  int64_t lead = static_cast<int64_t>(shape.size()) - in.dim();
  for (int64_t d = 0; d < in.dim(); ++d) {
    strides[lead + d] = in.shape[d] == 1 ? 0 : in.stride[d];
  }
  return strides;
}

void StoreDoubles(const std::vector<double>& values, const Tensor& dst) {
  const Meta& m = dst.meta();
  if (m.IsContiguous()) {
    DispatchDType(m.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = reinterpret_cast<T*>(dst.storage_data()) + m.offset;
      for (size_t i = 0; i < values.size(); ++i)
        p[i] = static_cast<T>(values[i]);
    });
    return;
  }
  size_t i = 0;
  ForEachIndex(m.shape, {m.stride}, {m.offset}, [&](const int64_t* pos) {
    StoreFrom<double>(dst.storage_data(), m.dtype, pos[0], values[i++]);
  });
}

namespace {

// dst's shape with src's (broadcast) strides beside dst's, adjacent dims
// merged where both operands step through them as one: a contiguous copy
// becomes one dim, a row-wise one two.
struct CopyPlan {
  std::vector<int64_t> shape, dst_stride, src_stride;
};

CopyPlan MergeDims(const Meta& dst, std::vector<int64_t> src_stride) {
  CopyPlan plan;
  for (size_t d = 0; d < dst.shape.size(); ++d) {
    if (dst.shape[d] == 1) continue;
    if (!plan.shape.empty() &&
        plan.dst_stride.back() == dst.stride[d] * dst.shape[d] &&
        plan.src_stride.back() == src_stride[d] * dst.shape[d]) {
      plan.shape.back() *= dst.shape[d];
      plan.dst_stride.back() = dst.stride[d];
      plan.src_stride.back() = src_stride[d];
      continue;
    }
    plan.shape.push_back(dst.shape[d]);
    plan.dst_stride.push_back(dst.stride[d]);
    plan.src_stride.push_back(src_stride[d]);
  }
  return plan;
}

// Same dtype: the innermost dim as a memcpy when both step by one, else a
// typed loop; the outer dims through ForEachIndex.
template <typename T>
void CopySameType(const Tensor& src, const Tensor& dst) {
  const Meta& m = dst.meta();
  CopyPlan plan = MergeDims(m, BroadcastStrides(src.meta(), m.shape));
  T* out = reinterpret_cast<T*>(dst.storage_data());
  const T* in = reinterpret_cast<const T*>(src.storage_data());
  if (plan.shape.empty()) {  // One element.
    out[m.offset] = in[src.meta().offset];
    return;
  }
  const int64_t n = plan.shape.back();
  const int64_t ds = plan.dst_stride.back(), ss = plan.src_stride.back();
  plan.shape.pop_back();
  plan.dst_stride.pop_back();
  plan.src_stride.pop_back();
  ForEachIndex(plan.shape, {plan.dst_stride, plan.src_stride},
               {m.offset, src.meta().offset}, [&](const int64_t* pos) {
                 T* o = out + pos[0];
                 const T* i = in + pos[1];
                 if (ds == 1 && ss == 1) {
                   std::memmove(o, i, n * sizeof(T));
                 } else {
                   for (int64_t j = 0; j < n; ++j) o[j * ds] = i[j * ss];
                 }
               });
}

}  // namespace

void CopyInto(const Tensor& src, const Tensor& dst) {
  const Meta& m = dst.meta();
  if (src.dtype() == dst.dtype()) {
    DispatchDType(m.dtype, [&](auto tag) {
      CopySameType<typename decltype(tag)::type>(src, dst);
    });
    return;
  }
  DispatchDType(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    char* out = dst.storage_data();
    const char* in = src.storage_data();
    DType in_dtype = src.dtype();
    ForEachIndex(m.shape, {m.stride, BroadcastStrides(src.meta(), m.shape)},
                 {m.offset, src.meta().offset}, [&](const int64_t* pos) {
                   StoreFrom<T>(out, m.dtype, pos[0],
                                LoadAs<T>(in, in_dtype, pos[1]));
                 });
  });
}

Tensor ContiguousForReading(const Tensor& t) {
  if (t.meta().offset == 0 && t.meta().IsContiguous()) return t;
  Tensor c = Tensor::Uninitialized(ContiguousMeta(t.shape(), t.dtype()));
  CopyInto(t, c);
  return c;
}

}  // namespace aotcache
