// Graph-level optimizations of the reference backend. Both are deterministic
// (the same graph optimizes to the same bytes in every process) and keep the
// graph's inputs and outputs.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_GRAPH_OPTIMIZATIONS_H_
#define AOTCACHE_CORE_BACKEND_GRAPH_OPTIMIZATIONS_H_

#include "aotcache/v1/graph.pb.h"

namespace aotcache {

// Drops nodes no output depends on. In-place nodes (writes into inputs)
// always stay.
v1::Graph EliminateDeadCode(const v1::Graph& graph);

// Merges nodes that apply the same op to the same arguments with the same
// grad mode. Random ops and in-place ops are never merged.
v1::Graph EliminateCommonSubexpressions(const v1::Graph& graph);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_GRAPH_OPTIMIZATIONS_H_
