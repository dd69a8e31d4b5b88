// CompiledFunction on reference artifacts, against torch eager on every
// traced scenario: outputs, the caller's tensors after the call (data
// written in place, layouts changed), and which outputs share memory with
// an input. Also: pairing of forward and backward, and the buffer plan.
#include "core/runtime/compiled_function.h"

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/backend/compile_plan.h"
#include "core/backend/reference_backend.h"
#include "core/graph/validate.h"
#include "core/runtime/graph_executor.h"
#include "core/runtime/strided.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/value_fixtures.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

absl::StatusOr<CompilePlan> Plan(const v1::Graph& graph) {
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  if (!a.ok()) return a.status();
  return PlanCompilation(*a);
}

class CompiledFunctionEagerTest : public ::testing::TestWithParam<std::string> {
};

TEST_P(CompiledFunctionEagerTest, ForwardBehavesLikeEager) {
  const std::string file = GetParam();
  v1::Graph graph = testing::LoadGraphOrDie("graphs/" + file);
  testing::EagerRun eager = testing::LoadEagerRun(file);
  if (eager.uses_rng) GTEST_SKIP() << "RNG";
  absl::StatusOr<CompilePlan> plan = Plan(graph);
  if (absl::IsUnimplemented(plan.status()))
    GTEST_SKIP() << plan.status().message();
  ASSERT_THAT(plan, IsOk());
  ReferenceBackend backend;
  absl::StatusOr<v1::Artifact> forward = CompileForward(*plan, backend);
  ASSERT_THAT(forward, IsOk());
  // Loaded from the artifact's bytes alone.
  v1::Artifact reloaded;
  ASSERT_TRUE(reloaded.ParseFromString(forward->SerializeAsString()));
  auto f = CompiledFunction::Load(reloaded, plan->metadata);
  ASSERT_THAT(f, IsOk());

  std::vector<Tensor> inputs = eager.inputs;
  std::vector<Tensor> originals = eager.inputs;
  auto result = (*f)->Forward(&inputs);
  if (absl::IsUnimplemented(result.status()))
    GTEST_SKIP() << result.status().message();
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->outputs.size(), eager.outputs.size());
  for (size_t j = 0; j < eager.outputs.size(); ++j) {
    EXPECT_EQ(testing::CompareValues(result->outputs[j], eager.outputs[j]), "")
        << file << " output " << j;
    bool shares = false;
    for (const Tensor& in : originals)
      shares |= result->outputs[j].SharesStorageWith(in);
    EXPECT_EQ(shares, eager.output_aliases_input[j] >= 0)
        << file << " output " << j << ": aliasing differs from eager";
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_TRUE(inputs[i].SharesStorageWith(originals[i]))
        << file << " input " << i;
    EXPECT_EQ(inputs[i].shape(), eager.layout_after[i].shape)
        << file << " input " << i;
    EXPECT_EQ(testing::CompareValues(inputs[i], eager.inputs_after[i]), "")
        << file << " input " << i << " after the call";
  }
}

std::string ParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.size() - 5);
  for (char& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Traced, CompiledFunctionEagerTest,
                         ::testing::ValuesIn(testing::FixtureGraphFiles()),
                         ParamName);

TEST(CompiledFunctionTest, RefusesABackwardOfAnotherForward) {
  ReferenceBackend backend;
  auto mlp = Plan(testing::LoadGraphOrDie("graphs/mlp_mse__rg.json"));
  auto ln = Plan(testing::LoadGraphOrDie("graphs/layer_norm_softmax__rg.json"));
  ASSERT_THAT(mlp, IsOk());
  ASSERT_THAT(ln, IsOk());
  auto mlp_fw = CompileForward(*mlp, backend);
  auto ln_fw = CompileForward(*ln, backend);
  ASSERT_THAT(mlp_fw, IsOk());
  ASSERT_THAT(ln_fw, IsOk());
  auto ln_bw = CompileBackward(*ln, *ln_fw, backend);
  ASSERT_THAT(ln_bw, IsOk());
  auto f = CompiledFunction::Load(*mlp_fw, mlp->metadata);
  ASSERT_THAT(f, IsOk());
  absl::Status st = (*f)->AttachBackward(*ln_bw);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(std::string(st.message()).find("pairs with"), std::string::npos);
  auto mlp_bw = CompileBackward(*mlp, *mlp_fw, backend);
  ASSERT_THAT(mlp_bw, IsOk());
  EXPECT_THAT((*f)->AttachBackward(*mlp_bw), IsOk());
}

