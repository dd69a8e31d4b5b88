// The cache's small policies on their own: the failure memory (with an
// injected clock), the request-digest memo and the bypass memo's budget.
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/cache/bypass_memo.h"
#include "core/cache/failure_memory.h"
#include "core/cache/request_key_memo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace aotcache {
namespace {

using ::testing::HasSubstr;

class FakeClock {
 public:
  absl::Time Now() const { return now_; }
  void Advance(absl::Duration d) { now_ += d; }
  std::function<absl::Time()> AsFunction() {
    return [this] { return Now(); };
  }

 private:
  absl::Time now_ = absl::FromUnixSeconds(1'000'000);
};

TEST(FailureMemoryTest, RecallsAFailureOfTheGraphForItsDurationOnly) {
  FakeClock clock;
  FailureMemory memory(absl::Minutes(10), clock.AsFunction());
  memory.Remember("k", absl::InvalidArgumentError("node 'x': bad"));
  clock.Advance(absl::Seconds(90));
  std::optional<absl::Status> recalled = memory.Recall("k");
  ASSERT_TRUE(recalled.has_value());
  EXPECT_EQ(recalled->code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(recalled->message(), HasSubstr("node 'x': bad"));
  EXPECT_THAT(recalled->message(), HasSubstr("remembered from 1m30s ago"));
  EXPECT_FALSE(memory.Recall("other").has_value());
  clock.Advance(absl::Minutes(9));
  EXPECT_FALSE(memory.Recall("k").has_value());
}

TEST(FailureMemoryTest, ForgetsPassingConditionsAndRemembersNothingWhenOff) {
  FakeClock clock;
  FailureMemory memory(absl::Minutes(10), clock.AsFunction());
  memory.Remember("busy", absl::UnavailableError("store busy"));
  memory.Remember("stopping", absl::CancelledError("daemon stopping"));
  EXPECT_FALSE(memory.Recall("busy").has_value());
  EXPECT_FALSE(memory.Recall("stopping").has_value());
  FailureMemory off(absl::ZeroDuration(), clock.AsFunction());
  off.Remember("k", absl::InternalError("broken"));
  EXPECT_FALSE(off.Recall("k").has_value());
}

TEST(FailureMemoryTest, RepeatsNamesTheFailuresOfTheGraphItself) {
  EXPECT_TRUE(FailureMemory::Repeats(absl::InvalidArgumentError("")));
  EXPECT_TRUE(FailureMemory::Repeats(absl::ResourceExhaustedError("")));
  EXPECT_TRUE(FailureMemory::Repeats(absl::DeadlineExceededError("")));
  EXPECT_TRUE(FailureMemory::Repeats(absl::FailedPreconditionError("")));
  EXPECT_TRUE(FailureMemory::Repeats(absl::InternalError("")));
  EXPECT_FALSE(FailureMemory::Repeats(absl::UnavailableError("")));
  EXPECT_FALSE(FailureMemory::Repeats(absl::CancelledError("")));
  EXPECT_FALSE(FailureMemory::Repeats(absl::OkStatus()));
}

TEST(RequestKeyMemoTest, FindsWhatItRememberedAndStartsOverWhenFull) {
  RequestKeyMemo memo;
  EXPECT_FALSE(memo.Find("d0").has_value());
  memo.Remember("d0", "k0");
  EXPECT_EQ(memo.Find("d0"), "k0");
  memo.Remember("d0", "k1");  // The same bytes keyed anew.
  EXPECT_EQ(memo.Find("d0"), "k1");
  for (size_t i = 1; i < RequestKeyMemo::kMaxKeys; ++i) {
    memo.Remember("d" + std::to_string(i), "k");
  }
  EXPECT_EQ(memo.Find("d0"), "k1");  // Full now, not yet cleared.
  memo.Remember("one more", "k");
  EXPECT_FALSE(memo.Find("d0").has_value());
  EXPECT_EQ(memo.Find("one more"), "k");
}

CompileResult Forward(const std::string& key, size_t bytes) {
  CompileResult r;
  r.key = key;
  r.status = ForwardStatus::kBypass;
  r.forward_bytes = std::string(bytes, 'f');
  r.shared_compile = true;
  return r;
}

TEST(BypassMemoTest, KeepsForwardAndBackwardAsFreshAnswers) {
  BypassMemo memo(1 << 20);
  memo.PutForward(Forward("a", 100));
  std::shared_ptr<const BypassMemo::Entry> a = memo.Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->forward.shared_compile);
  EXPECT_FALSE(a->backward.has_value());
  BackwardResult backward;
  backward.not_stored_reason = "constants too large";
  memo.PutBackward("a", backward);
  ASSERT_TRUE(memo.Find("a")->backward.has_value());
  EXPECT_EQ(memo.Find("a")->backward->not_stored_reason, "constants too large");
  EXPECT_EQ(a->backward.has_value(), false);  // An entry never changes.
  EXPECT_EQ(memo.bytes(), memo.Find("a")->bytes);
}

TEST(BypassMemoTest, DropsTheOldestKeysPastItsBudget) {
  BypassMemo memo(250);
  memo.PutForward(Forward("a", 100));
  memo.PutForward(Forward("b", 100));
  EXPECT_EQ(memo.bytes(), 200);
  memo.PutForward(Forward("c", 100));
  EXPECT_EQ(memo.Find("a"), nullptr);
  EXPECT_NE(memo.Find("b"), nullptr);
  EXPECT_NE(memo.Find("c"), nullptr);
  EXPECT_EQ(memo.bytes(), 200);
  memo.PutBackward("a", BackwardResult());  // Gone: not kept.
  EXPECT_EQ(memo.Find("a"), nullptr);
  memo.PutForward(Forward("d", 300));  // Over the budget alone.
  EXPECT_EQ(memo.Find("d"), nullptr);
  EXPECT_LE(memo.bytes(), 250);
}

}  // namespace
}  // namespace aotcache
