// StatsSnapshot: the daemon's counters and the store's size at one moment,
// as AdminService.Stats answers them and /metrics exports them (so the two
// always agree).
// Thread-safety: safe to call concurrently; each part is read under its
// own lock, so the parts may be microseconds apart.
#ifndef AOTCACHE_SERVER_STATS_SNAPSHOT_H_
#define AOTCACHE_SERVER_STATS_SNAPSHOT_H_

#include "aotcache/v1/service.pb.h"
#include "core/cache/cache.h"
#include "core/store/rocksdb_store.h"
#include "core/store/store_janitor.h"

namespace aotcache {

v1::StatsResponse StatsSnapshot(const Cache& cache, const RocksDbStore& store,
                                const StoreJanitor& janitor);

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_STATS_SNAPSHOT_H_
