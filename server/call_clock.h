// CallClock: when the daemon last received a call, so that an auto-started
// daemon can exit after an idle period.
// Thread-safety: thread-safe (one atomic).
#ifndef AOTCACHE_SERVER_CALL_CLOCK_H_
#define AOTCACHE_SERVER_CALL_CLOCK_H_

#include <atomic>
#include <cstdint>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace aotcache {

class CallClock {
 public:
  CallClock() { Touch(); }

  void Touch() { last_micros_.store(absl::GetCurrentTimeNanos() / 1000); }
  absl::Duration SinceLastCall() const {
    return absl::Microseconds(absl::GetCurrentTimeNanos() / 1000 -
                              last_micros_.load());
  }

 private:
  std::atomic<int64_t> last_micros_{0};
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_CALL_CLOCK_H_
