// Every case of the finite-difference gradient check (one per derivative
// rule, and the multi-op graphs; tests/autodiff/grad_cases.h) compiled by
// the native and the reference backends: equal outputs, inputs after the
// call and gradients, in float64 (rtol 1e-10) and float32 (rtol 1e-5).
#include <random>
#include <string>

#include "core/analysis/analyze.h"
#include "core/backend/reference_backend.h"
#include "core/runtime/strided.h"
#include "gtest/gtest.h"
#include "tests/autodiff/grad_cases.h"
#include "tests/backend/compare_backends.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

struct OpCase {
  testing::GradCase grad_case;
  DType dtype;
};

void PrintTo(const OpCase& c, std::ostream* os) {
  *os << c.grad_case.name << " " << v1::DType_Name(c.dtype);
}

class NativeOpCaseTest : public ::testing::TestWithParam<OpCase> {};

TEST_P(NativeOpCaseTest, MatchesTheReferenceBackend) {
  const testing::GradCase& c = GetParam().grad_case;
  const DType dtype = GetParam().dtype;
  v1::Graph graph = testing::BuildGraph(c, dtype);
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<CompilePlan> plan = PlanCompilation(*a);
  ASSERT_THAT(plan, IsOk());
  ASSERT_TRUE(plan->backward_graph.has_value());

  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  std::vector<Tensor> inputs;
  for (int i = 0; i < graph.inputs_size(); ++i) {
    Tensor t = Tensor::Zeros(a->graph.values[i].meta);
    for (int64_t e = 0; e < t.storage_elements(); ++e) {
      StoreFrom<double>(t.storage_data(), dtype, e,
                        c.positive ? uniform(rng) : normal(rng));
    }
    inputs.push_back(t);
  }
  testing::BackendRun want =
      testing::RunWith(ReferenceBackend(), *plan, inputs);
  ASSERT_FALSE(want.grads.empty());
  testing::ExpectSameRuns(testing::RunWith(testing::Native(), *plan, inputs),
                          want);
}

std::vector<OpCase> OpCases() {
  std::vector<OpCase> out;
  for (DType dtype : {v1::DTYPE_FLOAT64, v1::DTYPE_FLOAT32}) {
    for (const testing::GradCase& c : testing::GradCases()) {
      out.push_back({c, dtype});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Rules, NativeOpCaseTest,
                         ::testing::ValuesIn(OpCases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) {
                           return info.param.grad_case.name +
                                  (info.param.dtype == v1::DTYPE_FLOAT64
                                       ? "_f64"
                                       : "_f32");
                         });

}  // namespace
}  // namespace aotcache
