// WorkerPool: threads for work that may block for long -- a compile, or a
// wait on an identical compile in flight -- so that it never holds one of
// gRPC's callback threads. A thread is added whenever a task arrives and
// every worker is busy, up to max_threads; past that, tasks queue. Threads
// stay until the pool is destroyed.
// Thread-safety: thread-safe. The destructor runs every scheduled task
// before it returns.
#ifndef AOTCACHE_SERVER_WORKER_POOL_H_
#define AOTCACHE_SERVER_WORKER_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace aotcache {

class WorkerPool {
 public:
  explicit WorkerPool(int max_threads) : max_threads_(max_threads) {}
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool();

  void Schedule(std::function<void()> task);

  int threads() const;

 private:
  void Work();

  const int max_threads_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_WORKER_POOL_H_
