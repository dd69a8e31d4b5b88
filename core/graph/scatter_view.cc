#include "core/graph/scatter_view.h"

#include <algorithm>

namespace aotcache {

std::optional<Meta> ScatterView(absl::string_view op,
                                const std::vector<BoundArg>& args,
                                const Meta& result) {
  Meta view = result;
  if (op == "aten.as_strided_scatter.default") {
    view.shape = args[2].ints;
    view.stride = args[3].ints;
    view.offset = args[4].is_none() ? 0 : args[4].i;
    if (view.shape.size() != view.stride.size() ||
        view.StorageExtent() > result.StorageExtent()) {
      return std::nullopt;
    }
    return view;
  }
  const bool select = op == "aten.select_scatter.default";
  if (!select && op != "aten.slice_scatter.default") return std::nullopt;
  int64_t dim = args[2].i;
  if (dim < 0) dim += view.dim();
  if (dim < 0 || dim >= view.dim()) return std::nullopt;
  const int64_t size = view.shape[dim];
  if (select) {
    int64_t index = args[3].i;
    if (index < 0) index += size;
    if (index < 0 || index >= size) return std::nullopt;
    view.offset += index * view.stride[dim];
    view.shape.erase(view.shape.begin() + dim);
    view.stride.erase(view.stride.begin() + dim);
    return view;
  }
  int64_t start = args[3].is_none() ? 0 : args[3].i;
  int64_t end = args[4].is_none() ? size : args[4].i;
  if (args[5].i <= 0) return std::nullopt;
  // As SliceMeta (view_inference.cc): a step past the size is the size.
  const int64_t step = std::min(args[5].i, std::max<int64_t>(size, 1));
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  view.offset += start * view.stride[dim];
  view.shape[dim] = (end - start + step - 1) / step;
  view.stride[dim] *= step;
  return view;
}

}  // namespace aotcache
