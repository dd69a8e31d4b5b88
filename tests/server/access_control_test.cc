// Who may call the daemon: the tokens file's format (TokenTable), and a real
// daemon on loopback with tokens of each scope (AccessControl in every
// service).
#include "server/access_control.h"

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "core/key/digest.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/token_table.h"
#include "tests/testing/daemon_fixture.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kReadToken[] = "read-token-0123456789";
constexpr char kCompileToken[] = "compile-token-0123456789";
constexpr char kAdminToken[] = "admin-token-0123456789";

std::string TokensFile() {
  return absl::StrCat("# grants\n", "readers read ", Sha256Hex(kReadToken),
                      "\n\n", "builders read,compile ",
                      Sha256Hex(kCompileToken), "\n", "ops\tadmin\t",
                      Sha256Hex(kAdminToken), "\n");
}

void WriteFile(const std::string& path, const std::string& text,
               mode_t mode = 0600) {
  std::ofstream(path) << text;
  ASSERT_EQ(chmod(path.c_str(), mode), 0);
}

TEST(TokenTableTest, FindsEachTokensGrantAndNoOther) {
  ASSERT_OK_AND_ASSIGN(TokenTable table, TokenTable::Parse(TokensFile()));
  EXPECT_EQ(table.size(), 3u);
  std::optional<Grant> read = table.FindToken(kReadToken);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->name, "readers");
  EXPECT_EQ(read->scopes.ToString(), "read");
  std::optional<Grant> build = table.FindToken(kCompileToken);
  ASSERT_TRUE(build.has_value());
  EXPECT_EQ(build->name, "builders");
  EXPECT_EQ(build->scopes.ToString(), "read,compile");
  EXPECT_FALSE(table.FindToken("").has_value());
  EXPECT_FALSE(table.FindToken(Sha256Hex(kReadToken)).has_value());
  EXPECT_FALSE(table.FindToken(absl::StrCat(kReadToken, "x")).has_value());
}

TEST(TokenTableTest, CertificateLinesMatchAnIdentity) {
  ASSERT_OK_AND_ASSIGN(
      TokenTable table,
      TokenTable::Parse("farm read,compile x509:farm.example.com\n"));
  EXPECT_FALSE(table.FindCertificate({"other"}).has_value());
  std::optional<Grant> farm =
      table.FindCertificate({"other", "farm.example.com"});
  ASSERT_TRUE(farm.has_value());
  EXPECT_EQ(farm->name, "farm");
}

TEST(TokenTableTest, RefusesWhatItCannotReadNamingTheLine) {
  const std::string hash = Sha256Hex("t");
  EXPECT_THAT(TokenTable::Parse("a read\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 1: expected NAME SCOPES CREDENTIAL")));
  EXPECT_THAT(TokenTable::Parse(absl::StrCat("\n\na write ", hash)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 3"), HasSubstr("'write'"))));
  EXPECT_THAT(TokenTable::Parse("a read my-secret-token\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a token itself")));
  EXPECT_THAT(TokenTable::Parse(
                  absl::StrCat("a read ", hash, "\na admin ", Sha256Hex("u")))
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 2"), HasSubstr("twice"))));
  EXPECT_THAT(
      TokenTable::Parse(absl::StrCat("a read ", hash, "\nb admin ", hash))
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("line 2"), HasSubstr("twice"))));
  EXPECT_THAT(
      TokenTable::Parse(absl::StrCat("a/b read ", hash)).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a name is")));
}

TEST(TokenTableTest, LoadRefusesAFileOthersCanWrite) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/tokens";
  WriteFile(path, TokensFile(), 0620);
  EXPECT_THAT(TokenTable::Load(path).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("writable by other users")));
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  EXPECT_THAT(TokenTable::Load(path), IsOk());
  EXPECT_THAT(TokenTable::Load(dir.path() + "/none").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot read it")));
}

// A daemon on loopback with the three tokens, the reference backend.
class ScopedDaemonTest : public testing::DaemonFixture {
 protected:
  DaemonOptions Options() override {
    DaemonOptions options = DaemonFixture::Options();
    options.backend_name = "reference";
    tokens_ = tokens_dir_.path() + "/tokens";
    WriteFile(tokens_, TokensFile());
    options.tokens_file = tokens_;
    return options;
  }

