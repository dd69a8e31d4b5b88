// Loading the native backend's shared objects in a client: from the data
// dir's native/ (XDG_CACHE_HOME is a temp dir in this binary), re-hashed
// through the descriptor that is loaded, never from a dir other users can
// write.
#include "core/runtime/shared_objects.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/backend/native/host_compiler.h"
#include "core/key/digest.h"
#include "core/paths/data_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::testing::HasSubstr;

std::string SharedObjectReturning(const std::string& symbol, int value) {
  absl::StatusOr<std::string> so =
      CompileSharedObject("extern \"C\" int " + symbol + "() { return " +
                              std::to_string(value) + "; }\n",
                          HostCompilerOptions());
  EXPECT_THAT(so, IsOk());
  return so.value_or("");
}

int Call(void* handle, const std::string& symbol) {
  absl::StatusOr<void*> fn = FindSymbol(handle, symbol);
  EXPECT_THAT(fn, IsOk());
  return fn.ok() ? reinterpret_cast<int (*)()>(*fn)() : -1;
}

TEST(SharedObjectsTest, AFileSwappedInTheDirIsNeverLoaded) {
  const std::string genuine = SharedObjectReturning("answer", 42);
  const std::string forged = SharedObjectReturning("answer", 666);
  const std::string dir = DefaultDataDir() + "/native";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + Sha256Hex(genuine) + ".so", std::ios::binary)
      << forged;
  absl::StatusOr<void*> handle = OpenSharedObject(genuine);
  ASSERT_THAT(handle, IsOk());
  EXPECT_EQ(Call(*handle, "answer"), 42);
}

// The dir is held to its budget once a shared object is loaded: what was
// deleted is written again from its bytes when next loaded elsewhere.
TEST(SharedObjectsTest, TheDirIsHeldToItsBudget) {
  const std::string first = SharedObjectReturning("first", 1);
  const std::string second = SharedObjectReturning("second", 2);
  const std::string dir = DefaultDataDir() + "/native";
  testing::ScopedEnv budget("AOTCACHE_NATIVE_DIR_MAX_SIZE",
                            std::to_string(second.size() * 3 / 2));
  absl::StatusOr<void*> one = OpenSharedObject(first);
  ASSERT_THAT(one, IsOk());
  // Used a minute ago (two writes in a row can share a file time stamp).
  std::filesystem::last_write_time(
      dir + "/" + Sha256Hex(first) + ".so",
      std::filesystem::file_time_type::clock::now() - std::chrono::minutes(1));
  absl::StatusOr<void*> two = OpenSharedObject(second);
  ASSERT_THAT(two, IsOk());
  // Over the budget with both: the one used longest ago went.
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + Sha256Hex(first) + ".so"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/" + Sha256Hex(second) + ".so"));
  EXPECT_EQ(Call(*one, "first"), 1);  // Loaded before: still mapped.
  EXPECT_EQ(Call(*two, "second"), 2);
}

TEST(SharedObjectsTest, ADirOtherUsersCanWriteIsRefused) {
  const std::string so = SharedObjectReturning("refused", 1);
  const std::string dir = DefaultDataDir() + "/native";
  std::filesystem::create_directories(dir);
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  absl::StatusOr<void*> handle = OpenSharedObject(so);
  EXPECT_TRUE(absl::IsFailedPrecondition(handle.status())) << handle.status();
  EXPECT_THAT(handle.status().message(), HasSubstr("writable by other users"));
  ASSERT_EQ(chmod(dir.c_str(), 0700), 0);
  handle = OpenSharedObject(so);
  ASSERT_THAT(handle, IsOk());
  EXPECT_EQ(Call(*handle, "refused"), 1);
}

}  // namespace
}  // namespace aotcache
