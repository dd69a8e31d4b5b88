// Finite-difference checks, in float64, of every derivative rule and of
// multi-op graphs: the backward graph's gradients against central
// differences of the original program run by the runtime.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/analysis/analyze.h"
#include "core/autodiff/joint_graph.h"
#include "core/runtime/graph_executor.h"
#include "core/runtime/strided.h"
#include "gtest/gtest.h"
#include "tests/autodiff/grad_cases.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

Tensor Random(const Meta& meta, std::mt19937_64& rng, bool positive) {
  Tensor t = Tensor::Zeros(meta);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  double* d = reinterpret_cast<double*>(t.storage_data());
  for (int64_t i = 0; i < t.storage_elements(); ++i) {
    d[i] = positive ? uniform(rng) : normal(rng);
  }
  return t;
}

Tensor Copy(const Tensor& t) {
  Tensor c = Tensor::Zeros(t.meta());
  CopyInto(t, c);
  return c;
}

// L = sum(out * cotangent).
double Loss(const GraphExecutor& exec, const std::vector<Tensor>& inputs,
            const Tensor& cot) {
  std::vector<Tensor> copies;
  for (const Tensor& t : inputs) copies.push_back(Copy(t));  // In-place safe.
  absl::StatusOr<std::vector<Tensor>> out = exec.Run(copies);
  EXPECT_THAT(out, IsOk());
  if (!out.ok()) return 0;
  std::vector<double> y = (*out)[0].ToDoubles(), c = cot.ToDoubles();
  double l = 0;
  for (size_t i = 0; i < y.size(); ++i) l += y[i] * c[i];
  return l;
}

using testing::GradCase;

class GradCheckTest : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradCheckTest, BackwardMatchesFiniteDifferences) {
  const GradCase& c = GetParam();
  v1::Graph graph = testing::BuildGraph(c);
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  ASSERT_EQ(a->mode, v1::MODE_TRAINING);
  absl::StatusOr<JointGraphs> joint = BuildJointGraphs(*a);
  ASSERT_THAT(joint, IsOk());

  std::mt19937_64 rng(7);
  std::vector<Tensor> inputs;
  for (int i = 0; i < graph.inputs_size(); ++i) {
    inputs.push_back(Random(a->graph.values[i].meta, rng, c.positive));
  }
  const Meta& out_meta = a->graph.values[a->graph.outputs[0]].meta;
  Tensor cot =
      Random(ContiguousMeta(out_meta.shape, out_meta.dtype), rng, false);

  // Analytical.
  auto forward = GraphExecutor::Create(joint->forward);
  auto backward = GraphExecutor::Create(joint->backward);
  ASSERT_THAT(forward, IsOk());
  ASSERT_THAT(backward, IsOk());
  std::vector<Tensor> fw_inputs;
  for (const Tensor& t : inputs) fw_inputs.push_back(Copy(t));
  auto fw = (*forward)->Run(fw_inputs);
  ASSERT_THAT(fw, IsOk());
  std::vector<Tensor> bw_inputs(fw->end() - joint->num_saved, fw->end());
  for (const v1::TangentInfo& t : a->view_and_mutation.tangents()) {
    bw_inputs.push_back(t.source() == v1::TANGENT_SOURCE_USER_OUTPUT
                            ? cot
                            : Tensor::Zeros(MetaFromProto(t.meta())));
  }
  auto bw = (*backward)->Run(bw_inputs);
  ASSERT_THAT(bw, IsOk());

