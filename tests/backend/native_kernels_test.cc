// The native backend's kernel kinds, each against the runtime's kernels on
// a one-off graph: elementwise loops with scalar, broadcast and strided
// operands, fills, pow, gelu, reductions, softmax and log_softmax, layer
// norm and its backward, bmm; inf and NaN, and empty tensors.
#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backend/compare_backends.h"

namespace aotcache {
namespace {

using testing::ExpectNativeMatchesReference;
using testing::Filled;
using testing::ForwardWith;
using ::testing::HasSubstr;
using testing::Native;
using testing::NativeProgramOf;
using testing::Plan;

// An expanded scalar (stride 0, one element of memory) as a fused operand,
// as the gradient of a sum arrives.
TEST(NativeBackendTest, AnExpandedScalarOperandIsReadAtItsOneElement) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [5, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "s", "meta": {"shape": [], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "e", "op": "aten.expand.default", "args": [{"node": "s"}, {"ints": {"values": [5, 3]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "m", "op": "aten.mul.Tensor", "args": [{"node": "x"}, {"node": "e"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "r", "op": "aten.relu.default", "args": [{"node": "m"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["r"]})json");
  ASSERT_NE(p, nullptr);
  std::vector<Tensor> inputs = {
      Filled({5, 3}, [](int64_t i) { return i - 7.0; }),
      Filled({}, [](int64_t) { return 0.5; })};
  ExpectNativeMatchesReference(p->plan, inputs);
  std::vector<Tensor> out = ForwardWith(Native(), p->plan, inputs);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ToDoubles()[14], 3.5);  // relu((14 - 7) * 0.5)
}

// Elementwise producers fused into the sums and means that consume them:
// all dims, leading dims (outer) and trailing dims (inner).
TEST(NativeBackendTest, FusesProducersIntoSumsAndMeans) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [6, 40], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "a", "op": "aten.sin.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "b", "op": "aten.mul.Tensor", "args": [{"node": "a"}, {"float": 3.0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "all", "op": "aten.sum.default", "args": [{"node": "b"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "c", "op": "aten.cos.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "rows", "op": "aten.sum.dim_IntList", "args": [{"node": "c"}, {"ints": {"values": [0]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "d", "op": "aten.tanh.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "cols", "op": "aten.mean.dim", "args": [{"node": "d"}, {"ints": {"values": [-1]}}, {"bool": true}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["all", "rows", "cols"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 3);
  EXPECT_THAT(native.source(), HasSubstr("reduction(+ : acc)"));
  EXPECT_THAT(native.source(), HasSubstr("new double["));
  ExpectNativeMatchesReference(
      p->plan, {Filled({6, 40}, [](int64_t i) { return 0.01 * i - 1.0; })});
}

TEST(NativeBackendTest, ASoftmaxOverTheLastDimIsOneKernel) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [4, 33], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "s", "op": "aten._softmax.default", "args": [{"node": "x"}, {"int": -1}, {"bool": false}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["s"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 1);
  EXPECT_THAT(native.source(), HasSubstr("e[c] = vm::exp("));
  ExpectNativeMatchesReference(
      p->plan,
      {Filled({4, 33}, [](int64_t i) { return std::sin(0.3 * i) * 5; })});
}

// Sums and means over middle dims (a broadcast operand's gradient, say):
// the input as [outer, reduced, inner], the producers fused.
TEST(NativeBackendTest, FusesProducersIntoReductionsOverMiddleDims) {
  auto p = Plan(R"json({
    "inputs": [{"name": "z", "meta": {"shape": [2, 3, 4, 5], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "e", "op": "aten.exp.default", "args": [{"node": "z"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "mid", "op": "aten.sum.dim_IntList", "args": [{"node": "e"}, {"ints": {"values": [1, 2]}}, {"bool": true}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "t", "op": "aten.tanh.default", "args": [{"node": "z"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "avg", "op": "aten.mean.dim", "args": [{"node": "t"}, {"ints": {"values": [-2]}}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["mid", "avg"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 2);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  ExpectNativeMatchesReference(
      p->plan,
      {Filled({2, 3, 4, 5}, [](int64_t i) { return std::sin(0.1 * i); })});
}

// IEEE semantics as the runtime's kernels have them (no -ffast-math): inf,
// -inf and NaN through transcendental functions, max/min, relu, sign,
// comparisons and where, a softmax, a layer norm, a sum, and amax over rows
// and over columns.
TEST(NativeBackendTest, InfAndNaNBehaveAsInTheReferenceKernels) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [4, 8], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "y", "meta": {"shape": [4, 8], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "e", "op": "aten.exp.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "l", "op": "aten.log.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "s", "op": "aten.sigmoid.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "t", "op": "aten.tanh.default", "args": [{"node": "y"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "mx", "op": "aten.maximum.default", "args": [{"node": "x"}, {"node": "y"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "mn", "op": "aten.minimum.default", "args": [{"node": "e"}, {"node": "l"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "rl", "op": "aten.relu.default", "args": [{"node": "mn"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "sg", "op": "aten.sign.default", "args": [{"node": "y"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "r", "op": "aten.add.Tensor", "args": [{"node": "rl"}, {"node": "sg"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gt", "op": "aten.gt.Tensor", "args": [{"node": "x"}, {"node": "y"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "w", "op": "aten.where.self", "args": [{"node": "gt"}, {"node": "s"}, {"node": "t"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "a", "op": "aten.add.Tensor", "args": [{"node": "w"}, {"node": "r"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "sm", "op": "aten._softmax.default", "args": [{"node": "mx"}, {"int": -1}, {"bool": false}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "ln", "op": "aten.native_layer_norm.default", "args": [{"node": "y"}, {"ints": {"values": [8]}}, {"none": true}, {"none": true}, {"float": 1e-05}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "n", "op": "getitem", "args": [{"node": "ln"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "sum", "op": "aten.sum.dim_IntList", "args": [{"node": "a"}, {"ints": {"values": [1]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "rowmax", "op": "aten.amax.default", "args": [{"node": "x"}, {"ints": {"values": [1]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "colmax", "op": "aten.amax.default", "args": [{"node": "y"}, {"ints": {"values": [0]}}, {"bool": true}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["a", "sm", "n", "sum", "rowmax", "colmax"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  // Rows mix inf, -inf and NaN with ordinary values; row 3 is ordinary.
  auto special = [](int64_t i) {
    const double kSpecial[] = {std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::quiet_NaN(),
                               0.0,
                               -0.0,
                               88.0,
                               -104.0,
                               1e-30};
    return i < 24 ? kSpecial[(i * 5) % 8] : 0.25 * i - 7;
  };
  ExpectNativeMatchesReference(
      p->plan, {Filled({4, 8}, special), Filled({4, 8}, [](int64_t i) {
                  return i % 3 == 0 ? std::numeric_limits<double>::quiet_NaN()
                                    : std::sin(1.3 * i) * 50;
                })});
}

// Tensors with no elements, and matrix products over an empty inner
// dimension (zeros), through every kind of kernel.
TEST(NativeBackendTest, EmptyTensorsGiveWhatTheReferenceKernelsGive) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [0, 8], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "a", "meta": {"shape": [3, 0], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "b", "meta": {"shape": [0, 4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "e", "op": "aten.exp.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "sm", "op": "aten._softmax.default", "args": [{"node": "e"}, {"int": -1}, {"bool": false}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "ln", "op": "aten.native_layer_norm.default", "args": [{"node": "x"}, {"ints": {"values": [8]}}, {"none": true}, {"none": true}, {"float": 1e-05}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "n", "op": "getitem", "args": [{"node": "ln"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "rows", "op": "aten.sum.dim_IntList", "args": [{"node": "e"}, {"ints": {"values": [0]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "mean", "op": "aten.mean.default", "args": [{"node": "e"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "mm", "op": "aten.mm.default", "args": [{"node": "a"}, {"node": "b"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "xt", "op": "aten.t.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gram", "op": "aten.mm.default", "args": [{"node": "xt"}, {"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["sm", "n", "rows", "mean", "mm", "gram"]})json");
  ASSERT_NE(p, nullptr);
  std::vector<Tensor> out =
      ForwardWith(Native(), p->plan,
                  {Filled({0, 8}, [](int64_t) { return 1.0; }),
                   Filled({3, 0}, [](int64_t) { return 1.0; }),
                   Filled({0, 4}, [](int64_t) { return 1.0; })});
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[2].ToDoubles(), std::vector<double>(8, 0.0));   // Sum of none.
  EXPECT_TRUE(std::isnan(out[3].ToDoubles()[0]));               // Mean of none.
  EXPECT_EQ(out[4].ToDoubles(), std::vector<double>(12, 0.0));  // [3,0]@[0,4].
  EXPECT_EQ(out[5].ToDoubles(), std::vector<double>(64, 0.0));  // [8,0]@[0,8].
  ExpectNativeMatchesReference(p->plan,
                               {Filled({0, 8}, [](int64_t) { return 1.0; }),
                                Filled({3, 0}, [](int64_t) { return 1.0; }),
                                Filled({0, 4}, [](int64_t) { return 1.0; })});
}

// Operands that broadcast (a row, a column, a middle dim) or are laid out
// otherwise (transposed) are read through their strides in a loop nest over
// the output's dims, fused with the rest of the chain.
TEST(NativeBackendTest, BroadcastAndStridedOperandsAreReadThroughStrides) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [4, 6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "row", "meta": {"shape": [6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "col", "meta": {"shape": [4, 1], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "y", "meta": {"shape": [6, 4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "z", "meta": {"shape": [2, 3, 5], "dtype": "DTYPE_FLOAT64", "is_leaf": true}},
               {"name": "m", "meta": {"shape": [2, 1, 5], "dtype": "DTYPE_FLOAT64", "is_leaf": true}}],
    "nodes": [
      {"name": "a", "op": "aten.add.Tensor", "args": [{"node": "x"}, {"node": "row"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "b", "op": "aten.mul.Tensor", "args": [{"node": "a"}, {"node": "col"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "yt", "op": "aten.t.default", "args": [{"node": "y"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "c", "op": "aten.sub.Tensor", "args": [{"node": "b"}, {"node": "yt"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "d", "op": "aten.tanh.default", "args": [{"node": "c"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "s", "op": "aten.sin.default", "args": [{"node": "row"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "e", "op": "aten.maximum.default", "args": [{"node": "d"}, {"node": "s"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "f", "op": "aten.div.Tensor", "args": [{"node": "z"}, {"node": "m"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "pos", "op": "aten.gt.Tensor", "args": [{"node": "f"}, {"node": "m"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "w", "op": "aten.where.self", "args": [{"node": "pos"}, {"node": "f"}, {"node": "m"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["e", "w"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  // The 4x6 chain is one kernel (sin of the row is its own: it has the
  // row's shape), and so is the 3-D division with its comparison and
  // where.
  EXPECT_EQ(native.kernels_size(), 3);
  EXPECT_THAT(native.source(), HasSubstr("c * 4]"));  // The transposed y.
  ExpectNativeMatchesReference(
      p->plan, {Filled({4, 6}, [](int64_t i) { return std::sin(0.7 * i); }),
                Filled({6}, [](int64_t i) { return 0.3 * i - 1; }),
                Filled({4, 1}, [](int64_t i) { return 1.5 - i; }),
                Filled({6, 4}, [](int64_t i) { return std::cos(0.2 * i); }),
                Filled(
                    {2, 3, 5}, [](int64_t i) { return 0.25 * i - 3; },
                    v1::DTYPE_FLOAT64),
                Filled(
                    {2, 1, 5}, [](int64_t i) { return i == 3 ? 0.0 : i - 4.5; },
                    v1::DTYPE_FLOAT64)});
}

// Fills (zeros, ones, full, their _like forms, fill) are formulas without
// operands: fused into the loops that read them (zeros_like of a transposed
// view too: the view is not an operand).
TEST(NativeBackendTest, FillsAreFusedIntoTheirReaders) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [3, 4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "y", "meta": {"shape": [4, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "f", "op": "aten.full.default", "args": [{"ints": {"values": [3, 4]}}, {"float": 2.5}], "kwargs": {"dtype": {"dtype": "DTYPE_FLOAT32"}}, "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "o", "op": "aten.ones.default", "args": [{"ints": {"values": [3, 4]}}], "kwargs": {"dtype": {"dtype": "DTYPE_FLOAT32"}}, "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "z", "op": "aten.zeros.default", "args": [{"ints": {"values": [3, 4]}}], "kwargs": {"dtype": {"dtype": "DTYPE_FLOAT32"}}, "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "zl", "op": "aten.zeros_like.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "ol", "op": "aten.ones_like.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "fl", "op": "aten.fill.Scalar", "args": [{"node": "x"}, {"float": -1.5}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "a", "op": "aten.mul.Tensor", "args": [{"node": "f"}, {"node": "o"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "b", "op": "aten.add.Tensor", "args": [{"node": "a"}, {"node": "z"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "c", "op": "aten.add.Tensor", "args": [{"node": "b"}, {"node": "zl"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "d", "op": "aten.sub.Tensor", "args": [{"node": "c"}, {"node": "ol"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "e", "op": "aten.mul.Tensor", "args": [{"node": "d"}, {"node": "fl"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "out", "op": "aten.add.Tensor", "args": [{"node": "e"}, {"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "xt", "op": "aten.t.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "zt", "op": "aten.zeros_like.default", "args": [{"node": "xt"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "g", "op": "aten.sub.Tensor", "args": [{"node": "zt"}, {"node": "y"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["out", "g"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  const std::vector<Tensor> inputs = {
      Filled({3, 4}, [](int64_t i) { return 0.5 * i; }),
      Filled({4, 3}, [](int64_t i) { return 2.0 - i; })};
  std::vector<Tensor> out = ForwardWith(Native(), p->plan, inputs);
  ASSERT_EQ(out.size(), 2u);
  // ((2.5 * 1 + 0 + 0) - 1) * -1.5 + x = -2.25 + x.
  EXPECT_EQ(out[0].ToDoubles()[2], -2.25 + 1.0);
  ExpectNativeMatchesReference(p->plan, inputs);
}

// Copies and casts: clone (of a transposed view: a contiguous copy),
// _to_copy (float64 to float32), and copy (src broadcast into self).
TEST(NativeBackendTest, CopiesAndCastsAreFused) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [5, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "d", "meta": {"shape": [3, 5], "dtype": "DTYPE_FLOAT64", "is_leaf": true}},
               {"name": "row", "meta": {"shape": [5], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "xt", "op": "aten.t.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "c", "op": "aten.clone.default", "args": [{"node": "xt"}], "kwargs": {"memory_format": {"string": "torch.contiguous_format"}}, "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "f", "op": "aten._to_copy.default", "args": [{"node": "d"}], "kwargs": {"dtype": {"dtype": "DTYPE_FLOAT32"}}, "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "k", "op": "aten.copy.default", "args": [{"node": "f"}, {"node": "row"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "out", "op": "aten.mul.Tensor", "args": [{"node": "c"}, {"node": "k"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["c", "out"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  const std::vector<Tensor> inputs = {
      Filled({5, 3}, [](int64_t i) { return 0.5 * i; }),
      Filled(
          {3, 5}, [](int64_t i) { return 1.0 / 3.0 + i; }, v1::DTYPE_FLOAT64),
      Filled({5}, [](int64_t i) { return i - 2.0; })};
  std::vector<Tensor> out = ForwardWith(Native(), p->plan, inputs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ToDoubles()[1], 1.5);  // c[0][1] = x[1][0] = 0.5 * 3.
  ExpectNativeMatchesReference(p->plan, inputs);
}

// The scatters of functionalized view writes: self copied into the
// result, then src written into the view, in order.
TEST(NativeBackendTest, ScattersCopyThenWriteTheView) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [4, 6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "row", "meta": {"shape": [6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "cols", "meta": {"shape": [4, 3], "dtype": "DTYPE_FLOAT64", "is_leaf": true}},
               {"name": "y", "meta": {"shape": [6, 4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "patch", "meta": {"shape": [2, 2], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "a", "op": "aten.select_scatter.default", "args": [{"node": "x"}, {"node": "row"}, {"int": 0}, {"int": -1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "b", "op": "aten.slice_scatter.default", "args": [{"node": "a"}, {"node": "cols"}, {"int": 1}, {"int": -5}, {"none": true}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "c", "op": "aten.as_strided_scatter.default", "args": [{"node": "b"}, {"node": "patch"}, {"ints": {"values": [2, 2]}}, {"ints": {"values": [6, 2]}}, {"int": 7}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "yt", "op": "aten.t.default", "args": [{"node": "y"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "d", "op": "aten.select_scatter.default", "args": [{"node": "yt"}, {"node": "row"}, {"int": 0}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["c", "d"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 4);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  const std::vector<Tensor> inputs = {
      Filled({4, 6}, [](int64_t i) { return 1.0 * i; }),
      Filled({6}, [](int64_t i) { return -1.0 - i; }),
      Filled(
          {4, 3}, [](int64_t i) { return 100.0 + i; }, v1::DTYPE_FLOAT64),
      Filled({6, 4}, [](int64_t i) { return 0.5 * i; }),
      Filled({2, 2}, [](int64_t i) { return 1000.0 + i; })};
  std::vector<Tensor> out = ForwardWith(Native(), p->plan, inputs);
  ASSERT_EQ(out.size(), 2u);
  const std::vector<double> c = out[0].ToDoubles();
  EXPECT_EQ(c[18], -1.0);   // Row 3 is `row`: c[3][0].
  EXPECT_EQ(c[1], 100.0);   // Columns 1, 3, 5 are cols: c[0][1].
  EXPECT_EQ(c[11], 105.0);  // c[1][5] = cols[1][2]; the patch took c[1][3].
  EXPECT_EQ(c[7], 1000.0);  // The patch at offset 7, strides (6, 2).
  EXPECT_EQ(c[9], 1001.0);
  EXPECT_EQ(c[0], 0.0);  // x elsewhere.
  ExpectNativeMatchesReference(p->plan, inputs);
}

// pow with a number exponent: squares as products, others through pow (NaN
// for a negative base and a fractional exponent), in the elementwise loop.
TEST(NativeBackendTest, PowersOfANumberExponentAreFused) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [64], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "sq", "op": "aten.pow.Tensor_Scalar", "args": [{"node": "x"}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "cube", "op": "aten.pow.Tensor_Scalar", "args": [{"node": "x"}, {"float": 3.0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "sum", "op": "aten.add.Tensor", "args": [{"node": "sq"}, {"node": "cube"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "root", "op": "aten.pow.Tensor_Scalar", "args": [{"node": "x"}, {"float": 0.5}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["sum", "root"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 2);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  ExpectNativeMatchesReference(
      p->plan, {Filled({64}, [](int64_t i) { return 0.1 * i - 3.0; })});
}

// gelu and its backward, exact (erf) and approximate (tanh), fused: libmvec
// has erf since glibc 2.35.
TEST(NativeBackendTest, GeluAndItsBackwardAreFused) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [96], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "g", "meta": {"shape": [96], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "exact", "op": "aten.gelu.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "approx", "op": "aten.gelu.default", "args": [{"node": "x"}], "kwargs": {"approximate": {"string": "tanh"}}, "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "d_exact", "op": "aten.gelu_backward.default", "args": [{"node": "g"}, {"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "d_approx", "op": "aten.gelu_backward.default", "args": [{"node": "g"}, {"node": "x"}], "kwargs": {"approximate": {"string": "tanh"}}, "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["exact", "approx", "d_exact", "d_approx"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 4);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  EXPECT_THAT(native.source(), HasSubstr("vm::erf("));
  ExpectNativeMatchesReference(
      p->plan, {Filled({96}, [](int64_t i) { return 0.125 * i - 6.0; }),
                Filled({96}, [](int64_t i) { return std::cos(0.3 * i); })});
}

// bmm through BLAS, one call per batch: contiguous, transposed and
// batch-broadcast (stride 0) operands.
TEST(NativeBackendTest, BatchedProductsCallBlasPerBatch) {
  auto p = Plan(R"json({
    "inputs": [{"name": "a", "meta": {"shape": [3, 4, 5], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "c", "meta": {"shape": [3, 6, 5], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "w", "meta": {"shape": [5, 2], "dtype": "DTYPE_FLOAT64", "is_leaf": true}},
               {"name": "v", "meta": {"shape": [3, 4, 5], "dtype": "DTYPE_FLOAT64", "is_leaf": true}}],
    "nodes": [
      {"name": "ct", "op": "aten.transpose.int", "args": [{"node": "c"}, {"int": 1}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "ab", "op": "aten.bmm.default", "args": [{"node": "a"}, {"node": "ct"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "we", "op": "aten.expand.default", "args": [{"node": "w"}, {"ints": {"values": [3, 5, 2]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "vw", "op": "aten.bmm.default", "args": [{"node": "v"}, {"node": "we"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["ab", "vw"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 2);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  EXPECT_THAT(native.source(), HasSubstr("for (int64_t b = 0; b < 3; ++b)"));
  ExpectNativeMatchesReference(
      p->plan,
      {Filled({3, 4, 5}, [](int64_t i) { return std::sin(0.3 * i); }),
       Filled({3, 6, 5}, [](int64_t i) { return std::cos(0.2 * i); }),
       Filled(
           {5, 2}, [](int64_t i) { return 0.5 * i - 1; }, v1::DTYPE_FLOAT64),
       Filled(
           {3, 4, 5}, [](int64_t i) { return 0.01 * i * i; },
           v1::DTYPE_FLOAT64)});
}

// native_layer_norm: one kernel computing its three results, with and
// without weight and bias, over one or several trailing dims.
TEST(NativeBackendTest, ALayerNormIsOneKernelOfThreeResults) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [3, 5, 8], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "w", "meta": {"shape": [8], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "b", "meta": {"shape": [8], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "ln", "op": "aten.native_layer_norm.default", "args": [{"node": "x"}, {"ints": {"values": [8]}}, {"node": "w"}, {"node": "b"}, {"float": 1e-05}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "y", "op": "getitem", "args": [{"node": "ln"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "mean", "op": "getitem", "args": [{"node": "ln"}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "rstd", "op": "getitem", "args": [{"node": "ln"}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "ln2", "op": "aten.native_layer_norm.default", "args": [{"node": "x"}, {"ints": {"values": [5, 8]}}, {"none": true}, {"none": true}, {"float": 0.5}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "y2", "op": "getitem", "args": [{"node": "ln2"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["y", "mean", "rstd", "y2"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  ASSERT_EQ(native.kernels_size(), 2);
  EXPECT_EQ(native.kernels(0).outputs_size(), 3);
  EXPECT_THAT(native.source(), HasSubstr("rstd[r] = static_cast<C>(inv);"));
  ExpectNativeMatchesReference(
      p->plan,
      {Filled({3, 5, 8}, [](int64_t i) { return std::sin(0.7 * i) * 3; }),
       Filled({8}, [](int64_t i) { return 0.5 + 0.1 * i; }),
       Filled({8}, [](int64_t i) { return 0.2 * i - 0.4; })});
}

// native_layer_norm_backward: one kernel of three results, computing those
// its output mask asks for (and any other that is read), with and without a
// weight.
TEST(NativeBackendTest, ALayerNormBackwardIsOneKernelOfThreeResults) {
  auto p = Plan(R"json({
    "inputs": [{"name": "g", "meta": {"shape": [6, 16], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "x", "meta": {"shape": [6, 16], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "w", "meta": {"shape": [16], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "b", "meta": {"shape": [16], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "ln", "op": "aten.native_layer_norm.default", "args": [{"node": "x"}, {"ints": {"values": [16]}}, {"node": "w"}, {"node": "b"}, {"float": 1e-05}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "mean", "op": "getitem", "args": [{"node": "ln"}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "rstd", "op": "getitem", "args": [{"node": "ln"}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "all", "op": "aten.native_layer_norm_backward.default", "args": [{"node": "g"}, {"node": "x"}, {"ints": {"values": [16]}}, {"node": "mean"}, {"node": "rstd"}, {"node": "w"}, {"node": "b"}, {"ints": {"values": [1, 1, 1]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gx", "op": "getitem", "args": [{"node": "all"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gw", "op": "getitem", "args": [{"node": "all"}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gb", "op": "getitem", "args": [{"node": "all"}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "x_only", "op": "aten.native_layer_norm_backward.default", "args": [{"node": "g"}, {"node": "x"}, {"ints": {"values": [16]}}, {"node": "mean"}, {"node": "rstd"}, {"none": true}, {"none": true}, {"ints": {"values": [1, 0, 0]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gx2", "op": "getitem", "args": [{"node": "x_only"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "params", "op": "aten.native_layer_norm_backward.default", "args": [{"node": "g"}, {"node": "x"}, {"ints": {"values": [16]}}, {"node": "mean"}, {"node": "rstd"}, {"node": "w"}, {"node": "b"}, {"ints": {"values": [0, 1, 1]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gw3", "op": "getitem", "args": [{"node": "params"}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gb3", "op": "getitem", "args": [{"node": "params"}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gx_read", "op": "getitem", "args": [{"node": "params"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["gx", "gw", "gb", "gx2", "gw3", "gb3", "gx_read"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 4);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  EXPECT_THAT(native.source(), HasSubstr("sum_gw_xhat"));
  ExpectNativeMatchesReference(
      p->plan,
      {Filled({6, 16}, [](int64_t i) { return std::cos(0.3 * i); }),
       Filled({6, 16}, [](int64_t i) { return std::sin(0.7 * i) * 3; }),
       Filled({16}, [](int64_t i) { return 0.5 + 0.1 * i; }),
       Filled({16}, [](int64_t i) { return 0.2 * i - 0.4; })});
}

// log_softmax, and the backward of softmax and of log_softmax, are one
// kernel each, as the runtime's kernels compute them.
TEST(NativeBackendTest, LogSoftmaxAndTheSoftmaxBackwardsAreOneKernelEach) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [5, 19], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "g", "meta": {"shape": [5, 19], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "ls", "op": "aten._log_softmax.default", "args": [{"node": "x"}, {"int": -1}, {"bool": false}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "s", "op": "aten._softmax.default", "args": [{"node": "x"}, {"int": 1}, {"bool": false}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "dls", "op": "aten._log_softmax_backward_data.default", "args": [{"node": "g"}, {"node": "ls"}, {"int": -1}, {"dtype": "DTYPE_FLOAT32"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "ds", "op": "aten._softmax_backward_data.default", "args": [{"node": "g"}, {"node": "s"}, {"int": 1}, {"dtype": "DTYPE_FLOAT32"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["ls", "dls", "ds"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 4);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  EXPECT_THAT(native.source(), HasSubstr("log_sum"));
  ExpectNativeMatchesReference(
      p->plan,
      {Filled({5, 19}, [](int64_t i) { return std::sin(0.3 * i) * 7; }),
       Filled({5, 19}, [](int64_t i) { return std::cos(0.11 * i) - 0.2; })});
}

}  // namespace
}  // namespace aotcache
