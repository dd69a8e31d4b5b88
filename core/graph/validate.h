// Validation of a client's Graph: names, references, order, op schemas,
// argument types, metas and limits. A graph that passes is returned as a
// ResolvedGraph; one that does not gets InvalidArgument (or ResourceExhausted
// for a configured limit) whose message names the node or field at fault.
// Never crashes and never loops on any input.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_GRAPH_VALIDATE_H_
#define AOTCACHE_CORE_GRAPH_VALIDATE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "aotcache/v1/graph.pb.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

struct GraphLimits {
  int64_t max_nodes = 100000;
  int64_t max_inputs = 10000;
  int64_t max_rank = 16;
  int64_t max_args_per_node = 64;
  int64_t max_numel = int64_t{1} << 40;            // Per tensor.
  int64_t max_constant_bytes = int64_t{64} << 20;  // All constants together.
  // Client graphs must return something; a backward no gradient reaches
  // returns nothing.
  bool require_outputs = true;
};

// For graphs aotcache builds itself (functional, forward, backward).
inline GraphLimits InternalGraphLimits() {
  GraphLimits limits;
  limits.require_outputs = false;
  return limits;
}

absl::StatusOr<ResolvedGraph> ValidateGraph(const v1::Graph& graph,
                                            const GraphLimits& limits = {});

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_VALIDATE_H_
