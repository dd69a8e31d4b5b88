// The host compiler driver: a real `c++` on this machine, in a private
// temporary directory that is gone afterwards, whatever happened.
#include "core/backend/native/host_compiler.h"

#include <dlfcn.h>

#include <filesystem>
#include <fstream>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::testing::HasSubstr;

bool IsEmpty(const std::string& dir) { return std::filesystem::is_empty(dir); }

TEST(HostCompilerTest, CompilesASharedObjectThatLoadsAndRuns) {
  testing::TempDir tmp;
  HostCompilerOptions options;
  options.flags = {"-O2"};
  options.temp_root = tmp.path();
  absl::StatusOr<std::string> so = CompileSharedObject(
      "extern \"C\" int twice(int x) { return 2 * x; }\n", options);
  ASSERT_TRUE(so.ok()) << so.status();
  EXPECT_TRUE(IsEmpty(tmp.path()));
  testing::TempDir out;
  std::string path = out.path() + "/twice.so";
  std::ofstream(path, std::ios::binary) << *so;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto twice = reinterpret_cast<int (*)(int)>(dlsym(handle, "twice"));
  ASSERT_NE(twice, nullptr);
  EXPECT_EQ(twice(21), 42);
  dlclose(handle);
}

TEST(HostCompilerTest, ACompilerErrorCarriesItsMessageAndLeavesNoFiles) {
  testing::TempDir tmp;
  HostCompilerOptions options;
  options.temp_root = tmp.path();
  absl::StatusOr<std::string> so =
      CompileSharedObject("int broken( { return 1; }\n", options);
  ASSERT_FALSE(so.ok());
  EXPECT_TRUE(absl::IsInternal(so.status())) << so.status();
  EXPECT_THAT(so.status().message(), HasSubstr("error:"));
  EXPECT_THAT(so.status().message(), HasSubstr("kernels.cc"));
  EXPECT_TRUE(IsEmpty(tmp.path()));
}

TEST(HostCompilerTest, ACompilePastTheTimeoutIsKilledAndLeavesNoFiles) {
  testing::TempDir tmp, bin;
  // A "compiler" that would run for a minute, with a child of its own.
  std::string slow = bin.path() + "/slow-cc";
  std::ofstream(slow) << "#!/bin/sh\nsleep 60 &\nsleep 60\n";
  std::filesystem::permissions(slow, std::filesystem::perms::owner_all);
  HostCompilerOptions options;
  options.compiler = slow;
  options.temp_root = tmp.path();
  options.timeout = absl::Milliseconds(300);
  absl::Time start = absl::Now();
  absl::StatusOr<std::string> so = CompileSharedObject("int x;\n", options);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_TRUE(absl::IsDeadlineExceeded(so.status())) << so.status();
  EXPECT_TRUE(IsEmpty(tmp.path()));
}

TEST(HostCompilerTest, AMissingCompilerIsAFailedPrecondition) {
  HostCompilerOptions options;
  options.compiler = "/nonexistent/c++";
  absl::StatusOr<std::string> so = CompileSharedObject("int x;\n", options);
  EXPECT_TRUE(absl::IsFailedPrecondition(so.status())) << so.status();
  EXPECT_TRUE(absl::IsFailedPrecondition(
      HostCompilerVersion("/nonexistent/c++").status()));
}

TEST(HostCompilerTest, ReportsItsVersion) {
  absl::StatusOr<std::string> version = HostCompilerVersion("c++");
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_THAT(*version, HasSubstr("c++"));
  EXPECT_EQ(version->find('\n'), std::string::npos);
}

}  // namespace
}  // namespace aotcache
