// aotcached stopping and under load: a real daemon on 127.0.0.1:0 over
// RocksDB in a temp dir, with backends that hold or slow their compiles so
// that a shutdown or a budget meets a compile in flight.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "core/backend/native/host_compiler.h"
#include "core/backend/reference_backend.h"
#include "core/status_macros.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/testing/wrapping_backend.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::TempDir;

v1::CompileRequest Request(const std::string& fixture) {
  v1::CompileRequest r;
  *r.mutable_graph() = testing::LoadGraphOrDie("graphs/" + fixture);
  return r;
}

// The reference backend, whose first compile waits until released.
struct HeldBackend {
  HeldBackend() {
    backend.before_compile = [this](const ArtifactSpec&) {
      if (!entered.HasBeenNotified()) {
        entered.Notify();
        release.WaitForNotification();
      }
    };
  }
  testing::WrappingBackend backend;
  absl::Notification entered;
  absl::Notification release;
};

TEST(DaemonDrainTest, ShutdownDuringASlowCompileLetsItFinish) {
  TempDir dir;
  HeldBackend hold;
  DaemonOptions options;
  options.data_dir = dir.path();
  options.backend = &hold.backend;
  auto daemon = Daemon::Start(options);
  ASSERT_THAT(daemon, IsOk());
  std::string server = absl::StrCat("127.0.0.1:", (*daemon)->port());
  auto compile_on_a_new_channel = [&](v1::CompileResponse* response,
                                      const char* graph = "mlp_mse__rg.json") {
    auto stub = v1::CompileService::NewStub(
        grpc::CreateChannel(server, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
    return stub->Compile(&ctx, Request(graph), response);
  };

  grpc::Status slow_status;
  v1::CompileResponse slow_response;
  std::thread slow(
      [&] { slow_status = compile_on_a_new_channel(&slow_response); });
  hold.entered.WaitForNotification();
  std::atomic<bool> shut_down{false};
  std::thread stopper([&] {
    (*daemon)->Shutdown(std::chrono::seconds(20));
    shut_down = true;
  });
  // Draining: a new call (of another graph: the held compile's would wait
  // for it) is refused once Shutdown has begun, and Shutdown has not
  // returned, with the held call still in flight.
  v1::CompileResponse refused;
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        return !compile_on_a_new_channel(&refused, "mlp_mse__nrg.json").ok();
      },
      absl::Seconds(10)))
      << "a draining daemon took new calls";
  EXPECT_FALSE(shut_down) << "Shutdown returned with a call in flight";
  hold.release.Notify();
  slow.join();
  stopper.join();
  EXPECT_TRUE(slow_status.ok())
      << slow_status.error_code() << " " << slow_status.error_message();
  EXPECT_EQ(slow_response.status(), v1::COMPILE_STATUS_MISS);
  EXPECT_TRUE(shut_down);
}

// Request bytes held at once are bounded: past the budget a request is
// refused at once (RESOURCE_EXHAUSTED), not decoded.
TEST(DaemonLimitsTest, RequestsPastTheBytesInFlightAreRefused) {
  TempDir dir;
  HeldBackend hold;
  DaemonOptions options;
  options.data_dir = dir.path();
  options.backend = &hold.backend;
  const v1::CompileRequest held = Request("mlp_mse__rg.json");
  options.max_bytes_in_flight = static_cast<int64_t>(held.ByteSizeLong()) + 100;
  auto daemon = Daemon::Start(options);
  ASSERT_THAT(daemon, IsOk());
  auto stub = v1::CompileService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*daemon)->port()),
                          grpc::InsecureChannelCredentials()));
  grpc::Status held_status;
  std::thread first([&] {
    grpc::ClientContext ctx;
    v1::CompileResponse response;
    held_status = stub->Compile(&ctx, held, &response);
  });
  hold.entered.WaitForNotification();
  {
    grpc::ClientContext ctx;
    v1::CompileResponse response;
    grpc::Status st =
        stub->Compile(&ctx, Request("layer_norm_softmax__rg.json"), &response);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << st.error_message();
  }
  {
    // GetBackward carries a whole CompileRequest: the same budget.
    v1::GetBackwardRequest backward;
    backward.set_key(std::string(32, 'k'));
    *backward.mutable_request() = Request("layer_norm_softmax__rg.json");
    grpc::ClientContext ctx;
    v1::GetBackwardResponse response;
    grpc::Status st = stub->GetBackward(&ctx, backward, &response);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << st.error_message();
  }
  hold.release.Notify();
  first.join();
  EXPECT_THAT(held_status, IsOk());
  // The bytes were given back: the same request now goes through.
  grpc::ClientContext ctx;
  v1::CompileResponse response;
  EXPECT_TRUE(
      stub->Compile(&ctx, Request("layer_norm_softmax__rg.json"), &response)
          .ok());
}

// A backend whose host compiler would run for a minute.
class SlowCompilerBackend final : public Backend {
 public:
  explicit SlowCompilerBackend(std::string compiler)
      : compiler_(std::move(compiler)) {}
  absl::string_view name() const override { return "slow"; }
  absl::string_view version() const override { return "1"; }

 private:
  absl::StatusOr<v1::Artifact> CompileCanonical(
      const v1::Graph&, const ArtifactSpec&) const override {
    HostCompilerOptions options;
    options.compiler = compiler_;
    AOTCACHE_RETURN_IF_ERROR(CompileSharedObject("", options).status());
    return absl::InternalError("unreachable: the compiler was killed");
  }
  std::string compiler_;
};

// Past the drain deadline the compilers still running are killed, so that
// the daemon stops within its grace (it waited for the compile to end).
TEST(DaemonDrainTest, CompilesPastTheDrainDeadlineAreKilled) {
  TempDir dir, bin;
  std::string slow = bin.path() + "/slow-cc";
  const std::string started = bin.path() + "/started";
  std::ofstream(slow) << "#!/bin/sh\ntouch '" << started << "'\nsleep 60\n";
  std::filesystem::permissions(slow, std::filesystem::perms::owner_all);
  SlowCompilerBackend backend(slow);
  DaemonOptions options;
  options.data_dir = dir.path();
  options.backend = &backend;
  auto daemon = Daemon::Start(options);
  ASSERT_THAT(daemon, IsOk());
  auto stub = v1::CompileService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*daemon)->port()),
                          grpc::InsecureChannelCredentials()));
  grpc::Status status;
  std::thread call([&] {
    grpc::ClientContext ctx;
    v1::CompileResponse response;
    status = stub->Compile(&ctx, Request("mlp_mse__nrg.json"), &response);
  });
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return std::filesystem::exists(started); }, absl::Seconds(30)))
      << "the compiler never ran";
  absl::Time start = absl::Now();
  (*daemon)->Shutdown(std::chrono::milliseconds(500));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  call.join();
  EXPECT_FALSE(status.ok());
}

}  // namespace
}  // namespace aotcache
