#include "server/worker_pool.h"

#include <utility>

namespace aotcache {

WorkerPool::~WorkerPool() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    threads = std::move(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void WorkerPool::Schedule(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(task));
  if (queue_.size() > static_cast<size_t>(idle_) &&
      threads_.size() < static_cast<size_t>(max_threads_)) {
    threads_.emplace_back([this] { Work(); });
  }
}

int WorkerPool::threads() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(threads_.size());
}

void WorkerPool::Work() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      ++idle_;
      mu_.Await(absl::Condition(
          +[](WorkerPool* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
            return !p->queue_.empty() || p->stopping_;
          },
          this));
      --idle_;
      if (queue_.empty()) return;  // Stopping, and nothing left to run.
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace aotcache
