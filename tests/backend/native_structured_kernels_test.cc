// The native backend's kernels that are not plain elementwise loops, each
// against the runtime's kernels on a one-off graph: reductions with their
// producers (over one block of dims or two), cat, dot, softmax and log_softmax
// and their backward, layer norm and its backward, bmm, and the scatters of
// functionalized view writes.
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

// Reductions over two blocks of dims, the first leading ([N, C, L] over N
// and L: a bias's gradient), with and without a kept trailing block, and
// amax; the producers fused.
TEST(NativeBackendTest, FusesProducersIntoReductionsOverTwoBlocksOfDims) {
  auto p = Plan(R"json({
    "inputs": [{"name": "z", "meta": {"shape": [3, 4, 5, 6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "e", "op": "aten.exp.default", "args": [{"node": "z"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "bias", "op": "aten.sum.dim_IntList", "args": [{"node": "e"}, {"ints": {"values": [0, 2, 3]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "t", "op": "aten.tanh.default", "args": [{"node": "z"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "avg", "op": "aten.mean.dim", "args": [{"node": "t"}, {"ints": {"values": [0, 2]}}, {"bool": true}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "s", "op": "aten.sin.default", "args": [{"node": "z"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "peak", "op": "aten.amax.default", "args": [{"node": "s"}, {"ints": {"values": [0, -1]}}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["bias", "avg", "peak"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 3);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  EXPECT_THAT(native.source(), HasSubstr("for (int64_t p = 0; p < 3; ++p)"));
  ExpectNativeMatchesReference(
      p->plan,
      {Filled({3, 4, 5, 6}, [](int64_t i) { return std::sin(0.07 * i); })});
}

// cat: each part copied into its columns of the result, along a middle
// dim, along the first, with a part repeated and with an empty part (which
// the runtime's kernel skips); int64 too.
TEST(NativeBackendTest, ACatCopiesEachPartIntoItsColumns) {
  auto p = Plan(R"json({
    "inputs": [{"name": "a", "meta": {"shape": [2, 3, 4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "b", "meta": {"shape": [2, 5, 4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "e", "meta": {"shape": [0], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "i", "meta": {"shape": [3], "dtype": "DTYPE_INT64", "is_leaf": true}}],
    "nodes": [
      {"name": "mid", "op": "aten.cat.default", "args": [{"nodes": {"names": ["a", "b", "e", "a"]}}, {"int": -2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "first", "op": "aten.cat.default", "args": [{"nodes": {"names": ["mid", "mid"]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "ints", "op": "aten.cat.default", "args": [{"nodes": {"names": ["i", "i"]}}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["mid", "first", "ints"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 3);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  ExpectNativeMatchesReference(
      p->plan, {Filled({2, 3, 4}, [](int64_t i) { return i + 0.5; }),
                Filled({2, 5, 4}, [](int64_t i) { return -i - 0.25; }),
                Filled({0}, [](int64_t i) { return 0.0; }),
                Filled(
                    {3}, [](int64_t i) { return 7.0 * i; }, v1::DTYPE_INT64)});
}

// dot: two vectors read through their strides (a column of a matrix),
// accumulated in double; one vector with itself.
TEST(NativeBackendTest, ADotReadsItsVectorsThroughTheirStrides) {
  auto p = Plan(R"json({
    "inputs": [{"name": "m", "meta": {"shape": [5, 4], "dtype": "DTYPE_FLOAT64", "is_leaf": true}},
               {"name": "v", "meta": {"shape": [5], "dtype": "DTYPE_FLOAT64", "is_leaf": true}}],
    "nodes": [
      {"name": "col", "op": "aten.select.int", "args": [{"node": "m"}, {"int": 1}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "d", "op": "aten.dot.default", "args": [{"node": "col"}, {"node": "v"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "norm2", "op": "aten.dot.default", "args": [{"node": "v"}, {"node": "v"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["d", "norm2"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 2);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  ExpectNativeMatchesReference(
      p->plan,
      {Filled(
           {5, 4}, [](int64_t i) { return std::sin(0.3 * i); },
           v1::DTYPE_FLOAT64),
       Filled(
           {5}, [](int64_t i) { return 1.5 - i; }, v1::DTYPE_FLOAT64)});
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

// var.correction: one kernel per node, over two blocks of dims (batch
// norm's [0, 2, 3]), one middle block, every dim; correction 1, 0 and 2.
TEST(NativeBackendTest, AVarianceIsAKernelOfItsOwn) {
  for (const char* dtype : {"DTYPE_FLOAT32", "DTYPE_FLOAT64"}) {
    std::string json = R"json({
    "inputs": [{"name": "x", "meta": {"shape": [2, 3, 4, 5], "dtype": "T", "is_leaf": true}}],
    "nodes": [
      {"name": "bn", "op": "aten.var.correction", "args": [{"node": "x"}, {"ints": {"values": [0, 2, 3]}}], "kwargs": {"correction": {"int": 1}}, "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "mid", "op": "aten.var.correction", "args": [{"node": "x"}, {"ints": {"values": [1]}}], "kwargs": {"correction": {"int": 0}, "keepdim": {"bool": true}}, "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "all", "op": "aten.var.correction", "args": [{"node": "x"}, {"none": true}], "kwargs": {"correction": {"int": 2}}, "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["bn", "mid", "all"]})json";
    json.replace(json.find("\"T\""), 3, std::string("\"") + dtype + "\"");
    auto p = Plan(json);
    ASSERT_NE(p, nullptr);
    v1::NativeProgram native = NativeProgramOf(p->plan);
    EXPECT_EQ(native.kernels_size(), 3);
    EXPECT_THAT(native.source(),
                HasSubstr("Run by the runtime's kernels: none"));
    EXPECT_THAT(native.source(), HasSubstr("acc += (v - mean) * (v - mean);"));
    DType type = std::string(dtype) == "DTYPE_FLOAT64" ? v1::DTYPE_FLOAT64
                                                       : v1::DTYPE_FLOAT32;
    ExpectNativeMatchesReference(
        p->plan,
        {Filled(
            {2, 3, 4, 5}, [](int64_t i) { return std::sin(0.9 * i) * 2 + 0.3; },
            type)});
  }
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

// mse_loss with each reduction, and its backward with a scalar and with an
// elementwise gradient.
TEST(NativeBackendTest, MseLossAndItsBackwardAreOneKernelEach) {
  auto p = Plan(R"json({
    "inputs": [{"name": "a", "meta": {"shape": [7, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "b", "meta": {"shape": [7, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "g", "meta": {"shape": [], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "ge", "meta": {"shape": [7, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "none", "op": "aten.mse_loss.default", "args": [{"node": "a"}, {"node": "b"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "mean", "op": "aten.mse_loss.default", "args": [{"node": "a"}, {"node": "b"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "sum", "op": "aten.mse_loss.default", "args": [{"node": "a"}, {"node": "b"}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "d_mean", "op": "aten.mse_loss_backward.default", "args": [{"node": "g"}, {"node": "a"}, {"node": "b"}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "d_none", "op": "aten.mse_loss_backward.default", "args": [{"node": "ge"}, {"node": "a"}, {"node": "b"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["none", "mean", "sum", "d_mean", "d_none"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 5);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  const std::vector<Tensor> inputs = {
      Filled({7, 3}, [](int64_t i) { return 0.5 * i; }),
      Filled({7, 3}, [](int64_t i) { return 0.5 * i - 1.0; }),
      Filled({}, [](int64_t) { return 3.0; }),
      Filled({7, 3}, [](int64_t i) { return std::cos(0.4 * i); })};
  std::vector<Tensor> out = ForwardWith(Native(), p->plan, inputs);
  ASSERT_EQ(out.size(), 5u);
  // a - b is 1 everywhere: squares 1, mean 1, sum 21; the mean's gradient
  // is 2 / 21 * 1 * 3.
  EXPECT_EQ(out[1].ToDoubles()[0], 1.0);
  EXPECT_EQ(out[2].ToDoubles()[0], 21.0);
  EXPECT_FLOAT_EQ(out[3].ToDoubles()[5], 6.0 / 21.0);
  ExpectNativeMatchesReference(p->plan, inputs);
}

}  // namespace
}  // namespace aotcache
