// The native backend's compiled kernels at run time: a shared object is
// written once to a content-addressed directory (<data dir>/native/
// <sha256>.so, 0700, which no other user may write) and opened once per
// process after its bytes are re-hashed. Handles are never closed: kernels
// may run until the process exits. The dir is held to a budget
// (NativeDirBudget, dir_budget.h): a shared object deleted is written again
// from its artifact when next loaded.
// Thread-safety: thread-safe.
#ifndef AOTCACHE_CORE_RUNTIME_SHARED_OBJECTS_H_
#define AOTCACHE_CORE_RUNTIME_SHARED_OBJECTS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace aotcache {

// $AOTCACHE_NATIVE_DIR_MAX_SIZE, else 2 GiB.
int64_t NativeDirBudget();

// The dlopen handle of the shared object `bytes`. FailedPrecondition when
// it cannot be written or opened, or when another user could write its
// directory (the message says why).
absl::StatusOr<void*> OpenSharedObject(const std::string& bytes);

// The address of `symbol` in `handle`, or InvalidArgument.
absl::StatusOr<void*> FindSymbol(void* handle, const std::string& symbol);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_RUNTIME_SHARED_OBJECTS_H_
