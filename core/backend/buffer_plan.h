// Buffer planning: assigns the results computed by a graph's nodes to
// reusable memory slots, by liveness (a result's memory is free once the
// last use of it, or of any view or in-place alias of it, has run). Results
// that are returned, views, and in-place results get no slot.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_BACKEND_BUFFER_PLAN_H_
#define AOTCACHE_CORE_BACKEND_BUFFER_PLAN_H_

#include "absl/status/statusor.h"
#include "aotcache/v1/artifact.pb.h"
#include "aotcache/v1/graph.pb.h"

namespace aotcache {

// Returns the program: `graph` plus its plan. InvalidArgument if the graph
// is not valid.
absl::StatusOr<v1::ReferenceProgram> PlanBuffers(v1::Graph graph);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_BUFFER_PLAN_H_
