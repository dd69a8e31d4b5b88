// The host compiler driver: a real `c++` on this machine, in a private
// temporary directory that is gone afterwards, whatever happened.
#include "core/backend/native/host_compiler.h"

#include <dlfcn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::testing::HasSubstr;

bool IsEmpty(const std::string& dir) { return std::filesystem::is_empty(dir); }

// Options whose "compiler" (written into `bin`) would run for a minute, with
// a child of its own, making its private dirs in `tmp`.
HostCompilerOptions SlowCompiler(const std::string& bin,
                                 const std::string& tmp) {
  const std::string slow = bin + "/slow-cc";
  // Each run leaves a file started.PID beside it (StartedCompiles).
  std::ofstream(slow) << "#!/bin/sh\ntouch \"" << bin
                      << "/started.$$\"\nsleep 60 &\nsleep 60\n";
  std::filesystem::permissions(slow, std::filesystem::perms::owner_all);
  HostCompilerOptions options;
  options.compiler = slow;
  options.temp_root = tmp;
  return options;
}

// How many runs of SlowCompiler(bin, ...) have started.
int StartedCompiles(const std::string& bin) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(bin)) {
    n += e.path().filename().string().rfind("started.", 0) == 0;
  }
  return n;
}

TEST(HostCompilerTest, CompilesASharedObjectThatLoadsAndRuns) {
  testing::TempDir tmp;
  HostCompilerOptions options;
  options.flags = {"-O2"};
  options.temp_root = tmp.path();
  absl::StatusOr<std::string> so = CompileSharedObject(
      "extern \"C\" int twice(int x) { return 2 * x; }\n", options);
  ASSERT_THAT(so, IsOk());
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
  HostCompilerOptions options = SlowCompiler(bin.path(), tmp.path());
  options.timeout = absl::Milliseconds(300);
  absl::Time start = absl::Now();
  absl::StatusOr<std::string> so = CompileSharedObject("int x;\n", options);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_TRUE(absl::IsResourceExhausted(so.status())) << so.status();
  EXPECT_TRUE(IsEmpty(tmp.path()));
}

// A "compiler" (a script) that reports, in the shared object it writes,
// what it could do: write beside the test, see a network interface.
std::string ProbingCompiler(const std::string& bin, const std::string& probe) {
  std::string path = bin + "/probing-cc";
  std::ofstream(path) << "#!/bin/sh\n"
                      << "out=\"\"\n"
                      << "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=\"$2\";"
                      << " shift; done\n"
                      << "touch '" << probe << "' 2>/dev/null && echo wrote\n"
                      << "awk 'NR > 2 { print $1 }' /proc/net/dev > \"$out\"\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

TEST(HostCompilerTest,
     TheSandboxedCompilerCanWriteOnlyItsOwnDirAndHasNoNetwork) {
  if (std::system("bwrap --ro-bind / / --unshare-all -- true") != 0) {
    GTEST_SKIP() << "bubblewrap does not run here";
  }
  testing::TempDir tmp;
  // Outside /tmp (private in the sandbox, and where a checkout may live):
  // the script and the file it tries to write, both visible to the test.
  std::string outside_tmp = "/var/tmp/aotcache-sandbox-XXXXXX";
  ASSERT_NE(mkdtemp(outside_tmp.data()), nullptr);
  const std::string probe = outside_tmp + "/sandbox-probe";
  HostCompilerOptions options;
  options.compiler = ProbingCompiler(outside_tmp, probe);
  options.temp_root = tmp.path();
  options.sandbox = Sandbox::kBubblewrap;
  absl::StatusOr<std::string> so = CompileSharedObject("int x;\n", options);
  ASSERT_THAT(so, IsOk());
  EXPECT_EQ(*so, "lo:\n");  // Loopback only: a network namespace of its own.
  EXPECT_FALSE(std::filesystem::exists(probe));
  EXPECT_TRUE(IsEmpty(tmp.path()));

  options.sandbox = Sandbox::kNone;  // The same probe unconfined sees both.
  so = CompileSharedObject("int x;\n", options);
  ASSERT_THAT(so, IsOk());
  EXPECT_NE(*so, "lo:\n");
  EXPECT_TRUE(std::filesystem::exists(probe));
  std::filesystem::remove_all(outside_tmp);
}

TEST(HostCompilerTest, ACompilerPastItsMemoryLimitFails) {
  testing::TempDir tmp, bin;
  std::string hungry = bin.path() + "/hungry-cc";
  std::ofstream(hungry)
      << "#!/bin/sh\nexec awk 'BEGIN { s = sprintf(\"%400000000s\", \"\");"
         " exit 0 }'\n";
  std::filesystem::permissions(hungry, std::filesystem::perms::owner_all);
  HostCompilerOptions options;
  options.compiler = hungry;
  options.temp_root = tmp.path();
  options.memory_limit_bytes = int64_t{128} << 20;
  absl::StatusOr<std::string> so = CompileSharedObject("int x;\n", options);
  EXPECT_TRUE(absl::IsInternal(so.status())) << so.status();
  EXPECT_TRUE(IsEmpty(tmp.path()));
}

TEST(HostCompilerTest, CancelKillsTheCompilesRunningNow) {
  testing::TempDir tmp, bin;
  HostCompilerOptions options = SlowCompiler(bin.path(), tmp.path());
  absl::Time start = absl::Now();
  std::thread cancel([&] {
    EXPECT_TRUE(testing::WaitUntil(
        [&] { return StartedCompiles(bin.path()) == 1; }, absl::Seconds(30)));
    CancelHostCompiles();
  });
  absl::StatusOr<std::string> so = CompileSharedObject("int x;\n", options);
  cancel.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_TRUE(absl::IsCancelled(so.status())) << so.status();
  EXPECT_TRUE(IsEmpty(tmp.path()));
}

// At a drain deadline the compiles queued behind the running ones must not
// start after the kill: the daemon overran its grace by their length.
TEST(HostCompilerTest, CancelAlsoStopsTheCompilesWaitingForACompiler) {
  testing::TempDir tmp, bin;
  HostCompilerOptions options = SlowCompiler(bin.path(), tmp.path());
  const int n = MaxConcurrentCompilers() + 3;
  std::vector<absl::Status> results(n);
  std::vector<std::thread> compiles;
  absl::Time start = absl::Now();
  for (int i = 0; i < n; ++i) {
    compiles.emplace_back([&, i] {
      results[i] = CompileSharedObject("int x;\n", options).status();
    });
  }
  // The compilers run, the rest wait for one. Every call has begun (made its
  // private dir, which it does after noting the cancel epoch): a call that
  // began after the cancel would rightly not be cancelled by it.
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        const auto dirs =
            std::distance(std::filesystem::directory_iterator(tmp.path()),
                          std::filesystem::directory_iterator());
        return dirs == n &&
               StartedCompiles(bin.path()) == MaxConcurrentCompilers();
      },
      absl::Seconds(30)));
  CancelHostCompiles();
  for (std::thread& t : compiles) t.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  for (const absl::Status& st : results) {
    EXPECT_TRUE(absl::IsCancelled(st)) << st;
  }
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

