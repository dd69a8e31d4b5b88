// The native backend's convolution kernels (conv_kernels.h) against the
// runtime's float64 kernels: forward with and without bias, groups, stride,
// padding and dilation, a 1x1 convolution read in place and a 1-D one; the
// backward with every gradient and with some, in float32 (sgemm) and
// float64 (dgemm).
#include <cmath>

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

double Wave(int64_t i) { return std::sin(0.37 * i) * 0.8; }
double Ramp(int64_t i) { return 0.05 * (i % 11) - 0.2; }

TEST(NativeConvTest, ConvolutionsAreKernelsOfTheirOwn) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [2, 4, 7, 6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "w", "meta": {"shape": [6, 2, 3, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "b", "meta": {"shape": [6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "w1", "meta": {"shape": [5, 4, 1, 1], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "s", "meta": {"shape": [3, 6, 11], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "k", "meta": {"shape": [9, 2, 4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "grouped", "op": "aten.convolution.default", "args": [{"node": "x"}, {"node": "w"}, {"node": "b"}, {"ints": {"values": [1, 2]}}, {"ints": {"values": [2, 1]}}, {"ints": {"values": [2, 1]}}, {"bool": false}, {"ints": {"values": [0, 0]}}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "pointwise", "op": "aten.convolution.default", "args": [{"node": "x"}, {"node": "w1"}, {"none": true}, {"ints": {"values": [1, 1]}}, {"ints": {"values": [0, 0]}}, {"ints": {"values": [1, 1]}}, {"bool": false}, {"ints": {"values": [0, 0]}}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "line", "op": "aten.convolution.default", "args": [{"node": "s"}, {"node": "k"}, {"none": true}, {"ints": {"values": [2]}}, {"ints": {"values": [1]}}, {"ints": {"values": [1]}}, {"bool": false}, {"ints": {"values": [0]}}, {"int": 3}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["grouped", "pointwise", "line"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 3);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  EXPECT_THAT(native.source(), HasSubstr("cblas_sgemm"));
  ExpectNativeMatchesReference(
      p->plan, {Filled({2, 4, 7, 6}, Wave), Filled({6, 2, 3, 3}, Ramp),
                Filled({6}, Ramp), Filled({5, 4, 1, 1}, Wave),
                Filled({3, 6, 11}, Wave), Filled({9, 2, 4}, Ramp)});
}

// Every gradient; and only the weight's, the input's (read) zeros as the
// runtime's kernel leaves it.
void ExpectBackwardMatches(DType dtype, const char* gemm) {
  std::string type =
      dtype == v1::DTYPE_FLOAT64 ? "DTYPE_FLOAT64" : "DTYPE_FLOAT32";
  std::string json = R"json({
    "inputs": [{"name": "g", "meta": {"shape": [2, 6, 3, 3], "dtype": "T", "is_leaf": true}},
               {"name": "x", "meta": {"shape": [2, 4, 7, 6], "dtype": "T", "is_leaf": true}},
               {"name": "w", "meta": {"shape": [6, 2, 3, 3], "dtype": "T", "is_leaf": true}},
               {"name": "g1", "meta": {"shape": [2, 5, 7, 6], "dtype": "T", "is_leaf": true}},
               {"name": "w1", "meta": {"shape": [5, 4, 1, 1], "dtype": "T", "is_leaf": true}}],
    "nodes": [
      {"name": "all", "op": "aten.convolution_backward.default", "args": [{"node": "g"}, {"node": "x"}, {"node": "w"}, {"ints": {"values": [6]}}, {"ints": {"values": [2, 2]}}, {"ints": {"values": [1, 1]}}, {"ints": {"values": [2, 1]}}, {"bool": false}, {"ints": {"values": [0, 0]}}, {"int": 2}, {"ints": {"values": [1, 1, 1]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gx", "op": "getitem", "args": [{"node": "all"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gw", "op": "getitem", "args": [{"node": "all"}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gb", "op": "getitem", "args": [{"node": "all"}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "some", "op": "aten.convolution_backward.default", "args": [{"node": "g1"}, {"node": "x"}, {"node": "w1"}, {"none": true}, {"ints": {"values": [1, 1]}}, {"ints": {"values": [0, 0]}}, {"ints": {"values": [1, 1]}}, {"bool": false}, {"ints": {"values": [0, 0]}}, {"int": 1}, {"ints": {"values": [0, 1, 0]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gx1", "op": "getitem", "args": [{"node": "some"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "gw1", "op": "getitem", "args": [{"node": "some"}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["gx", "gw", "gb", "gx1", "gw1"]})json";
  for (size_t at; (at = json.find("\"T\"")) != std::string::npos;) {
    json.replace(at, 3, "\"" + type + "\"");
  }
  auto p = Plan(json);
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 2);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  EXPECT_THAT(native.source(), HasSubstr(gemm));
  ExpectNativeMatchesReference(
      p->plan,
      {Filled({2, 6, 3, 3}, Wave, dtype), Filled({2, 4, 7, 6}, Ramp, dtype),
       Filled({6, 2, 3, 3}, Wave, dtype), Filled({2, 5, 7, 6}, Ramp, dtype),
       Filled({5, 4, 1, 1}, Wave, dtype)});
}

TEST(NativeConvTest, TheBackwardComputesTheGradientsAskedForOrRead) {
  ExpectBackwardMatches(v1::DTYPE_FLOAT32, "cblas_sgemm");
  ExpectBackwardMatches(v1::DTYPE_FLOAT64, "cblas_dgemm");
}

// A convolution whose im2col buffer would pass 2^28 elements is left to the
// runtime's kernel (which works one image at a time): nothing is allocated
// or handed to BLAS past its int sizes.
TEST(NativeConvTest, AConvolutionTooLargeForOneBufferRunsOnTheRuntime) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [64, 64, 256, 256], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "w", "meta": {"shape": [8, 64, 3, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "big", "op": "aten.convolution.default", "args": [{"node": "x"}, {"node": "w"}, {"none": true}, {"ints": {"values": [1, 1]}}, {"ints": {"values": [1, 1]}}, {"ints": {"values": [1, 1]}}, {"bool": false}, {"ints": {"values": [0, 0]}}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["big"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 0);
}

}  // namespace
}  // namespace aotcache
