// WrappingBackend: a real backend (the reference backend unless another is
// given) with what a test needs to see or change around its compiles:
// counts of forward and backward compiles, a hook run before each (to hold
// one until the test lets it go), a status every compile fails with, and
// an edit of each artifact (a backward of "another build").
// Thread-safety: compiles may run on several threads; set the hooks and
// the failure before the backend is used.
#ifndef AOTCACHE_TESTS_TESTING_WRAPPING_BACKEND_H_
#define AOTCACHE_TESTS_TESTING_WRAPPING_BACKEND_H_

#include <atomic>
#include <functional>

#include "absl/status/status.h"
#include "core/backend/backend.h"
#include "core/backend/reference_backend.h"

namespace aotcache {
namespace testing {

class WrappingBackend final : public Backend {
 public:
  WrappingBackend() : inner_(&reference_) {}
  explicit WrappingBackend(const Backend* inner) : inner_(inner) {}

  absl::string_view name() const override { return inner_->name(); }
  absl::string_view version() const override { return inner_->version(); }
  absl::StatusOr<v1::Target> ArtifactTarget(
      const v1::Target& requested) const override {
    return inner_->ArtifactTarget(requested);
  }

  mutable std::atomic<int> forward_compiles{0};
  mutable std::atomic<int> backward_compiles{0};
  // Runs before each compile, counted already (its number among its kind
  // is the count).
  std::function<void(const ArtifactSpec&)> before_compile;
  // Non-OK: every compile fails with it (after before_compile).
  absl::Status fail_with;
  // Changes each artifact compiled.
  std::function<void(const ArtifactSpec&, v1::Artifact&)> edit;

 private:
  absl::StatusOr<v1::Artifact> CompileCanonical(
      const v1::Graph& graph, const ArtifactSpec& spec) const override {
    ++(spec.kind == v1::ARTIFACT_KIND_BACKWARD ? backward_compiles
                                               : forward_compiles);
    if (before_compile) before_compile(spec);
    if (!fail_with.ok()) return fail_with;
    absl::StatusOr<v1::Artifact> artifact = inner_->Compile(graph, spec);
    if (artifact.ok() && edit) edit(spec, *artifact);
    return artifact;
  }

  ReferenceBackend reference_;
  const Backend* inner_;
};

}  // namespace testing
}  // namespace aotcache

#endif  // AOTCACHE_TESTS_TESTING_WRAPPING_BACKEND_H_
