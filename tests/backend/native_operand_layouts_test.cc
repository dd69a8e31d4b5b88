// Operands the native kernels read only contiguously (contiguous_operands.h)
// are copied first, so the node still runs in a native kernel: a matrix
// product of an expanded (stride-0) gradient or a strided slice, a sum of a
// transposed tensor. Each against the reference backend.
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backend/compare_backends.h"

namespace aotcache {
namespace {

using testing::ExpectNativeMatchesReference;
using testing::Filled;
using ::testing::HasSubstr;
using testing::NativeProgramOf;
using testing::Plan;

TEST(NativeOperandLayoutsTest, UnreadableLayoutsAreCopiedIntoNativeKernels) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [5, 6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "s", "meta": {"shape": [], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "b", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "e", "op": "aten.expand.default", "args": [{"node": "s"}, {"ints": {"values": [4, 5]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "every_other", "op": "aten.slice.Tensor", "args": [{"node": "x"}, {"int": 1}, {"int": 0}, {"int": 6}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "of_scalar", "op": "aten.mm.default", "args": [{"node": "e"}, {"node": "every_other"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "with_bias", "op": "aten.addmm.default", "args": [{"node": "b"}, {"node": "e"}, {"node": "every_other"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "xt", "op": "aten.t.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "of_transposed", "op": "aten.sum.dim_IntList", "args": [{"node": "xt"}, {"ints": {"values": [1]}}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["of_scalar", "with_bias", "of_transposed"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  EXPECT_THAT(native.source(), HasSubstr("cblas_sgemm(101, 111, 111, 4, 3, 5"));
  ExpectNativeMatchesReference(
      p->plan, {Filled({5, 6}, [](int64_t i) { return i * 0.25 - 3; }),
                Filled({}, [](int64_t) { return 1.5; }),
                Filled({3}, [](int64_t i) { return i - 1.0; })});
}

// A transposed matrix BLAS reads as it is is not copied.
TEST(NativeOperandLayoutsTest, TransposedMatricesAreReadInPlace) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [5, 6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "w", "meta": {"shape": [4, 6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "wt", "op": "aten.t.default", "args": [{"node": "w"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "y", "op": "aten.mm.default", "args": [{"node": "x"}, {"node": "wt"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["y"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_THAT(native.source(), HasSubstr("cblas_sgemm(101, 111, 112, 5, 4, 6"));
  EXPECT_THAT(native.source(), ::testing::Not(HasSubstr("static_cast<C>(a)")));
}

}  // namespace
}  // namespace aotcache
