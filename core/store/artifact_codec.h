// How an artifact lies at rest in the store: a zstd frame of its bytes
// when that is smaller (ArtifactCompression), else its bytes as they are.
// Its digest is always the SHA-256 of its own, uncompressed bytes; reading
// tells the two forms apart by that digest, so stores written before
// compression, or with it off, read as they are, and no form is ever taken
// for the other.
// Thread-safety: functions only.
#ifndef AOTCACHE_CORE_STORE_ARTIFACT_CODEC_H_
#define AOTCACHE_CORE_STORE_ARTIFACT_CODEC_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace aotcache {

struct ArtifactCompression {
  bool zstd = true;  // false: artifacts are stored as they are.
  int level = 3;     // zstd's level, 1 (fastest) to 19.
};

// What to store for `bytes`.
std::string EncodeArtifact(absl::string_view bytes,
                           const ArtifactCompression& compression);

// The artifact `stored` holds, if its SHA-256 is `digest`; nullopt when it
// is not (corrupt).
std::optional<std::string> DecodeArtifact(absl::string_view stored,
                                          absl::string_view digest);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_STORE_ARTIFACT_CODEC_H_
