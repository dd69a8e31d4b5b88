#include "core/store/store_janitor.h"

#include <utility>

namespace aotcache {

StoreJanitor::StoreJanitor(RocksDbStore* store, SizeLimits limits)
    : store_(store), limits_(std::move(limits)) {
  if (limits_.max_bytes > 0) thread_ = std::thread([this] { Loop(); });
}

StoreJanitor::~StoreJanitor() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<EvictionReport> StoreJanitor::Evict(const EvictionGoal& goal) {
  absl::MutexLock one_at_a_time(&evict_mu_);
  absl::StatusOr<EvictionReport> report = aotcache::Evict(*store_, goal);
  if (report.ok()) {
    absl::MutexLock lock(&mu_);
    counters_.entries += report->entries;
    counters_.bytes += report->bytes;
  }
  return report;
}

EvictionCounters StoreJanitor::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

void StoreJanitor::Loop() {
  const auto target =
      static_cast<int64_t>(limits_.max_bytes * limits_.low_watermark);
  absl::Duration wait = limits_.interval;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stop_), wait)) return;
    }
    wait = limits_.interval;
    if (store_->usage().bytes <= limits_.max_bytes) continue;
    {
      absl::MutexLock lock(&mu_);
      ++counters_.sweeps;
    }
    EvictionGoal goal;
    goal.to_bytes = target;
    absl::StatusOr<EvictionReport> report = Evict(goal);
    if (limits_.on_sweep) limits_.on_sweep(report);
    // A sweep that failed (the disk is full, say) or found nothing to take
    // (everything used since it began) is not tried again at once.
    if (!report.ok() || report->entries == 0) wait = limits_.retry_interval;
  }
}

}  // namespace aotcache
