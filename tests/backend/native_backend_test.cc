// The native backend against the reference backend: every traced scenario
// graph (tests/fixtures/graphs) compiled by both, run by CompiledFunction on
// the scenario's inputs, gives the same outputs, inputs after the call and
// (training) gradients within float32 rtol 1e-5 / atol 1e-6 (float64
// tighter); plus an elementwise chain, the group-aware buffer plan, compiler
// errors, the target's CPU level and the backend's version
// (native_kernels_test.cc has each kernel kind).
#include "core/backend/native/native_backend.h"

#include <fstream>
#include <memory>

#include "core/analysis/analyze.h"
#include "core/backend/buffer_plan.h"
#include "core/backend/compile_plan.h"
#include "core/backend/reference_backend.h"
#include "core/key/target.h"
#include "core/runtime/compiled_function.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backend/compare_backends.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/scoped_env.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/value_fixtures.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::testing::HasSubstr;

// Loaded shared objects go to <data dir>/native: a temp dir, never the
// real cache.
class PrivateCacheEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    dir_ = std::make_unique<testing::TempDir>();
    env_ = std::make_unique<testing::ScopedEnv>("XDG_CACHE_HOME", dir_->path());
  }
  void TearDown() override {
    env_.reset();
    dir_.reset();
  }

 private:
  std::unique_ptr<testing::TempDir> dir_;
  std::unique_ptr<testing::ScopedEnv> env_;
};
const auto* const kPrivateCache =
    ::testing::AddGlobalTestEnvironment(new PrivateCacheEnvironment);

using testing::Native;

class NativeMatchesReferenceTest
    : public ::testing::TestWithParam<std::string> {};

TEST_P(NativeMatchesReferenceTest, OutputsInputsAndGradients) {
  const std::string file = GetParam();
  if (testing::LoadEagerRun(file).uses_rng) GTEST_SKIP() << "random ops";
  v1::Graph graph = testing::LoadGraphOrDie("graphs/" + file);
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<CompilePlan> plan = PlanCompilation(*a);
  if (absl::IsUnimplemented(plan.status())) GTEST_SKIP() << plan.status();
  ASSERT_THAT(plan, IsOk());
  const std::vector<Tensor> inputs = testing::LoadEagerRun(file).inputs;
  testing::ExpectSameRuns(testing::RunWith(Native(), *plan, inputs),
                          testing::RunWith(ReferenceBackend(), *plan, inputs));
}

std::vector<std::string> ValueFixtureGraphs() {
  std::vector<std::string> out;
  for (const std::string& file : testing::FixtureGraphFiles()) {
    if (std::ifstream(testing::FixturePath("values/" + file)))
      out.push_back(file);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Traced, NativeMatchesReferenceTest,
                         ::testing::ValuesIn(ValueFixtureGraphs()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name =
                               info.param.substr(0, info.param.size() - 5);
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           }
                           return name;
                         });

