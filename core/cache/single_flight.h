// SingleFlight: among concurrent calls with the same key, one runs the work
// and the others wait for its result (a miss is compiled once however many
// clients ask for it at the same moment).
// Thread-safety: thread-safe.
#ifndef AOTCACHE_CORE_CACHE_SINGLE_FLIGHT_H_
#define AOTCACHE_CORE_CACHE_SINGLE_FLIGHT_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace aotcache {

template <typename T>
class SingleFlight {
 public:
  // Runs `work` unless a call with `key` is already running, in which case
  // waits for that call and returns its result (and sets `*waited`).
  absl::StatusOr<T> Do(const std::string& key,
                       absl::FunctionRef<absl::StatusOr<T>()> work,
                       bool* waited = nullptr) {
    std::shared_ptr<Flight> flight;
    bool leader = false;
    {
      absl::MutexLock lock(&mu_);
      auto it = flights_.find(key);
      if (it == flights_.end()) {
        flight = std::make_shared<Flight>();
        flights_.emplace(key, flight);
        leader = true;
      } else {
        flight = it->second;
        waiting_.fetch_add(1);
      }
    }
    if (waited != nullptr) *waited = !leader;
    if (!leader) {
      flight->done.WaitForNotification();
      waiting_.fetch_sub(1);
      return flight->result;
    }
    flight->result = work();
    {
      absl::MutexLock lock(&mu_);
      flights_.erase(key);
    }
    flight->done.Notify();
    return flight->result;
  }

  // Calls currently waiting for another's work (for tests and stats).
  int64_t waiting() const { return waiting_.load(); }

 private:
  struct Flight {
    absl::Notification done;
    absl::StatusOr<T> result = absl::UnknownError("not run");
  };

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Flight>> flights_
      ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> waiting_{0};
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_CACHE_SINGLE_FLIGHT_H_
