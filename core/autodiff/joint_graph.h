// Autodiff: the forward and backward graphs of a training-mode analysis.
//
// Gradients follow autograd's recording rules on the ORIGINAL program, not
// a naive derivative of the functional one (SEMANTICS.md §2): the engine
// replays the program's tape the way autograd records it -- every tensor
// object carries its own autograd edge, separate from its value; an op
// recorded with grad mode on creates a node whose inputs are its arguments'
// edges at that moment; ops under no_grad and writes through detached
// aliases change values but leave every edge alone; a tracked in-place op
// rebases its tensor's edge. The backward walks those nodes in reverse,
// emitting each op's derivative rule, and returns, per input, a gradient or
// none (no gradient reaches it: never zeros in place of none).
//
// The forward graph is the functional graph with the values the backward
// reads appended as extra outputs; the backward graph takes those saved
// values, then the tangents in ViewAndMutationData order, and returns the
// inputs' gradients.
//
// A tracked in-place op on a view rebases its base's history (autograd's
// CopySlices) and views of a rebased base regenerate their history from it.
// Mutated inputs that share a storage are views of their synthetic base and
// the gradient is the base's. Not yet supported (Unimplemented, never a
// wrong gradient): such a member that is a leaf requiring grad, and in-place
// writes through views of detached aliases while grad mode is on.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_AUTODIFF_JOINT_GRAPH_H_
#define AOTCACHE_CORE_AUTODIFF_JOINT_GRAPH_H_

#include <vector>

#include "absl/status/statusor.h"
#include "aotcache/v1/graph.pb.h"
#include "core/analysis/analyze.h"
#include "core/autodiff/grad_context.h"

namespace aotcache {

struct JointGraphs {
  v1::Graph forward;
  v1::Graph backward;
  int num_saved = 0;  // Trailing forward outputs = leading backward inputs.
  int64_t saved_bytes = 0;
  // Per original input: the backward output holding its gradient, or -1
  // when no gradient reaches it (always -1 for members of a synthetic base:
  // their gradient is their base's).
  std::vector<int> input_grad_output;
  // Per synthetic base: the backward output holding its gradient, or -1.
  std::vector<int> synthetic_base_grad_output;
};

absl::StatusOr<JointGraphs> BuildJointGraphs(
    const Analysis& analysis, Recompute recompute = Recompute::kCheapOps);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_JOINT_GRAPH_H_
