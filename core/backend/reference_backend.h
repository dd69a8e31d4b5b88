// The reference backend: the artifact's payload is the optimized graph (dead
// code removed, common subexpressions merged) with a buffer plan, executed by
// the runtime's kernels. It needs no compiler on the machine.
// Thread-safety: stateless; Compile may be called from several threads.
#ifndef AOTCACHE_CORE_BACKEND_REFERENCE_BACKEND_H_
#define AOTCACHE_CORE_BACKEND_REFERENCE_BACKEND_H_

#include "core/backend/backend.h"

namespace aotcache {

class ReferenceBackend final : public Backend {
 public:
  absl::string_view name() const override { return "reference"; }
  absl::string_view version() const override { return "1"; }

 private:
  absl::StatusOr<v1::Artifact> CompileCanonical(
      const v1::Graph& graph, const ArtifactSpec& spec) const override;
};

// The reference artifact of a canonical graph: what CompileCanonical returns,
// for backends that start from it.
absl::StatusOr<v1::Artifact> CompileReferenceProgram(const v1::Graph& graph,
                                                     const ArtifactSpec& spec);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_REFERENCE_BACKEND_H_
