// Functionalization: rewrites a graph into one without in-place ops, as
// PyTorch's functionalization pass does. A write through a view becomes the
// functional op followed by scatters back into the view's base (the inverse
// of each view on the way: select_scatter, slice_scatter,
// as_strided_scatter, or the inverse view); views of a storage that was
// written are regenerated from its new value when next read; an in-place op
// whose result nobody reads is still applied (its effect is the point).
//
// The functional graph returns, in order: the new values of mutated inputs
// (data or metadata; not those kept in the graph), the user outputs, then the
// intermediate bases. Mutated inputs that share a storage are replaced by a
// synthetic base input (1-D, the storage's size) at the first member's
// position; the other members are dropped and rebuilt with as_strided.
// Every node keeps the grad mode of the op it came from, so the autodiff
// pass can apply autograd's recording rules.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_ANALYSIS_FUNCTIONALIZE_H_
#define AOTCACHE_CORE_ANALYSIS_FUNCTIONALIZE_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "aotcache/v1/analysis.pb.h"
#include "aotcache/v1/graph.pb.h"
#include "core/analysis/autograd_replay.h"
#include "core/analysis/graph_builder.h"
#include "core/analysis/view_chain.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// What functionalization saw of each original node, for autodiff: the
// functional values (GraphBuilder local ids) it read for every argument, and
// the ones it produced (for an in-place op, the new value of `self`).
struct TapeEntry {
  const ResolvedNode* node;
  std::vector<std::vector<int>> arg_values;  // Per schema argument.
  std::vector<int> result_values;
  // Views and in-place ops: the object whose value is its storage's root
  // (-1 for a synthetic base), and the chain from that root to `self` (in
  // place, before the write) or to the result (views).
  int root_object = -1;
  ViewChain chain;
  // How many leading steps of `chain` are the root object's own (a root
  // whose layout t_ and friends changed is itself a view of its storage).
  int root_chain_length = 0;
};

struct FunctionalProgram {
  std::unique_ptr<GraphBuilder> forward;  // Outputs added, not finished.
  std::vector<TapeEntry> tape;            // One entry per original node.
  std::vector<int> input_values;  // Per input: its local id, -1 if merged.
};

// The functional graph still open for more outputs, and its tape.
absl::StatusOr<FunctionalProgram> BuildFunctionalProgram(
    const ResolvedGraph& graph, const Replay& replay,
    const v1::ViewAndMutationData& vmd);

// Returns InvalidArgument for a write eager also refuses (through an expanded
// view), Internal if the result fails validation (a bug).
absl::StatusOr<v1::Graph> Functionalize(const ResolvedGraph& graph,
                                        const Replay& replay,
                                        const v1::ViewAndMutationData& vmd);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_ANALYSIS_FUNCTIONALIZE_H_