TEST(CompiledFunctionTest, BackwardCoercesExpandedTangentsAndReturnsNone) {
  // out = (x * (x > y)).sum(): y gets no gradient (None, not zeros).
  v1::Graph g = testing::GraphFromJson(R"json({
    "inputs": [
      {"name": "x", "meta": {"shape": [2, 3], "dtype": "DTYPE_FLOAT32", "requires_grad": true, "is_leaf": true}},
      {"name": "y", "meta": {"shape": [2, 3], "dtype": "DTYPE_FLOAT32", "requires_grad": true, "is_leaf": true}}
    ],
    "nodes": [
      {"name": "gt", "op": "aten.gt.Tensor", "args": [{"node": "x"}, {"node": "y"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "m", "op": "aten.mul.Tensor", "args": [{"node": "x"}, {"node": "gt"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["m"]
  })json");
  ReferenceBackend backend;
  auto plan = Plan(g);
  ASSERT_THAT(plan, IsOk());
  auto fw = CompileForward(*plan, backend);
  auto bw = CompileBackward(*plan, *fw, backend);
  ASSERT_THAT(fw, IsOk());
  ASSERT_THAT(bw, IsOk());
  auto f = CompiledFunction::Load(*fw, plan->metadata);
  ASSERT_THAT(f, IsOk());
  ASSERT_THAT((*f)->AttachBackward(*bw), IsOk());
  std::vector<Tensor> inputs = {Tensor::Contiguous({2, 3}, v1::DTYPE_FLOAT32),
                                Tensor::Contiguous({2, 3}, v1::DTYPE_FLOAT32)};
  float* x = reinterpret_cast<float*>(inputs[0].storage_data());
  for (int i = 0; i < 6; ++i) x[i] = static_cast<float>(i) - 2.5f;  // y = 0
  auto out = (*f)->Forward(&inputs);
  ASSERT_THAT(out, IsOk());
  // A stride-0 tangent, as out.sum().backward() passes.
  Tensor one = Tensor::Contiguous({}, v1::DTYPE_FLOAT32);
  *reinterpret_cast<float*>(one.storage_data()) = 1.0f;
  Meta expanded = one.meta();
  expanded.shape = {2, 3};
  expanded.stride = {0, 0};
  auto grads = (*f)->Backward(out->saved, {one.View(expanded)});
  ASSERT_THAT(grads, IsOk());
  ASSERT_EQ(grads->inputs.size(), 2u);
  ASSERT_TRUE(grads->inputs[0].has_value());
  EXPECT_FALSE(grads->inputs[1].has_value()) << "y must get None, not zeros";
  std::vector<double> gx = grads->inputs[0]->ToDoubles();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(gx[i], i >= 3 ? 1.0 : 0.0) << i;
}

TEST(CompiledFunctionTest, HandsTheEpilogueToCallersThatApplyItThemselves) {
  // input_mutation_simple: the raw forward returns a's new value first and
  // leaves the caller's a alone; Forward writes it into a.
  v1::Graph graph =
      testing::LoadGraphOrDie("graphs/input_mutation_simple__nrg.json");
  testing::EagerRun eager =
      testing::LoadEagerRun("input_mutation_simple__nrg.json");
  auto plan = Plan(graph);
  ASSERT_THAT(plan, IsOk());
  ReferenceBackend backend;
  auto fw = CompileForward(*plan, backend);
  ASSERT_THAT(fw, IsOk());
  auto f = CompiledFunction::Load(*fw, plan->metadata);
  ASSERT_THAT(f, IsOk());
  ASSERT_EQ((*f)->forward_convention().num_mutated_inputs(), 1);
  std::vector<double> before = eager.inputs[0].ToDoubles();
  auto raw = (*f)->RunForwardArtifact(eager.inputs);
  ASSERT_THAT(raw, IsOk());
  EXPECT_EQ(eager.inputs[0].ToDoubles(), before) << "the caller's tensor moved";
  EXPECT_EQ(testing::CompareValues((*raw)[0], eager.inputs_after[0]), "");
  EXPECT_EQ(testing::CompareValues((*raw)[1], eager.outputs[0]), "");
}

// An artifact whose as_strided view reaches past its input's storage read
// out of bounds (ASan: SEGV). Whatever an artifact says, no view reaches
// past its storage: the call is refused before anything is read.
TEST(CompiledFunctionTest, AViewPastItsStorageIsRefusedNotRead) {
  v1::Graph graph = testing::GraphFromJson(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [4], "dtype": "DTYPE_FLOAT32",
                "is_leaf": true}}],
    "nodes": [
      {"name": "v", "op": "aten.as_strided.default",
       "args": [{"node": "x"}, {"ints": {"values": [1000000]}},
                {"ints": {"values": [1]}}],
       "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "y", "op": "aten.neg.default", "args": [{"node": "v"}],
       "grad_mode": "GRAD_MODE_ENABLED"}],
    "outputs": ["y"]})json");
  absl::StatusOr<CompilePlan> plan = Plan(graph);
  ASSERT_THAT(plan, IsOk());
  ReferenceBackend backend;
  absl::StatusOr<v1::Artifact> forward = CompileForward(*plan, backend);
  ASSERT_THAT(forward, IsOk());
  auto f = CompiledFunction::Load(*forward, plan->metadata);
  ASSERT_THAT(f, IsOk());
  std::vector<Tensor> inputs = {Tensor::Contiguous({4}, v1::DTYPE_FLOAT32)};
  auto result = (*f)->Forward(&inputs);
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()),
              ::testing::HasSubstr("aten.as_strided.default"));
  EXPECT_THAT(std::string(result.status().message()),
              ::testing::HasSubstr("storage of 4"));
}

