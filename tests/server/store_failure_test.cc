// CompileService over a store whose disk has gone, served by a real gRPC
// server on 127.0.0.1:0: requests that can be answered without the store
// still succeed (answered inline), and reads of the store are UNAVAILABLE.
#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "core/backend/reference_backend.h"
#include "core/cache/cache.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "server/compile_service.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

constexpr char kGone[] = "store: IO error: the disk has gone";

// Every operation fails as RocksDB's I/O errors do (rocksdb_status.h maps
// them to Unavailable).
class GoneStore final : public EntryStore {
 public:
  absl::StatusOr<v1::CacheEntry> Lookup(absl::string_view) const override {
    return absl::UnavailableError(kGone);
  }
  absl::StatusOr<v1::CacheEntryHeader> LookupHeader(
      absl::string_view) const override {
    return absl::UnavailableError(kGone);
  }
  absl::Status Put(
      const v1::CacheEntry&,
      const std::vector<std::pair<std::string, std::string>>&) override {
    return absl::UnavailableError(kGone);
  }
  absl::StatusOr<std::string> GetArtifact(absl::string_view) override {
    return absl::UnavailableError(kGone);
  }
  bool HasArtifact(absl::string_view) const override { return false; }
  absl::Status RecordHit(absl::string_view) override {
    return absl::UnavailableError(kGone);
  }
};

class StoreFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::CompileService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { server_->Shutdown(); }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(30));
    return ctx;
  }

  GoneStore store_;
  ReferenceBackend backend_;
  Cache cache_{&store_, &backend_, {}};
  AccessControl access_;  // Everyone may do anything.
  CallClock clock_;
  BytesInFlight in_flight_{int64_t{64} << 20};
  WorkerPool workers_{4};
  DaemonMetrics metrics_;
  CompileServiceImpl service_{&cache_,
                              &store_,
                              &access_,
                              &clock_,
                              &workers_,
                              &in_flight_,
                              std::chrono::minutes(2),
                              &metrics_};
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::CompileService::Stub> stub_;
};

TEST_F(StoreFailureTest, CompileAndBackwardAreAnsweredInline) {
  v1::CompileRequest request;
  *request.mutable_graph() = testing::LoadGraphOrDie("graphs/mlp_mse__rg.json");
  request.set_artifacts_by_reference(true);  // Asked for, but not stored.
  v1::CompileResponse response;
  grpc::Status status = stub_->Compile(Context().get(), request, &response);
  ASSERT_THAT(status, IsOk());
  EXPECT_EQ(response.status(), v1::COMPILE_STATUS_MISS);
  EXPECT_EQ(response.backward(), v1::BACKWARD_STATE_PENDING);
  EXPECT_EQ(response.forward_digest(), "");
  EXPECT_FALSE(response.forward().payload().empty());

  v1::GetBackwardRequest backward_request;
  backward_request.set_key(response.key());
  *backward_request.mutable_request() = request;
  backward_request.set_artifact_by_reference(true);
  v1::GetBackwardResponse backward;
  status = stub_->GetBackward(Context().get(), backward_request, &backward);
  ASSERT_THAT(status, IsOk());
  EXPECT_EQ(backward.backward_digest(), "");
  EXPECT_EQ(backward.backward().kind(), v1::ARTIFACT_KIND_BACKWARD);
  EXPECT_EQ(backward.backward().pairs_with(),
            response.forward().calling_convention_hash());
  EXPECT_EQ(cache_.counters().save_failures, 2);
}

TEST_F(StoreFailureTest, ReadsOfTheStoreAreUnavailable) {
  v1::LookupRequest lookup;
  lookup.set_key(std::string(32, 'k'));
  v1::LookupResponse entry;
  grpc::Status status = stub_->Lookup(Context().get(), lookup, &entry);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(status.error_message(), kGone);

  v1::FetchArtifactRequest fetch;
  fetch.set_digest(std::string(64, '0'));
  auto ctx = Context();
  auto reader = stub_->FetchArtifact(ctx.get(), fetch);
  v1::ArtifactChunk chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(status.error_message(), kGone);
}

}  // namespace
}  // namespace aotcache
