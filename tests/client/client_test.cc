// aotcache::Client against a real aotcached (in process on 127.0.0.1:0, or
// the aotcached binary it starts itself), checked against torch eager's
// values and gradients from the fixtures.
#include "client/cpp/client.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/cpp/daemon_launcher.h"
#include "core/backend/native/native_backend.h"
#include "core/backend/reference_backend.h"
#include "core/key/target.h"
#include "core/paths/data_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/testing/daemon_fixture.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/value_fixtures.h"
#include "tests/testing/wait.h"
#include "tests/testing/wrapping_backend.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::ScopedEnv;
using ::aotcache::testing::TempDir;
using ::testing::HasSubstr;

constexpr char kGraph[] = "mlp_mse__rg.json";  // x, w1, b1, w2, b2, y → loss

// Runs forward and backward of `f` on the fixture's inputs and checks both
// against what torch eager computed.
void ExpectEagerValuesAndGradients(CachedFunction& f) {
  testing::EagerRun eager = testing::LoadEagerRun(kGraph);
  std::vector<Tensor> inputs = eager.inputs;
  auto forward = f.Forward(&inputs);
  ASSERT_THAT(forward, IsOk());
  ASSERT_EQ(forward->outputs.size(), eager.outputs.size());
  EXPECT_EQ(testing::CompareValues(forward->outputs[0], eager.outputs[0]), "");

  google::protobuf::Struct grads =
      testing::LoadJsonFixture("grads/" + std::string(kGraph));
  const auto& cotangents =
      grads.fields().at("output_cotangents").list_value().values();
  Tensor tangent = testing::DecodeTensorValue(cotangents[0].struct_value());
  auto backward = f.Backward(forward->saved, {tangent});
  ASSERT_THAT(backward, IsOk());
  const auto& want = grads.fields().at("input_grads").list_value().values();
  ASSERT_EQ(backward->inputs.size(), static_cast<size_t>(want.size()));
  for (int i = 0; i < want.size(); ++i) {
    bool eager_has = want[i].has_struct_value();
    ASSERT_EQ(backward->inputs[i].has_value(), eager_has) << "input " << i;
    if (eager_has) {
      EXPECT_EQ(testing::CompareValues(
                    *backward->inputs[i],
                    testing::DecodeTensorValue(want[i].struct_value())),
                "")
          << "input " << i;
    }
  }
}

class ClientTest : public testing::DaemonFixture {
 protected:
  void SetUp() override {
    DaemonFixture::SetUp();
    options_.server = address();
    options_.artifact_dir = artifacts_.path();
  }

  TempDir artifacts_;
  ClientOptions options_;
};

TEST_F(ClientTest, LazyBackwardAcrossFourClients) {
  v1::Graph graph = testing::LoadGraphOrDie(absl::StrCat("graphs/", kGraph));
  testing::EagerRun eager = testing::LoadEagerRun(kGraph);
  auto counters = [&] { return daemon_->cache().counters(); };

  // 1: compiles the forward and never runs backward.
  Client first(options_);
  auto f1 = first.Compile(graph);
  ASSERT_THAT(f1, IsOk());
  EXPECT_EQ((*f1)->source(), Source::kServer);
  EXPECT_EQ((*f1)->status(), v1::COMPILE_STATUS_MISS);
  EXPECT_EQ((*f1)->mode(), v1::MODE_TRAINING);
  std::vector<Tensor> inputs = eager.inputs;
  ASSERT_THAT((*f1)->Forward(&inputs), IsOk());
  EXPECT_EQ(counters().backward_compiles, 0);

  // 2: hits the forward; still nobody asked for the backward.
  Client second(options_);
  auto f2 = second.Compile(graph);
  ASSERT_THAT(f2, IsOk());
  EXPECT_EQ((*f2)->status(), v1::COMPILE_STATUS_HIT);
  EXPECT_EQ((*f2)->key(), (*f1)->key());
  EXPECT_EQ(counters().backward_compiles, 0);

  // 3: runs backward: the server compiles it, once.
  Client third(options_);
  auto f3 = third.Compile(graph);
  ASSERT_THAT(f3, IsOk());
  ExpectEagerValuesAndGradients(**f3);
  EXPECT_EQ(counters().backward_compiles, 1);

  // 4: hits both.
  Client fourth(options_);
  auto f4 = fourth.Compile(graph);
  ASSERT_THAT(f4, IsOk());
  EXPECT_EQ((*f4)->status(), v1::COMPILE_STATUS_HIT);
  ExpectEagerValuesAndGradients(**f4);
  EXPECT_EQ(counters().backward_compiles, 1);
  EXPECT_EQ(counters().backward_hits, 1);
}

