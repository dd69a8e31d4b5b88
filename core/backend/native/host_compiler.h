// HostCompiler: turns one C++ source file into a shared object with the
// machine's C++ compiler. Each compile runs in a private temporary
// directory, removed afterwards whatever happens, in its own process group,
// which is killed when the time limit passes or CancelHostCompiles is
// called. Its resources are bounded: an address-space, file-size and CPU
// limit (prlimit), and at most kMaxConcurrentCompilers at once in the
// process. With Sandbox::kBubblewrap the compiler also runs in bubblewrap:
// no network, every system dir read-only, only its private dir and a
// private /tmp writable, and it dies with its parent.
// Thread-safety: thread-safe; each call has its own directory and process.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_HOST_COMPILER_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_HOST_COMPILER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace aotcache {

enum class Sandbox {
  kNone,        // Only the resource limits.
  kBubblewrap,  // bwrap on PATH: see the header comment.
};

struct HostCompilerOptions {
  // The compiler: a name looked up on PATH, or a path.
  std::string compiler = "c++";
  // Flags before the source, e.g. {"-O3", "-march=x86-64-v3"}; -shared,
  // -fPIC and the output are added.
  std::vector<std::string> flags;
  // Libraries after the source, e.g. {"-lmvec", "-lopenblas"}.
  std::vector<std::string> libraries;
  absl::Duration timeout = absl::Seconds(120);
  int64_t memory_limit_bytes = int64_t{4} << 30;  // Address space.
  Sandbox sandbox = Sandbox::kNone;
  // Where the private directory is made; empty: $TMPDIR, else /tmp.
  std::string temp_root;
};

// Compilers run at once in this process, beyond which compiles wait.
int MaxConcurrentCompilers();

// Kills every compile running now and cancels those waiting for a
// compiler (they return Cancelled); compiles begun later run as usual. For
// a daemon whose drain deadline passed.
void CancelHostCompiles();

// The shared object's bytes. Internal with the compiler's message when it
// fails (or passes a resource limit); ResourceExhausted when it runs past
// the timeout (it is killed: the graph costs more than one compile may, and
// not the caller's deadline, which DeadlineExceeded would say to a gRPC
// client); Cancelled by CancelHostCompiles;
// FailedPrecondition when it cannot be started.
absl::StatusOr<std::string> CompileSharedObject(
    const std::string& source, const HostCompilerOptions& options);

// The first line of `compiler --version` ("c++ (Debian 12.2.0-14) 12.2.0"),
// for the cache key. FailedPrecondition if there is no such compiler.
absl::StatusOr<std::string> HostCompilerVersion(const std::string& compiler);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_HOST_COMPILER_H_
