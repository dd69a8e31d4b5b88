#include "core/paths/read_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace aotcache {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::string why = std::strerror(errno);
    if (errno == ENOENT) return absl::NotFoundError(path + ": no such file");
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read ", path, ": ", why));
  }
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read ", path, " whole"));
  }
  return out.str();
}

}  // namespace aotcache
