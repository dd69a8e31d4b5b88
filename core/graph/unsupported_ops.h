// The check that every op of a client's graph is one aotcache knows, run by
// validation before anything else: every missing op in one error, so that a
// user porting a model meets them all at once, not one per attempt.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_GRAPH_UNSUPPORTED_OPS_H_
#define AOTCACHE_CORE_GRAPH_UNSUPPORTED_OPS_H_

#include "absl/status/status.h"
#include "aotcache/v1/graph.pb.h"

namespace aotcache {

// InvalidArgument listing the ops the registry lacks: one op on one node
// names the node; otherwise each op by first appearance, with its count and
// first node (at most 32 listed).
absl::Status CheckOpsSupported(const v1::Graph& graph);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_UNSUPPORTED_OPS_H_
