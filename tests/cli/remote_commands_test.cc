// The admin CLI's daemon commands against a real aotcached (in-process, on
// 127.0.0.1:0, over a real RocksDB in a temp dir).
#include "client/cli/remote_commands.h"

#include <stdlib.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/cli/analyze_command.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/testing/daemon_fixture.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::testing::HasSubstr;
using ::testing::Not;

class RemoteCommandsTest : public testing::DaemonFixture {
 protected:
  void SetUp() override {
    DaemonFixture::SetUp();
    server_ = address();
  }

  // Runs `aotcache COMMAND --server ... ARGS`; returns the exit code.
  int Run(const std::string& command, std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    args.push_back("--server=" + server_);
    return RunRemoteCommand(command, args, out_, err_);
  }

  // The key `compile` printed.
  std::string KeyFromCompile() {
    for (absl::string_view line : absl::StrSplit(out_.str(), '\n')) {
      if (absl::ConsumePrefix(&line, "key:")) {
        return std::string(absl::StripLeadingAsciiWhitespace(line));
      }
    }
    return "";
  }

  std::string server_;
  std::ostringstream out_, err_;
};

TEST_F(RemoteCommandsTest, CompileTwiceShowStatsAndRemove) {
  std::string graph = testing::FixturePath("../../examples/mlp.json");
  ASSERT_EQ(Run("compile", {graph}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("status:   COMPILE_STATUS_MISS"));
  EXPECT_THAT(out_.str(), HasSubstr("mode:     MODE_TRAINING"));
  EXPECT_THAT(out_.str(), HasSubstr("backward: BACKWARD_STATE_PENDING"));
  std::string key = KeyFromCompile();
  ASSERT_EQ(key.size(), 64u) << out_.str();

  ASSERT_EQ(Run("compile", {graph}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("status:   COMPILE_STATUS_HIT"));
  EXPECT_EQ(KeyFromCompile(), key);

  ASSERT_EQ(Run("ls", {}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr(key));
  EXPECT_THAT(out_.str(), HasSubstr("pending"));
  EXPECT_THAT(out_.str(), HasSubstr("1 entries"));

  ASSERT_EQ(Run("show", {key}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("mode:      MODE_TRAINING"));
  EXPECT_THAT(out_.str(), HasSubstr("backward:  pending"));
  // examples/mlp.json: x, then four parameters requiring grad, then y.
  EXPECT_THAT(out_.str(), HasSubstr("input 0:   is_leaf\n"));
  EXPECT_THAT(out_.str(), HasSubstr("input 1:   requires_grad is_leaf\n"));
  EXPECT_THAT(out_.str(),
              HasSubstr("output 0:  output_type=OUTPUT_TYPE_NON_ALIAS "
                        "requires_grad\n"));

  // Keys in hex in JSON too, as everywhere else.
  for (const char* command : {"ls", "show"}) {
    std::vector<std::string> args = {"--json"};
    if (std::string(command) == "show") args.push_back(key);
    ASSERT_EQ(Run(command, args), 0) << err_.str();
    EXPECT_THAT(out_.str(), HasSubstr(absl::StrCat("\"key\": \"", key, "\"")))
        << command;
  }
  ASSERT_EQ(Run("stats", {"--json"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("\"hits\": \"1\""));
  EXPECT_THAT(out_.str(), HasSubstr("\"misses\": \"1\""));

  ASSERT_EQ(Run("verify", {}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("checked 1 artifacts, 0 corrupt"));

  ASSERT_EQ(Run("rm", {key}), 0) << err_.str();
  EXPECT_EQ(Run("show", {key}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("aotcache: "));
  ASSERT_EQ(Run("ls", {}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("0 entries"));
}

TEST_F(RemoteCommandsTest, EvictByAgeAndBySize) {
  std::string graph = testing::FixturePath("../../examples/mlp.json");
  ASSERT_EQ(Run("compile", {graph}), 0) << err_.str();
  ASSERT_EQ(Run("stats", {}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("store                 1 entries, "));

  EXPECT_EQ(Run("evict", {}), 2);  // No goal.
  EXPECT_EQ(Run("evict", {"--to-size=lots"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("'lots' is not a size"));
  EXPECT_EQ(Run("evict", {"--older-than=7"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("'7' is not an age"));

  ASSERT_EQ(Run("evict", {"--older-than=1d"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("evicted 0 entries"));
  ASSERT_EQ(Run("evict", {"--to-size=1G"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("evicted 0 entries"));
  ASSERT_EQ(Run("evict", {"--to-size=0"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("evicted 1 entries"));
  EXPECT_THAT(out_.str(), HasSubstr("the store holds 0 entries, 0 B"));
  ASSERT_EQ(Run("stats", {}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("evicted               1 entries"));
}

TEST_F(RemoteCommandsTest, TopShowsTheHitRate) {
  std::string graph = testing::FixturePath("../../examples/mlp.json");
  ASSERT_EQ(Run("compile", {graph}), 0) << err_.str();  // A miss.
  ASSERT_EQ(Run("compile", {graph}), 0) << err_.str();  // A hit.
  ASSERT_EQ(Run("top", {"--count=2", "--interval=0.05"}), 0) << err_.str();
  const std::vector<std::string> lines =
      absl::StrSplit(out_.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << out_.str();
  EXPECT_THAT(lines[0], HasSubstr("hit %"));
  // Since the start: one hit, one miss; then nothing more per second.
  EXPECT_THAT(lines[1],
              ::testing::MatchesRegex("total +1 +1 +0 +50\\.0 +0 +1 .*"));
  EXPECT_THAT(lines[2], HasSubstr("0.0/s"));
  EXPECT_EQ(Run("top", {"--interval=0"}), 2);
}

// Runs the aotcache binary with `args`; its output, and its exit status in
// `status`.
std::string RunBinary(const std::string& args, int* status) {
  std::string command = absl::StrCat(AOTCACHE_CLI_PATH, " ", args);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return "";
  }
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    output.append(buffer, n);
  }
  *status = pclose(pipe);
  return output;
}

// The binary itself: a leading --server applies to the command after it.
TEST_F(RemoteCommandsTest, AnalyzePrintsTheKeyTheDaemonGivesTheGraph) {
  std::string graph = testing::FixturePath("../../examples/mlp.json");
  ASSERT_EQ(Run("compile", {graph}), 0) << err_.str();
  const std::string key = KeyFromCompile();
  ASSERT_EQ(key.size(), 64u) << out_.str();
  // The daemon chose its backend as analyze does by default ("auto").
  std::ostringstream out, err;
  ASSERT_EQ(RunAnalyzeCommand({graph}, out, err), 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("key:  " + key + "\n"));
  std::ostringstream by_name;
  ASSERT_EQ(RunAnalyzeCommand(
                {absl::StrCat("--backend=", daemon_->backend_name()), graph},
                by_name, err),
            0)
      << err.str();
  EXPECT_THAT(by_name.str(), HasSubstr("key:  " + key + "\n"));
  // Another backend, another key.
  std::ostringstream other;
  const std::string other_backend =
      daemon_->backend_name() == "native" ? "reference" : "native";
  if (RunAnalyzeCommand({"--backend=" + other_backend, graph}, other, err) ==
      0) {
    EXPECT_THAT(other.str(), Not(HasSubstr(key)));
  }
  EXPECT_EQ(RunAnalyzeCommand({"--backend=fast", graph}, other, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("unknown backend 'fast'"));
}

TEST_F(RemoteCommandsTest, TheBinaryTakesALeadingServerFlag) {
  for (const std::string& flag :
       {absl::StrCat("--server ", server_), "--server=" + server_}) {
    int status = 0;
    std::string output =
        RunBinary(absl::StrCat(flag, " stats --json"), &status);
    EXPECT_EQ(status, 0) << flag;
    EXPECT_THAT(output, HasSubstr("\"misses\"")) << flag;
  }
}

// Four client processes: the first never runs backward, the second hits the
// forward, the third asks for the backward (compiled now, once), the fourth
// hits both.
TEST_F(RemoteCommandsTest, LazyBackwardAcrossClientProcesses) {
  std::string graph = testing::FixturePath("graphs/mlp_mse__rg.json");
  auto compile = [&](const std::string& flags) {
    int status = 0;
    std::string output = RunBinary(
        absl::StrCat("compile --server ", server_, " ", flags, " ", graph),
        &status);
    EXPECT_EQ(status, 0) << output;
    return output;
  };
  auto counters = [&] { return daemon_->cache().counters(); };

  std::string first = compile("");
  EXPECT_THAT(first, HasSubstr("status:   COMPILE_STATUS_MISS"));
  EXPECT_THAT(first, HasSubstr("backward: BACKWARD_STATE_PENDING"));
  std::string second = compile("");
  EXPECT_THAT(second, HasSubstr("status:   COMPILE_STATUS_HIT"));
  EXPECT_THAT(second, HasSubstr("backward: BACKWARD_STATE_PENDING"));
  EXPECT_EQ(counters().backward_compiles, 0);

  std::string third = compile("--backward");
  EXPECT_THAT(third, HasSubstr("status:   COMPILE_STATUS_HIT"));
  EXPECT_THAT(third, HasSubstr("backward artifact: "));
  EXPECT_EQ(counters().backward_compiles, 1);

  std::string fourth = compile("--backward");
  EXPECT_THAT(fourth, HasSubstr("backward: BACKWARD_STATE_READY"));
  EXPECT_THAT(fourth, HasSubstr("backward artifact: "));
  EXPECT_EQ(counters().backward_compiles, 1);
  EXPECT_EQ(counters().backward_hits, 1);
  EXPECT_EQ(counters().misses, 1);
  EXPECT_EQ(counters().hits, 3);

  // For machines: one JSON object with both answers.
  ASSERT_EQ(Run("compile", {graph, "--backward", "--json"}), 0) << err_.str();
  google::protobuf::Struct json;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(out_.str(), &json).ok())
      << out_.str();
  EXPECT_EQ(json.fields()
                .at("compile")
                .struct_value()
                .fields()
                .at("status")
                .string_value(),
            "COMPILE_STATUS_HIT");
  EXPECT_EQ(json.fields()
                .at("get_backward")
                .struct_value()
                .fields()
                .at("backward_digest")
                .string_value()
                .size(),
            64u);
}

TEST_F(RemoteCommandsTest, ShowSourcePrintsTheNativeKernels) {
  ASSERT_EQ(daemon_->backend_name(), "native");
  std::string graph = testing::FixturePath("graphs/mlp_mse__rg.json");
  ASSERT_EQ(Run("compile", {graph, "--backward"}), 0) << err_.str();
  std::string key = KeyFromCompile();
  ASSERT_EQ(Run("show", {"--source", key}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("// ARTIFACT_KIND_FORWARD"));
  EXPECT_THAT(out_.str(), HasSubstr("// ARTIFACT_KIND_BACKWARD"));
  EXPECT_THAT(out_.str(), HasSubstr("extern \"C\" void aotcache_kernel_0("));
  EXPECT_THAT(out_.str(), HasSubstr("cblas_sgemm(101"));
}

// A store whose CURRENT file went missing does not open: the daemon says to
// run `aotcache repair`, which salvages it and says how. (RocksDB's repairer
// alone recovered tables, not the blob files where artifacts of this size
// live: the entry was lost.)
TEST_F(RemoteCommandsTest, RepairBringsBackAStoreThatDoesNotOpen) {
  const std::string graph = testing::FixturePath("graphs/mlp_mse__rg.json");
  ASSERT_EQ(Run("compile", {graph}), 0) << err_.str();
  daemon_.reset();
  std::filesystem::remove(dir_.path() + "/store/CURRENT");
  DaemonOptions options;
  options.data_dir = dir_.path();
  auto refused = Daemon::Start(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("aotcache repair --data_dir=" + dir_.path()));

  int status = 0;
  std::string output =
      RunBinary(absl::StrCat("repair --data_dir=", dir_.path()), &status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << output;
  EXPECT_THAT(output, HasSubstr("1 entries, 1 artifacts readable"));
  EXPECT_THAT(output, HasSubstr("CURRENT pointed at MANIFEST-"));
  EXPECT_THAT(output, Not(HasSubstr("dropped")));
  SetUp();
  ASSERT_EQ(Run("compile", {graph}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("status:   COMPILE_STATUS_HIT"));
  ASSERT_EQ(Run("verify", {}), 0) << out_.str();
}

TEST_F(RemoteCommandsTest, BadUsageAndBadKeysAreRefusedBeforeCalling) {
  EXPECT_EQ(Run("show", {"not-a-key"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("is not a key"));
  EXPECT_EQ(Run("rm", {}), 2);
  EXPECT_EQ(Run("stats", {"--bogus"}), 2);
  EXPECT_EQ(Run("stats", {"--backward"}), 2);  // compile's flag only.
  EXPECT_EQ(Run("stats", {"--source"}), 2);    // show's flag only.
  EXPECT_EQ(Run("compile", {"/nonexistent.json"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("cannot read"));
}

TEST_F(RemoteCommandsTest, AMissingDaemonIsExitCodeThreeWithAHint) {
  testing::TempDir empty;
  std::ostringstream out, err;
  int code = RunRemoteCommand(
      "stats", {"--server=unix:" + SocketPath(empty.path())}, out, err);
  EXPECT_EQ(code, 3);
  EXPECT_THAT(err.str(), HasSubstr("no daemon answers at unix:"));
  EXPECT_THAT(err.str(), HasSubstr("scripts/run"));
}

TEST(ResolveServerTargetTest, FlagThenEnvironmentThenDefaultSocket) {
  testing::TempDir cache_home;
  testing::ScopedEnv xdg("XDG_CACHE_HOME", cache_home.path());
  {
    testing::ScopedEnv no_server("AOTCACHE_SERVER", std::nullopt);
    EXPECT_EQ(ResolveServerTarget(""),
              "unix:" + cache_home.path() + "/aotcache/aotcached.sock");
  }
  testing::ScopedEnv server("AOTCACHE_SERVER", std::string("10.0.0.7:50051"));
  EXPECT_EQ(ResolveServerTarget(""), "10.0.0.7:50051");
  EXPECT_EQ(ResolveServerTarget("unix:/x.sock"), "unix:/x.sock");
}

TEST(ResolveServerTargetTest, AClientWithNoServerFindsTheDefaultDaemon) {
  testing::TempDir cache_home;
  testing::ScopedEnv xdg("XDG_CACHE_HOME", cache_home.path());
  testing::ScopedEnv no_server("AOTCACHE_SERVER", std::nullopt);
  DaemonOptions options;
  options.listen = "";  // The unix socket only.
  options.data_dir = DefaultDataDir();
  auto daemon = Daemon::Start(options);
  ASSERT_THAT(daemon, IsOk());
  std::ostringstream out, err;
  ASSERT_EQ(RunRemoteCommand("stats", {}, out, err), 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("hits                  0"));
}

}  // namespace
}  // namespace aotcache
