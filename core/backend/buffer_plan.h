// Buffer planning: assigns the results computed by a graph's nodes to
// reusable memory slots, by liveness (a result's memory is free once the
// last use of it, or of any view or in-place alias of it, has run). Results
// that are returned, views, and in-place results get no slot.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_BACKEND_BUFFER_PLAN_H_
#define AOTCACHE_CORE_BACKEND_BUFFER_PLAN_H_

#include <vector>

#include "absl/status/statusor.h"
#include "aotcache/v1/artifact.pb.h"
#include "aotcache/v1/graph.pb.h"

namespace aotcache {

// Returns the program: `graph` plus its plan. InvalidArgument if the graph
// is not valid.
//
// `run_at`, when given, says per node which node's turn computes it: a node
// of a fused group (native backend) runs when its group's kernel does, at
// its last node's turn, so its operands live until then. A result needs
// memory when its node runs at its own turn, or when it is read at another
// turn (a kernel's output that an absorbed node makes): from the turn that
// makes it.
absl::StatusOr<v1::ReferenceProgram> PlanBuffers(
    v1::Graph graph, const std::vector<int>* run_at = nullptr);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_BUFFER_PLAN_H_
