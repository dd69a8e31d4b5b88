// The store's layout on disk as RocksDB sees it -- its column families,
// their options, the schema key -- and the file-system facts the store
// checks (free space, its lock, what to tell an operator whose store does
// not open). Internal to core/store: shared by RocksDbStore's open, its
// repair and its verify. rocksdb_store.h documents the layout.
// Thread-safety: functions only.
#ifndef AOTCACHE_CORE_STORE_ROCKSDB_LAYOUT_H_
#define AOTCACHE_CORE_STORE_ROCKSDB_LAYOUT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aotcache/v1/store.pb.h"
#include "core/store/rocksdb_store.h"
#include "rocksdb/db.h"

namespace aotcache {

inline constexpr char kEntries[] = "entries";
inline constexpr char kArtifacts[] = "artifacts";
inline constexpr char kRefcounts[] = "refcounts";
inline constexpr char kAccess[] = "access";
inline constexpr char kMeta[] = "meta";
inline constexpr char kArtifactSizes[] = "artifact_sizes";
inline constexpr char kSchemaKey[] = "schema_version";
inline constexpr char kUsageBytesKey[] = "usage_bytes";
inline constexpr char kUsageEntriesKey[] = "usage_entries";

// What a record counts for in the store's size (RocksDbStore::usage()).
inline int64_t StoredSize(absl::string_view key, absl::string_view value) {
  return static_cast<int64_t>(key.size() + value.size());
}

inline rocksdb::Slice ToSlice(absl::string_view s) {
  return rocksdb::Slice(s.data(), s.size());
}
inline absl::string_view ToView(const rocksdb::Slice& s) {
  return absl::string_view(s.data(), s.size());
}

// The artifacts an entry references.
std::vector<std::string> Digests(const v1::CacheEntry& e);

// The options every open of the store uses (and a repair must use too):
// the column families in their order, with their merge operators.
std::pair<rocksdb::Options, std::vector<rocksdb::ColumnFamilyDescriptor>>
DbOptions(const StoreOptions& options);

// Bytes free for an unprivileged writer on the file system of `path`, -1
// when it cannot be told.
int64_t FreeBytes(const std::string& path);

// Holds RocksDB's LOCK file of the store at `path` as RocksDB does (an
// fcntl write lock), for a read-only open, which takes no lock of its own:
// no daemon may serve a store another one serves. Returns the fd;
// Unavailable while another process holds it.
absl::StatusOr<int> LockStore(const std::string& path);

// What to tell an operator whose store at `path` does not open with `st`
// (empty unless it is damage a repair may mend).
std::string RepairHint(const std::string& path, const rocksdb::Status& st);

// Whether `path` holds files of a RocksDB store (tables, logs, blob files,
// MANIFESTs), whatever state its CURRENT file is in.
bool HasStoreFiles(const std::string& path);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_STORE_ROCKSDB_LAYOUT_H_
