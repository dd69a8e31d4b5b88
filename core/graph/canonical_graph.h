// CanonicalGraph: a validated graph written again with nothing of the
// request's text in it. Every value is named by its id ("v12"), a node with
// several results by its index ("n3"); arguments are bound to schema
// positions with defaults filled in; metas have explicit strides; storages
// are numbered by first appearance; every result's meta is declared (the
// layout make_fx saw for a fresh result is key material). Two graphs with the
// same key material give the same canonical graph, byte for byte, whatever
// their names, the order of their kwargs or the defaults they spelled out.
// Backends compile only canonical graphs, so what a request names never reaches
// an artifact. Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_CANONICAL_GRAPH_H_
#define AOTCACHE_CORE_GRAPH_CANONICAL_GRAPH_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "aotcache/v1/graph.pb.h"
#include "core/graph/resolved_graph.h"
#include "core/graph/tensor_meta.h"

namespace aotcache {

v1::Graph CanonicalGraph(const ResolvedGraph& graph);

// The canonical form of a graph aotcache built itself (InternalGraphLimits):
// ResourceExhausted past a limit, else Internal if it fails validation (a
// bug upstream).
absl::StatusOr<v1::Graph> CanonicalInternalGraph(const v1::Graph& graph);

// `bound` in a Graph's wire form; `name_of` names a tensor argument's value.
v1::Argument ArgumentToProto(
    const BoundArg& bound,
    absl::FunctionRef<const std::string&(int value)> name_of);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_CANONICAL_GRAPH_H_
