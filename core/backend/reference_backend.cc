#include "core/backend/reference_backend.h"

#include "core/backend/buffer_plan.h"
#include "core/backend/graph_optimizations.h"
#include "core/graph/deterministic_bytes.h"
#include "core/graph/validate.h"
#include "core/status_macros.h"

namespace aotcache {

absl::StatusOr<v1::Artifact> ReferenceBackend::CompileCanonical(
    const v1::Graph& graph, const ArtifactSpec& spec) const {
  return CompileReferenceProgram(graph, spec);
}

absl::StatusOr<v1::Artifact> CompileReferenceProgram(const v1::Graph& graph,
                                                     const ArtifactSpec& spec) {
  const ReferenceBackend backend;
  v1::Graph optimized = EliminateDeadCode(EliminateCommonSubexpressions(graph));
  AOTCACHE_ASSIGN_OR_RETURN(v1::ReferenceProgram program,
                            PlanBuffers(std::move(optimized)));
  AOTCACHE_ASSIGN_OR_RETURN(
      ResolvedGraph resolved,
      ValidateGraph(program.graph(), InternalGraphLimits()));
  v1::Artifact artifact;
  artifact.set_backend(std::string(backend.name()));
  artifact.set_backend_version(std::string(backend.version()));
  artifact.set_kind(spec.kind);
  v1::CallingConvention* c = artifact.mutable_calling_convention();
  *c = spec.convention;
  c->clear_inputs();
  c->clear_outputs();
  for (int i = 0; i < resolved.num_inputs(); ++i) {
    *c->add_inputs() = MetaToProto(resolved.values[i].meta);
  }
  for (int v : resolved.outputs)
    *c->add_outputs() = MetaToProto(resolved.values[v].meta);
  artifact.set_calling_convention_hash(CallingConventionHash(*c));
  artifact.set_pairs_with(spec.pairs_with);
  artifact.set_payload(DeterministicBytes(program));
  return artifact;
}

}  // namespace aotcache
