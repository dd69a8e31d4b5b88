// Targets: which a request may name, which CPU levels run where, and the
// host's own (lowered by AOTCACHE_TARGET_CPU, never raised).
#include "core/key/target.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::testing::HasSubstr;

v1::Target Target(const std::string& arch, const std::string& abi,
                  const std::string& cpu) {
  v1::Target t;
  t.set_arch(arch);
  t.set_abi(abi);
  t.set_cpu(cpu);
  return t;
}

TEST(TargetTest, KnownTargetsAreValid) {
  EXPECT_THAT(ValidateTarget(v1::Target()), IsOk());
  EXPECT_THAT(ValidateTarget(Target("x86_64", "linux-gnu", "x86-64-v3")),
              IsOk());
  EXPECT_THAT(ValidateTarget(Target("aarch64", "linux", "armv8-a")), IsOk());
  EXPECT_THAT(ValidateTarget(Target("x86_64", "", "")), IsOk());
}

TEST(TargetTest, EachUnknownFieldIsNamed) {
  struct Case {
    v1::Target target;
    const char* field;
  } cases[] = {
      {Target("riscv64", "", ""), "target.arch"},
      {Target("x86_64", "windows", ""), "target.abi"},
      {Target("x86_64", "linux-gnu", "x86-64-v9"), "target.cpu"},
      {Target("x86_64", "linux-gnu", "native"), "target.cpu"},
      {Target("x86_64", "linux-gnu", "armv8-a"), "target.cpu"},
      {Target("", "linux-gnu", "x86-64-v2"), "target.cpu"},
      {Target("x86_64", "linux-gnu", "x86-64 -fplugin=/tmp/x.so"),
       "target.cpu"},
  };
  for (const Case& c : cases) {
    absl::Status st = ValidateTarget(c.target);
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << c.target.ShortDebugString();
    EXPECT_THAT(st.message(), HasSubstr(c.field));
  }
  absl::Status st = ValidateTarget(Target("x86_64", "linux-gnu\n\x01", ""));
  EXPECT_THAT(st.message(), HasSubstr("'linux-gnu\\n\\x01'"));
}

TEST(TargetTest, ACpuLevelRunsOnItsOwnAndLaterLevels) {
  v1::Target v3 = Target("x86_64", "linux-gnu", "x86-64-v3");
  EXPECT_THAT(CpuLevelRunsOn("x86-64", v3), IsOk());
  EXPECT_THAT(CpuLevelRunsOn("", v3), IsOk());
  EXPECT_THAT(CpuLevelRunsOn("x86-64-v2", v3), IsOk());
  EXPECT_THAT(CpuLevelRunsOn("x86-64-v3", v3), IsOk());
  absl::Status later = CpuLevelRunsOn("x86-64-v4", v3);
  EXPECT_TRUE(absl::IsFailedPrecondition(later)) << later;
  EXPECT_THAT(later.message(), HasSubstr("'x86-64-v4'"));
  EXPECT_THAT(later.message(), HasSubstr("'x86-64-v3'"));
  EXPECT_FALSE(CpuLevelRunsOn("armv8-a", v3).ok());
  EXPECT_FALSE(CpuLevelRunsOn("bogus", v3).ok());
  EXPECT_TRUE(
      CpuLevelRunsOn("armv8-a", Target("aarch64", "linux-gnu", "armv8-a"))
          .ok());
}

TEST(TargetTest, TheHostRunsItsOwnLevelAndIsValid) {
  testing::ScopedEnv unset("AOTCACHE_TARGET_CPU", std::nullopt);
  v1::Target host = HostTarget();
  EXPECT_THAT(ValidateTarget(host), IsOk());
  EXPECT_FALSE(host.cpu().empty());
  EXPECT_THAT(CpuLevelRunsOn(host.cpu(), host), IsOk());
}

TEST(TargetTest, TheEnvironmentLowersTheHostsLevelButNeverRaisesIt) {
  v1::Target detected;
  {
    testing::ScopedEnv unset("AOTCACHE_TARGET_CPU", std::nullopt);
    detected = HostTarget();
  }
  if (detected.arch() != "x86_64") GTEST_SKIP() << "x86-64 levels";
  {
    testing::ScopedEnv lowered("AOTCACHE_TARGET_CPU", "x86-64");
    EXPECT_EQ(HostTarget().cpu(), "x86-64");
  }
  {
    testing::ScopedEnv bogus("AOTCACHE_TARGET_CPU", "x86-64-v9");
    EXPECT_EQ(HostTarget().cpu(), detected.cpu());
  }
  if (detected.cpu() != "x86-64-v4") {
    testing::ScopedEnv raised("AOTCACHE_TARGET_CPU", "x86-64-v4");
    EXPECT_EQ(HostTarget().cpu(), detected.cpu());
  }
}

}  // namespace
}  // namespace aotcache
