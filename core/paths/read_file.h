// ReadFile: a whole file's bytes.
// Thread-safety: thread-safe.
#ifndef AOTCACHE_CORE_PATHS_READ_FILE_H_
#define AOTCACHE_CORE_PATHS_READ_FILE_H_

#include <string>

namespace aotcache {

// The bytes of `path`; empty when it cannot be read.
std::string ReadFile(const std::string& path);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_PATHS_READ_FILE_H_
