// CreatePrivateDirectories: a directory and its missing parents, made
// readable by their owner only, as the XDG base directory spec asks of the
// cache home (a data dir holds every graph and constant a user compiled).
// Thread-safety: thread-safe (concurrent creators of one path both succeed).
#ifndef AOTCACHE_CORE_PATHS_PRIVATE_DIR_H_
#define AOTCACHE_CORE_PATHS_PRIVATE_DIR_H_

#include <string>

#include "absl/status/status.h"

namespace aotcache {

// Creates `path` and each missing parent with mode 0700; directories that
// exist are left as they are. FailedPrecondition when one cannot be made.
absl::Status CreatePrivateDirectories(const std::string& path);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_PATHS_PRIVATE_DIR_H_
