// The backend interface: a compiler from a functional graph to an Artifact.
// Backends are stateless; their name and version enter the cache key.
// A backend sees only the canonical form of a graph (canonical_graph.h):
// names it made up, never the request's, so an artifact is a pure function
// of the key's material and nothing a client wrote reaches generated source.
// Thread-safety: Compile is const and may be called from several threads.
#ifndef AOTCACHE_CORE_BACKEND_BACKEND_H_
#define AOTCACHE_CORE_BACKEND_BACKEND_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aotcache/v1/analysis.pb.h"
#include "aotcache/v1/artifact.pb.h"
#include "aotcache/v1/graph.pb.h"
#include "core/key/cache_key.h"

namespace aotcache {

// What the compiled program is, besides its graph.
struct ArtifactSpec {
  v1::ArtifactKind kind = v1::ARTIFACT_KIND_UNSPECIFIED;
  // Roles of the graph's outputs and, for a backward, its input gradients;
  // inputs and outputs metas are filled in by the backend.
  v1::CallingConvention convention;
  std::string pairs_with;  // Backward: the forward's convention hash.
  // Where the artifact will run (native code is built for its CPU level).
  v1::Target target;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual absl::string_view name() const = 0;
  virtual absl::string_view version() const = 0;
  // The target this backend builds for when asked for `requested`: what
  // shapes its artifacts and nothing else, in one spelling (it enters the
  // key). InvalidArgument naming the field for a target aotcache does not
  // know (target.h), FailedPrecondition for one this backend cannot build
  // for. This default, for backends whose artifacts run the runtime's own
  // code, keeps arch and abi and drops the CPU level.
  virtual absl::StatusOr<v1::Target> ArtifactTarget(
      const v1::Target& requested) const;
  // Compiles the canonical form of `graph`. InvalidArgument for a graph the
  // backend cannot compile, Internal for one that fails validation.
  absl::StatusOr<v1::Artifact> Compile(const v1::Graph& graph,
                                       const ArtifactSpec& spec) const;

 protected:
  // `graph` is canonical: CanonicalGraph of a graph that passed validation.
  virtual absl::StatusOr<v1::Artifact> CompileCanonical(
      const v1::Graph& graph, const ArtifactSpec& spec) const = 0;
};

// What the key holds of `backend` for a request naming `requested`: the
// pipeline version (`pipeline_version`, else the build's), the target as
// the backend resolves it (ArtifactTarget's errors), its name and version.
// The daemon's cache and `aotcache analyze` both key through it.
absl::StatusOr<KeyContext> KeyContextFor(const Backend& backend,
                                         const v1::Target& requested,
                                         const std::string& pipeline_version);

// The lowercase hex SHA-256 of a calling convention's canonical encoding.
std::string CallingConventionHash(const v1::CallingConvention& convention);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_BACKEND_H_
