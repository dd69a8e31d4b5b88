// Where a scatter writes: the view of select_scatter's, slice_scatter's or
// as_strided_scatter's result that src goes into, shared by the runtime's
// kernels and the native backend so that both write the same elements.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_GRAPH_SCATTER_VIEW_H_
#define AOTCACHE_CORE_GRAPH_SCATTER_VIEW_H_

#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/graph/tensor_meta.h"

namespace aotcache {

// The view of a result laid out as `result` for `op` ("aten.select_scatter.
// default", ...) with its bound `args` (self, src, then the op's own).
// nullopt for another op, or a view outside the result's memory.
std::optional<Meta> ScatterView(absl::string_view op,
                                const std::vector<BoundArg>& args,
                                const Meta& result);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_SCATTER_VIEW_H_
