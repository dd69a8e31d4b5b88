// aotcached end to end: a real daemon on 127.0.0.1:0 (and its unix socket)
// over a real RocksDB in a temp dir, called through generated gRPC stubs.
#include "server/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/impl/client_unary_call.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/store/store_entries.h"
#include "tests/testing/daemon_fixture.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::TempDir;

// A Compile request for a fixture graph, for an x86-64 Linux target.
v1::CompileRequest Request(const std::string& fixture) {
  v1::CompileRequest r;
  *r.mutable_graph() = testing::LoadGraphOrDie("graphs/" + fixture);
  r.mutable_target()->set_arch("x86_64");
  r.mutable_target()->set_abi("linux-gnu");
  return r;
}

class DaemonTest : public testing::DaemonFixture {
 protected:
  DaemonOptions Options() override {
    DaemonOptions options = DaemonFixture::Options();
    options.max_graph_nodes = 50;
    options.max_request_bytes = 1 << 20;
    return options;
  }
};

TEST_F(DaemonTest, MissHitAndLazyBackward) {
  v1::CompileResponse first, second;
  ASSERT_THAT(Compile(Request("mlp_mse__rg.json"), &first), IsOk());
  EXPECT_EQ(first.status(), v1::COMPILE_STATUS_MISS);
  EXPECT_EQ(first.backward(), v1::BACKWARD_STATE_PENDING);
  ASSERT_THAT(Compile(Request("mlp_mse__rg.json"), &second), IsOk());
  EXPECT_EQ(second.status(), v1::COMPILE_STATUS_HIT);
  EXPECT_EQ(second.forward().calling_convention_hash(),
            first.forward().calling_convention_hash());

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::GetBackwardRequest bw_request;
  bw_request.set_key(first.key());
  v1::GetBackwardResponse bw;
  ASSERT_THAT(compile_->GetBackward(&ctx, bw_request, &bw), IsOk());
  EXPECT_EQ(bw.backward().pairs_with(),
            first.forward().calling_convention_hash());

  v1::CompileResponse third;
  ASSERT_THAT(Compile(Request("mlp_mse__rg.json"), &third), IsOk());
  EXPECT_EQ(third.backward(), v1::BACKWARD_STATE_READY);
}

// Random ops are cached like any other op: the caller passes the seed.
TEST_F(DaemonTest, RandomOpsAreCachedAndHit) {
  v1::CompileRequest r;
  *r.mutable_graph() = testing::GraphFromJson(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [{"name": "out", "op": "aten.rand_like.default", "args": [{"node": "x"}],
               "grad_mode": "GRAD_MODE_ENABLED"}],
    "outputs": ["out"]})json");
  v1::CompileResponse first, second;
  ASSERT_THAT(Compile(r, &first), IsOk());
  EXPECT_EQ(first.status(), v1::COMPILE_STATUS_MISS);
  ASSERT_THAT(Compile(r, &second), IsOk());
  EXPECT_EQ(second.status(), v1::COMPILE_STATUS_HIT);
  EXPECT_EQ(second.key(), first.key());
}