// A root another user can write: they could rename the compile's private
// dir and swap the shared object for their own code.
TEST(HostCompilerTest, ARootOtherUsersCanWriteIsRefused) {
  testing::TempDir tmp;
  HostCompilerOptions options;
  options.temp_root = tmp.path();
  for (mode_t mode : {0777, 0770}) {
    ASSERT_EQ(chmod(tmp.path().c_str(), mode), 0);
    absl::StatusOr<std::string> so = CompileSharedObject("int x;\n", options);
    EXPECT_TRUE(absl::IsFailedPrecondition(so.status())) << so.status();
    EXPECT_THAT(so.status().message(), HasSubstr("writable by other users"));
    EXPECT_TRUE(IsEmpty(tmp.path()));
  }
  // Sticky, as /tmp: nobody can rename another user's entries.
  ASSERT_EQ(chmod(tmp.path().c_str(), 01777), 0);
  EXPECT_THAT(CompileSharedObject("int x;\n", options), IsOk());
  const std::string link = tmp.path() + "/link";
  std::filesystem::create_directory_symlink("/tmp", link);
  options.temp_root = link;
  absl::StatusOr<std::string> so = CompileSharedObject("int x;\n", options);
  EXPECT_TRUE(absl::IsFailedPrecondition(so.status())) << so.status();
  EXPECT_THAT(so.status().message(), HasSubstr("symlink"));
}

// Once stored as a successful compile: an empty shared object.
TEST(HostCompilerTest, ACompilerThatLeavesNoOutputHasFailed) {
  testing::TempDir tmp, bin;
  const std::string cc = bin.path() + "/silent-cc";
  std::ofstream(cc) << "#!/bin/sh\necho compiled\nexit 0\n";
  std::filesystem::permissions(cc, std::filesystem::perms::owner_all);
  const std::string empty_cc = bin.path() + "/empty-cc";
  std::ofstream(empty_cc) << "#!/bin/sh\n"
                          << "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && "
                             ": > \"$2\"; shift; done\n";
  std::filesystem::permissions(empty_cc, std::filesystem::perms::owner_all);
  HostCompilerOptions options;
  options.temp_root = tmp.path();
  options.compiler = cc;
  absl::StatusOr<std::string> so = CompileSharedObject("int x;\n", options);
  EXPECT_TRUE(absl::IsInternal(so.status())) << so.status();
  EXPECT_THAT(so.status().message(), HasSubstr("no such file"));
  EXPECT_THAT(so.status().message(), HasSubstr("compiled"));  // Its log.
  options.compiler = empty_cc;
  so = CompileSharedObject("int x;\n", options);
  EXPECT_TRUE(absl::IsInternal(so.status())) << so.status();
  EXPECT_THAT(so.status().message(), HasSubstr("empty shared object"));
  EXPECT_TRUE(IsEmpty(tmp.path()));
}

// A full disk passes when space is freed: UNAVAILABLE (retry, or compile
// elsewhere), never a failure the cache remembers.
TEST(HostCompilerTest, AFullDiskIsUnavailable) {
  testing::TempDir dir;
  const std::string disk = dir.path() + "/disk";
  std::filesystem::create_directory(disk);
  if (mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=4m,mode=0700") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  }
  {
    std::ofstream filler(disk + "/filler", std::ios::binary);
    const std::string block(1 << 16, 'x');
    while (filler.write(block.data(), block.size())) {
    }
  }
  HostCompilerOptions options;
  options.temp_root = disk;
  absl::StatusOr<std::string> so = CompileSharedObject(
      "extern \"C\" int twice(int x) { return 2 * x; }\n", options);
  EXPECT_TRUE(absl::IsUnavailable(so.status())) << so.status();
  EXPECT_THAT(so.status().message(), HasSubstr("no space left"));
  umount(disk.c_str());
}

TEST(HostCompilerTest, ReportsItsVersion) {
  absl::StatusOr<std::string> version = HostCompilerVersion("c++");
  ASSERT_THAT(version, IsOk());
  EXPECT_THAT(*version, HasSubstr("c++"));
  EXPECT_EQ(version->find('\n'), std::string::npos);
}

}  // namespace
}  // namespace aotcache
