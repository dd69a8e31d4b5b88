// WaitUntil: for what a test cannot be notified of -- another process, a
// file appearing, a peer closing a socket -- polls `condition` until it
// holds or `timeout` passes, and says whether it held. What a test can be
// notified of (a thread of its own, a backend it wraps) it waits for with
// an absl::Notification instead.
// Thread-safety: `condition` runs on the calling thread.
#ifndef AOTCACHE_TESTS_TESTING_WAIT_H_
#define AOTCACHE_TESTS_TESTING_WAIT_H_

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace aotcache::testing {

inline bool WaitUntil(const std::function<bool()>& condition,
                      absl::Duration timeout,
                      absl::Duration poll = absl::Milliseconds(5)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(poll);
  }
  return true;
}

}  // namespace aotcache::testing

#endif  // AOTCACHE_TESTS_TESTING_WAIT_H_
