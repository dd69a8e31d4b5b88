#include "core/paths/private_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

absl::Status CheckNobodyElseWrites(const std::string& path, GroupWrites group) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot inspect ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a directory (a symlink?)"));
  }
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " belongs to another user (uid ", st.st_uid, ")"));
  }
  mode_t writers = S_IWOTH;
  if (group == GroupWrites::kRefused) writers |= S_IWGRP;
  if ((st.st_mode & writers) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s is writable by other users (mode %04o): they could swap the "
        "files made in it; chmod go-w it",
        path, st.st_mode & 07777));
  }
  return absl::OkStatus();
}

absl::Status ResetPrivateDirectory(const std::string& path,
                                   GroupWrites parent_group) {
  std::string parent = std::filesystem::path(path).parent_path().string();
  if (absl::Status st =
          CheckNobodyElseWrites(parent.empty() ? "." : parent, parent_group);
      !st.ok()) {
    return st;
  }
  std::error_code ec;
  std::filesystem::remove_all(path, ec);  // A symlink itself, not its target.
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot empty ", path, ": ", ec.message()));
  }
  if (::mkdir(path.c_str(), 0700) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  // mkdir honours the umask only to remove bits: 0700 or less. Owner and
  // mode are checked again all the same: nothing is made in a dir that is
  // not verified.
  return CheckNobodyElseWrites(path);
}

}  // namespace aotcache
