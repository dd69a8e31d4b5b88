// NativeBackend: the reference program, with its groups of elementwise
// nodes (fusion.h) computed by generated C++ loops that the host's C++
// compiler turns into a shared object. The artifact carries the shared
// object and its source; everything not fused runs on the runtime's kernels
// as in a reference artifact. The backend's version, which enters the cache
// key, names the compiler's version and flags (not its path).
// Thread-safety: Compile is const and may be called from several threads.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_NATIVE_BACKEND_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_NATIVE_BACKEND_H_

#include <memory>
#include <string>

#include "core/backend/backend.h"
#include "core/backend/native/host_compiler.h"

namespace aotcache {

class NativeBackend final : public Backend {
 public:
  // The flags for this machine's architecture when `options.flags` is
  // empty. FailedPrecondition when the compiler does not run.
  static absl::StatusOr<std::unique_ptr<NativeBackend>> Create(
      HostCompilerOptions options = HostCompilerOptions());

  // Create, then CheckToolchain for this machine (HostTarget): a backend
  // that builds and links kernels here, or why it cannot. The daemon, the
  // client and `aotcache analyze` choose the native backend through it.
  static absl::StatusOr<std::unique_ptr<NativeBackend>> CreateChecked(
      HostCompilerOptions options = HostCompilerOptions());

  // Builds an empty kernel for `target` with the backend's compiler, flags
  // and libraries: OK, or FailedPrecondition with the compiler's message
  // when this machine cannot build kernels (a library missing, say). About
  // one compiler run (50 ms here).
  absl::Status CheckToolchain(const v1::Target& target) const;

  absl::string_view name() const override { return "native"; }
  absl::string_view version() const override { return version_; }
  // This machine's architecture and ABI (the compiler builds for them), and
  // the requested CPU level or the architecture's baseline.
  absl::StatusOr<v1::Target> ArtifactTarget(
      const v1::Target& requested) const override;

 private:
  // Internal with the compiler's message when it fails; DeadlineExceeded
  // past the compiler's timeout.
  absl::StatusOr<v1::Artifact> CompileCanonical(
      const v1::Graph& graph, const ArtifactSpec& spec) const override;

  NativeBackend(HostCompilerOptions options, std::string version)
      : options_(std::move(options)), version_(std::move(version)) {}

  const HostCompilerOptions options_;
  const std::string version_;
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_NATIVE_BACKEND_H_
