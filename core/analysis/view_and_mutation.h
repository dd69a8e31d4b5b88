// Derives ViewAndMutationData from a validated graph by replaying it the way
// eager PyTorch would run it: which storage every tensor lives in, which
// tensors are autograd views of which base, who requires grad at each point
// (SEMANTICS.md §2), and what every in-place op writes. The result is plain
// data (SEMANTICS.md §3).
//
// The replay also enforces what eager refuses: an in-place op that autograd
// would record on a leaf that requires grad, on a view of one, or on a view
// created under no_grad, is InvalidArgument naming the node.
//
// Decisions where PyTorch leaves room (documented in the README):
//  - mutates_data and mutations_under_no_grad_or_inference_mode are per
//    storage, as functionalization tracks them;
//  - base_idx of an output aliasing an input is the input whose view chain
//    produced it;
//  - PyTorch's "intermediate bases optimization" (unsafe_view_alias for a lone
//    view of an intermediate) is not applied: such outputs are
//    alias_of_intermediate_save_as_output, as SEMANTICS.md §3 describes;
//  - inputs sharing a storage behave as autograd views of one common base.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_ANALYSIS_VIEW_AND_MUTATION_H_
#define AOTCACHE_CORE_ANALYSIS_VIEW_AND_MUTATION_H_

#include "absl/status/statusor.h"
#include "aotcache/v1/analysis.pb.h"
#include "core/analysis/autograd_replay.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// `replay` is ReplayAutograd(graph).
absl::StatusOr<v1::ViewAndMutationData> AnalyzeViewsAndMutations(
    const ResolvedGraph& graph, const Replay& replay,
    const v1::CompileOptions& options);

// Whether input `i`'s mutation is applied inside the graph rather than
// returned and copied back (PyTorch's MutationType.MUTATED_IN_GRAPH).
bool MutationStaysInGraph(const v1::InputAliasInfo& input);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_ANALYSIS_VIEW_AND_MUTATION_H_