  static v1::CompileRequest Request() {
    v1::CompileRequest r;
    *r.mutable_graph() = testing::LoadGraphOrDie("graphs/mlp_mse__rg.json");
    r.mutable_target()->set_arch("x86_64");
    r.mutable_target()->set_abi("linux-gnu");
    return r;
  }

  // A context that sends `token` (none when empty).
  static std::unique_ptr<grpc::ClientContext> As(const std::string& token) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(60));
    if (!token.empty()) {
      context->AddMetadata("authorization", absl::StrCat("Bearer ", token));
    }
    return context;
  }

  grpc::Status CompileAs(const std::string& token,
                         v1::CompileResponse* response) {
    return compile_->Compile(As(token).get(), Request(), response);
  }

  grpc::Status BackwardAs(const std::string& token, const std::string& key) {
    v1::GetBackwardRequest request;
    request.set_key(key);
    *request.mutable_request() = Request();
    v1::GetBackwardResponse response;
    return compile_->GetBackward(As(token).get(), request, &response);
  }

  grpc::Status ListAs(const std::string& token) {
    v1::ListEntriesResponse response;
    return admin_->ListEntries(As(token).get(), v1::ListEntriesRequest(),
                               &response);
  }

  testing::TempDir tokens_dir_;
  std::string tokens_;
};

TEST_F(ScopedDaemonTest, WithoutATokenEveryRpcIsUnauthenticated) {
  v1::CompileResponse response;
  EXPECT_THAT(CompileAs("", &response),
              StatusIs(absl::StatusCode::kUnauthenticated,
                       AllOf(HasSubstr("Compile needs the read scope"),
                             HasSubstr("AOTCACHE_TOKEN"))));
  EXPECT_THAT(
      CompileAs("not-a-token", &response),
      StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("unknown token")));
  v1::LookupResponse lookup;
  v1::LookupRequest lookup_request;
  EXPECT_THAT(compile_->Lookup(As("").get(), lookup_request, &lookup),
              StatusIs(absl::StatusCode::kUnauthenticated,
                       HasSubstr("Lookup needs the read scope")));
  EXPECT_THAT(ListAs(""), StatusIs(absl::StatusCode::kUnauthenticated,
                                   HasSubstr("ListEntries needs the admin")));
  grpc::ClientContext bad_scheme;
  bad_scheme.AddMetadata("authorization", absl::StrCat("Basic ", kReadToken));
  EXPECT_THAT(compile_->Compile(&bad_scheme, Request(), &response),
              StatusIs(absl::StatusCode::kUnauthenticated,
                       HasSubstr("not 'Bearer TOKEN'")));
  EXPECT_EQ(daemon_->cache().counters().misses, 0);
  // The scheme's case does not matter.
  grpc::ClientContext lower_case;
  lower_case.AddMetadata("authorization", absl::StrCat("bearer ", kReadToken));
  EXPECT_THAT(compile_->Compile(&lower_case, Request(), &response),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("needs the compile scope")));
}

TEST_F(ScopedDaemonTest, AReadTokenGetsHitsButItsMissesDoNotCompile) {
  v1::CompileResponse response;
  EXPECT_THAT(CompileAs(kReadToken, &response),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("needs the compile scope"),
                             HasSubstr("'readers'"))));
  EXPECT_EQ(daemon_->cache().counters().misses, 0);
  EXPECT_EQ(daemon_->cache().counters().misses_not_compiled, 1);

  v1::CompileResponse compiled;
  ASSERT_THAT(CompileAs(kCompileToken, &compiled), IsOk());
  EXPECT_EQ(compiled.status(), v1::COMPILE_STATUS_MISS);
  ASSERT_THAT(CompileAs(kReadToken, &response), IsOk());
  EXPECT_EQ(response.status(), v1::COMPILE_STATUS_HIT);
  EXPECT_EQ(response.key(), compiled.key());

  // The backward: not compiled for a reader, then compiled by a builder
  // and read by the reader.
  EXPECT_THAT(BackwardAs(kReadToken, compiled.key()),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("needs the compile scope")));
  EXPECT_EQ(daemon_->cache().counters().backward_compiles, 0);
  ASSERT_THAT(BackwardAs(kCompileToken, compiled.key()), IsOk());
  EXPECT_THAT(BackwardAs(kReadToken, compiled.key()), IsOk());
  EXPECT_EQ(daemon_->cache().counters().backward_compiles, 1);

  EXPECT_THAT(ListAs(kReadToken),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       AllOf(HasSubstr("needs the admin scope"),
                             HasSubstr("'readers' does not hold"))));
  v1::DeleteEntryRequest rm;
  rm.set_key(compiled.key());
  v1::DeleteEntryResponse deleted;
  EXPECT_THAT(admin_->DeleteEntry(As(kCompileToken).get(), rm, &deleted),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("DeleteEntry needs the admin scope")));
  v1::EvictRequest evict;
  evict.set_to_bytes(0);
  v1::EvictResponse evicted;
  EXPECT_THAT(admin_->Evict(As(kCompileToken).get(), evict, &evicted),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("Evict needs the admin scope")));
  EXPECT_THAT(CompileAs(kReadToken, &response), IsOk());  // Still there.
}

