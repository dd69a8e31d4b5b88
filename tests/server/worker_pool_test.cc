#include "server/worker_pool.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/testing/wait.h"

namespace aotcache {
namespace {

TEST(WorkerPoolTest, RunsEveryTaskOnceBeforeItIsDestroyed) {
  std::atomic<int> runs{0};
  {
    WorkerPool pool(4);
    for (int i = 0; i < 100; ++i) pool.Schedule([&] { ++runs; });
  }
  EXPECT_EQ(runs.load(), 100);
}

TEST(WorkerPoolTest, GrowsSoThatBlockedTasksDoNotWaitForEachOther) {
  // Every task blocks until released: all 8 start only on 8 threads.
  constexpr int kTasks = 8;
  std::atomic<int> started{0};
  absl::Notification release;
  WorkerPool pool(64);
  for (int i = 0; i < kTasks; ++i) {
    pool.Schedule([&] {
      ++started;
      release.WaitForNotification();
    });
  }
  testing::WaitUntil([&] { return started.load() == kTasks; },
                     absl::Seconds(30));
  EXPECT_EQ(started.load(), kTasks);
  EXPECT_EQ(pool.threads(), kTasks);
  release.Notify();
}

TEST(WorkerPoolTest, PastItsLimitTasksQueueAndStillRun) {
  std::atomic<int> runs{0};
  absl::Notification release;
  {
    WorkerPool pool(2);
    for (int i = 0; i < 6; ++i) {
      pool.Schedule([&] {
        release.WaitForNotification();
        ++runs;
      });
    }
    EXPECT_EQ(pool.threads(), 2);
    EXPECT_EQ(runs.load(), 0);
    release.Notify();
  }
  EXPECT_EQ(runs.load(), 6);
}

}  // namespace
}  // namespace aotcache
