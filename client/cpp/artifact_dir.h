// ArtifactDir: the client machine's content-addressed copy of the artifacts
// it received, so that an artifact crosses the wire once per machine.
// Files are named by the SHA-256 of their bytes (DIR/ab/abcd...), written
// to a temporary name and renamed into place, and re-hashed on every read:
// a file whose bytes do not match is removed and reported as absent. The
// directory is held to a byte budget (dir_budget.h): a read marks a file
// used, a write past the budget deletes those used longest ago.
// Thread-safety: thread-safe, also across processes sharing the directory
// (rename is atomic; readers never see a partial file).
#ifndef AOTCACHE_CLIENT_CPP_ARTIFACT_DIR_H_
#define AOTCACHE_CLIENT_CPP_ARTIFACT_DIR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aotcache/v1/artifact.pb.h"

namespace aotcache {

class ArtifactDir {
 public:
  // `max_bytes`: the budget; 0 for none.
  ArtifactDir(std::string dir, int64_t max_bytes)
      : dir_(std::move(dir)), max_bytes_(max_bytes) {}

  // NotFound when absent (or corrupt, and now removed).
  absl::StatusOr<v1::Artifact> Get(absl::string_view digest) const;
  // `bytes` must hash to `digest` (InvalidArgument otherwise).
  absl::Status Put(absl::string_view digest, absl::string_view bytes) const;

 private:
  std::string PathOf(absl::string_view digest) const;

  std::string dir_;
  int64_t max_bytes_;
};

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CPP_ARTIFACT_DIR_H_
