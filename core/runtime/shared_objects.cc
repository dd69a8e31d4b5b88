#include "core/runtime/shared_objects.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/key/digest.h"
#include "core/paths/data_dir.h"
#include "core/paths/dir_budget.h"
#include "core/paths/private_dir.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

// Whether `path` is a file (not a symlink) whose bytes have `digest`.
bool HasDigest(const std::string& path, const std::string& digest) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  std::string bytes;
  char buffer[1 << 16];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) bytes.append(buffer, n);
  ::close(fd);
  return n == 0 && Sha256Hex(bytes) == digest;
}

// Writes `bytes` to `path` through a temporary file renamed into place
// (atomic for other readers).
absl::Status Write(const std::string& path, const std::string& bytes) {
  std::string tmp = absl::StrCat(path, ".", getpid(), ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out) return absl::FailedPreconditionError("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::FailedPreconditionError("cannot write " + path);
  }
  return absl::OkStatus();
}

}  // namespace

int64_t NativeDirBudget() {
  return BudgetFromEnv("AOTCACHE_NATIVE_DIR_MAX_SIZE", int64_t{2} << 30);
}

absl::StatusOr<void*> OpenSharedObject(const std::string& bytes) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* handles = new absl::flat_hash_map<std::string, void*>();
  const std::string digest = Sha256Hex(bytes);
  absl::MutexLock lock(&mu);
  auto it = handles->find(digest);
  if (it != handles->end()) return it->second;
  const std::string dir = DefaultDataDir() + "/native";
  AOTCACHE_RETURN_IF_ERROR(CreatePrivateDirectories(dir));
  AOTCACHE_RETURN_IF_ERROR(CheckNobodyElseWrites(dir));
  const std::string path = absl::StrCat(dir, "/", digest, ".so");
  // Re-hashed before use. Nobody else can write the dir (checked above), so
  // the file checked is the file loaded. (Loading through the checked
  // descriptor's /proc/self/fd path is no option: glibc takes a path it
  // loaded before, a reused descriptor number, for the same object.)
  void* handle = nullptr;
  bool wrote = false;
  // Twice: another process holding the dir to its budget may delete the
  // file between the check and the load.
  for (int attempt = 0; attempt < 2 && handle == nullptr; ++attempt) {
    if (HasDigest(path, digest)) {
      TouchFile(path);  // Used: the budget keeps it longest.
    } else {
      AOTCACHE_RETURN_IF_ERROR(Write(path, bytes));
      wrote = true;
      if (!HasDigest(path, digest)) {
        return absl::FailedPreconditionError(
            absl::StrCat("cannot read back ", path, " as written"));
      }
    }
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load ", path, ": ", dlerror()));
  }
  handles->emplace(digest, handle);
  // The dir grew: held to its budget (the file is loaded, so this process
  // no longer needs it).
  if (wrote) EnforceDirBudget(dir, NativeDirBudget());
  return handle;
}

absl::StatusOr<void*> FindSymbol(void* handle, const std::string& symbol) {
  void* address = dlsym(handle, symbol.c_str());
  if (address == nullptr) {
    return absl::InvalidArgumentError("the shared object has no " + symbol);
  }
  return address;
}

}  // namespace aotcache
