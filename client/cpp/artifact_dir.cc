#include "client/cpp/artifact_dir.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/key/digest.h"
#include "core/paths/dir_budget.h"
#include "core/paths/private_dir.h"

namespace aotcache {
namespace {

bool IsDigest(absl::string_view digest) {
  if (digest.size() != 64) return false;
  for (char c : digest) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string ArtifactDir::PathOf(absl::string_view digest) const {
  return absl::StrCat(dir_, "/", digest.substr(0, 2), "/", digest);
}

absl::StatusOr<v1::Artifact> ArtifactDir::Get(absl::string_view digest) const {
  if (!IsDigest(digest)) {
    return absl::InvalidArgumentError(absl::StrCat("not a digest: ", digest));
  }
  std::string path = PathOf(digest);
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("no ", path));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  v1::Artifact artifact;
  if (Sha256Hex(bytes.str()) != digest ||
      !artifact.ParseFromString(bytes.str())) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    return absl::NotFoundError(absl::StrCat(path, " was corrupt; removed"));
  }
  TouchFile(path);
  return artifact;
}

absl::Status ArtifactDir::Put(absl::string_view digest,
                              absl::string_view bytes) const {
  if (!IsDigest(digest) || Sha256Hex(bytes) != digest) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes do not hash to ", digest));
  }
  std::string path = PathOf(digest);
  std::error_code ec;
  // Best effort: a failure shows as the write's own error below.
  (void)CreatePrivateDirectories(
      std::filesystem::path(path).parent_path().string());
  static std::atomic<uint64_t> next_temp{0};
  std::string temp =
      absl::StrCat(path, ".tmp.", getpid(), ".", next_temp.fetch_add(1));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      std::filesystem::remove(temp, ec);
      return absl::UnavailableError(absl::StrCat("cannot write ", temp));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::filesystem::remove(temp, ec);
    return absl::UnavailableError(absl::StrCat("cannot rename to ", path));
  }
  EnforceDirBudget(dir_, max_bytes_);
  return absl::OkStatus();
}

}  // namespace aotcache
