// The native backend's cat, and the scatters that functionalized view writes
// become (select_scatter, slice_scatter, as_strided_scatter): per node, the
// shape of its generated kernel (or no, for another op or a layout the kernel
// does not take: the runtime's own kernel runs such a node), and the kernel's
// body (see kernel_source.h), which computes as the runtime's kernel does.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_SHAPE_KERNELS_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_SHAPE_KERNELS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/dtype.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// select_scatter, slice_scatter and as_strided_scatter into a contiguous
// result of `shape`: self (input 0, of that shape, read through
// `self_strides`) copied, then src (input 1, read through `src_strides`
// over the view's shape) written into the view of the result (`view_shape`,
// `view_strides`, `view_offset`, in the result's elements), in order, as
// the runtime's kernels do.
struct ScatterShape {
  std::vector<int64_t> shape, self_strides;
  std::vector<int64_t> view_shape, view_strides, src_strides;
  int64_t view_offset = 0;
  DType src_dtype = v1::DTYPE_FLOAT32;
};
std::string ScatterSource(const ScatterShape& shape);

// cat of contiguous parts into a contiguous result of their dtype, seen as
// `outer` rows of `row` elements: part k fills `widths[k]` elements of each
// row, after the parts before it (an empty part has width 0).
struct ConcatShape {
  int64_t outer = 1, row = 1;
  std::vector<int64_t> widths;
};
std::string ConcatSource(const ConcatShape& shape);

// select_scatter(self, src, dim, index), slice_scatter(self, src, dim,
// start, end, step) or as_strided_scatter(self, src, size, stride,
// storage_offset) into a contiguous floating result of self's dtype, src
// floating or bool and broadcasting to the view's shape.
std::optional<ScatterShape> ScatterOf(const ResolvedGraph& g,
                                      const ResolvedNode& node);

// cat(tensors, dim) of contiguous parts of the result's dtype (any dtype)
// into a contiguous result; empty parts are skipped, as the runtime's
// kernel skips them.
std::optional<ConcatShape> ConcatOf(const ResolvedGraph& g,
                                    const ResolvedNode& node);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_SHAPE_KERNELS_H_
