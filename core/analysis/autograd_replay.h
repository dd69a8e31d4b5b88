// Replays a validated graph the way eager PyTorch runs it, on metadata only:
// tensor objects (in-place ops return their `self` object), the storage each
// lives in, autograd views and their bases, requires_grad and leaf status at
// the end (SEMANTICS.md §2), and which storages were written, with grad mode
// on or off. The ViewAndMutationData is read off the final state.
// Thread-safety: pure function; Replay is a plain value.
#ifndef AOTCACHE_CORE_ANALYSIS_AUTOGRAD_REPLAY_H_
#define AOTCACHE_CORE_ANALYSIS_AUTOGRAD_REPLAY_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// One tensor object as autograd sees it.
struct TensorObject {
  int storage = -1;
  // The autograd base of a differentiable view (always a non-view object),
  // or -1. Inputs that share a storage are views of a common pseudo-object.
  int view_base = -1;
  bool view_created_in_no_grad = false;
  // A view made by an op returning several views (unbind, split, chunk) or
  // a view of one: autograd forbids changing it in place.
  bool multi_output_view = false;
  bool requires_grad_flag = false;  // A leaf created with requires_grad=True.
  bool has_grad_fn = false;
  int input = -1;         // The input this object is, or -1.
  int origin_input = -1;  // The input whose view chain produced it, or -1.
  bool metadata_mutated = false;
  Meta meta;
};

struct StorageState {
  bool is_input = false;
  bool data_mutated = false;
  bool mutated_with_grad_enabled = false;
};

struct Replay {
  std::vector<TensorObject> objects;
  std::vector<int> value_object;       // Per value id of the ResolvedGraph.
  std::vector<int> input_object;       // Per input.
  std::vector<StorageState> storages;  // Input storages first.

  bool RequiresGrad(int object) const;
  bool IsLeaf(int object) const;
};

// Returns InvalidArgument naming the node for an in-place op eager refuses.
absl::StatusOr<Replay> ReplayAutograd(const ResolvedGraph& graph);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_ANALYSIS_AUTOGRAD_REPLAY_H_
