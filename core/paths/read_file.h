// ReadFile: a whole file's bytes.
// Thread-safety: thread-safe.
#ifndef AOTCACHE_CORE_PATHS_READ_FILE_H_
#define AOTCACHE_CORE_PATHS_READ_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace aotcache {

// The bytes of `path`. NotFound when there is no such file,
// FailedPrecondition when it cannot be read whole.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_PATHS_READ_FILE_H_