TEST_F(ClientTest, ABackwardTheServerHasIsFetchedWhileTheForwardRuns) {
  v1::Graph graph = testing::LoadGraphOrDie(absl::StrCat("graphs/", kGraph));
  auto counters = [&] { return daemon_->cache().counters(); };
  {
    Client first(options_);
    auto f = first.Compile(graph);
    ASSERT_THAT(f, IsOk());
    ExpectEagerValuesAndGradients(**f);  // The server compiles the backward.
  }
  EXPECT_EQ(counters().backward_hits, 0);

  // A new process's compile of it: the backward arrives without a Backward
  // call, and the first Backward then runs it.
  Client second(options_);
  auto f = second.Compile(graph);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ((*f)->backward_state(), v1::BACKWARD_STATE_READY);
  EXPECT_TRUE(testing::WaitUntil([&] { return counters().backward_hits == 1; },
                                 absl::Seconds(10)));
  ExpectEagerValuesAndGradients(**f);
  EXPECT_EQ(counters().backward_hits, 1);
}

TEST_F(ClientTest, RepeatsHitWithoutDecoding) {
  Client client(options_);
  for (int i = 0; i < 3; ++i) {
    // A fresh graph each time: its kwargs maps (of up to 4 entries) are new
    // instances, which protobuf iterates in an order of their own.
    auto f =
        client.Compile(testing::LoadGraphOrDie("graphs/assorted_ops__rg.json"));
    ASSERT_THAT(f, IsOk());
    EXPECT_EQ((*f)->status(),
              i == 0 ? v1::COMPILE_STATUS_MISS : v1::COMPILE_STATUS_HIT);
  }
  EXPECT_EQ(daemon_->cache().counters().memoized_hits, 2);
}

TEST_F(ClientTest, FunctionsShareALoadedForwardAndKeepTheirOwnBackward) {
  Client client(options_);
  v1::Graph graph = testing::LoadGraphOrDie(absl::StrCat("graphs/", kGraph));
  std::vector<std::unique_ptr<CachedFunction>> functions;
  for (int i = 0; i < 3; ++i) {
    auto f = client.Compile(graph);
    ASSERT_THAT(f, IsOk());
    functions.push_back(*std::move(f));
  }
  EXPECT_EQ(client.counters().loaded_forward_reuses, 2);
  EXPECT_EQ(client.counters().artifacts_fetched, 1);
  for (auto& f : functions) ExpectEagerValuesAndGradients(*f);
  EXPECT_EQ(client.counters().artifacts_fetched, 2);  // One backward.
}

TEST_F(ClientTest, AMalformedGraphIsAnErrorNotAFallback) {
  v1::Graph graph = testing::LoadGraphOrDie(absl::StrCat("graphs/", kGraph));
  graph.mutable_nodes(0)->set_op("aten.no_such_op.default");
  Client client(options_);
  auto f = client.Compile(graph);
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(f.status())) << f.status();
  EXPECT_THAT(f.status().message(), HasSubstr("aten.no_such_op"));
}

