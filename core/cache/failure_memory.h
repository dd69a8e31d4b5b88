// FailureMemory: the compile failures the cache remembers per key, so that
// a graph that failed for itself (not for a passing condition: the daemon
// stopping, a busy store or machine) is answered with the same error for a
// while without being compiled again. The key's material decides the
// failure, so a key stands for it. At most kMaxKeys are held (cleared when
// full: it only saves work).
// Thread-safety: thread-safe.
#ifndef AOTCACHE_CORE_CACHE_FAILURE_MEMORY_H_
#define AOTCACHE_CORE_CACHE_FAILURE_MEMORY_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace aotcache {

class FailureMemory {
 public:
  static constexpr size_t kMaxKeys = 1 << 12;

  // Remembers failures for `how_long` (zero: never), reading the time from
  // `clock`.
  FailureMemory(absl::Duration how_long, std::function<absl::Time()> clock)
      : how_long_(how_long), clock_(std::move(clock)) {}

  // The failure remembered for `key` within how_long, its message saying
  // how long ago; nullopt if there is none.
  std::optional<absl::Status> Recall(const std::string& key);

  // Remembers `status` for `key` if another try would fail the same way.
  void Remember(const std::string& key, const absl::Status& status);

  // Whether another compile of the same graph would fail as `status` did.
  static bool Repeats(const absl::Status& status);

 private:
  struct Failure {
    absl::Status status;
    absl::Time when;
  };
  const absl::Duration how_long_;
  const std::function<absl::Time()> clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Failure> failures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_CACHE_FAILURE_MEMORY_H_
