// EntryStore: what the cache needs of a store. RocksDbStore implements it;
// tests wrap it to inject faults (disk full, I/O errors).
// Thread-safety: implementations are thread-safe.
#ifndef AOTCACHE_CORE_STORE_ENTRY_STORE_H_
#define AOTCACHE_CORE_STORE_ENTRY_STORE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aotcache/v1/store.pb.h"

namespace aotcache {

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
