// EntryStore: what the cache needs of a store. RocksDbStore implements it;
// tests wrap it to inject faults (disk full, I/O errors).
// Thread-safety: implementations are thread-safe.
#ifndef AOTCACHE_CORE_STORE_ENTRY_STORE_H_
#define AOTCACHE_CORE_STORE_ENTRY_STORE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "aotcache/v1/store.pb.h"

namespace aotcache {

// A write refused because the store is at its hard size limit: the cache
// answers such a miss as a bypass ("cache full"), never as a failure.
inline constexpr char kCacheFull[] = "cache full";
inline absl::Status CacheFullError(absl::string_view detail) {
  absl::Status status =
      absl::ResourceExhaustedError(absl::StrCat(kCacheFull, ": ", detail));
  status.SetPayload("aotcache/cache-full", absl::Cord("1"));
  return status;
}
inline bool IsCacheFull(const absl::Status& status) {
  return status.GetPayload("aotcache/cache-full").has_value();
}

class EntryStore {
 public:
  virtual ~EntryStore() = default;
  // NotFound on a miss.
  virtual absl::StatusOr<v1::CacheEntry> Lookup(
      absl::string_view key) const = 0;
  // Lookup for answering a hit: the same entry, its graphs not decoded.
  virtual absl::StatusOr<v1::CacheEntryHeader> LookupHeader(
      absl::string_view key) const = 0;
  // Writes the entry and the (digest, bytes) artifacts it references.
  // IsCacheFull when the store is at its size limit.
  virtual absl::Status Put(
      const v1::CacheEntry& entry,
      const std::vector<std::pair<std::string, std::string>>& artifacts) = 0;
  // Bytes checked against the digest: DataLoss (dropped) or NotFound.
  virtual absl::StatusOr<std::string> GetArtifact(absl::string_view digest) = 0;
  // Whether an artifact is stored, its bytes neither read whole nor checked.
  virtual bool HasArtifact(absl::string_view digest) const = 0;
  virtual absl::Status RecordHit(absl::string_view key) = 0;
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_STORE_ENTRY_STORE_H_
