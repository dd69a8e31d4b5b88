#include "core/paths/data_dir.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace aotcache {

std::string DefaultDataDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg != '\0') return absl::StrCat(xdg, "/aotcache");
  const char* home = std::getenv("HOME");
  return absl::StrCat(home != nullptr ? home : ".", "/.cache/aotcache");
}

std::string SocketPath(const std::string& data_dir) {
  return absl::StrCat(data_dir, "/aotcached.sock");
}

std::string ResolveServerTarget(const std::string& server) {
  if (!server.empty()) return server;
  const char* env = std::getenv("AOTCACHE_SERVER");
  if (env != nullptr && *env != '\0') return env;
  return absl::StrCat("unix:", SocketPath(DefaultDataDir()));
}

}  // namespace aotcache
