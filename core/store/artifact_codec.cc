#include "core/store/artifact_codec.h"

#include <zstd.h>

#include <cstdint>

#include "core/key/digest.h"

namespace aotcache {
namespace {

// No artifact is this large (the daemon answers at most 256 MiB): a frame
// that says it is larger is not one of ours.
constexpr unsigned long long kMaxArtifactBytes = 1ull << 31;

// The bytes of a zstd frame, if `stored` is a whole one.
std::optional<std::string> Decompress(absl::string_view stored) {
  if (stored.size() < 4 || static_cast<uint8_t>(stored[0]) != 0x28 ||
      static_cast<uint8_t>(stored[1]) != 0xB5 ||
      static_cast<uint8_t>(stored[2]) != 0x2F ||
      static_cast<uint8_t>(stored[3]) != 0xFD) {
    return std::nullopt;
  }
  const unsigned long long size =
      ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR ||
      size > kMaxArtifactBytes) {
    return std::nullopt;
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  const size_t made =
      ZSTD_decompress(bytes.data(), bytes.size(), stored.data(), stored.size());
  if (ZSTD_isError(made) || made != bytes.size()) return std::nullopt;
  return bytes;
}

}  // namespace

std::string EncodeArtifact(absl::string_view bytes,
                           const ArtifactCompression& compression) {
  if (!compression.zstd) return std::string(bytes);
  std::string stored(ZSTD_compressBound(bytes.size()), '\0');
  const size_t made = ZSTD_compress(stored.data(), stored.size(), bytes.data(),
                                    bytes.size(), compression.level);
  if (ZSTD_isError(made) || made >= bytes.size()) return std::string(bytes);
  stored.resize(made);
  return stored;
}

std::optional<std::string> DecodeArtifact(absl::string_view stored,
                                          absl::string_view digest) {
  if (std::optional<std::string> bytes = Decompress(stored);
      bytes.has_value() && Sha256Hex(*bytes) == digest) {
    return bytes;
  }
  // Stored as it is (or a frame whose content is not the artifact).
  if (Sha256Hex(stored) == digest) return std::string(stored);
  return std::nullopt;
}

}  // namespace aotcache
