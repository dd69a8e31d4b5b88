#include "core/runtime/view_replay.h"

#include "core/runtime/strided.h"

namespace aotcache {

Tensor ReplayView(const Tensor& base, const Meta& view_meta) {
  Meta m = view_meta;
  m.dtype = base.dtype();
  return base.View(m);
}

Tensor ViewGradToBase(const Meta& base_meta, const Meta& view_meta,
                      const Tensor& grad_view) {
  // A zero buffer laid out as the base, large enough for the view too.
  Meta storage_meta = base_meta;
  if (view_meta.StorageExtent() > base_meta.StorageExtent()) {
    storage_meta = ContiguousMeta({view_meta.StorageExtent()}, base_meta.dtype);
  }
  Tensor buffer = Tensor::Zeros(storage_meta);
  Tensor base = buffer.View(base_meta);
  Meta v = view_meta;
  v.dtype = base_meta.dtype;
  const Tensor& g = grad_view;
  DispatchDType(base_meta.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    char* data = buffer.storage_data();
    ForEachIndex(v.shape, {v.stride, BroadcastStrides(g.meta(), v.shape)},
                 {v.offset, g.meta().offset}, [&](const int64_t* pos) {
                   T sum = LoadAs<T>(data, v.dtype, pos[0]) +
                           LoadAs<T>(g.storage_data(), g.dtype(), pos[1]);
                   StoreFrom<T>(data, v.dtype, pos[0], sum);
                 });
  });
  Tensor out = Tensor::Zeros(base_meta);
  CopyInto(base, out);
  return out;
}

}  // namespace aotcache
