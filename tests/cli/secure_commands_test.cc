// The CLI with a shared daemon's credentials: `aotcache token` makes a
// grant the tokens file takes, and the daemon commands send
// $AOTCACHE_TOKEN over tls:// (the CA from $AOTCACHE_CA) to a real daemon.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/cli/remote_commands.h"
#include "client/cli/token_command.h"
#include "core/key/digest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "server/token_table.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_certificates.h"

namespace aotcache {
namespace {

using ::aotcache::testing::ScopedEnv;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(TokenCommandTest, MakesATokenWhoseLineTheTokensFileGrants) {
  std::ostringstream out, err;
  ASSERT_EQ(RunTokenCommand({"ci", "read,compile"}, out, err), 0) << err.str();
  std::vector<std::string> lines = absl::StrSplit(out.str(), '\n');
  ASSERT_GE(lines.size(), 4u) << out.str();
  const std::string token(absl::StripAsciiWhitespace(lines[1]));
  const std::string line(absl::StripAsciiWhitespace(lines[3]));
  EXPECT_EQ(token.size(), 43u) << token;  // 32 random bytes, base64url.
  EXPECT_THAT(line, Not(HasSubstr(token)));
  ASSERT_OK_AND_ASSIGN(TokenTable table, TokenTable::Parse(line));
  std::optional<Grant> grant = table.FindToken(token);
  ASSERT_TRUE(grant.has_value()) << line;
  EXPECT_EQ(grant->name, "ci");
  EXPECT_EQ(grant->scopes.ToString(), "read,compile");

  std::ostringstream again;
  ASSERT_EQ(RunTokenCommand({"ci", "read"}, again, err), 0);
  EXPECT_THAT(again.str(), Not(HasSubstr(token)));  // Fresh each time.
  EXPECT_EQ(RunTokenCommand({"ci", "write"}, out, err), 2);
  EXPECT_EQ(RunTokenCommand({"a b", "read"}, out, err), 2);
  EXPECT_EQ(RunTokenCommand({"ci"}, out, err), 2);
}

constexpr char kReadToken[] = "read-token-0123456789";
constexpr char kAdminToken[] = "admin-token-0123456789";

// A daemon with TLS and tokens on 127.0.0.1:0, and the CLI pointed at it.
class SecureCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(certs_, testing::MakeTestCertificates(dir_.path()));
    DaemonOptions options;
    options.data_dir = dir_.path() + "/data";
    options.backend_name = "reference";
    options.tls.cert_file = certs_.server.cert;
    options.tls.key_file = certs_.server.key;
    options.tokens_file = dir_.path() + "/tokens";
    std::ofstream(options.tokens_file)
        << "readers read " << Sha256Hex(kReadToken) << "\nops admin "
        << Sha256Hex(kAdminToken) << "\n";
    ASSERT_OK_AND_ASSIGN(daemon_, Daemon::Start(options));
    server_ = absl::StrCat("--server=tls://127.0.0.1:", daemon_->port());
  }

  // `aotcache COMMAND ARGS --server=tls://...` with `token`; the exit code.
  int Run(const std::string& token, const std::string& command,
          std::vector<std::string> args) {
    ScopedEnv with_token("AOTCACHE_TOKEN", token);
    ScopedEnv with_ca("AOTCACHE_CA", certs_.ca);
    out_.str("");
    err_.str("");
    args.push_back(server_);
    return RunRemoteCommand(command, args, out_, err_);
  }

  testing::TempDir dir_;
  testing::TestCertificates certs_;
  std::unique_ptr<Daemon> daemon_;
  std::string server_;
  std::ostringstream out_, err_;
};

TEST_F(SecureCommandsTest, EachCommandNeedsItsScope) {
  const std::string graph = testing::FixturePath("../../examples/mlp.json");
  EXPECT_EQ(Run("", "ls", {}), 1);
  EXPECT_THAT(err_.str(), AllOf(HasSubstr("ListEntries needs the admin scope"),
                                HasSubstr("AOTCACHE_TOKEN")));
  EXPECT_EQ(Run(kReadToken, "ls", {}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("'readers' does not hold"));
  EXPECT_EQ(Run(kReadToken, "compile", {graph}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("needs the compile scope"));
  EXPECT_EQ(Run(kAdminToken, "ls", {}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("0 entries"));
  EXPECT_EQ(Run(kAdminToken, "stats", {}), 0) << err_.str();
}

TEST_F(SecureCommandsTest, AnUnreadableCaIsAUsageError) {
  ScopedEnv with_ca("AOTCACHE_CA", dir_.path() + "/missing.pem");
  std::ostringstream out, err;
  EXPECT_EQ(RunRemoteCommand("ls", {server_}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("missing.pem"));
}

}  // namespace
}  // namespace aotcache
