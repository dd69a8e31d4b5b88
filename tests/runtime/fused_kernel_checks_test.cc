// GraphExecutor's checks of the native kernels an artifact names (a
// damaged or hostile artifact must be refused, never run out of order):
// a kernel runs at its last node's turn, so what it reads must be made
// before and what it outputs read after; its outputs are its nodes'
// results. And a kernel that absorbs a later node runs where it says.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/runtime/graph_executor.h"
#include "core/runtime/strided.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::testing::HasSubstr;

// x -> a = neg(x) -> b = relu(a) -> c = exp(b); d = sin(x); e = add(c, d).
constexpr char kGraph[] = R"json({
  "inputs": [{"name": "x", "meta": {"shape": [4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
  "nodes": [
    {"name": "a", "op": "aten.neg.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
    {"name": "b", "op": "aten.relu.default", "args": [{"node": "a"}], "grad_mode": "GRAD_MODE_ENABLED"},
    {"name": "c", "op": "aten.exp.default", "args": [{"node": "b"}], "grad_mode": "GRAD_MODE_ENABLED"},
    {"name": "d", "op": "aten.sin.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
    {"name": "e", "op": "aten.add.Tensor", "args": [{"node": "c"}, {"node": "d"}], "grad_mode": "GRAD_MODE_ENABLED"}
  ],
  "outputs": ["e"]})json";

// Value ids: x 0, then the nodes' results a 1, b 2, c 3, d 4, e 5.
constexpr int kX = 0, kA = 1, kB = 2, kC = 3, kD = 4, kE = 5;

// relu(-x), as node b computes it: the kernel of the group {b, a}.
void NegRelu(const void* const* inputs, void* const* outputs, int64_t n) {
  const float* x = static_cast<const float*>(inputs[0]);
  float* out = static_cast<float*>(outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = -x[i] > 0 ? -x[i] : 0.0f;
}

GraphExecutor::FusedKernel Kernel(std::vector<int> nodes,
                                  std::vector<int> inputs,
                                  std::vector<int> outputs) {
  GraphExecutor::FusedKernel k;
  k.nodes = std::move(nodes);
  k.inputs = std::move(inputs);
  k.outputs = std::move(outputs);
  k.fn = NegRelu;
  return k;
}

absl::StatusOr<std::unique_ptr<GraphExecutor>> WithKernels(
    std::vector<GraphExecutor::FusedKernel> kernels) {
  v1::ReferenceProgram program;
  *program.mutable_graph() = testing::GraphFromJson(kGraph);
  for (int r = 0; r < 5; ++r) program.add_result_slot(-1);
  return GraphExecutor::Create(program, std::move(kernels));
}

absl::StatusOr<std::unique_ptr<GraphExecutor>> WithKernel(
    std::vector<int> nodes, std::vector<int> inputs, std::vector<int> outputs) {
  return WithKernels(
      {Kernel(std::move(nodes), std::move(inputs), std::move(outputs))});
}

TEST(FusedKernelChecksTest, AKernelAbsorbingALaterNodeRunsAtItsTurn) {
  // Runs at a's turn, outputs b (read by c, after).
  auto e = WithKernel({1, 0}, {kX}, {kB});
  ASSERT_THAT(e, IsOk());
  Tensor x = Tensor::Contiguous({4}, v1::DTYPE_FLOAT32);
  const std::vector<double> xs = {-1.5, 0.0, 2.0, -0.25};
  for (int i = 0; i < 4; ++i)
    StoreFrom<double>(x.storage_data(), x.dtype(), i, xs[i]);
  auto out = (*e)->Run({x});
  ASSERT_THAT(out, IsOk());
  const std::vector<double> got = (*out)[0].ToDoubles();
  for (int i = 0; i < 4; ++i) {
    const double want = std::exp(std::max(-xs[i], 0.0)) + std::sin(xs[i]);
    EXPECT_NEAR(got[i], want, 1e-6) << i;
  }
}

TEST(FusedKernelChecksTest, AValueMadeAfterTheKernelRunsIsRefused) {
  // At a's turn, reading d (made at turn 3).
  auto e = WithKernel({1, 0}, {kD}, {kB});
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("not made before it runs"));
  // Reading a result of its own group.
  e = WithKernel({1, 0}, {kA}, {kB});
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("not made before it runs"));
}

TEST(FusedKernelChecksTest, AnOutputReadBeforeTheKernelRunsIsRefused) {
  // Runs at c's turn, outputting a, which b reads at turn 1.
  auto e = WithKernel({0, 2}, {kX}, {kA, kC});
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("read before it runs"));
}

TEST(FusedKernelChecksTest, AnotherKernelsOutputIsReadOnlyOnceItRan) {
  // c is made by node 2 but by a kernel that runs at turn 4: one at d's
  // turn (3) may not read it.
  auto e = WithKernels(
      {Kernel({2, 4}, {kB, kD}, {kC, kE}), Kernel({3}, {kC}, {kD})});
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("read before it runs"));
  // At c's turn (2), b's kernel (turn 1) has run.
  e = WithKernels({Kernel({1}, {kA}, {kB}), Kernel({2}, {kB}, {kC})});
  EXPECT_THAT(e, IsOk());
}

TEST(FusedKernelChecksTest, OutputsMustBeTheKernelsNodesResults) {
  auto e = WithKernel({0}, {kX}, {kD});
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("not its nodes' results"));
  e = WithKernel({1, 0}, {kX}, {kB, kB});
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("not its nodes' results"));
}

}  // namespace
}  // namespace aotcache
