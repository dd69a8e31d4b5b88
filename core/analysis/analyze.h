// The analysis of one request: validate, replay, derive ViewAndMutationData,
// decide the mode, functionalize, and note what makes the graph uncacheable.
// Thread-safety: pure function. An Analysis points into the Graph it was
// made from, which must outlive it.
#ifndef AOTCACHE_CORE_ANALYSIS_ANALYZE_H_
#define AOTCACHE_CORE_ANALYSIS_ANALYZE_H_

#include <string>

#include "absl/status/statusor.h"
#include "aotcache/v1/analysis.pb.h"
#include "core/graph/resolved_graph.h"
#include "core/graph/validate.h"

namespace aotcache {

struct Analysis {
  ResolvedGraph graph;
  v1::ViewAndMutationData view_and_mutation;
  v1::Mode mode = v1::MODE_UNSPECIFIED;
  v1::Graph functional_graph;
  // Empty when the results may be cached; else why not ("node 'd' uses
  // aten.native_dropout.default, which depends on torch's RNG state").
  std::string uncacheable_reason;
};

// Returns InvalidArgument (ResourceExhausted past a limit) naming the node or
// field at fault.
absl::StatusOr<Analysis> Analyze(const v1::Graph& graph,
                                 const v1::CompileOptions& options,
                                 const GraphLimits& limits = {});

}  // namespace aotcache

#endif  // AOTCACHE_CORE_ANALYSIS_ANALYZE_H_
