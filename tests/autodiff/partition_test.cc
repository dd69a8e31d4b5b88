// The partition between forward and backward: the backward recomputes cheap
// values instead of having the forward save them, never saving more bytes
// than saving everything it reads, and strictly fewer where a chain of cheap
// ops can be recomputed from a few saved values. Figures are printed for the
// notes.
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/autodiff/joint_graph.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

struct SavedBytes {
  int64_t save_all;
  int64_t partitioned;
};

SavedBytes Measure(const v1::Graph& graph) {
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  EXPECT_THAT(a, IsOk());
  absl::StatusOr<JointGraphs> all = BuildJointGraphs(*a, Recompute::kNothing);
  absl::StatusOr<JointGraphs> cut = BuildJointGraphs(*a, Recompute::kCheapOps);
  EXPECT_THAT(all, IsOk());
  EXPECT_THAT(cut, IsOk());
  if (!all.ok() || !cut.ok()) return {0, 0};
  return {all->saved_bytes, cut->saved_bytes};
}

std::string Node(const std::string& name, const std::string& op,
                 const std::string& args) {
  return absl::StrCat(R"({"name": ")", name, R"(", "op": ")", op,
                      R"(", "args": [)", args,
                      R"(], "grad_mode": "GRAD_MODE_ENABLED"})");
}

// Ten elementwise ops on 1M floats, sin, cos, tanh and sigmoid among them.
v1::Graph ElementwiseChain() {
  const char* ops[] = {"aten.sin.default",  "aten.cos.default",
                       "aten.tanh.default", "aten.sigmoid.default",
                       "aten.exp.default",  "aten.neg.default",
                       "aten.sin.default",  "aten.tanh.default",
                       "aten.cos.default",  "aten.sigmoid.default"};
  std::string nodes;
  std::string prev = "x";
  for (int i = 0; i < 10; ++i) {
    std::string name = i == 9 ? "out" : absl::StrCat("v", i);
    if (i > 0) nodes += ",";
    nodes += Node(name, ops[i], absl::StrCat(R"({"node": ")", prev, R"("})"));
    prev = name;
  }
  return testing::GraphFromJson(absl::StrCat(
      R"({"inputs": [{"name": "x", "meta": {"shape": [1048576], "dtype": "DTYPE_FLOAT32", "requires_grad": true, "is_leaf": true}}], "nodes": [)",
      nodes, R"(], "outputs": ["out"]})"));
}

TEST(PartitionTest, MlpSavesNoMoreThanEverythingTheBackwardReads) {
  SavedBytes b = Measure(testing::LoadGraphOrDie("graphs/mlp_mse__rg.json"));
  std::printf("mlp_mse: save-all %lld bytes, partitioned %lld bytes\n",
              static_cast<long long>(b.save_all),
              static_cast<long long>(b.partitioned));
  EXPECT_LE(b.partitioned, b.save_all);
}

TEST(PartitionTest, ElementwiseChainIsRecomputedFromItsInput) {
  SavedBytes b = Measure(ElementwiseChain());
  std::printf(
      "10-op chain on 1M floats: save-all %lld bytes, partitioned %lld bytes\n",
      static_cast<long long>(b.save_all),
      static_cast<long long>(b.partitioned));
  EXPECT_LT(b.partitioned, b.save_all);
  EXPECT_EQ(b.partitioned, 4 << 20);  // x alone.
}

TEST(PartitionTest, LayerNormSoftmaxBlockSavesLess) {
  SavedBytes b =
      Measure(testing::LoadGraphOrDie("graphs/layer_norm_softmax__rg.json"));
  std::printf(
      "layer norm + softmax: save-all %lld bytes, partitioned %lld bytes\n",
      static_cast<long long>(b.save_all),
      static_cast<long long>(b.partitioned));
  EXPECT_LT(b.partitioned, b.save_all);
}

}  // namespace
}  // namespace aotcache
