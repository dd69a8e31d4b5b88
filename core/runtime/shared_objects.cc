#include "core/runtime/shared_objects.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/key/digest.h"
#include "core/paths/data_dir.h"
#include "core/paths/read_file.h"

namespace aotcache {
namespace {

// Writes `bytes` to `path` unless a file with the same digest is there,
// through a temporary file renamed into place (atomic for other readers).
absl::Status WriteOnce(const std::string& path, const std::string& bytes,
                       const std::string& digest) {
  if (std::filesystem::exists(path) && Sha256Hex(ReadFile(path)) == digest) {
    return absl::OkStatus();
  }
  std::string tmp = absl::StrCat(path, ".", getpid(), ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary);
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

absl::StatusOr<void*> OpenSharedObject(const std::string& bytes) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* handles = new absl::flat_hash_map<std::string, void*>();
  const std::string digest = Sha256Hex(bytes);
  absl::MutexLock lock(&mu);
  auto it = handles->find(digest);
  if (it != handles->end()) return it->second;
  std::string dir = DefaultDataDir() + "/native";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string path = absl::StrCat(dir, "/", digest, ".so");
  absl::Status written = WriteOnce(path, bytes, digest);
  if (!written.ok()) return written;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load ", path, ": ", dlerror()));
  }
  handles->emplace(digest, handle);
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
