#include "core/analysis/analyze.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/analysis/functionalize.h"
#include "core/analysis/mode.h"
#include "core/analysis/view_and_mutation.h"
#include "core/graph/bind_arguments.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

std::string RandomOps(const ResolvedGraph& graph) {
  for (const ResolvedNode& node : graph.nodes) {
    if (node.op->randomness == Randomness::kRandom) {
      const v1::Node& proto = graph.proto(node);
      return absl::StrCat("node ", Quoted(proto.name()), " uses ",
                          node.op->qualified_name,
                          ": its values are drawn per call from the seed the "
                          "caller passes (Philox), not from torch's stream");
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<Analysis> Analyze(const v1::Graph& graph,
                                 const v1::CompileOptions& options,
                                 const GraphLimits& limits) {
  Analysis analysis;
  AOTCACHE_ASSIGN_OR_RETURN(analysis.graph, ValidateGraph(graph, limits));
  AOTCACHE_ASSIGN_OR_RETURN(analysis.replay, ReplayAutograd(analysis.graph));
  AOTCACHE_ASSIGN_OR_RETURN(
      analysis.view_and_mutation,
      AnalyzeViewsAndMutations(analysis.graph, analysis.replay, options));
  std::vector<bool> caller_requires_grad;
  for (const v1::Input& in : graph.inputs()) {
    caller_requires_grad.push_back(in.meta().requires_grad());
  }
  analysis.mode = DecideMode(caller_requires_grad, analysis.view_and_mutation);
  analysis.random_ops = RandomOps(analysis.graph);
  return analysis;
}

absl::StatusOr<v1::Graph> FunctionalGraph(const Analysis& analysis) {
  return Functionalize(analysis.graph, analysis.replay,
                       analysis.view_and_mutation);
}

}  // namespace aotcache
