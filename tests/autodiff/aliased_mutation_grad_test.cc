// A value that requires grad written into one of two inputs that share a
// storage and do not require grad: the other input, a view of the same
// storage, requires grad afterwards and its gradient reaches the value
// (SEMANTICS.md §2). Regression: the backward used to drop it.
#include <vector>

#include "core/analysis/analyze.h"
#include "core/autodiff/joint_graph.h"
#include "core/runtime/graph_executor.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

Tensor Filled(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t = Tensor::Contiguous(std::move(shape), v1::DTYPE_FLOAT32);
  float* p = reinterpret_cast<float*>(t.storage_data());
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

// a = x[0], b = x.view(-1) of a 2x3 leaf x that does not require grad;
// a.mul_(w); return b. New values: a' = x0 * w, b' = [x0 * w, x1], so
// d/dw (ta . a' + tb . b') = x0 * (ta + tb[:3]).
TEST(AliasedMutationGradTest,
     GradientReachesTheValueWrittenIntoASharedStorage) {
  v1::Graph graph = testing::LoadGraphOrDie(
      "graphs/aliased_input_gets_rg_via_other__rg.json");
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<JointGraphs> joint = BuildJointGraphs(*a);
  ASSERT_THAT(joint, IsOk());
  ASSERT_EQ(joint->input_grad_output.size(), 3u);
  ASSERT_GE(joint->input_grad_output[2], 0) << "no gradient reaches w";

  auto forward = GraphExecutor::Create(joint->forward);
  auto backward = GraphExecutor::Create(joint->backward);
  ASSERT_THAT(forward, IsOk());
  ASSERT_THAT(backward, IsOk());
  Tensor storage = Filled({6}, {1, 2, 3, 4, 5, 6});  // The synthetic base.
  Tensor w = Filled({3}, {0.5, -1, 2});
  auto fw = (*forward)->Run({storage, w});
  ASSERT_THAT(fw, IsOk());
  std::vector<Tensor> bw_inputs(fw->end() - joint->num_saved, fw->end());
  ASSERT_EQ(a->view_and_mutation.tangents_size(), 2);  // a', b'.
  bw_inputs.push_back(Filled({3}, {1, 10, 100}));
  bw_inputs.push_back(Filled({6}, {2, 20, 200, 7, 7, 7}));
  auto bw = (*backward)->Run(bw_inputs);
  ASSERT_THAT(bw, IsOk());
  EXPECT_EQ((*bw)[joint->input_grad_output[2]].ToDoubles(),
            (std::vector<double>{1 * 3, 2 * 30, 3 * 300}));
}

}  // namespace
}  // namespace aotcache