TEST_F(DaemonTest, BadRequestsGetInvalidArgumentNamingTheFault) {
  struct Case {
    const char* what;
    std::function<void(v1::Graph&)> corrupt;
    std::string named;
  };
  const Case cases[] = {
      {"unknown op",
       [](v1::Graph& g) { g.mutable_nodes(0)->set_op("aten.nope.default"); },
       "aten.nope.default"},
      {"undefined ref",
       [](v1::Graph& g) {
         g.mutable_nodes(1)->mutable_args(0)->set_node("zz");
       },
       "'zz' is not defined"},
      {"no grad mode",
       [](v1::Graph& g) { g.mutable_nodes(0)->clear_grad_mode(); },
       "grad_mode must be set"},
      {"negative size",
       [](v1::Graph& g) {
         g.mutable_inputs(0)->mutable_meta()->set_shape(0, -1);
       },
       "negative size"},
      {"unknown output", [](v1::Graph& g) { g.set_outputs(0, "nowhere"); },
       "'nowhere'"},
      {"missing arg", [](v1::Graph& g) { g.mutable_nodes(1)->clear_args(); },
       "missing argument"},
      {"bad dtype",
       [](v1::Graph& g) { g.mutable_inputs(0)->mutable_meta()->clear_dtype(); },
       "dtype"},
      {"cuda",
       [](v1::Graph& g) {
         g.mutable_inputs(0)->mutable_meta()->set_device("cuda");
       },
       "'cuda'"},
      {"duplicate name",
       [](v1::Graph& g) { g.mutable_nodes(1)->set_name(g.nodes(0).name()); },
       "duplicate name"},
      {"no outputs", [](v1::Graph& g) { g.clear_outputs(); }, "no outputs"},
  };
  for (const Case& c : cases) {
    v1::CompileRequest r = Request("mlp_mse__rg.json");
    c.corrupt(*r.mutable_graph());
    v1::CompileResponse response;
    grpc::Status st = Compile(r, &response);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << c.what << ": " << st.error_message();
    EXPECT_NE(st.error_message().find(c.named), std::string::npos)
        << c.what << ": " << st.error_message();
  }
}