TEST_F(ClientTest, InferenceFunctionsHaveNoBackward) {
  Client client(options_);
  auto f = client.Compile(testing::LoadGraphOrDie("graphs/mlp_mse__nrg.json"));
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ((*f)->mode(), v1::MODE_INFERENCE);
  auto grads = (*f)->Backward({}, {});
  EXPECT_TRUE(absl::IsFailedPrecondition(grads.status())) << grads.status();
}

TEST(ClientPairingTest, ABackwardThatDoesNotPairIsAClearError) {
  TempDir dir, artifacts;
  // The reference backend of "another build": its backward artifacts pair
  // with a forward calling convention that no forward of this build has.
  testing::WrappingBackend backend;
  backend.edit = [](const ArtifactSpec& spec, v1::Artifact& artifact) {
    if (spec.kind == v1::ARTIFACT_KIND_BACKWARD) {
      artifact.set_pairs_with("a forward of another build");
    }
  };
  DaemonOptions daemon_options;
  daemon_options.data_dir = dir.path();
  daemon_options.backend = &backend;
  auto daemon = Daemon::Start(daemon_options);
  ASSERT_THAT(daemon, IsOk());
  ClientOptions options;
  options.server = absl::StrCat("127.0.0.1:", (*daemon)->port());
  options.artifact_dir = artifacts.path();
  Client client(options);
  auto f = client.Compile(testing::LoadGraphOrDie("graphs/mlp_mse__rg.json"));
  ASSERT_THAT(f, IsOk());
  testing::EagerRun eager = testing::LoadEagerRun(kGraph);
  std::vector<Tensor> inputs = eager.inputs;
  auto forward = (*f)->Forward(&inputs);
  ASSERT_THAT(forward, IsOk());
  auto grads = (*f)->Backward(forward->saved, {eager.outputs[0]});
  ASSERT_FALSE(grads.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(grads.status())) << grads.status();
  EXPECT_THAT(grads.status().message(), HasSubstr(options.server));
  EXPECT_THAT(grads.status().message(), HasSubstr("another build"));
}

// A server that builds native code for x86-64-v4 whatever the request
// names: what a client on an older CPU would get from a poisoned entry.
class V4Backend final : public Backend {
 public:
  absl::string_view name() const override { return native_->name(); }
  absl::string_view version() const override { return native_->version(); }
  absl::StatusOr<v1::Target> ArtifactTarget(
      const v1::Target& requested) const override {
    v1::Target v4 = requested;
    v4.set_cpu("x86-64-v4");
    return native_->ArtifactTarget(v4);
  }

 private:
  absl::StatusOr<v1::Artifact> CompileCanonical(
      const v1::Graph& graph, const ArtifactSpec& spec) const override {
    ArtifactSpec v4 = spec;
    v4.target.set_cpu("x86-64-v4");
    return native_->Compile(graph, v4);
  }
  std::unique_ptr<NativeBackend> native_ = *NativeBackend::Create();
};

TEST(ClientCpuLevelTest, KernelsForALaterCpuAreCompiledHereNotLoaded) {
  if (HostTarget().cpu() != "x86-64-v4") {
    GTEST_SKIP() << "needs an x86-64-v4 host to build for it";
  }
  TempDir dir, artifacts;
  V4Backend backend;
  DaemonOptions daemon_options;
  daemon_options.data_dir = dir.path();
  daemon_options.backend = &backend;
  auto daemon = Daemon::Start(daemon_options);
  ASSERT_THAT(daemon, IsOk());
  ClientOptions options;
  options.server = absl::StrCat("127.0.0.1:", (*daemon)->port());
  options.artifact_dir = artifacts.path();
  ScopedEnv older("AOTCACHE_TARGET_CPU", "x86-64-v3");
  Client client(options);
  auto f = client.Compile(testing::LoadGraphOrDie("graphs/mlp_mse__rg.json"));
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ((*f)->source(), Source::kInProcess);
  EXPECT_THAT((*f)->fallback_reason(), HasSubstr("'x86-64-v4'"));
  ExpectEagerValuesAndGradients(**f);
}

