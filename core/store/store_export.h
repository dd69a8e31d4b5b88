// Export and import of a store's entries with their artifacts, in the
// export format (export_format.h): ExportStore writes every entry (or those
// whose key begins with a prefix), each after the artifacts it references
// that the stream has not carried yet, read back and checked against their
// digests as any read; StoreImporter writes what a checked stream carries,
// each entry with its artifacts in one write (RocksDbStore::Put), so an
// entry is never there without them. Entries the store holds already are
// left as they are; an entry whose key is not the one the importing daemon
// gives its request (KeyOf) is refused, counted and not written.
// Thread-safety: as RocksDbStore; an importer is used from one thread.
#ifndef AOTCACHE_CORE_STORE_STORE_EXPORT_H_
#define AOTCACHE_CORE_STORE_STORE_EXPORT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/store/export_format.h"
#include "core/store/rocksdb_store.h"

namespace aotcache {

struct ExportCounts {
  int64_t entries = 0;
  int64_t artifacts = 0;
  // Entries left out: an artifact of theirs was missing or corrupt.
  int64_t skipped = 0;
};

absl::StatusOr<ExportCounts> ExportStore(RocksDbStore& store,
                                         absl::string_view key_prefix,
                                         ExportWriter& writer);

class StoreImporter {
 public:
  // The key an entry's request (graph, options, target) has here.
  using KeyOf =
      std::function<absl::StatusOr<std::string>(const v1::CacheEntry&)>;

  StoreImporter(RocksDbStore* store, KeyOf key_of)
      : store_(store), key_of_(std::move(key_of)) {}

  // Handlers for an ExportReader of the stream.
  ExportReader::Handlers Handlers();

  int64_t imported() const { return imported_; }
  int64_t present() const { return present_; }  // Held already: kept.
  int64_t refused() const { return refused_; }
  const std::string& refused_reason() const { return refused_reason_; }

 private:
  absl::Status Entry(v1::CacheEntry entry);

  RocksDbStore* store_;
  const KeyOf key_of_;
  // Artifacts read whose entry has not come yet (or whose entries were
  // refused: a later entry may share them).
  std::map<std::string, std::string> pending_;
  int64_t imported_ = 0;
  int64_t present_ = 0;
  int64_t refused_ = 0;
  std::string refused_reason_;  // The first refused entry's.
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_STORE_STORE_EXPORT_H_