TEST_F(ScopedDaemonTest, AnAdminTokenMaintainsButDoesNotRead) {
  v1::CompileResponse compiled;
  ASSERT_THAT(CompileAs(kCompileToken, &compiled), IsOk());
  EXPECT_THAT(ListAs(kAdminToken), IsOk());
  v1::StatsResponse stats;
  EXPECT_THAT(admin_->Stats(As(kAdminToken).get(), v1::StatsRequest(), &stats),
              IsOk());
  EXPECT_EQ(stats.misses(), 1);
  // zstd at rest, by default.
  EXPECT_GT(stats.artifact_bytes_written(), 0);
  EXPECT_LT(stats.artifact_bytes_at_rest(), stats.artifact_bytes_written());
  v1::DeleteEntryRequest rm;
  rm.set_key(compiled.key());
  v1::DeleteEntryResponse deleted;
  EXPECT_THAT(admin_->DeleteEntry(As(kAdminToken).get(), rm, &deleted), IsOk());
  v1::CompileResponse response;
  EXPECT_THAT(CompileAs(kAdminToken, &response),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("Compile needs the read scope")));
}

TEST_F(ScopedDaemonTest, TheUnixSocketIsTheDaemonsOwnUserWithEveryScope) {
  auto channel =
      grpc::CreateChannel(absl::StrCat("unix:", daemon_->socket_path()),
                          grpc::InsecureChannelCredentials());
  auto compile = v1::CompileService::NewStub(channel);
  auto admin = v1::AdminService::NewStub(channel);
  v1::CompileResponse response;
  EXPECT_THAT(compile->Compile(As("").get(), Request(), &response), IsOk());
  v1::ListEntriesResponse listed;
  EXPECT_THAT(
      admin->ListEntries(As("").get(), v1::ListEntriesRequest(), &listed),
      IsOk());
  EXPECT_EQ(listed.entries_size(), 1);
}

TEST_F(ScopedDaemonTest, ReloadTakesANewFileAndKeepsTheOldOnAnError) {
  const std::string fresh = "fresh-token-0123456789";
  WriteFile(tokens_, absl::StrCat("fresh read ", Sha256Hex(fresh), "\n"));
  ASSERT_THAT(daemon_->ReloadTokens(), IsOk());
  EXPECT_THAT(ListAs(kAdminToken), StatusIs(absl::StatusCode::kUnauthenticated,
                                            HasSubstr("unknown token")));
  v1::CompileResponse response;
  EXPECT_THAT(compile_->Compile(As(fresh).get(), Request(), &response),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("'fresh' does not hold")));

  WriteFile(tokens_, "broken line\n");
  EXPECT_THAT(
      daemon_->ReloadTokens(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1")));
  EXPECT_THAT(compile_->Compile(As(fresh).get(), Request(), &response),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("'fresh' does not hold")));
}

TEST(DaemonListenTest, AListenerOthersReachNeedsCredentialsOrConsent) {
  testing::TempDir dir;
  DaemonOptions options;
  options.data_dir = dir.path();
  options.backend_name = "reference";
  options.listen = "0.0.0.0:0";
  EXPECT_THAT(Daemon::Start(options).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("0.0.0.0:0"), HasSubstr("--tokens_file"),
                             HasSubstr("--insecure_allow_anonymous"))));
  options.insecure_allow_anonymous = true;
  EXPECT_THAT(Daemon::Start(options), IsOk());
}

TEST(DaemonListenTest, LoopbackNamesAreLoopback) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:0"));
  EXPECT_TRUE(IsLoopbackAddress("127.8.0.1:50051"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:50051"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:50051"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:50051"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:50051"));
  EXPECT_FALSE(IsLoopbackAddress(":50051"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.7:50051"));
}

}  // namespace
}  // namespace aotcache