TEST_F(ClientTest, ArtifactsCrossTheWireOncePerMachine) {
  v1::Graph graph = testing::LoadGraphOrDie(absl::StrCat("graphs/", kGraph));
  Client first(options_);
  auto f = first.Compile(graph);
  ASSERT_THAT(f, IsOk());
  ExpectEagerValuesAndGradients(**f);
  EXPECT_EQ(first.counters().artifacts_fetched, 2);  // Forward, backward.
  EXPECT_GT(first.counters().bytes_fetched, 0);

  Client second(options_);  // Same machine: same artifact dir.
  auto g = second.Compile(graph);
  ASSERT_THAT(g, IsOk());
  ExpectEagerValuesAndGradients(**g);
  EXPECT_EQ(second.counters().artifacts_fetched, 0);
  EXPECT_EQ(second.counters().local_artifact_hits, 2);

  // A damaged local copy is dropped and fetched again, never run.
  for (const auto& file :
       std::filesystem::recursive_directory_iterator(artifacts_.path())) {
    if (file.is_regular_file()) {
      std::ofstream(file.path(), std::ios::binary | std::ios::app) << "x";
    }
  }
  Client third(options_);
  auto h = third.Compile(graph);
  ASSERT_THAT(h, IsOk());
  ExpectEagerValuesAndGradients(**h);
  EXPECT_EQ(third.counters().artifacts_fetched, 2);
  EXPECT_EQ(third.counters().local_artifact_hits, 0);
}

