#include "server/stats_snapshot.h"

namespace aotcache {

v1::StatsResponse StatsSnapshot(const Cache& cache, const RocksDbStore& store,
                                const StoreJanitor& janitor) {
  v1::StatsResponse response;
  CacheCounters c = cache.counters();
  response.set_hits(c.hits);
  response.set_misses(c.misses);
  response.set_bypasses(c.bypasses);
  for (const auto& [reason, n] : c.bypass_reasons) {
    (*response.mutable_bypass_reasons())[reason] = n;
  }
  response.set_saves(c.saves);
  response.set_save_failures(c.save_failures);
  response.set_backward_compiles(c.backward_compiles);
  response.set_backward_hits(c.backward_hits);
  response.set_bytes_stored(c.bytes_stored);
  response.set_compile_seconds_saved(c.compile_seconds_saved);
  response.set_corrupt_artifacts(c.corrupt_artifacts);
  response.set_memoized_hits(c.memoized_hits);
  response.set_store_write_problem(store.WriteProblem());
  response.set_remembered_failures(c.remembered_failures);
  response.set_bypass_memo_hits(c.bypass_memo_hits);
  response.set_store_recovery_damage(store.recovery_damage());
  response.set_misses_not_compiled(c.misses_not_compiled);
  const RocksDbStore::CompressionCounters written = store.compression();
  response.set_artifact_bytes_written(written.artifact_bytes);
  response.set_artifact_bytes_at_rest(written.stored_bytes);
  const RocksDbStore::Usage usage = store.usage();
  response.set_store_bytes(usage.bytes);
  response.set_store_entries(usage.entries);
  response.set_max_size(janitor.limits().max_bytes);
  response.set_max_size_hard_limit(store.hard_limit_bytes());
  const EvictionCounters evicted = janitor.counters();
  response.set_evicted_entries(evicted.entries);
  response.set_evicted_bytes(evicted.bytes);
  response.set_eviction_sweeps(evicted.sweeps);
  return response;
}

}  // namespace aotcache
