// aotcached under requests an attacker or a careless client would send: a
// real daemon on 127.0.0.1:0 over RocksDB in a temp dir, on its default
// backend (native where the compiler runs). Each test is a defect once seen
// on the landed daemon: code smuggled through names, a crash, a bound check
// that overflowed, a port shared with another daemon, files any user could
// open.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "core/graph/deterministic_bytes.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/impl/client_unary_call.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/testing/daemon_fixture.h"
#include "tests/testing/disguise.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::TempDir;

class HostileRequestTest : public testing::DaemonFixture {
 protected:
  grpc::Status Compile(const v1::Graph& graph, v1::CompileResponse* out,
                       bool keep_input_mutations = false,
                       const v1::Target& target = v1::Target()) {
    v1::CompileRequest r;
    *r.mutable_graph() = graph;
    r.mutable_options()->set_keep_input_mutations(keep_input_mutations);
    *r.mutable_target() = target;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(60));
    return compile_->Compile(&ctx, r, out);
  }

  grpc::Status Backward(const std::string& key, v1::GetBackwardResponse* out) {
    v1::GetBackwardRequest r;
    r.set_key(key);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(60));
    return compile_->GetBackward(&ctx, r, out);
  }
};

// The attack: compile the graph under names that carry code, so that the
// artifact stored under the clean graph's key runs it in every client.
TEST_F(HostileRequestTest, NamesNeverReachTheArtifactAVictimIsServed) {
  v1::Graph clean = testing::LoadGraphOrDie("graphs/mlp_mse__rg.json");
  v1::CompileResponse poisoned, victim;
  grpc::Status st = Compile(testing::Disguised(clean), &poisoned);
  ASSERT_THAT(st, IsOk());
  ASSERT_EQ(poisoned.status(), v1::COMPILE_STATUS_MISS);
  v1::GetBackwardResponse poisoned_backward, victim_backward;
  st = Backward(poisoned.key(), &poisoned_backward);
  ASSERT_THAT(st, IsOk());

  ASSERT_THAT(Compile(clean, &victim), IsOk());
  EXPECT_EQ(victim.status(), v1::COMPILE_STATUS_HIT);
  EXPECT_EQ(victim.key(), poisoned.key());
  ASSERT_THAT(Backward(victim.key(), &victim_backward), IsOk());
  for (const std::string& bytes :
       {DeterministicBytes(victim.forward()),
        DeterministicBytes(victim_backward.backward())}) {
    EXPECT_FALSE(absl::StrContains(bytes, testing::kHostileMarker));
    EXPECT_FALSE(absl::StrContains(bytes, "#include \"/etc"));
  }

  // What a clean compile in a fresh store makes, byte for byte.
  TempDir other;
  DaemonOptions options;
  options.data_dir = other.path();
  options.listen = "";
  daemon_.reset();
  auto fresh = Daemon::Start(options);
  ASSERT_THAT(fresh, IsOk());
  auto channel = grpc::CreateChannel("unix:" + (*fresh)->socket_path(),
                                     grpc::InsecureChannelCredentials());
  compile_ = v1::CompileService::NewStub(channel);
  v1::CompileResponse reference;
  ASSERT_THAT(Compile(clean, &reference), IsOk());
  EXPECT_EQ(reference.status(), v1::COMPILE_STATUS_MISS);
  EXPECT_EQ(DeterministicBytes(reference.forward()),
            DeterministicBytes(victim.forward()));
}

