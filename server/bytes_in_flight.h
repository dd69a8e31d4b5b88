// BytesInFlight: a bound on the bytes of requests and downloads the daemon
// holds at once (a request's decoded graph and its analysis take several
// times its bytes), so that many large concurrent requests are refused
// instead of exhausting memory.
// Thread-safety: thread-safe.
#ifndef AOTCACHE_SERVER_BYTES_IN_FLIGHT_H_
#define AOTCACHE_SERVER_BYTES_IN_FLIGHT_H_

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/support/status.h"

namespace aotcache {

class BytesInFlight {
 public:
  explicit BytesInFlight(int64_t limit) : limit_(limit) {}

  // Takes `n` bytes of the budget: false, taking nothing, if they do not
  // fit (a request alone larger than the limit fits when nothing else is
  // in flight, so that the message size limit stays the only per-request
  // bound).
  bool TryTake(int64_t n) {
    absl::MutexLock lock(&mu_);
    if (taken_ > 0 && taken_ + n > limit_) return false;
    taken_ += n;
    return true;
  }
  void Give(int64_t n) {
    absl::MutexLock lock(&mu_);
    taken_ -= n;
  }
  int64_t limit() const { return limit_; }

  // What a request past the budget gets, at once.
  grpc::Status OverBudget() const {
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("the daemon holds ", limit_,
                     " bytes of requests and downloads already; retry later"));
  }

 private:
  const int64_t limit_;
  absl::Mutex mu_;
  int64_t taken_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_BYTES_IN_FLIGHT_H_
