// aotcached with --max_size and --max_size_hard_limit, a real daemon on
// loopback over a real RocksDB: filled far past its size, it stays under the
// hard limit and answers every compile (a bypass, "cache full", when it
// cannot store: compiles here come faster than sweeps), keeps the entries
// used last, and sweeps down below the soft limit.
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon_fixture.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/wait.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

// A graph of its own for each n: -x, x of n floats.
v1::CompileRequest Negate(int n) {
  v1::CompileRequest r;
  *r.mutable_graph() = testing::GraphFromJson(absl::StrCat(
      R"json({"inputs": [{"name": "x", "meta": {"shape": [)json", n,
      R"json(], "stride": [1], "storage_offset": 0, "dtype": "DTYPE_FLOAT32",
        "device": "cpu", "requires_grad": false, "is_leaf": true},
        "storage": 0}],
      "storages": [{"id": 0, "size": )json",
      n, R"json(}], "constants": [],
      "nodes": [{"name": "neg", "op": "aten.neg.default",
        "args": [{"node": "x"}], "kwargs": {},
        "output_meta": [{"shape": [)json",
      n, R"json(], "stride": [1], "storage_offset": 0,
          "dtype": "DTYPE_FLOAT32", "device": "cpu", "requires_grad": false,
          "is_leaf": false}],
        "grad_mode": "GRAD_MODE_ENABLED"}],
      "outputs": ["neg"]})json"));
  return r;
}

class BoundedSizeTest : public testing::DaemonFixture {
 protected:
  DaemonOptions Options() override {
    DaemonOptions options = DaemonFixture::Options();
    options.backend_name = "reference";
    options.max_size = max_size_;
    options.max_size_hard_limit = hard_limit_;
    return options;
  }

  v1::StatsResponse Stats() {
    grpc::ClientContext ctx;
    v1::StatsResponse stats;
    EXPECT_THAT(admin_->Stats(&ctx, v1::StatsRequest(), &stats), IsOk());
    return stats;
  }

  v1::CompileStatus CompileStatusOf(int n) {
    v1::CompileResponse response;
    grpc::Status status = Compile(Negate(n), &response);
    EXPECT_THAT(status, IsOk()) << "graph " << n;
    EXPECT_TRUE(response.has_forward() || !response.forward_digest().empty())
        << "graph " << n << " answered without its forward";
    if (response.status() == v1::COMPILE_STATUS_BYPASS) {
      EXPECT_EQ(response.bypass_reason(), "cache full");
    }
    return response.status();
  }

  int64_t max_size_ = 48 << 10;
  int64_t hard_limit_ = 64 << 10;
};

TEST_F(BoundedSizeTest, FilledPastItsSizeItKeepsWhatWasUsedLast) {
  int bypassed = 0;
  int last_stored = 0;
  for (int n = 1; n <= 300; ++n) {
    const v1::CompileStatus status = CompileStatusOf(n);
    ASSERT_NE(status, v1::COMPILE_STATUS_HIT) << n;
    bypassed += status == v1::COMPILE_STATUS_BYPASS;
    if (status == v1::COMPILE_STATUS_MISS) last_stored = n;
    // Graph 1 is used all along.
    if (n % 10 == 0) EXPECT_NE(CompileStatusOf(1), v1::COMPILE_STATUS_MISS);
    ASSERT_LE(Stats().store_bytes(), hard_limit_) << "after graph " << n;
  }
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return Stats().store_bytes() <= max_size_; }, absl::Seconds(30)));
  const v1::StatsResponse stats = Stats();
  EXPECT_GT(stats.evicted_entries(), 0);
  EXPECT_GT(stats.eviction_sweeps(), 0);
  EXPECT_EQ(stats.max_size(), max_size_);
  EXPECT_EQ(stats.max_size_hard_limit(), hard_limit_);
  const auto full = stats.bypass_reasons().find("cache full");
  EXPECT_EQ(full == stats.bypass_reasons().end() ? 0 : full->second, bypassed);
  EXPECT_EQ(CompileStatusOf(1), v1::COMPILE_STATUS_HIT);
  EXPECT_EQ(CompileStatusOf(last_stored), v1::COMPILE_STATUS_HIT);
  EXPECT_EQ(CompileStatusOf(2), v1::COMPILE_STATUS_MISS);  // Evicted.
}

class FullCacheTest : public BoundedSizeTest {
 protected:
  void SetUp() override {
    max_size_ = 100;
    hard_limit_ = 100;  // Smaller than any entry.
    BoundedSizeTest::SetUp();
  }
};

TEST_F(FullCacheTest, ACompileThatCannotBeStoredIsABypassNotAFailure) {
  EXPECT_EQ(CompileStatusOf(7), v1::COMPILE_STATUS_BYPASS);
  EXPECT_EQ(CompileStatusOf(7), v1::COMPILE_STATUS_BYPASS);
  const v1::StatsResponse stats = Stats();
  EXPECT_EQ(stats.bypass_reasons().at("cache full"), 2);
  EXPECT_EQ(stats.store_entries(), 0);
  EXPECT_EQ(stats.save_failures(), 0);
}

}  // namespace
}  // namespace aotcache