// maximum/minimum with a Python number operand, on an input that requires
// grad: the derivative read the number as a saved tensor (a null
// dereference that killed the daemon).
TEST_F(HostileRequestTest, MaximumWithANumberOperandCompilesWithABackward) {
  for (const char* op : {"aten.maximum.default", "aten.minimum.default"}) {
    v1::Graph g = testing::GraphFromJson(absl::StrCat(R"json({
      "inputs": [{"name": "x", "meta": {"shape": [4], "dtype": "DTYPE_FLOAT32",
                  "requires_grad": true, "is_leaf": true}}],
      "nodes": [{"name": "m", "op": ")json",
                                                      op, R"json(",
                 "args": [{"node": "x"}, {"int": 3}],
                 "grad_mode": "GRAD_MODE_ENABLED"}],
      "outputs": ["m"]})json"));
    v1::CompileResponse response;
    grpc::Status st = Compile(g, &response);
    ASSERT_THAT(st, IsOk());
    EXPECT_EQ(response.mode(), v1::MODE_TRAINING) << op;
    v1::GetBackwardResponse backward;
    st = Backward(response.key(), &backward);
    EXPECT_THAT(st, IsOk());
  }
}

// keep_input_mutations with mutated inputs that share a storage: the copy
// back read the meta of an input merged into a synthetic base (out of
// bounds).
TEST_F(HostileRequestTest, KeptMutationsOfAliasedInputsCompile) {
  for (const char* file :
       {"dupe_arg_mutation__nrg.json", "dupe_arg_mutation__rg.json"}) {
    v1::CompileResponse response;
    grpc::Status st =
        Compile(testing::LoadGraphOrDie(absl::StrCat("graphs/", file)),
                &response, /*keep_input_mutations=*/true);
    EXPECT_THAT(st, IsOk());
  }
}

// Each size and stride within bounds, their product past int64: the storage
// bound check overflowed and let the tensor through.
TEST_F(HostileRequestTest, AnOverflowingStorageExtentIsRefused) {
  v1::Graph g = testing::GraphFromJson(R"json({
    "inputs": [{"name": "x", "storage": 0, "meta": {"shape": ["1099511627776"],
                "stride": ["1099511627776"], "dtype": "DTYPE_FLOAT32",
                "is_leaf": true}}],
    "storages": [{"id": 0, "size": 1}],
    "nodes": [{"name": "y", "op": "aten.neg.default", "args": [{"node": "x"}],
               "grad_mode": "GRAD_MODE_ENABLED"}],
    "outputs": ["y"]})json");
  v1::CompileResponse response;
  grpc::Status st = Compile(g, &response);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << st.error_message();
  EXPECT_TRUE(absl::StrContains(st.error_message(), "inputs[0]"))
      << st.error_message();
}

// An empty tensor whose other sizes multiply past int64: its contiguous
// strides overflowed in validation (the sanitizer build died; the release
// daemon stored the graph).
TEST_F(HostileRequestTest, AnEmptyTensorWithOverflowingStridesIsRefused) {
  v1::Graph g = testing::GraphFromJson(R"json({
    "inputs": [{"name": "x", "meta": {"shape": ["0", "1099511627776",
                "1099511627776"], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [{"name": "y", "op": "aten.neg.default", "args": [{"node": "x"}],
               "grad_mode": "GRAD_MODE_ENABLED"}],
    "outputs": ["y"]})json");
  v1::CompileResponse response;
  grpc::Status st = Compile(g, &response);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << st.error_message();
  EXPECT_TRUE(absl::StrContains(st.error_message(), "inputs[0]"))
      << st.error_message();
}

// A 1 MiB op name: the error names it, cut short, instead of a gRPC
// metadata-size error.
TEST_F(HostileRequestTest, ErrorsQuoteRequestTextCutShort) {
  v1::Graph g = testing::LoadGraphOrDie("graphs/mlp_mse__rg.json");
  g.mutable_nodes(0)->set_op(std::string(1 << 20, 'z') + "\n");
  v1::CompileResponse response;
  grpc::Status st = Compile(g, &response);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << st.error_message().substr(0, 200);
  EXPECT_TRUE(absl::StrContains(st.error_message(), "unsupported op 'zzz"))
      << st.error_message().substr(0, 200);
  EXPECT_TRUE(absl::StrContains(st.error_message(), "(1048577 bytes)"));
  EXPECT_LT(st.error_message().size(), 512u);
}

TEST_F(HostileRequestTest,
       GetBackwardOfBytesThatAreNoRequestIsInvalidArgument) {
  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", daemon_->port()),
                          grpc::InsecureChannelCredentials());
  grpc::internal::RpcMethod method("/aotcache.v1.CompileService/GetBackward",
                                   grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::ClientContext ctx;
  grpc::Slice junk(std::string("\xff\xff\xff\xff not a request"));
  grpc::ByteBuffer request(&junk, 1), response;
  grpc::Status st =
      grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
          channel.get(), method, &ctx, request, &response);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(st.error_message(), "GetBackwardRequest"))
      << st.error_message();
}

