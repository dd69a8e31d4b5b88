// FetchArtifact's stream (server/artifact_stream.h) over a real RocksDB
// store in a temp dir: artifacts of zero bytes, one chunk, exactly one
// chunk and several chunks arrive whole, the first chunk naming the total;
// a download past the bytes-in-flight budget is RESOURCE_EXHAUSTED and the
// budget is whole again after every download. (Unread downloads, cancelled
// at the time limit, are in daemon_memory_test.cc.)
#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "core/backend/reference_backend.h"
#include "core/cache/cache.h"
#include "core/store/rocksdb_store.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "server/compile_service.h"
#include "tests/store/store_entries.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

constexpr size_t kMiB = size_t{1} << 20;

class ArtifactStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.path = dir_.path() + "/store";
    auto store = RocksDbStore::Open(options);
    ASSERT_THAT(store, IsOk());
    store_ = *std::move(store);
    cache_ = std::make_unique<Cache>(store_.get(), &backend_, CacheOptions());
    service_ = std::make_unique<CompileServiceImpl>(
        cache_.get(), store_.get(), &access_, &clock_, &workers_, &in_flight_,
        std::chrono::minutes(1), &metrics_);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    stub_ = v1::CompileService::NewStub(
        grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                  grpc::InsecureChannelCredentials(), args));
  }
  void TearDown() override { server_->Shutdown(); }

  // Stores artifact i of `size` bytes; its digest.
  std::string Store(int i, size_t size) {
    auto [entry, artifact] = testing::NumberedEntry(i, size);
    EXPECT_THAT(store_->Put(entry, {artifact}), IsOk());
    return entry.forward_digest();
  }

  // Downloads `digest`: its status, the bytes, and the total the first
  // chunk announced.
  grpc::Status Fetch(const std::string& digest, std::string* bytes,
                     int64_t* total) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
    v1::FetchArtifactRequest request;
    request.set_digest(digest);
    auto reader = stub_->FetchArtifact(&ctx, request);
    v1::ArtifactChunk chunk;
    for (bool first = true; reader->Read(&chunk); first = false) {
      if (first) *total = chunk.total_bytes();
      *bytes += chunk.data();
    }
    return reader->Finish();
  }

  testing::TempDir dir_;
  std::unique_ptr<RocksDbStore> store_;
  ReferenceBackend backend_;
  std::unique_ptr<Cache> cache_;
  AccessControl access_;  // Everyone may do anything.
  CallClock clock_;
  DaemonMetrics metrics_;
  BytesInFlight in_flight_{int64_t{8} << 20};
  WorkerPool workers_{2};
  std::unique_ptr<CompileServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::CompileService::Stub> stub_;
};

TEST_F(ArtifactStreamTest, ArtifactsOfAnySizeArriveWhole) {
  int i = 0;
  for (size_t size :
       {size_t{0}, size_t{1}, kMiB - 1, kMiB, kMiB + 1, 5 * kMiB / 2}) {
    SCOPED_TRACE(size);
    const std::string digest = Store(++i, size);
    std::string bytes;
    int64_t total = -1;
    grpc::Status status = Fetch(digest, &bytes, &total);
    ASSERT_THAT(status, IsOk());
    EXPECT_EQ(total, static_cast<int64_t>(size));
    EXPECT_EQ(bytes.size(), size);
    EXPECT_EQ(Sha256Hex(bytes), digest);
  }
  // All given back (by each stream's OnDone, which may run just after the
  // client has its status).
  EXPECT_TRUE(
      testing::WaitUntil([&] { return in_flight_.TryTake(in_flight_.limit()); },
                         absl::Seconds(10)));
}

TEST_F(ArtifactStreamTest, ADownloadPastTheBudgetIsResourceExhausted) {
  const std::string digest = Store(1, 3 * kMiB);
  ASSERT_TRUE(in_flight_.TryTake(in_flight_.limit() - kMiB));
  std::string bytes;
  int64_t total = -1;
  grpc::Status status = Fetch(digest, &bytes, &total);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("downloads"), std::string::npos)
      << status.error_message();
  EXPECT_TRUE(bytes.empty());
  in_flight_.Give(in_flight_.limit() - kMiB);
  EXPECT_THAT(Fetch(digest, &bytes, &total), IsOk());
  EXPECT_EQ(bytes.size(), 3 * kMiB);
}

TEST_F(ArtifactStreamTest, AnUnknownDigestIsNotFound) {
  std::string bytes;
  int64_t total = -1;
  grpc::Status status = Fetch(Sha256Hex("nothing stored"), &bytes, &total);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND)
      << status.error_message();
}

}  // namespace
}  // namespace aotcache