TEST_F(DaemonTest, OversizeRequestsAreResourceExhausted) {
  // More nodes than the daemon's limit (50).
  v1::CompileRequest big = Request("mlp_mse__rg.json");
  while (big.graph().nodes_size() <= 50)
    *big.mutable_graph()->add_nodes() = big.graph().nodes(0);
  v1::CompileResponse response;
  EXPECT_EQ(Compile(big, &response).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  // More bytes than the message limit (1 MiB).
  v1::CompileRequest huge = Request("mlp_mse__rg.json");
  v1::Constant* c = huge.mutable_graph()->add_constants();
  c->set_name("blob");
  c->set_data(std::string(2 << 20, 'x'));
  EXPECT_EQ(Compile(huge, &response).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(DaemonTest, AdminListsShowsDeletesAndVerifies) {
  v1::CompileResponse a, b;
  ASSERT_THAT(Compile(Request("mlp_mse__rg.json"), &a), IsOk());
  ASSERT_THAT(Compile(Request("layer_norm_softmax__nrg.json"), &b), IsOk());
  ASSERT_THAT(Compile(Request("mlp_mse__rg.json"), &a), IsOk());  // A hit.
  {
    grpc::ClientContext ctx;
    v1::StatsResponse stats;
    ASSERT_THAT(admin_->Stats(&ctx, v1::StatsRequest(), &stats), IsOk());
    EXPECT_EQ(stats.hits(), 1);
    EXPECT_EQ(stats.misses(), 2);
  }
  {
    grpc::ClientContext ctx;
    v1::ListEntriesRequest list;
    list.set_page_size(1);
    v1::ListEntriesResponse page;
    ASSERT_THAT(admin_->ListEntries(&ctx, list, &page), IsOk());
    EXPECT_EQ(page.entries_size(), 1);
    EXPECT_FALSE(page.next_page_token().empty());
  }
  {
    grpc::ClientContext ctx;
    v1::GetEntryRequest get;
    get.set_key(a.key());
    v1::LookupResponse entry;
    ASSERT_THAT(admin_->GetEntry(&ctx, get, &entry), IsOk());
    EXPECT_EQ(entry.entry().mode(), v1::MODE_TRAINING);
  }
  {
    grpc::ClientContext ctx;
    v1::DeleteEntryRequest del;
    del.set_key(a.key());
    v1::DeleteEntryResponse deleted;
    ASSERT_THAT(admin_->DeleteEntry(&ctx, del, &deleted), IsOk());
  }
  {
    grpc::ClientContext ctx;
    v1::LookupRequest lookup;
    lookup.set_key(a.key());
    v1::LookupResponse entry;
    EXPECT_EQ(compile_->Lookup(&ctx, lookup, &entry).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    v1::VerifyResponse report;
    ASSERT_THAT(admin_->Verify(&ctx, v1::VerifyRequest(), &report), IsOk());
    EXPECT_EQ(report.checked(), 1);
    EXPECT_EQ(report.corrupt_size(), 0);
  }
}

// ListEntries(page_size = 2^31-1) once built a page of the whole store in
// memory: pages are capped.
TEST(DaemonPagesTest, AHugePageSizeGetsACappedPage) {
  TempDir dir;
  {
    StoreOptions store_options;
    store_options.path = dir.path() + "/store";
    auto store = RocksDbStore::Open(store_options);
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < 1001; ++i) {
      auto [entry, artifact] = testing::NumberedEntry(i, 64);
      ASSERT_THAT((*store)->Put(entry, {artifact}), IsOk());
    }
  }
  DaemonOptions options;
  options.data_dir = dir.path();
  options.backend_name = "reference";
  auto daemon = Daemon::Start(options);
  ASSERT_THAT(daemon, IsOk());
  auto admin = v1::AdminService::NewStub(grpc::CreateChannel(
      "unix:" + (*daemon)->socket_path(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  v1::ListEntriesRequest list;
  list.set_page_size(std::numeric_limits<int32_t>::max());
  v1::ListEntriesResponse page;
  ASSERT_THAT(admin->ListEntries(&ctx, list, &page), IsOk());
  EXPECT_EQ(page.entries_size(), 1000);
  EXPECT_FALSE(page.next_page_token().empty());
}

TEST_F(DaemonTest, GetBackwardCarryingTheRequestSurvivesADeletedEntry) {
  v1::CompileRequest request = Request("mlp_mse__rg.json");
  v1::CompileResponse forward;
  ASSERT_THAT(Compile(request, &forward), IsOk());
  {
    grpc::ClientContext ctx;
    v1::DeleteEntryRequest del;
    del.set_key(forward.key());
    v1::DeleteEntryResponse deleted;
    ASSERT_THAT(admin_->DeleteEntry(&ctx, del, &deleted), IsOk());
  }
  v1::GetBackwardRequest by_key_only;
  by_key_only.set_key(forward.key());
  v1::GetBackwardResponse backward;
  {
    grpc::ClientContext ctx;
    EXPECT_EQ(compile_->GetBackward(&ctx, by_key_only, &backward).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  v1::GetBackwardRequest with_request = by_key_only;
  *with_request.mutable_request() = request;
  grpc::ClientContext ctx;
  grpc::Status status = compile_->GetBackward(&ctx, with_request, &backward);
  ASSERT_THAT(status, IsOk());
  EXPECT_EQ(backward.backward().pairs_with(),
            forward.forward().calling_convention_hash());
  EXPECT_EQ(backward.backward_digest().size(), 64u);
}

TEST_F(DaemonTest, ServesItsUnixSocketAndRefusesASecondDaemon) {
  auto channel =
      grpc::CreateChannel(absl::StrCat("unix:", daemon_->socket_path()),
                          grpc::InsecureChannelCredentials());
  auto stub = v1::CompileService::NewStub(channel);
  grpc::ClientContext ctx;
  v1::CompileResponse response;
  ASSERT_TRUE(
      stub->Compile(&ctx, Request("mlp_mse__nrg.json"), &response).ok());
  EXPECT_EQ(response.mode(), v1::MODE_INFERENCE);

  DaemonOptions options;
  options.data_dir = dir_.path();
  auto second = Daemon::Start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsUnavailable(second.status()));
  EXPECT_NE(std::string(second.status().message()).find("already serving"),
            std::string::npos);
}

TEST_F(DaemonTest, AnswersTheStandardHealthCheck) {
  // grpc.health.v1.Health/Check with an empty request (the whole server);
  // Debian ships no health.proto, so the bytes are spelled out:
  // HealthCheckResponse{status: SERVING} is field 1, varint 1.
  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", daemon_->port()),
                          grpc::InsecureChannelCredentials());
  grpc::internal::RpcMethod check("/grpc.health.v1.Health/Check",
                                  grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::ClientContext ctx;
  grpc::ByteBuffer request, response;
  grpc::Slice empty;
  request = grpc::ByteBuffer(&empty, 1);
  grpc::Status status =
      grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
          channel.get(), check, &ctx, request, &response);
  ASSERT_THAT(status, IsOk());
  std::vector<grpc::Slice> slices;
  ASSERT_THAT(response.Dump(&slices), IsOk());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));
}

TEST(DaemonStartTest, ReplacesTheStaleSocketOfAKilledDaemon) {
  TempDir dir;
  // What a SIGKILLed daemon leaves: a bound socket file nobody listens on.
  std::string socket_path = SocketPath(dir.path());
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s",
                socket_path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
            0);
  close(fd);
  ASSERT_TRUE(std::filesystem::exists(socket_path));

  DaemonOptions options;
  options.listen = "";
  options.data_dir = dir.path();
  auto daemon = Daemon::Start(options);
  ASSERT_THAT(daemon, IsOk());
  auto channel = grpc::CreateChannel("unix:" + socket_path,
                                     grpc::InsecureChannelCredentials());
  auto admin = v1::AdminService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::StatsResponse stats;
  EXPECT_THAT(admin->Stats(&ctx, v1::StatsRequest(), &stats), IsOk());
}

TEST_F(DaemonTest, EntriesSurviveARestart) {
  v1::CompileResponse first;
  ASSERT_THAT(Compile(Request("layer_norm_softmax__rg.json"), &first), IsOk());
  daemon_->Shutdown(std::chrono::seconds(5));
  daemon_.reset();
  SetUp();  // A new daemon on the same data dir.
  v1::CompileResponse again;
  ASSERT_THAT(Compile(Request("layer_norm_softmax__rg.json"), &again), IsOk());
  EXPECT_EQ(again.status(), v1::COMPILE_STATUS_HIT);
}

TEST(DaemonStartTest, RemovesWhatAKilledDaemonsCompilesLeft) {
  TempDir dir;
  const std::string stale = CompilerTempRoot(dir.path()) + "/aotcache-cc-left";
  std::filesystem::create_directories(stale);
  std::ofstream(stale + "/kernels.cc") << "int x;\n";
  DaemonOptions options;
  options.data_dir = dir.path();
  options.listen = "";
  auto daemon = Daemon::Start(options);
  ASSERT_THAT(daemon, IsOk());
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::is_directory(CompilerTempRoot(dir.path())));
}

TEST(AotcachedProcessTest, SigtermDrainsAndExitsZero) {
  TempDir dir;
  std::string data_dir = "--data_dir=" + dir.path();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd >= 0) dup2(null_fd, STDOUT_FILENO);
    execl(AOTCACHED_PATH, AOTCACHED_PATH, data_dir.c_str(),
          "--listen=127.0.0.1:0", static_cast<char*>(nullptr));
    _exit(127);
  }
  grpc::Status status;
  {  // An idle connection delays the GOAWAY handshake; close it first.
    auto channel = grpc::CreateChannel("unix:" + SocketPath(dir.path()),
                                       grpc::InsecureChannelCredentials());
    auto stub = v1::CompileService::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_wait_for_ready(true);
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
    v1::CompileResponse response;
    status = stub->Compile(&ctx, Request("mlp_mse__rg.json"), &response);
  }
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int wstatus = 0;
  pid_t reaped = 0;
  testing::WaitUntil(
      [&] { return (reaped = waitpid(pid, &wstatus, WNOHANG)) != 0; },
      absl::Seconds(15));
  if (reaped == 0) kill(pid, SIGKILL);
  ASSERT_THAT(status, IsOk());
  ASSERT_EQ(reaped, pid) << "aotcached did not exit after SIGTERM";
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0);
  EXPECT_FALSE(std::filesystem::exists(SocketPath(dir.path())));
}

}  // namespace
}  // namespace aotcache