v1::Target X86Target(const std::string& cpu) {
  v1::Target target;
  target.set_arch("x86_64");
  target.set_abi("linux-gnu");
  target.set_cpu(cpu);
  return target;
}

// The attack: compile for a CPU level older hosts lack (AVX-512), so that
// they load it on a hit and die of SIGILL. The level is key material: each
// level has entries of its own.
TEST_F(HostileRequestTest, TheCpuLevelIsKeyMaterial) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 CPU levels";
#endif
  v1::Graph g = testing::LoadGraphOrDie("graphs/mlp_mse__rg.json");
  v1::CompileResponse v4, v3, baseline, v4_again;
  ASSERT_THAT(Compile(g, &v4, false, X86Target("x86-64-v4")), IsOk());
  ASSERT_THAT(Compile(g, &v3, false, X86Target("x86-64-v3")), IsOk());
  ASSERT_THAT(Compile(g, &baseline, false, X86Target("")), IsOk());
  ASSERT_THAT(Compile(g, &v4_again, false, X86Target("x86-64-v4")), IsOk());
  EXPECT_EQ(v4.status(), v1::COMPILE_STATUS_MISS);
  EXPECT_EQ(v3.status(), v1::COMPILE_STATUS_MISS);
  EXPECT_EQ(baseline.status(), v1::COMPILE_STATUS_MISS);
  EXPECT_NE(v4.key(), v3.key());
  EXPECT_NE(v3.key(), baseline.key());
  EXPECT_EQ(v4_again.status(), v1::COMPILE_STATUS_HIT);
  EXPECT_EQ(v4_again.key(), v4.key());
  // The empty level is the architecture's baseline, spelled or not.
  v1::CompileResponse spelled;
  ASSERT_THAT(Compile(g, &spelled, false, X86Target("x86-64")), IsOk());
  EXPECT_EQ(spelled.status(), v1::COMPILE_STATUS_HIT);
  EXPECT_EQ(spelled.key(), baseline.key());
}

// One request with a bogus target made every later compile of the graph
// fail for ten minutes: refused before it reaches the failure memory.
TEST_F(HostileRequestTest, ABogusTargetIsRefusedAndPoisonsNothing) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 targets";
#endif
  v1::Graph g = testing::LoadGraphOrDie("graphs/mlp_mse__rg.json");
  v1::Target bogus[4] = {X86Target("x86-64-v9"), X86Target("native"),
                         X86Target("x86-64-v3 -fplugin=x.so"), v1::Target()};
  bogus[3].set_abi("linux-gnu\n");
  const char* field[4] = {"target.cpu", "target.cpu", "target.cpu",
                          "target.abi"};
  for (int i = 0; i < 4; ++i) {
    v1::CompileResponse refused;
    grpc::Status st = Compile(g, &refused, false, bogus[i]);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << st.error_message();
    EXPECT_TRUE(absl::StrContains(st.error_message(), field[i]))
        << st.error_message();
  }
  v1::CompileResponse served;
  grpc::Status st = Compile(g, &served, false, X86Target(""));
  ASSERT_THAT(st, IsOk());
  EXPECT_EQ(served.status(), v1::COMPILE_STATUS_MISS);
}

TEST_F(HostileRequestTest, ASecondDaemonOnTheSamePortIsRefused) {
  TempDir other;
  DaemonOptions options;
  options.data_dir = other.path();
  options.listen = absl::StrCat("127.0.0.1:", daemon_->port());
  auto second = Daemon::Start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
  EXPECT_TRUE(absl::StrContains(second.status().message(), "in use"))
      << second.status();
}