// A caller's tensor whose layout reaches past its memory (a binding that
// got a storage's size wrong) is refused, not read past.
TEST(CompiledFunctionTest, AnInputPastItsStorageIsRefusedNotRead) {
  v1::Graph graph = testing::GraphFromJson(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [4096], "dtype": "DTYPE_FLOAT32",
                "is_leaf": true}}],
    "nodes": [{"name": "y", "op": "aten.neg.default", "args": [{"node": "x"}],
               "grad_mode": "GRAD_MODE_ENABLED"}],
    "outputs": ["y"]})json");
  absl::StatusOr<CompilePlan> plan = Plan(graph);
  ASSERT_THAT(plan, IsOk());
  absl::StatusOr<v1::Artifact> forward =
      CompileForward(*plan, ReferenceBackend());
  ASSERT_THAT(forward, IsOk());
  auto f = CompiledFunction::Load(*forward, plan->metadata);
  ASSERT_THAT(f, IsOk());
  std::vector<float> memory(2);
  std::vector<Tensor> inputs = {Tensor::Borrow(
      memory.data(), 2, ContiguousMeta({4096}, v1::DTYPE_FLOAT32))};
  auto result = (*f)->Forward(&inputs);
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()),
              ::testing::HasSubstr("storage of 2 elements"));
}

TEST(BufferPlanTest, PlannedPeakIsBelowEveryIntermediateInItsOwnMemory) {
  // Inference forwards and training backwards, whose intermediates die early.
  ReferenceBackend backend;
  for (const char* file : {"mlp_mse__nrg.json", "layer_norm_softmax__nrg.json",
                           "assorted_ops__nrg.json", "mlp_mse__rg.json",
                           "layer_norm_softmax__rg.json"}) {
    auto plan = Plan(testing::LoadGraphOrDie(std::string("graphs/") + file));
    ASSERT_THAT(plan, IsOk());
    auto fw = CompileForward(*plan, backend);
    ASSERT_THAT(fw, IsOk());
    v1::Artifact artifact = *fw;
    if (plan->backward_graph.has_value()) {
      auto bw = CompileBackward(*plan, *fw, backend);
      ASSERT_THAT(bw, IsOk());
      artifact = *bw;
    }
    v1::ReferenceProgram program;
    ASSERT_TRUE(program.ParseFromString(artifact.payload()));
    EXPECT_LT(program.planned_peak_bytes(), program.unplanned_bytes()) << file;
  }
}

// Planned memory is kept from one Run to the next: Runs in flight at once
// each take their own, and later Runs reuse it, with every result as a Run
// alone computes it.
TEST(BufferPlanTest, PlannedMemoryIsReusedSafelyByConcurrentRuns) {
  auto plan = Plan(testing::LoadGraphOrDie("graphs/mlp_mse__nrg.json"));
  ASSERT_THAT(plan, IsOk());
  auto fw = CompileForward(*plan, ReferenceBackend());
  ASSERT_THAT(fw, IsOk());
  v1::ReferenceProgram program;
  ASSERT_TRUE(program.ParseFromString(fw->payload()));
  ASSERT_GT(program.slot_bytes_size(), 0);
  auto executor = GraphExecutor::Create(program);
  ASSERT_THAT(executor, IsOk());
  const ResolvedGraph resolved =
      *ValidateGraph(program.graph(), InternalGraphLimits());
  // Inputs that differ per seed, and what a lone Run gives for each.
  auto inputs_for = [&](int seed) {
    std::vector<Tensor> inputs;
    for (int i = 0; i < resolved.num_inputs(); ++i) {
      Tensor t = Tensor::Zeros(resolved.values[i].meta);
      for (int64_t e = 0; e < t.storage_elements(); ++e) {
        StoreFrom<double>(t.storage_data(), t.dtype(), e,
                          std::sin(0.1 * e + seed + i));
      }
      inputs.push_back(t);
    }
    return inputs;
  };
  constexpr int kThreads = 4;
  std::vector<std::vector<double>> alone;
  for (int seed = 0; seed < kThreads; ++seed) {
    auto out = (*executor)->Run(inputs_for(seed));
    ASSERT_THAT(out, IsOk());
    alone.push_back((*out)[0].ToDoubles());
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int seed = 0; seed < kThreads; ++seed) {
    threads.emplace_back([&, seed] {
      const std::vector<Tensor> inputs = inputs_for(seed);
      for (int run = 0; run < 200; ++run) {
        auto out = (*executor)->Run(inputs);
        if (!out.ok() || (*out)[0].ToDoubles() != alone[seed]) {
          ++mismatches[seed];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(kThreads, 0));
}

}  // namespace
}  // namespace aotcache
