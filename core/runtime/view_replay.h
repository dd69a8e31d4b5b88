// The runtime side of outputs that alias inputs or intermediates: such an
// output is regenerated as a view of its base (same memory), and its
// gradient flows back into the base's gradient through that view.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_RUNTIME_VIEW_REPLAY_H_
#define AOTCACHE_CORE_RUNTIME_VIEW_REPLAY_H_

#include "core/runtime/tensor.h"

namespace aotcache {

// `base` seen through `view_meta` (shape, strides and offset in base's
// storage): the output a view replay returns.
Tensor ReplayView(const Tensor& base, const Meta& view_meta);

// The gradient of `base` contributed by `grad_view`, the gradient of the view
// `view_meta` of a tensor laid out as `base_meta` (both in the same storage
// coordinates). Elements the view reads twice get both contributions. The
// result is laid out as base_meta, in fresh memory.
Tensor ViewGradToBase(const Meta& base_meta, const Meta& view_meta,
                      const Tensor& grad_view);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_RUNTIME_VIEW_REPLAY_H_
