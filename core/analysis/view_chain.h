// View chains: the view ops that take a storage's root value to one of its
// views, applied forward (regenerating a view from a new root) or inverted
// (writing a view's new value back into its root with scatters). Used by
// functionalization on values and by autodiff on gradients.
// Thread-safety: functions over a caller-owned GraphBuilder.
#ifndef AOTCACHE_CORE_ANALYSIS_VIEW_CHAIN_H_
#define AOTCACHE_CORE_ANALYSIS_VIEW_CHAIN_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/analysis/graph_builder.h"
#include "core/graph/op_registry.h"

namespace aotcache {

// One step: the view op and its arguments (args[0], self, is a placeholder).
struct ViewStep {
  const OpInfo* op;
  std::vector<BoundArg> args;
};
using ViewChain = std::vector<ViewStep>;

// `step` applied to `local`. A reshape-like step whose layout the value does
// not allow is applied to a contiguous copy.
absl::StatusOr<int> ApplyViewStep(GraphBuilder& b, const ViewStep& step,
                                  int local, bool grad_enabled);

absl::StatusOr<int> ApplyChain(GraphBuilder& b, const ViewChain& chain,
                               int root, bool grad_enabled);

// The new root after the view `chain` takes of `root` becomes `updated`.
// InvalidArgument for a view several elements of which share memory.
absl::StatusOr<int> WriteThroughChain(GraphBuilder& b, const ViewChain& chain,
                                      int root, int updated, bool grad_enabled);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_ANALYSIS_VIEW_CHAIN_H_
