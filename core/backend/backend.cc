#include "core/backend/backend.h"

#include "core/graph/canonical_graph.h"
#include "core/key/target.h"
#include "core/status_macros.h"

namespace aotcache {

absl::StatusOr<v1::Target> Backend::ArtifactTarget(
    const v1::Target& requested) const {
  AOTCACHE_RETURN_IF_ERROR(ValidateTarget(requested));
  v1::Target target = requested;
  target.clear_cpu();
  return target;
}

absl::StatusOr<KeyContext> KeyContextFor(const Backend& backend,
                                         const v1::Target& requested,
                                         const std::string& pipeline_version) {
  KeyContext context;
  AOTCACHE_ASSIGN_OR_RETURN(context.target, backend.ArtifactTarget(requested));
  context.pipeline_version =
      pipeline_version.empty() ? PipelineVersion() : pipeline_version;
  context.backend_name = std::string(backend.name());
  context.backend_version = std::string(backend.version());
  return context;
}

absl::StatusOr<v1::Artifact> Backend::Compile(const v1::Graph& graph,
                                              const ArtifactSpec& spec) const {
  AOTCACHE_ASSIGN_OR_RETURN(v1::Graph canonical, CanonicalInternalGraph(graph));
  return CompileCanonical(canonical, spec);
}

}  // namespace aotcache
