// Functionalization: structure over every traced fixture, and the specific
// rewrites (scatters, roots, synthetic bases). Values are checked against
// eager torch by tests/python/functional_oracle.py.
#include "core/analysis/functionalize.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/analysis/analyze.h"
#include "core/graph/deterministic_bytes.h"
#include "core/graph/graph_json.h"
#include "core/graph/op_registry.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

int CountOps(const v1::Graph& g, absl::string_view op) {
  int n = 0;
  for (const v1::Node& node : g.nodes()) n += node.op() == op;
  return n;
}

TEST(FunctionalizeTest, EveryFixtureBecomesAValidGraphWithoutInPlaceOps) {
  std::vector<std::string> graphs = testing::FixtureGraphFiles();
  ASSERT_GE(graphs.size(), 25u);
  for (const std::string& file : graphs) {
    v1::Graph g = testing::LoadGraphOrDie("graphs/" + file);
    absl::StatusOr<Analysis> a = Analyze(g, v1::CompileOptions());
    ASSERT_THAT(a, IsOk());
    const v1::ViewAndMutationData& vmd = a->view_and_mutation;
    absl::StatusOr<v1::Graph> f = FunctionalGraph(*a);
    ASSERT_THAT(f, IsOk());
    for (const v1::Node& node : f->nodes()) {
      if (IsGetItem(node.op())) continue;
      const OpInfo* op = OpRegistry::Get().Find(node.op());
      ASSERT_NE(op, nullptr) << file;
      EXPECT_NE(op->effect, OpEffect::kInPlace) << file << ": " << node.name();
      EXPECT_NE(op->effect, OpEffect::kInPlaceMetadata)
          << file << ": " << node.name();
    }
    int mutated = 0;
    for (const v1::InputAliasInfo& in : vmd.inputs()) {
      mutated += in.mutates_data() || in.mutates_metadata();
    }
    EXPECT_EQ(f->outputs_size(),
              mutated + vmd.outputs_size() + vmd.num_intermediate_bases())
        << file;
  }
}

TEST(FunctionalizeTest, IsDeterministic) {
  for (const std::string& file : testing::FixtureGraphFiles()) {
    v1::Graph g = testing::LoadGraphOrDie("graphs/" + file);
    absl::StatusOr<Analysis> a = Analyze(g, v1::CompileOptions());
    absl::StatusOr<Analysis> b = Analyze(g, v1::CompileOptions());
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    absl::StatusOr<v1::Graph> fa = FunctionalGraph(*a);
    absl::StatusOr<v1::Graph> fb = FunctionalGraph(*b);
    ASSERT_THAT(fa, IsOk());
    ASSERT_THAT(fb, IsOk());
    EXPECT_TRUE(DeterministicBytes(*fa) == DeterministicBytes(*fb)) << file;
  }
}

constexpr char kUnreadInPlace[] = R"json({
  "inputs": [
    {"name": "a", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
    {"name": "b", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}
  ],
  "nodes": [
    {"name": "add_", "op": "aten.add_.Tensor", "args": [{"node": "b"}, {"int": 1}],
     "grad_mode": "GRAD_MODE_ENABLED"},
    {"name": "mul", "op": "aten.mul.Tensor", "args": [{"node": "a"}, {"int": 2}],
     "grad_mode": "GRAD_MODE_ENABLED"}
  ],
  "outputs": ["mul"]
})json";

TEST(FunctionalizeTest, InPlaceOpWhoseResultNobodyReadsIsKept) {
  v1::Graph g = testing::GraphFromJson(kUnreadInPlace);
  absl::StatusOr<Analysis> a = Analyze(g, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  EXPECT_TRUE(a->view_and_mutation.inputs(1).mutates_data());
  absl::StatusOr<v1::Graph> functional = FunctionalGraph(*a);
  ASSERT_THAT(functional, IsOk());
  const v1::Graph& f = *functional;
  ASSERT_EQ(f.outputs_size(), 2);
  EXPECT_EQ(f.outputs(0), "add_");  // b's new value, first.
  EXPECT_EQ(CountOps(f, "aten.add.Tensor"), 1);
}

TEST(FunctionalizeTest, KeptMutationIsCopiedBackInsteadOfReturned) {
  v1::Graph g = testing::GraphFromJson(kUnreadInPlace);
  v1::CompileOptions options;
  options.set_keep_input_mutations(true);
  absl::StatusOr<Analysis> a = Analyze(g, options);
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<v1::Graph> functional = FunctionalGraph(*a);
  ASSERT_THAT(functional, IsOk());
  const v1::Graph& f = *functional;
  EXPECT_EQ(f.outputs_size(), 1);
  EXPECT_EQ(CountOps(f, "aten.copy_.default"), 1);
}

TEST(FunctionalizeTest, WriteThroughSelectBecomesSelectScatter) {
  v1::Graph g = testing::GraphFromJson(R"json({
    "inputs": [{"name": "a", "meta": {"shape": [2, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "c", "op": "aten.clone.default", "args": [{"node": "a"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "row", "op": "aten.select.int", "args": [{"node": "c"}, {"int": 0}, {"int": 1}],
       "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "mul_", "op": "aten.mul_.Tensor", "args": [{"node": "row"}, {"int": 2}],
       "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "out", "op": "aten.add.Tensor", "args": [{"node": "c"}, {"int": 1}],
       "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["out", "row"]
  })json");
  absl::StatusOr<Analysis> a = Analyze(g, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<v1::Graph> functional = FunctionalGraph(*a);
  ASSERT_THAT(functional, IsOk());
  const v1::Graph& f = *functional;
  EXPECT_EQ(CountOps(f, "aten.select_scatter.default"), 1);
  // `out` reads the scattered value, not the clone from before the write.
  for (const v1::Node& node : f.nodes()) {
    if (node.name() == "out") {
      EXPECT_TRUE(absl::StartsWith(node.args(0).node(), "select_inverse"))
          << node.args(0).node();
    }
  }
}

TEST(FunctionalizeTest, AliasedMutatedInputsShareOneSyntheticBase) {
  v1::Graph g = testing::LoadGraphOrDie("../../examples/aliased_inputs.json");
  absl::StatusOr<Analysis> a = Analyze(g, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  ASSERT_EQ(a->view_and_mutation.synthetic_bases_size(), 1);
  absl::StatusOr<v1::Graph> functional = FunctionalGraph(*a);
  ASSERT_THAT(functional, IsOk());
  const v1::Graph& f = *functional;
  ASSERT_EQ(f.inputs_size(), g.inputs_size() - 1);
  EXPECT_TRUE(absl::StartsWith(f.inputs(0).name(), "synthetic_base_"));
  EXPECT_GE(CountOps(f, "aten.as_strided_scatter.default"), 1);
}

}  // namespace
}  // namespace aotcache
