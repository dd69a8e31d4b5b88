// Eviction: makes room in a RocksDbStore by deleting the entries used least
// recently (by their access records: the last hit, or when stored), or those
// unused since a time. It reads the access records without a lock and
// deletes one entry at a time under that entry's key lock only
// (RocksDbStore::EvictIfIdle), so hits and compiles go on meanwhile, and an
// entry used after the eviction began is spared.
// Thread-safety: Evict may run concurrently with anything but another
// Evict on the same store (StoreJanitor serializes them).
#ifndef AOTCACHE_CORE_STORE_EVICTOR_H_
#define AOTCACHE_CORE_STORE_EVICTOR_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/store/rocksdb_store.h"

namespace aotcache {

struct EvictionGoal {
  // Delete the least recently used entries until the store holds at most
  // this many bytes (RocksDbStore::usage()); negative: no size goal.
  int64_t to_bytes = -1;
  // Delete every entry last used before this time (microseconds since the
  // epoch, the store's clock); negative: no age goal.
  int64_t used_before_micros = -1;
};

struct EvictionReport {
  int64_t entries = 0;  // Deleted.
  int64_t bytes = 0;    // By which the store's size went down meanwhile.
  int64_t spared = 0;   // Chosen but used while the eviction ran: kept.
  int64_t scanned = 0;  // Access records read.
  absl::Duration longest_lock;  // The longest any key's lock was held.
};

absl::StatusOr<EvictionReport> Evict(RocksDbStore& store,
                                     const EvictionGoal& goal);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_STORE_EVICTOR_H_