// A chain of elementwise ops becomes one kernel in one loop.
TEST(NativeBackendTest, FusesAnElementwiseChainIntoOneLoop) {
  v1::Graph graph = testing::GraphFromJson(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [1000], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "y", "meta": {"shape": [1000], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "a", "op": "aten.sin.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "b", "op": "aten.mul.Tensor", "args": [{"node": "a"}, {"node": "y"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "c", "op": "aten.tanh.default", "args": [{"node": "b"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "d", "op": "aten.add.Tensor", "args": [{"node": "c"}, {"float": 0.5}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "e", "op": "aten.sigmoid.default", "args": [{"node": "d"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["e"]})json");
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<CompilePlan> plan = PlanCompilation(*a);
  ASSERT_THAT(plan, IsOk());
  auto artifact = CompileForward(*plan, Native());
  ASSERT_THAT(artifact, IsOk());
  EXPECT_EQ(artifact->backend(), "native");
  v1::NativeProgram native;
  ASSERT_TRUE(native.ParseFromString(artifact->payload()));
  ASSERT_EQ(native.kernels_size(), 1);
  EXPECT_EQ(native.kernels(0).nodes_size(), 5);
  EXPECT_THAT(native.source(), HasSubstr("#pragma omp simd"));
  EXPECT_FALSE(native.shared_object().empty());
}

// A fused group runs at its last node: its operands stay live until then,
// and its inner results get no memory.
TEST(BufferPlanTest, FusedGroupsRunAtTheirLastNodesTurn) {
  v1::Graph graph = testing::GraphFromJson(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [64], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "a", "op": "aten.sin.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "b", "op": "aten.cos.default", "args": [{"node": "a"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "e", "op": "aten.exp.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "c", "op": "aten.tanh.default", "args": [{"node": "b"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "out", "op": "aten.add.Tensor", "args": [{"node": "c"}, {"node": "e"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["out"]})json");
  auto plain = PlanBuffers(graph);
  ASSERT_THAT(plain, IsOk());
  // a is free after b: e reuses its memory.
  EXPECT_EQ(plain->result_slot(2), plain->result_slot(0));
  const std::vector<int> run_at = {0, 3, 2, 3, 4};  // b runs with c.
  auto fused = PlanBuffers(graph, &run_at);
  ASSERT_THAT(fused, IsOk());
  EXPECT_EQ(fused->result_slot(1), -1);  // b is never in memory.
  EXPECT_GE(fused->result_slot(0), 0);
  EXPECT_NE(fused->result_slot(2), fused->result_slot(0));  // a is live.
}

// A kernel that runs at an earlier node's turn and absorbs a later node
// (the ReLU after a batch norm): the absorbed node's result, read later,
// gets memory from the kernel's turn, not memory freed in between.
TEST(BufferPlanTest, AnAbsorbedNodesResultGetsMemoryAtItsKernelsTurn) {
  v1::Graph graph = testing::GraphFromJson(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [64], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "t", "op": "aten.sin.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "a", "op": "aten.cos.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "u", "op": "aten.exp.default", "args": [{"node": "t"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "r", "op": "aten.relu.default", "args": [{"node": "a"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "out", "op": "aten.add.Tensor", "args": [{"node": "r"}, {"node": "u"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["out"]})json");
  const std::vector<int> run_at = {0, 1, 2, 1, 4};  // r computed with a.
  auto plan = PlanBuffers(graph, &run_at);
  ASSERT_THAT(plan, IsOk());
  // t is live from turn 0 to turn 2 (u reads it), r from turn 1: apart.
  EXPECT_GE(plan->result_slot(3), 0);
  EXPECT_NE(plan->result_slot(3), plan->result_slot(0));
  // u (turn 2) cannot take r's memory either: r is read at turn 4.
  EXPECT_NE(plan->result_slot(2), plan->result_slot(3));
}

TEST(NativeBackendTest, ACompilerErrorCarriesTheCompilersMessage) {
  HostCompilerOptions options;
  options.flags = {"-fno-such-flag-for-aotcache"};
  auto backend = NativeBackend::Create(options);
  ASSERT_THAT(backend, IsOk());
  v1::Graph graph = testing::LoadGraphOrDie("graphs/assorted_ops__nrg.json");
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<CompilePlan> plan = PlanCompilation(*a);
  ASSERT_THAT(plan, IsOk());
  auto artifact = CompileForward(*plan, **backend);
  ASSERT_FALSE(artifact.ok());
  EXPECT_TRUE(absl::IsInternal(artifact.status())) << artifact.status();
  EXPECT_THAT(artifact.status().message(),
              HasSubstr("no-such-flag-for-aotcache"));
}

TEST(NativeBackendTest, BuildsForTheTargetsCpuLevelAndRefusesUnknownOnes) {
  v1::Graph graph = testing::LoadGraphOrDie("graphs/assorted_ops__nrg.json");
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<CompilePlan> plan = PlanCompilation(*a);
  ASSERT_THAT(plan, IsOk());
  v1::Target target = HostTarget();
  auto host = CompileForward(*plan, Native(), target);
  ASSERT_THAT(host, IsOk());
  auto function = CompiledFunction::Load(*host, plan->metadata);
  ASSERT_THAT(function, IsOk());
  std::vector<Tensor> inputs =
      testing::LoadEagerRun("assorted_ops__nrg.json").inputs;
  EXPECT_THAT((*function)->Forward(&inputs), IsOk());

  target.set_cpu("x86-64-v9 -fplugin=evil.so");
  auto bad = CompileForward(*plan, Native(), target);
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_THAT(bad.status().message(), HasSubstr("target.cpu"));
  target = HostTarget();
  target.set_arch("riscv64");
  target.clear_cpu();
  auto unknown = CompileForward(*plan, Native(), target);
  EXPECT_TRUE(absl::IsInvalidArgument(unknown.status())) << unknown.status();
  EXPECT_THAT(unknown.status().message(), HasSubstr("target.arch"));
  target.set_arch(HostTarget().arch() == "x86_64" ? "aarch64" : "x86_64");
  auto other = CompileForward(*plan, Native(), target);
  EXPECT_TRUE(absl::IsFailedPrecondition(other.status())) << other.status();
}

// What a client on an older CPU than the artifact's does: refuses to load
// it (its kernels would die of SIGILL), whatever the server answered.
TEST(NativeBackendTest, KernelsForALaterCpuLevelAreNotLoaded) {
  if (HostTarget().cpu() != "x86-64-v4") {
    GTEST_SKIP() << "needs an x86-64-v4 host to build for it";
  }
  v1::Graph graph = testing::LoadGraphOrDie("graphs/assorted_ops__nrg.json");
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<CompilePlan> plan = PlanCompilation(*a);
  ASSERT_THAT(plan, IsOk());
  auto v4 = CompileForward(*plan, Native(), HostTarget());
  ASSERT_THAT(v4, IsOk());
  testing::ScopedEnv older("AOTCACHE_TARGET_CPU", "x86-64-v3");
  ASSERT_EQ(HostTarget().cpu(), "x86-64-v3");
  auto refused = CompiledFunction::Load(*v4, plan->metadata);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("x86-64-v4"));
  auto own = CompileForward(*plan, Native(), HostTarget());
  ASSERT_THAT(own, IsOk());
  EXPECT_THAT(CompiledFunction::Load(*own, plan->metadata), IsOk());
}

TEST(NativeBackendTest, ItsVersionNamesTheCompilerNotItsPath) {
  HostCompilerOptions by_name, by_path;
  by_path.compiler = "/usr/bin/c++";
  auto a = NativeBackend::Create(by_name);
  auto b = NativeBackend::Create(by_path);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ((*a)->version(), (*b)->version());
  EXPECT_THAT(std::string((*a)->version()), HasSubstr("-O3"));
  EXPECT_THAT(std::string((*a)->version()), HasSubstr("12."));
}

}  // namespace
}  // namespace aotcache
