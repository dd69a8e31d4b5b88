// StoreJanitor: keeps a RocksDbStore under its soft size limit -- a thread
// that, whenever the store holds more than SizeLimits::max_bytes, evicts the
// least recently used entries down to the low watermark -- and is the one
// place evictions run (Evict, for an operator's `aotcache evict`), one at a
// time. Counts what it evicted.
// Thread-safety: thread-safe. The store must outlive the janitor.
#ifndef AOTCACHE_CORE_STORE_STORE_JANITOR_H_
#define AOTCACHE_CORE_STORE_STORE_JANITOR_H_

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/store/evictor.h"
#include "core/store/rocksdb_store.h"

namespace aotcache {

struct SizeLimits {
  int64_t max_bytes = 0;       // 0: no soft limit (and no thread).
  double low_watermark = 0.9;  // A sweep ends at max_bytes times this.
  absl::Duration interval = absl::Milliseconds(100);  // Between checks.
  // After a sweep that failed or evicted nothing.
  absl::Duration retry_interval = absl::Seconds(30);
  // Told of each sweep the limit started (the server logs it). May be empty.
  std::function<void(const absl::StatusOr<EvictionReport>&)> on_sweep;
};

struct EvictionCounters {
  int64_t sweeps = 0;   // Started by the soft limit.
  int64_t entries = 0;  // Evicted, by sweeps and by Evict.
  int64_t bytes = 0;
};

class StoreJanitor {
 public:
  StoreJanitor(RocksDbStore* store, SizeLimits limits);
  ~StoreJanitor();
  StoreJanitor(const StoreJanitor&) = delete;
  StoreJanitor& operator=(const StoreJanitor&) = delete;

  // Runs an eviction now (after any running one).
  absl::StatusOr<EvictionReport> Evict(const EvictionGoal& goal);
  EvictionCounters counters() const;
  const SizeLimits& limits() const { return limits_; }

 private:
  void Loop();

  RocksDbStore* store_;
  const SizeLimits limits_;
  absl::Mutex evict_mu_;  // One eviction at a time.
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  EvictionCounters counters_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // Last: started once the rest is set.
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_STORE_STORE_JANITOR_H_
