// HostCompiler: turns one C++ source file into a shared object with the
// machine's C++ compiler. Each compile runs in a private temporary
// directory, removed afterwards whatever happens, in its own process group,
// which is killed when the time limit passes.
// Thread-safety: thread-safe (no shared state; each call has its own
// directory and process).
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_HOST_COMPILER_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_HOST_COMPILER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace aotcache {

struct HostCompilerOptions {
  // The compiler: a name looked up on PATH, or a path.
  std::string compiler = "c++";
  // Flags before the source, e.g. {"-O3", "-march=x86-64-v3"}; -shared,
  // -fPIC and the output are added.
  std::vector<std::string> flags;
  // Libraries after the source, e.g. {"-lmvec", "-lopenblas"}.
  std::vector<std::string> libraries;
  absl::Duration timeout = absl::Seconds(120);
  // Where the private directory is made; empty: $TMPDIR, else /tmp.
  std::string temp_root;
};

// The shared object's bytes. Internal with the compiler's message when it
// fails; DeadlineExceeded when it runs past the timeout (it is killed);
// FailedPrecondition when it cannot be started.
absl::StatusOr<std::string> CompileSharedObject(
    const std::string& source, const HostCompilerOptions& options);

// The first line of `compiler --version` ("c++ (Debian 12.2.0-14) 12.2.0"),
// for the cache key. FailedPrecondition if there is no such compiler.
absl::StatusOr<std::string> HostCompilerVersion(const std::string& compiler);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_HOST_COMPILER_H_