TEST_F(ClientTest, ArtifactsOverOneChunkAreStreamed) {
  // A chain of 20,000 adds: an inference artifact of several MiB.
  v1::Graph graph = testing::GraphFromJson(R"json({"inputs": [{"name": "x",
      "meta": {"shape": [4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
      "nodes": [], "outputs": []})json");
  std::string previous = "x";
  for (int i = 0; i < 20000; ++i) {
    v1::Node* node = graph.add_nodes();
    node->set_name(absl::StrCat("add", i));
    node->set_op("aten.add.Tensor");
    node->add_args()->set_node(previous);
    node->add_args()->set_node("x");
    node->set_grad_mode(v1::GRAD_MODE_ENABLED);
    previous = node->name();
  }
  graph.add_outputs(previous);
  Client client(options_);
  auto f = client.Compile(graph);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ((*f)->source(), Source::kServer) << (*f)->fallback_reason();
  EXPECT_EQ(client.counters().artifacts_fetched, 1);
  EXPECT_GT(client.counters().bytes_fetched, 1 << 20);
  std::vector<Tensor> inputs = {Tensor::Contiguous({4}, v1::DTYPE_FLOAT32)};
  float* x = reinterpret_cast<float*>(inputs[0].storage_data());
  for (int i = 0; i < 4; ++i) x[i] = 0.5f * static_cast<float>(i);
  auto out = (*f)->Forward(&inputs);
  ASSERT_THAT(out, IsOk());
  std::vector<double> y = out->outputs[0].ToDoubles();
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(y[i], 20001 * 0.5 * i) << i;
}

TEST(ClientFallbackTest, NoServerMeansCompilingInProcess) {
  TempDir dir;
  ClientOptions options;
  options.server = "unix:" + SocketPath(dir.path());  // Nobody listens.
  options.max_attempts = 2;
  options.artifact_dir = "none";
  Client client(options);
  auto f =
      client.Compile(testing::LoadGraphOrDie(absl::StrCat("graphs/", kGraph)));
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ((*f)->source(), Source::kInProcess);
  EXPECT_THAT((*f)->fallback_reason(), HasSubstr(options.server));
  ExpectEagerValuesAndGradients(**f);
}

TEST(ClientRetryTest, UnavailableIsRetriedUntilTheDaemonIsUp) {
  TempDir dir;
  ClientOptions options;
  options.server = "unix:" + SocketPath(dir.path());
  options.max_attempts = 8;  // 50 ms doubling: over 6 s in all.
  options.artifact_dir = "none";
  Client client(options);
  // The daemon comes up once the client has been refused and retries.
  std::unique_ptr<Daemon> daemon;
  std::thread late_start([&] {
    if (!testing::WaitUntil(
            [&] { return client.counters().unavailable_retries >= 1; },
            absl::Seconds(10))) {
      return;
    }
    DaemonOptions daemon_options;
    daemon_options.listen = "";
    daemon_options.data_dir = dir.path();
    auto started = Daemon::Start(daemon_options);
    if (started.ok()) daemon = *std::move(started);
  });
  auto f =
      client.Compile(testing::LoadGraphOrDie(absl::StrCat("graphs/", kGraph)));
  late_start.join();
  ASSERT_NE(daemon, nullptr);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ((*f)->source(), Source::kServer) << (*f)->fallback_reason();
  EXPECT_GE(client.counters().unavailable_retries, 1);
}

TEST(ClientDefaultDaemonTest, StartsADetachedDaemonThatExitsWhenIdle) {
  TempDir cache_home;
  ScopedEnv xdg("XDG_CACHE_HOME", cache_home.path());
  ScopedEnv aotcached("AOTCACHED", std::string(AOTCACHED_PATH));
  ScopedEnv no_server("AOTCACHE_SERVER", std::nullopt);
  v1::Graph graph = testing::LoadGraphOrDie(absl::StrCat("graphs/", kGraph));
  ClientOptions options;
  options.daemon_idle_exit = absl::Seconds(2);
  std::string socket = SocketPath(DefaultDataDir());
  Client first(options);
  EXPECT_EQ(first.target(), "unix:" + socket);
  auto f = first.Compile(graph);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ((*f)->source(), Source::kServer) << (*f)->fallback_reason();
  EXPECT_TRUE(std::filesystem::exists(socket));
  EXPECT_TRUE(std::filesystem::exists(DefaultDataDir() + "/aotcached.log"));

  // A second client finds the running daemon: the entry is a hit.
  Client second(options);
  auto g = second.Compile(graph);
  ASSERT_THAT(g, IsOk());
  EXPECT_EQ((*g)->status(), v1::COMPILE_STATUS_HIT);

  // Idle for 2 s, it exits and removes its socket.
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return !std::filesystem::exists(socket); }, absl::Seconds(10)));

  // The first client notices (compiling in process once) and starts it
  // again; the store kept the entry.
  auto h = first.Compile(graph);
  ASSERT_THAT(h, IsOk());
  EXPECT_EQ((*h)->source(), Source::kInProcess);
  auto k = first.Compile(graph);
  ASSERT_THAT(k, IsOk());
  EXPECT_EQ((*k)->source(), Source::kServer) << (*k)->fallback_reason();
  EXPECT_EQ((*k)->status(), v1::COMPILE_STATUS_HIT);
}

TEST(FindAotcachedTest, HonoursTheVariableAndSaysWhatItSearched) {
  {
    ScopedEnv aotcached("AOTCACHED", std::string(AOTCACHED_PATH));
    auto found = FindAotcached();
    ASSERT_THAT(found, IsOk());
    EXPECT_EQ(*found, AOTCACHED_PATH);
  }
  {
    ScopedEnv aotcached("AOTCACHED", std::string("/nonexistent/aotcached"));
    EXPECT_TRUE(absl::IsNotFound(FindAotcached().status()));
  }
  ScopedEnv aotcached("AOTCACHED", std::nullopt);
  ScopedEnv path("PATH", std::string("/nonexistent"));
  auto missing = FindAotcached();
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("none on PATH"));
}

}  // namespace
}  // namespace aotcache
