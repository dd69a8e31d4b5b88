// The analysis of one request: validate, replay, derive ViewAndMutationData,
// decide the mode, and note what makes the graph uncacheable. This is all a
// cache hit needs (everything the key reads); functionalization, needed only
// to compile on a miss, is the separate FunctionalGraph().
// Thread-safety: pure function. An Analysis points into the Graph it was
// made from, which must outlive it.
#ifndef AOTCACHE_CORE_ANALYSIS_ANALYZE_H_
#define AOTCACHE_CORE_ANALYSIS_ANALYZE_H_

#include <string>

#include "absl/status/statusor.h"
#include "aotcache/v1/analysis.pb.h"
#include "core/analysis/autograd_replay.h"
#include "core/graph/resolved_graph.h"
#include "core/graph/validate.h"

namespace aotcache {

struct Analysis {
  ResolvedGraph graph;
  v1::ViewAndMutationData view_and_mutation;
  v1::Mode mode = v1::MODE_UNSPECIFIED;
  Replay replay;
  // Empty when the graph has no random ops; else the first ("node 'd' uses
  // aten.native_dropout.default: ..."). Such graphs are cached like any
  // other: the caller passes a seed per call (philox.h), never key material.
  std::string random_ops;
};

// Returns InvalidArgument (ResourceExhausted past a limit) naming the node or
// field at fault.
absl::StatusOr<Analysis> Analyze(const v1::Graph& graph,
                                 const v1::CompileOptions& options,
                                 const GraphLimits& limits = {});

// The functionalized graph of an analysis (see functionalize.h).
absl::StatusOr<v1::Graph> FunctionalGraph(const Analysis& analysis);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_ANALYSIS_ANALYZE_H_
