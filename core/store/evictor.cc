#include "core/store/evictor.h"

#include <algorithm>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

// How many candidates one pass of a size goal keeps in memory at most
// (their keys and times: about 20 MB).
constexpr int64_t kMaxCandidates = int64_t{1} << 18;
constexpr int kMaxPasses = 16;

class Run {
 public:
  explicit Run(RocksDbStore& store)
      : store_(store), bytes_before_(store.usage().bytes) {}

  // Deletes `key` unless used since `since`; during a write stall, tries
  // again after a pause (outside any lock) for up to about a second.
  absl::Status Take(absl::string_view key, int64_t since) {
    using Eviction = RocksDbStore::Eviction;
    absl::StatusOr<Eviction> outcome = Eviction::kBusy;
    for (int attempt = 0; attempt < 100 && *outcome == Eviction::kBusy;
         ++attempt) {
      if (attempt > 0) absl::SleepFor(absl::Milliseconds(10));
      absl::Duration held;
      outcome = store_.EvictIfIdle(key, since, &held);
      report_.longest_lock = std::max(report_.longest_lock, held);
      AOTCACHE_RETURN_IF_ERROR(outcome.status());
    }
    if (*outcome == Eviction::kBusy) {
      return absl::UnavailableError(
          "the store's writes stayed stalled for a second: eviction stopped");
    }
    ++(*outcome == Eviction::kEvicted ? report_.entries : report_.spared);
    return absl::OkStatus();
  }

  absl::Status ByAge(int64_t used_before) {
    absl::Status failed;
    AOTCACHE_RETURN_IF_ERROR(store_.ForEachAccess(
        [&](absl::string_view key, const RocksDbStore::Access& access) {
          ++report_.scanned;
          if (access.last_access_micros >= used_before) return true;
          failed = Take(key, used_before);
          return failed.ok();
        }));
    return failed;
  }

  // One pass: the oldest entries, as many as the bytes over `to_bytes`
  // suggest, deleted oldest first until the store is down to it. Sets
  // `*progress` when it deleted any.
  absl::Status BySize(int64_t to_bytes, bool* progress) {
    const RocksDbStore::Usage usage = store_.usage();
    const int64_t average =
        std::max<int64_t>(1, usage.bytes / std::max<int64_t>(1, usage.entries));
    const int64_t wanted = std::clamp<int64_t>(
        (usage.bytes - to_bytes) / average * 5 / 4 + 64, 64, kMaxCandidates);
    const int64_t since = store_.NowMicros();
    // The `wanted` least recently used: a max-heap whose top is the most
    // recent of them.
    std::priority_queue<std::pair<int64_t, std::string>> oldest;
    AOTCACHE_RETURN_IF_ERROR(store_.ForEachAccess(
        [&](absl::string_view key, const RocksDbStore::Access& access) {
          ++report_.scanned;
          const int64_t t = access.last_access_micros;
          if (static_cast<int64_t>(oldest.size()) < wanted) {
            oldest.emplace(t, std::string(key));
          } else if (t < oldest.top().first) {
            oldest.pop();
            oldest.emplace(t, std::string(key));
          }
          return true;
        }));
    std::vector<std::pair<int64_t, std::string>> chosen;
    chosen.reserve(oldest.size());
    for (; !oldest.empty(); oldest.pop()) chosen.push_back(oldest.top());
    const int64_t deleted_before = report_.entries;
    for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) {
      if (store_.usage().bytes <= to_bytes) break;
      AOTCACHE_RETURN_IF_ERROR(Take(it->second, since));
    }
    *progress = report_.entries > deleted_before;
    return absl::OkStatus();
  }

  EvictionReport Finish() {
    report_.bytes = bytes_before_ - store_.usage().bytes;
    return report_;
  }

 private:
  RocksDbStore& store_;
  const int64_t bytes_before_;
  EvictionReport report_;
};

}  // namespace

absl::StatusOr<EvictionReport> Evict(RocksDbStore& store,
                                     const EvictionGoal& goal) {
  // The hits kept in memory count: written first, so the scan sees them.
  AOTCACHE_RETURN_IF_ERROR(store.FlushHits());
  Run run(store);
  if (goal.used_before_micros >= 0) {
    AOTCACHE_RETURN_IF_ERROR(run.ByAge(goal.used_before_micros));
  }
  bool progress = true;
  for (int pass = 0; pass < kMaxPasses && progress && goal.to_bytes >= 0 &&
                     store.usage().bytes > goal.to_bytes;
       ++pass) {
    AOTCACHE_RETURN_IF_ERROR(run.BySize(goal.to_bytes, &progress));
  }
  return run.Finish();
}

}  // namespace aotcache
