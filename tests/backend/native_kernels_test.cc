// The native backend's elementwise kernels against the runtime's kernels on
// one-off graphs: scalar, broadcast and strided operands, fills, copies,
// pow, gelu; inf and NaN, and empty tensors through every kernel kind
// (native_structured_kernels_test.cc has reductions, softmax, layer norm,
// bmm and the scatters).
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

// Results laid out as eager lays them out (transposed like x.t(), or
// channels-last) are still computed by generated loops: a flat one when
// every operand shares the result's layout, a loop nest in the result's
// memory order when one is broadcast.
TEST(NativeBackendTest, PermutedResultsAreFusedInTheirLayout) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [3, 4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "c", "meta": {"shape": [2, 3, 4, 5], "stride": [60, 1, 15, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "b", "meta": {"shape": [3, 1, 1], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "xt", "op": "aten.t.default", "args": [{"node": "x"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "m", "op": "aten.mul.Tensor", "args": [{"node": "xt"}, {"float": 2.0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "e", "op": "aten.exp.default", "args": [{"node": "m"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "cb", "op": "aten.add.Tensor", "args": [{"node": "c"}, {"node": "b"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "r", "op": "aten.relu.default", "args": [{"node": "cb"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["e", "r"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  const std::vector<Tensor> inputs = {
      Filled({3, 4}, [](int64_t i) { return 0.1 * i; }),
      Filled({2, 3, 4, 5}, [](int64_t i) { return 1.0 - 0.03 * i; })
          .View(Meta{{2, 3, 4, 5}, {60, 1, 15, 3}, 0, v1::DTYPE_FLOAT32}),
      Filled({3, 1, 1}, [](int64_t i) { return -0.5 * i; })};
  std::vector<Tensor> out = ForwardWith(Native(), p->plan, inputs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].meta().stride, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(out[1].meta().stride, (std::vector<int64_t>{60, 1, 15, 3}));
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

}  // namespace
}  // namespace aotcache
