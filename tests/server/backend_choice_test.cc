// Which backend a daemon compiles with: native when the C++ compiler runs
// ($AOTCACHE_CXX, else c++) and links kernels, reference otherwise, or the
// one asked for.
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::ScopedEnv;
using ::aotcache::testing::TempDir;

absl::StatusOr<std::unique_ptr<Daemon>> StartWith(const TempDir& dir,
                                                  const std::string& backend) {
  DaemonOptions options;
  options.data_dir = dir.path();
  options.listen = "";
  options.backend_name = backend;
  return Daemon::Start(options);
}

TEST(BackendChoiceTest, AutoIsNativeWhenTheCompilerRuns) {
  TempDir dir;
  ScopedEnv cxx("AOTCACHE_CXX", std::nullopt);
  auto daemon = StartWith(dir, "auto");
  ASSERT_THAT(daemon, IsOk());
  EXPECT_EQ((*daemon)->backend_name(), "native");
}

TEST(BackendChoiceTest, AutoIsReferenceWithoutACompiler) {
  TempDir dir;
  ScopedEnv cxx("AOTCACHE_CXX", "/nonexistent/c++");
  auto daemon = StartWith(dir, "auto");
  ASSERT_THAT(daemon, IsOk());
  EXPECT_EQ((*daemon)->backend_name(), "reference");
}

TEST(BackendChoiceTest, NativeWithoutACompilerIsAnErrorAndReferenceIsChosen) {
  TempDir dir;
  ScopedEnv cxx("AOTCACHE_CXX", "/nonexistent/c++");
  auto native = StartWith(dir, "native");
  EXPECT_TRUE(absl::IsFailedPrecondition(native.status())) << native.status();
  auto reference = StartWith(dir, "reference");
  ASSERT_THAT(reference, IsOk());
  EXPECT_EQ((*reference)->backend_name(), "reference");
}

// A compiler that runs (--version) but cannot link kernels, as when
// libopenblas-dev is missing.
std::string CompilerThatCannotLink(const TempDir& dir) {
  const std::string path = dir.path() + "/c++";
  std::ofstream(path)
      << "#!/bin/sh\n"
         "if [ \"$1\" = --version ]; then exec c++ --version; fi\n"
         "echo '/usr/bin/ld: cannot find -lopenblas' >&2\n"
         "exit 1\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

TEST(BackendChoiceTest, AutoIsReferenceWhenTheCompilerCannotLinkKernels) {
  TempDir dir, tools;
  ScopedEnv cxx("AOTCACHE_CXX", CompilerThatCannotLink(tools));
  auto daemon = StartWith(dir, "auto");
  ASSERT_THAT(daemon, IsOk());
  EXPECT_EQ((*daemon)->backend_name(), "reference");
}

TEST(BackendChoiceTest, NativeWhenTheCompilerCannotLinkKernelsIsAnError) {
  TempDir dir, tools;
  ScopedEnv cxx("AOTCACHE_CXX", CompilerThatCannotLink(tools));
  auto daemon = StartWith(dir, "native");
  EXPECT_TRUE(absl::IsFailedPrecondition(daemon.status())) << daemon.status();
  EXPECT_NE(daemon.status().message().find("cannot find -lopenblas"),
            std::string::npos)
      << daemon.status();
}

TEST(BackendChoiceTest, AnUnknownBackendIsInvalidArgument) {
  TempDir dir;
  auto daemon = StartWith(dir, "quantum");
  EXPECT_TRUE(absl::IsInvalidArgument(daemon.status())) << daemon.status();
}

}  // namespace
}  // namespace aotcache
