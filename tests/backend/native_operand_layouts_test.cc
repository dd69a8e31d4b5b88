// Operands the native kernels read only contiguously (contiguous_operands.h)
// are copied first, so the node still runs in a native kernel: a matrix
// product of an expanded (stride-0) gradient or a strided slice, a sum of a
// transposed tensor; convolutions and layer norms over channels-last images
// and permuted views are staged through row-major scratch
// (staged_operands.h). Each against the reference backend.
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

// timm's ConvNeXt: a depthwise convolution of a channels-last image, its
// backward, and a layer norm over the channels of the image permuted.
TEST(NativeOperandLayoutsTest, ChannelsLastConvolutionsAndLayerNormsAreStaged) {
  auto p = Plan(R"json({
    "inputs": [{"name": "nhwc", "meta": {"shape": [2, 5, 6, 4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "w", "meta": {"shape": [4, 1, 3, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "g", "meta": {"shape": [2, 4, 5, 6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "lw", "meta": {"shape": [4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "x", "op": "aten.permute.default", "args": [{"node": "nhwc"}, {"ints": {"values": [0, 3, 1, 2]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "y", "op": "aten.convolution.default", "args": [{"node": "x"}, {"node": "w"}, {"none": true}, {"ints": {"values": [1, 1]}}, {"ints": {"values": [1, 1]}}, {"ints": {"values": [1, 1]}}, {"bool": false}, {"ints": {"values": [0, 0]}}, {"int": 4}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "back", "op": "aten.convolution_backward.default", "args": [{"node": "g"}, {"node": "x"}, {"node": "w"}, {"none": true}, {"ints": {"values": [1, 1]}}, {"ints": {"values": [1, 1]}}, {"ints": {"values": [1, 1]}}, {"bool": false}, {"ints": {"values": [0, 0]}}, {"int": 4}, {"ints": {"values": [1, 1, 0]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gx", "op": "getitem", "args": [{"node": "back"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gw", "op": "getitem", "args": [{"node": "back"}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "yt", "op": "aten.permute.default", "args": [{"node": "y"}, {"ints": {"values": [0, 2, 3, 1]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "ln", "op": "aten.native_layer_norm.default", "args": [{"node": "yt"}, {"ints": {"values": [4]}}, {"node": "lw"}, {"none": true}, {"float": 1e-6}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "normed", "op": "getitem", "args": [{"node": "ln"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["y", "gx", "gw", "normed"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  EXPECT_THAT(native.source(), HasSubstr("staged_inputs"));
  ExpectNativeMatchesReference(
      p->plan,
      {Filled({2, 5, 6, 4}, [](int64_t i) { return (i % 11) * 0.3 - 1.4; }),
       Filled({4, 1, 3, 3}, [](int64_t i) { return (i % 7) * 0.2 - 0.5; }),
       Filled({2, 4, 5, 6}, [](int64_t i) { return (i % 5) * 0.4 - 0.9; }),
       Filled({4}, [](int64_t i) { return 1.0 + 0.25 * i; })});
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
