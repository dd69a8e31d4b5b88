// The runtime against torch eager, on every traced scenario
// (tests/fixtures/values, recorded by tools/make_value_fixtures.py from the
// eager run of the same function on the same inputs):
//  - the functionalized graph computes eager's outputs and the new values of
//    the inputs eager mutated;
//  - the original graph, run with eager semantics (in-place ops write into
//    the inputs), leaves the inputs and outputs exactly as eager did, and an
//    output shares memory with an input exactly when it does in eager.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/runtime/graph_executor.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/value_fixtures.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

class EagerValuesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EagerValuesTest, FunctionalGraphComputesEagerValues) {
  const std::string file = GetParam();
  v1::Graph graph = testing::LoadGraphOrDie("graphs/" + file);
  testing::EagerRun eager = testing::LoadEagerRun(file);
  if (eager.uses_rng) GTEST_SKIP() << "RNG";
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<v1::Graph> functional = FunctionalGraph(*a);
  ASSERT_THAT(functional, IsOk());
  absl::StatusOr<std::unique_ptr<GraphExecutor>> exec =
      GraphExecutor::Create(*functional);
  ASSERT_THAT(exec, IsOk());

  // Inputs: each synthetic base is a 1-D view of its whole storage, at its
  // first member's place; the other members are dropped.
  const v1::ViewAndMutationData& vmd = a->view_and_mutation;
  std::vector<int> base_of_input(graph.inputs_size(), -1);
  for (int b = 0; b < vmd.synthetic_bases_size(); ++b) {
    for (int i : vmd.synthetic_bases(b).inputs()) base_of_input[i] = b;
  }
  std::vector<Tensor> inputs;
  std::vector<bool> base_added(vmd.synthetic_bases_size(), false);
  for (int i = 0; i < graph.inputs_size(); ++i) {
    int b = base_of_input[i];
    if (b < 0) {
      inputs.push_back(eager.inputs[i]);
    } else if (!base_added[b]) {
      base_added[b] = true;
      const Tensor& member = eager.inputs[i];
      inputs.push_back(member.View(
          ContiguousMeta({member.storage_elements()}, member.dtype())));
    }
  }
  absl::StatusOr<std::vector<Tensor>> out = (*exec)->Run(inputs);
  ASSERT_THAT(out, IsOk());

  size_t k = 0;
  for (int i = 0; i < vmd.inputs_size(); ++i) {
    if (!vmd.inputs(i).mutates_data() && !vmd.inputs(i).mutates_metadata())
      continue;
    EXPECT_EQ(testing::CompareValues((*out)[k++], eager.inputs_after[i]), "")
        << file << " new value of input " << i;
  }
  for (size_t j = 0; j < eager.outputs.size(); ++j) {
    EXPECT_EQ(testing::CompareValues((*out)[k++], eager.outputs[j]), "")
        << file << " output " << j;
  }
}

TEST_P(EagerValuesTest, OriginalGraphRunsWithEagerSemantics) {
  const std::string file = GetParam();
  v1::Graph graph = testing::LoadGraphOrDie("graphs/" + file);
  testing::EagerRun eager = testing::LoadEagerRun(file);
  if (eager.uses_rng) GTEST_SKIP() << "RNG";
  absl::StatusOr<std::unique_ptr<GraphExecutor>> exec =
      GraphExecutor::Create(graph);
  ASSERT_THAT(exec, IsOk());
  absl::StatusOr<std::vector<Tensor>> out = (*exec)->Run(eager.inputs);
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), eager.outputs.size());
  for (int i = 0; i < graph.inputs_size(); ++i) {
    // The input's memory seen through its layout after the call (t_ and
    // friends change the layout; the data is written in place).
    Meta after = eager.layout_after[i];
    after.dtype = eager.inputs[i].dtype();
    EXPECT_EQ(testing::CompareValues(eager.inputs[i].View(after),
                                     eager.inputs_after[i]),
              "")
        << file << " input " << i << " after";
  }
  for (size_t j = 0; j < eager.outputs.size(); ++j) {
    EXPECT_EQ(testing::CompareValues((*out)[j], eager.outputs[j]), "")
        << file << " output " << j;
    bool shares = false;
    for (const Tensor& in : eager.inputs)
      shares |= (*out)[j].SharesStorageWith(in);
    EXPECT_EQ(shares, eager.output_aliases_input[j] >= 0)
        << file << " output " << j << " aliasing";
  }
}

std::string ParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.size() - 5);  // ".json"
  for (char& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Traced, EagerValuesTest,
                         ::testing::ValuesIn(testing::FixtureGraphFiles()),
                         ParamName);

}  // namespace
}  // namespace aotcache
