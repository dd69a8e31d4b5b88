#include "core/paths/private_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace aotcache {

absl::Status CreatePrivateDirectories(const std::string& path) {
  // Each prefix ending before a '/', then the whole path.
  for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    std::string prefix = path.substr(0, end);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0700) != 0 &&
        errno != EEXIST) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create ", prefix, ": ", std::strerror(errno)));
    }
    if (end == std::string::npos) return absl::OkStatus();
  }
}

}  // namespace aotcache
