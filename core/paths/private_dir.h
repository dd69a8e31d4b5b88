// Private directories: creating a directory readable by its owner only, as
// the XDG base directory spec asks of the cache home (a data dir holds every
// graph and constant a user compiled), and checking that no other user can
// create, rename or remove the entries of a directory before files that
// become code (compiler outputs, shared objects) are made in it.
// Thread-safety: thread-safe (concurrent creators of one path both succeed).
#ifndef AOTCACHE_CORE_PATHS_PRIVATE_DIR_H_
#define AOTCACHE_CORE_PATHS_PRIVATE_DIR_H_

#include <string>

#include "absl/status/status.h"

namespace aotcache {

// Creates `path` and each missing parent with mode 0700; directories that
// exist are left as they are. FailedPrecondition when one cannot be made.
absl::Status CreatePrivateDirectories(const std::string& path);

// Whether members of a directory's group may write it: a data dir mounted
// for a group (Kubernetes' fsGroup) trusts that group as it trusts itself.
enum class GroupWrites { kRefused, kAllowed };

// OK when `path` is a directory (not a symlink) owned by this process's
// user or by root whose entries no other user can create, rename or remove:
// not writable by others (nor by its group, when `group` refuses it),
// unless the sticky bit is set, as on /tmp. FailedPrecondition naming the
// path and what is wrong otherwise.
absl::Status CheckNobodyElseWrites(const std::string& path,
                                   GroupWrites group = GroupWrites::kRefused);

// `path` emptied (anything there before, a symlink included, is removed)
// and made again, 0700, this user's: a directory of one process's
// temporary files. FailedPrecondition when it cannot be, or when
// CheckNobodyElseWrites fails for it or its parent (`parent_group`).
absl::Status ResetPrivateDirectory(const std::string& path,
                                   GroupWrites parent_group);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_PATHS_PRIVATE_DIR_H_