  // Numerical, on the original program.
  auto original = GraphExecutor::Create(graph);
  ASSERT_THAT(original, IsOk());
  const double eps = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // No gradient (none) must mean the numeric gradient is zero.
    int out = joint->input_grad_output[i];
    std::vector<double> analytical(inputs[i].storage_elements(), 0.0);
    if (out >= 0) analytical = (*bw)[out].ToDoubles();
    double* x = reinterpret_cast<double*>(inputs[i].storage_data());
    for (int64_t e = 0; e < inputs[i].storage_elements(); ++e) {
      double saved = x[e];
      x[e] = saved + eps;
      double plus = Loss(**original, inputs, cot);
      x[e] = saved - eps;
      double minus = Loss(**original, inputs, cot);
      x[e] = saved;
      double numeric = (plus - minus) / (2 * eps);
      EXPECT_NEAR(analytical[e], numeric, 1e-6 + 1e-5 * std::abs(numeric))
          << c.name << ": d/dx" << i << "[" << e << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, GradCheckTest,
                         ::testing::ValuesIn(testing::GradCases()),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace aotcache

namespace aotcache {
namespace {

// Two inputs that overlap in one storage (b's first row is a's second), one
// written in place and the other read after: their gradient is their
// storage's (the synthetic base's), checked against central differences on
// the storage's elements.
TEST(SyntheticBaseGradCheckTest, GradientOfASharedStorage) {
  v1::Graph graph = testing::GraphFromJson(R"json({
    "inputs": [
      {"name": "a", "storage": 0, "meta": {"shape": [2, 3], "stride": [3, 1],
       "dtype": "DTYPE_FLOAT64", "requires_grad": true, "is_leaf": false}},
      {"name": "b", "storage": 0, "meta": {"shape": [2, 3], "stride": [3, 1],
       "storage_offset": 3, "dtype": "DTYPE_FLOAT64", "requires_grad": true,
       "is_leaf": false}}
    ],
    "storages": [{"id": 0, "size": 9}],
    "nodes": [
      {"name": "m", "op": "aten.mul_.Tensor", "args": [{"node": "a"}, {"float": 2.5}],
       "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "s", "op": "aten.sin.default", "args": [{"node": "b"}],
       "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "out", "op": "aten.mul.Tensor", "args": [{"node": "m"}, {"node": "s"}],
       "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["out"]
  })json");
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  ASSERT_EQ(a->view_and_mutation.synthetic_bases_size(), 1);
  absl::StatusOr<JointGraphs> joint = BuildJointGraphs(*a);
  ASSERT_THAT(joint, IsOk());
  ASSERT_EQ(joint->synthetic_base_grad_output.size(), 1u);
  ASSERT_GE(joint->synthetic_base_grad_output[0], 0);

  std::mt19937_64 rng(11);
  Tensor storage = Random(ContiguousMeta({9}, v1::DTYPE_FLOAT64), rng, false);
  Tensor cot = Random(ContiguousMeta({2, 3}, v1::DTYPE_FLOAT64), rng, false);
  auto views = [&](const Tensor& s) {
    return std::vector<Tensor>{s.View(a->graph.values[0].meta),
                               s.View(a->graph.values[1].meta)};
  };
  // Analytical: the forward takes the synthetic base (the whole storage).
  auto forward = GraphExecutor::Create(joint->forward);
  auto backward = GraphExecutor::Create(joint->backward);
  ASSERT_THAT(forward, IsOk());
  ASSERT_THAT(backward, IsOk());
  auto fw = (*forward)->Run({Copy(storage)});
  ASSERT_THAT(fw, IsOk());
  std::vector<Tensor> bw_inputs(fw->end() - joint->num_saved, fw->end());
  for (const v1::TangentInfo& t : a->view_and_mutation.tangents()) {
    bw_inputs.push_back(t.source() == v1::TANGENT_SOURCE_USER_OUTPUT
                            ? cot
                            : Tensor::Zeros(MetaFromProto(t.meta())));
  }
  auto bw = (*backward)->Run(bw_inputs);
  ASSERT_THAT(bw, IsOk());
  std::vector<double> analytical =
      (*bw)[joint->synthetic_base_grad_output[0]].ToDoubles();

  // Numerical: the original program on views of a perturbed storage.
  auto original = GraphExecutor::Create(graph);
  ASSERT_THAT(original, IsOk());
  double* x = reinterpret_cast<double*>(storage.storage_data());
  const double eps = 1e-6;
  // The inputs must keep sharing one storage: no per-input copies.
  auto loss = [&]() {
    Tensor copy = Copy(storage);
    auto out = (*original)->Run(views(copy));
    EXPECT_THAT(out, IsOk());
    std::vector<double> y = (*out)[0].ToDoubles(), c = cot.ToDoubles();
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += y[i] * c[i];
    return l;
  };
  for (int e = 0; e < 9; ++e) {
    double saved = x[e];
    x[e] = saved + eps;
    double plus = loss();
    x[e] = saved - eps;
    double minus = loss();
    x[e] = saved;
    double numeric = (plus - minus) / (2 * eps);
    EXPECT_NEAR(analytical[e], numeric, 1e-6 + 1e-5 * std::abs(numeric))
        << "d/dstorage[" << e << "]";
  }
}

}  // namespace
}  // namespace aotcache
