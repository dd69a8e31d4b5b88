// The CLI makes its calls as aotcache::Client does (DaemonCalls): UNAVAILABLE
// is tried again and other codes are not, and an artifact that arrives with
// other bytes than its digest names is refused. The daemon here is a fake on a
// unix socket: the faults are injected.
#include <atomic>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "client/cli/remote_commands.h"
#include "core/key/digest.h"
#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Stats: UNAVAILABLE for the first `unavailable` calls, then `code`.
class FlakyAdmin final : public v1::AdminService::Service {
 public:
  grpc::Status Stats(grpc::ServerContext*, const v1::StatsRequest*,
                     v1::StatsResponse* response) override {
    if (calls.fetch_add(1) < unavailable) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting");
    }
    if (code != grpc::StatusCode::OK) return grpc::Status(code, "refused");
    response->set_hits(7);
    return grpc::Status::OK;
  }

  int unavailable = 0;
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::atomic<int> calls{0};
};

// Compile answers by digest; FetchArtifact sends other bytes than the
// digest's.
class TamperingCompile final : public v1::CompileService::Service {
 public:
  grpc::Status Compile(grpc::ServerContext*, const v1::CompileRequest* request,
                       v1::CompileResponse* response) override {
    by_reference = request->artifacts_by_reference();
    response->set_key(std::string(32, 'k'));
    response->set_mode(v1::MODE_INFERENCE);
    response->set_status(v1::COMPILE_STATUS_HIT);
    response->set_forward_digest(Sha256Hex(artifact_bytes));
    return grpc::Status::OK;
  }
  grpc::Status FetchArtifact(
      grpc::ServerContext*, const v1::FetchArtifactRequest*,
      grpc::ServerWriter<v1::ArtifactChunk>* writer) override {
    v1::ArtifactChunk chunk;
    chunk.set_data(artifact_bytes + "tampered");
    writer->Write(chunk);
    return grpc::Status::OK;
  }

  std::string artifact_bytes = [] {
    v1::Artifact artifact;
    artifact.set_backend("reference");
    return artifact.SerializeAsString();
  }();
  std::atomic<bool> by_reference{false};
};

class CliCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    address_ = absl::StrCat("unix:", dir_.path(), "/fake.sock");
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address_, grpc::InsecureServerCredentials());
    builder.RegisterService(&admin_);
    builder.RegisterService(&compile_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override { server_->Shutdown(); }

  int Run(const std::string& command, std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    args.push_back("--server=" + address_);
    return RunRemoteCommand(command, args, out_, err_);
  }

  testing::TempDir dir_;
  std::string address_;
  FlakyAdmin admin_;
  TamperingCompile compile_;
  std::unique_ptr<grpc::Server> server_;
  std::ostringstream out_, err_;
};

TEST_F(CliCallsTest, UnavailableIsTriedAgain) {
  admin_.unavailable = 2;
  ASSERT_EQ(Run("stats", {"--json"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("\"hits\": \"7\""));
  EXPECT_EQ(admin_.calls.load(), 3);
}

TEST_F(CliCallsTest, ADaemonStillUnavailableAfterTheRetriesIsNoDaemon) {
  admin_.unavailable = 100;
  EXPECT_EQ(Run("stats", {}), 3);
  EXPECT_THAT(err_.str(), HasSubstr("no daemon answers at " + address_));
  EXPECT_EQ(admin_.calls.load(), 4);  // The client's max_attempts.
}

TEST_F(CliCallsTest, OtherCodesAreNotTriedAgain) {
  admin_.code = grpc::StatusCode::PERMISSION_DENIED;
  EXPECT_EQ(Run("stats", {}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("refused"));
  EXPECT_EQ(admin_.calls.load(), 1);
}

TEST_F(CliCallsTest, AnArtifactWithOtherBytesThanItsDigestIsRefused) {
  const std::string graph = testing::FixturePath("../../examples/mlp.json");
  EXPECT_EQ(Run("compile", {graph}), 1);
  EXPECT_TRUE(compile_.by_reference.load());
  EXPECT_THAT(err_.str(), HasSubstr(absl::StrCat(
                              "artifact ", Sha256Hex(compile_.artifact_bytes),
                              " arrived with other bytes")));
  EXPECT_THAT(out_.str(), Not(HasSubstr("key:")));
}

}  // namespace
}  // namespace aotcache
