// From an analysis to what a backend compiles: the forward (or inference)
// graph with its artifact spec, and in training mode the backward graph,
// compiled later (lazily) with a spec that pairs it with the forward.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_COMPILE_PLAN_H_
#define AOTCACHE_CORE_BACKEND_COMPILE_PLAN_H_

#include <optional>

#include "absl/status/statusor.h"
#include "aotcache/v1/artifact.pb.h"
#include "core/analysis/analyze.h"
#include "core/backend/backend.h"

namespace aotcache {

struct CompilePlan {
  v1::Graph forward_graph;
  ArtifactSpec forward_spec;
  std::optional<v1::Graph> backward_graph;  // Training mode only.
  ArtifactSpec backward_spec;  // pairs_with is set by CompileBackward.
  v1::FunctionMetadata metadata;
};

absl::StatusOr<CompilePlan> PlanCompilation(const Analysis& analysis);

// `target`: where the artifacts will run (default: the baseline of the
// backend's own architecture).
absl::StatusOr<v1::Artifact> CompileForward(
    const CompilePlan& plan, const Backend& backend,
    const v1::Target& target = v1::Target());
// `forward` is the artifact CompileForward made for the same plan.
absl::StatusOr<v1::Artifact> CompileBackward(
    const CompilePlan& plan, const v1::Artifact& forward,
    const Backend& backend, const v1::Target& target = v1::Target());
// The same from what a cache entry keeps: the backward graph and its roles.
absl::StatusOr<v1::Artifact> CompileBackwardGraph(
    const v1::Graph& backward_graph, const v1::CallingConvention& roles,
    const v1::Artifact& forward, const Backend& backend,
    const v1::Target& target = v1::Target());

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_COMPILE_PLAN_H_
