// A directory held to its budget, on real files in a temp dir: the files
// used longest ago go first, down to 90% of the budget; files being written
// are left alone; a file touched is kept.
#include "core/paths/dir_budget.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::aotcache::testing::TempDir;

void WriteFile(const std::string& path, size_t bytes, int age_seconds) {
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
  std::filesystem::last_write_time(
      path, std::filesystem::file_time_type::clock::now() -
                std::chrono::seconds(age_seconds));
}

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

TEST(DirBudgetTest, TheFilesUsedLongestAgoGoFirst) {
  TempDir dir;
  const std::string d = dir.path();
  WriteFile(d + "/ab/oldest", 1000, 400);
  WriteFile(d + "/cd/old", 1000, 300);
  WriteFile(d + "/ab/recent", 1000, 200);
  WriteFile(d + "/newest", 1000, 100);
  WriteFile(d + "/cd/being-written.tmp.1.2", 5000, 500);
  TouchFile(d + "/ab/oldest");  // Used just now.

  DirBudgetReport report = EnforceDirBudget(d, 3000);
  // 4000 bytes over a budget of 3000: down to 2700, so two files go.
  EXPECT_EQ(report.files_deleted, 2);
  EXPECT_EQ(report.bytes_deleted, 2000);
  EXPECT_EQ(report.bytes_left, 2000);
  EXPECT_TRUE(Exists(d + "/ab/oldest"));
  EXPECT_FALSE(Exists(d + "/cd/old"));
  EXPECT_FALSE(Exists(d + "/ab/recent"));
  EXPECT_TRUE(Exists(d + "/newest"));
  EXPECT_TRUE(Exists(d + "/cd/being-written.tmp.1.2"));
}

TEST(DirBudgetTest, WithinItsBudgetOrWithoutOneNothingGoes) {
  TempDir dir;
  WriteFile(dir.path() + "/a", 1000, 10);
  EXPECT_EQ(EnforceDirBudget(dir.path(), 1000).files_deleted, 0);
  EXPECT_EQ(EnforceDirBudget(dir.path(), 0).files_deleted, 0);
  EXPECT_EQ(EnforceDirBudget(dir.path() + "/absent", 10).files_deleted, 0);
  EXPECT_TRUE(Exists(dir.path() + "/a"));
}

TEST(DirBudgetTest, TheBudgetComesFromTheEnvironment) {
  {
    testing::ScopedEnv env("AOTCACHE_TEST_BUDGET", "3M");
    EXPECT_EQ(BudgetFromEnv("AOTCACHE_TEST_BUDGET", 7), 3 << 20);
  }
  EXPECT_EQ(BudgetFromEnv("AOTCACHE_TEST_BUDGET", 7), 7);
}

}  // namespace
}  // namespace aotcache