TEST(DaemonFilesTest, TheDataDirAndSocketAreTheOwnersWhateverTheUmask) {
  TempDir dir;
  // A missing parent too: made the owner's as well (the XDG cache home).
  const std::string data_dir = dir.path() + "/cache/data";
  // A --listen socket too, outside the data dir (once created 0777 here).
  const std::string listen_socket = dir.path() + "/listen.sock";
  mode_t old = umask(0);
  DaemonOptions options;
  options.data_dir = data_dir;
  options.listen = "unix:" + listen_socket;
  auto daemon = Daemon::Start(options);
  umask(old);
  ASSERT_THAT(daemon, IsOk());
  struct stat st;
  for (const std::string& made : {dir.path() + "/cache", data_dir}) {
    ASSERT_EQ(stat(made.c_str(), &st), 0) << made;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << made;
  }
  for (const std::string& socket : {(*daemon)->socket_path(), listen_socket}) {
    ASSERT_EQ(stat(socket.c_str(), &st), 0) << socket;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << socket;
  }
}

// The attack: another local user makes the compiler's temp root before the
// daemon (it was a predictable name under $TMPDIR) and renames the
// daemon's per-compile dirs to swap the shared objects it stores. The root
// is the data dir's now, made anew at each start and verified.
TEST(DaemonFilesTest, AnotherUserCannotSwapTheCompilersDirs) {
  TempDir dir, attacker;
  ASSERT_EQ(chmod(attacker.path().c_str(), 0777), 0);
  const bool as_root = geteuid() == 0;
  if (as_root) {
    ASSERT_EQ(chown(attacker.path().c_str(), 65534, 65534), 0);
  }
  const std::string data_dir = dir.path() + "/data";
  ASSERT_EQ(mkdir(data_dir.c_str(), 0700), 0);
  const std::string root = CompilerTempRoot(data_dir);
  std::filesystem::create_directory_symlink(attacker.path(), root);
  DaemonOptions options;
  options.data_dir = data_dir;
  options.backend_name = "native";
  auto daemon = Daemon::Start(options);
  ASSERT_THAT(daemon, IsOk());
  struct stat st;
  ASSERT_EQ(lstat(root.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*daemon)->port()),
                          grpc::InsecureChannelCredentials());
  auto compile = v1::CompileService::NewStub(channel);
  v1::CompileRequest request;
  *request.mutable_graph() = testing::LoadGraphOrDie("graphs/mlp_mse__rg.json");
  grpc::ClientContext ctx;
  v1::CompileResponse response;
  grpc::Status compiled = compile->Compile(&ctx, request, &response);
  ASSERT_THAT(compiled, IsOk());
  EXPECT_TRUE(std::filesystem::is_empty(attacker.path()));
}

TEST(DaemonFilesTest, ADataDirOtherUsersCanWriteIsRefused) {
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0777), 0);
  DaemonOptions options;
  options.data_dir = dir.path();
  options.listen = "";
  auto daemon = Daemon::Start(options);
  ASSERT_FALSE(daemon.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(daemon.status())) << daemon.status();
  EXPECT_TRUE(
      absl::StrContains(daemon.status().message(), "writable by other users"))
      << daemon.status();
  // Its group may write it (a volume mounted for the daemon's group).
  ASSERT_EQ(chmod(dir.path().c_str(), 0770), 0);
  EXPECT_THAT(Daemon::Start(options), IsOk());
  if (geteuid() != 0) return;  // Only root can give a dir away.
  ASSERT_EQ(chmod(dir.path().c_str(), 0700), 0);
  ASSERT_EQ(chown(dir.path().c_str(), 65534, 65534), 0);
  daemon = Daemon::Start(options);
  ASSERT_FALSE(daemon.ok());
  EXPECT_TRUE(absl::StrContains(daemon.status().message(), "another user"))
      << daemon.status();
}

}  // namespace
}  // namespace aotcache
