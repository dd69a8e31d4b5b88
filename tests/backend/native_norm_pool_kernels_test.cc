// The native backend's batch norm and pooling kernels (norm_kernels.h,
// pool_kernels.h) against the runtime's float64 kernels: batch norm on the
// batch's statistics and on the running ones, with and without weight and
// bias, and its backward (trained through autodiff, and in eval with some
// gradients masked out); max pooling with padding, dilation and ceil_mode
// (NaN wins its window), average pooling with and without the padding
// counted and with a divisor, adaptive average pooling over sizes that do
// not divide, and their backwards, in float32 and float64; and graphs of
// such nodes with random geometries (40 seeds passed when written; 3 run
// here).
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/pooling_inference.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backend/compare_backends.h"

namespace aotcache {
namespace {

using testing::Count;
using testing::ExpectNativeMatchesReference;
using testing::Filled;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using testing::NativeBackwardProgramOf;
using testing::NativeProgramOf;
using ::testing::Not;
using testing::Plan;

double Wave(int64_t i) { return std::sin(0.37 * i) * 0.8 + 0.1; }
double Ramp(int64_t i) { return 0.05 * (i % 11) + 0.5; }
// Ties (every window of a plane holds repeats) and a NaN.
double Steps(int64_t i) {
  return i == 17 ? std::numeric_limits<double>::quiet_NaN() : (i % 5) * 0.25;
}

// `json` with each "T" replaced by `dtype`'s name.
std::string Typed(std::string json, DType dtype) {
  const std::string type =
      dtype == v1::DTYPE_FLOAT64 ? "\"DTYPE_FLOAT64\"" : "\"DTYPE_FLOAT32\"";
  for (size_t at; (at = json.find("\"T\"")) != std::string::npos;) {
    json.replace(at, 3, type);
  }
  return json;
}

// The nodes a generated source's header says the runtime's kernels run.
std::string RuntimeNodes(const std::string& source) {
  const std::string header = "// Run by the runtime's kernels: ";
  const size_t at = source.find(header);
  if (at == std::string::npos) return "";
  const size_t from = at + header.size();
  return source.substr(from, source.find('\n', from) - from);
}

// What a batch norm's kernel writes when it absorbs the ReLU after it.
constexpr char kFusedRelu[] = "y[i] = v != v ? v : (v > 0 ? v : C(0));";

// Trained: the statistics of the batch, the running ones updated (read
// before the ReLU that the second batch norm absorbs), and every gradient
// through native_batch_norm_backward (the second's computing the ReLU's
// backward in its pass).
void ExpectTrainedBatchNormMatches(DType dtype) {
  auto p = Plan(Typed(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [3, 4, 5, 6], "dtype": "T", "requires_grad": true, "is_leaf": true}},
               {"name": "w", "meta": {"shape": [4], "dtype": "T", "requires_grad": true, "is_leaf": true}},
               {"name": "b", "meta": {"shape": [4], "dtype": "T", "requires_grad": true, "is_leaf": true}},
               {"name": "rm", "meta": {"shape": [4], "dtype": "T", "is_leaf": true}},
               {"name": "rv", "meta": {"shape": [4], "dtype": "T", "is_leaf": true}},
               {"name": "s", "meta": {"shape": [5, 3, 7], "dtype": "T", "requires_grad": true, "is_leaf": true}}],
    "nodes": [
      {"name": "bn", "op": "aten.native_batch_norm.default", "args": [{"node": "x"}, {"node": "w"}, {"node": "b"}, {"node": "rm"}, {"node": "rv"}, {"bool": true}, {"float": 0.1}, {"float": 1e-05}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "y", "op": "getitem", "args": [{"node": "bn"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "plain", "op": "aten.native_batch_norm.default", "args": [{"node": "s"}, {"none": true}, {"none": true}, {"none": true}, {"none": true}, {"bool": true}, {"float": 0.1}, {"float": 0.001}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "z", "op": "getitem", "args": [{"node": "plain"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "r", "op": "aten.relu.default", "args": [{"node": "z"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["y", "r"]})json",
                      dtype));
  ASSERT_NE(p, nullptr);
  const std::string source = NativeProgramOf(p->plan).source();
  EXPECT_THAT(source, HasSubstr("Run by the runtime's kernels: none"));
  EXPECT_THAT(source, HasSubstr(kFusedRelu));
  // The ReLU's backward computed inside the batch norm's backward.
  const std::string backward = NativeBackwardProgramOf(p->plan).source();
  EXPECT_THAT(backward, HasSubstr("Run by the runtime's kernels: none"));
  EXPECT_EQ(Count(backward, "auto grad_at = [&](int64_t i)"), 1);
  ExpectNativeMatchesReference(
      p->plan, {Filled({3, 4, 5, 6}, Wave, dtype), Filled({4}, Ramp, dtype),
                Filled({4}, Wave, dtype), Filled({4}, Wave, dtype),
                Filled({4}, Ramp, dtype), Filled({5, 3, 7}, Ramp, dtype)});
}

TEST(NativeNormPoolTest, TrainedBatchNormAndItsBackward) {
  ExpectTrainedBatchNormMatches(v1::DTYPE_FLOAT32);
  ExpectTrainedBatchNormMatches(v1::DTYPE_FLOAT64);
}

// Eval: the running statistics; the backward of it with every gradient,
// and with only the input's (the others zeros, as the runtime's kernel
// leaves them), and of a batch norm on the batch's statistics given as
// inputs.
TEST(NativeNormPoolTest, EvalBatchNormAndMaskedBackwards) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [2, 3, 4, 5], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "g", "meta": {"shape": [2, 3, 4, 5], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "w", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "b", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "rm", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "rv", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "bn", "op": "aten.native_batch_norm.default", "args": [{"node": "x"}, {"node": "w"}, {"node": "b"}, {"node": "rm"}, {"node": "rv"}, {"bool": false}, {"float": 0.1}, {"float": 1e-05}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "y", "op": "getitem", "args": [{"node": "bn"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "eval_all", "op": "aten.native_batch_norm_backward.default", "args": [{"node": "g"}, {"node": "x"}, {"node": "w"}, {"node": "rm"}, {"node": "rv"}, {"none": true}, {"none": true}, {"bool": false}, {"float": 1e-05}, {"ints": {"values": [1, 1, 1]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "e0", "op": "getitem", "args": [{"node": "eval_all"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "e1", "op": "getitem", "args": [{"node": "eval_all"}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "e2", "op": "getitem", "args": [{"node": "eval_all"}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "train_x", "op": "aten.native_batch_norm_backward.default", "args": [{"node": "g"}, {"node": "x"}, {"none": true}, {"none": true}, {"none": true}, {"node": "b"}, {"node": "rv"}, {"bool": true}, {"float": 1e-05}, {"ints": {"values": [1, 0, 0]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "t0", "op": "getitem", "args": [{"node": "train_x"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "t1", "op": "getitem", "args": [{"node": "train_x"}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "t2", "op": "getitem", "args": [{"node": "train_x"}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["y", "e0", "e1", "e2", "t0", "t1", "t2"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  ExpectNativeMatchesReference(
      p->plan, {Filled({2, 3, 4, 5}, Wave), Filled({2, 3, 4, 5}, Ramp),
                Filled({3}, Ramp), Filled({3}, Wave), Filled({3}, Wave),
                Filled({3}, Ramp)});
}

// In eval, under no_grad as resnet18's inference: the ReLU after a batch
// norm is computed in its pass; where something else reads the batch
// norm's result too (an add, or the caller), the pass writes both.
TEST(NativeNormPoolTest, TheReluAfterABatchNormIsComputedInItsPass) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [2, 3, 4, 5], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "w", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "b", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "rm", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "rv", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "bn", "op": "aten.native_batch_norm.default", "args": [{"node": "x"}, {"node": "w"}, {"node": "b"}, {"node": "rm"}, {"node": "rv"}, {"bool": false}, {"float": 0.1}, {"float": 1e-05}], "grad_mode": "GRAD_MODE_DISABLED"},
      {"name": "y", "op": "getitem", "args": [{"node": "bn"}, {"int": 0}], "grad_mode": "GRAD_MODE_DISABLED"},
      {"name": "r", "op": "aten.relu.default", "args": [{"node": "y"}], "grad_mode": "GRAD_MODE_DISABLED"},
      {"name": "twice", "op": "aten.native_batch_norm.default", "args": [{"node": "r"}, {"none": true}, {"none": true}, {"node": "rm"}, {"node": "rv"}, {"bool": false}, {"float": 0.1}, {"float": 1e-05}], "grad_mode": "GRAD_MODE_DISABLED"},
      {"name": "t", "op": "getitem", "args": [{"node": "twice"}, {"int": 0}], "grad_mode": "GRAD_MODE_DISABLED"},
      {"name": "rt", "op": "aten.relu.default", "args": [{"node": "t"}], "grad_mode": "GRAD_MODE_DISABLED"},
      {"name": "sum", "op": "aten.add.Tensor", "args": [{"node": "t"}, {"node": "rt"}], "grad_mode": "GRAD_MODE_DISABLED"},
      {"name": "kept", "op": "aten.native_batch_norm.default", "args": [{"node": "sum"}, {"node": "w"}, {"none": true}, {"node": "rm"}, {"node": "rv"}, {"bool": false}, {"float": 0.1}, {"float": 1e-05}], "grad_mode": "GRAD_MODE_DISABLED"},
      {"name": "k", "op": "getitem", "args": [{"node": "kept"}, {"int": 0}], "grad_mode": "GRAD_MODE_DISABLED"},
      {"name": "rk", "op": "aten.relu.default", "args": [{"node": "k"}], "grad_mode": "GRAD_MODE_DISABLED"}
    ],
    "outputs": ["rk", "k"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  // Three batch norms with their ReLUs, and the add.
  EXPECT_EQ(native.kernels_size(), 4);
  EXPECT_EQ(Count(native.source(), kFusedRelu), 3);
  EXPECT_EQ(Count(native.source(), "normalized[i] = v;"), 2);
  ExpectNativeMatchesReference(
      p->plan, {Filled({2, 3, 4, 5}, Steps), Filled({3}, Ramp),
                Filled({3}, Wave), Filled({3}, Wave), Filled({3}, Ramp)});
}

// Max pooling (padding, dilation, ceil_mode, ties, a NaN) and average
// pooling (the padding counted or not, ceil_mode, a divisor), adaptive
// average pooling, trained: the backwards through autodiff.
void ExpectPoolingMatches(DType dtype) {
  auto p = Plan(Typed(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [2, 3, 9, 8], "dtype": "T", "requires_grad": true, "is_leaf": true}},
               {"name": "u", "meta": {"shape": [3, 7, 10], "dtype": "T", "requires_grad": true, "is_leaf": true}}],
    "nodes": [
      {"name": "mp", "op": "aten.max_pool2d_with_indices.default", "args": [{"node": "x"}, {"ints": {"values": [3, 2]}}, {"ints": {"values": [2, 2]}}, {"ints": {"values": [1, 1]}}, {"ints": {"values": [1, 2]}}, {"bool": true}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "m", "op": "getitem", "args": [{"node": "mp"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "plain", "op": "aten.max_pool2d_with_indices.default", "args": [{"node": "u"}, {"ints": {"values": [2, 2]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "pm", "op": "getitem", "args": [{"node": "plain"}, {"int": 0}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "a", "op": "aten.avg_pool2d.default", "args": [{"node": "x"}, {"ints": {"values": [3, 3]}}, {"ints": {"values": [2, 2]}}, {"ints": {"values": [1, 1]}}, {"bool": true}, {"bool": false}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "ap", "op": "aten.avg_pool2d.default", "args": [{"node": "x"}, {"ints": {"values": [2, 3]}}, {"ints": {"values": [1, 2]}}, {"ints": {"values": [1, 1]}}, {"bool": false}, {"bool": true}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "ad", "op": "aten.avg_pool2d.default", "args": [{"node": "u"}, {"ints": {"values": [2, 2]}}, {"ints": {"values": []}}, {"ints": {"values": [0, 0]}}, {"bool": false}, {"bool": true}, {"int": 3}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "aa", "op": "aten._adaptive_avg_pool2d.default", "args": [{"node": "x"}, {"ints": {"values": [4, 3]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "a1", "op": "aten._adaptive_avg_pool2d.default", "args": [{"node": "u"}, {"ints": {"values": [1, 1]}}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["m", "pm", "a", "ap", "ad", "aa", "a1"]})json",
                      dtype));
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 7);
  EXPECT_THAT(native.source(), HasSubstr("Run by the runtime's kernels: none"));
  // The max backward's indices are the forward's, saved: inputs of the
  // backward, which the runtime's kernel checks.
  EXPECT_THAT(
      RuntimeNodes(NativeBackwardProgramOf(p->plan).source()),
      MatchesRegex("node [0-9]+ "
                   "\\(aten.max_pool2d_with_indices_backward.default\\), "
                   "node [0-9]+ "
                   "\\(aten.max_pool2d_with_indices_backward.default\\)"));
  ExpectNativeMatchesReference(p->plan, {Filled({2, 3, 9, 8}, Steps, dtype),
                                         Filled({3, 7, 10}, Wave, dtype)});
}

TEST(NativeNormPoolTest, PoolingAndItsBackwards) {
  ExpectPoolingMatches(v1::DTYPE_FLOAT32);
  ExpectPoolingMatches(v1::DTYPE_FLOAT64);
}

// The max backward writes where its indices point: given indices that come
// from outside the graph (which the runtime's kernel checks), it is left to
// the runtime; with its own forward's, it is generated.
TEST(NativeNormPoolTest, TheMaxBackwardIsGeneratedOnlyForItsForwardsIndices) {
  auto p = Plan(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [2, 3, 6, 6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "g", "meta": {"shape": [2, 3, 3, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "i", "meta": {"shape": [2, 3, 3, 3], "dtype": "DTYPE_INT64", "is_leaf": true}}],
    "nodes": [
      {"name": "mp", "op": "aten.max_pool2d_with_indices.default", "args": [{"node": "x"}, {"ints": {"values": [2, 2]}}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "own", "op": "getitem", "args": [{"node": "mp"}, {"int": 1}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "inner", "op": "aten.max_pool2d_with_indices_backward.default", "args": [{"node": "g"}, {"node": "x"}, {"ints": {"values": [2, 2]}}, {"ints": {"values": []}}, {"ints": {"values": [0, 0]}}, {"ints": {"values": [1, 1]}}, {"bool": false}, {"node": "own"}], "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "outer", "op": "aten.max_pool2d_with_indices_backward.default", "args": [{"node": "g"}, {"node": "x"}, {"ints": {"values": [2, 2]}}, {"ints": {"values": []}}, {"ints": {"values": [0, 0]}}, {"ints": {"values": [1, 1]}}, {"bool": false}, {"node": "i"}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["inner", "outer"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 2) << native.source();
  EXPECT_THAT(native.source(),
              HasSubstr("max_pool2d_with_indices_backward.default"));
  EXPECT_THAT(native.source(),
              Not(HasSubstr("Run by the runtime's kernels: none")));
  ExpectNativeMatchesReference(
      p->plan, {Filled({2, 3, 6, 6}, Wave), Filled({2, 3, 3, 3}, Ramp),
                Filled(
                    {2, 3, 3, 3}, [](int64_t i) { return i % 4 * 1.0; },
                    v1::DTYPE_INT64)});
}

// A backward over a plane past 2^24 elements (its sums would not fit the
// scratch buffer's bound) is left to the runtime's kernel.
TEST(NativeNormPoolTest, ABackwardOverAHugePlaneRunsOnTheRuntime) {
  auto p = Plan(R"json({
    "inputs": [{"name": "g", "meta": {"shape": [1, 1, 2049, 2049], "dtype": "DTYPE_FLOAT32", "is_leaf": true}},
               {"name": "x", "meta": {"shape": [1, 1, 4098, 4098], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "gx", "op": "aten.avg_pool2d_backward.default", "args": [{"node": "g"}, {"node": "x"}, {"ints": {"values": [2, 2]}}, {"ints": {"values": [2, 2]}}, {"ints": {"values": [0, 0]}}, {"bool": false}, {"bool": true}, {"none": true}], "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["gx"]})json");
  ASSERT_NE(p, nullptr);
  v1::NativeProgram native = NativeProgramOf(p->plan);
  EXPECT_EQ(native.kernels_size(), 0);
}

// Random geometries, each checked against the runtime's kernels: per seed,
// one graph of pooling nodes (kernel, stride, padding, dilation, ceil_mode,
// count_include_pad, divisor drawn at random among those torch accepts) and
// batch norms (train and eval, 2-d to 4-d, a ReLU after or not), trained so
// that every backward runs too.
class NativeNormPoolSweepTest : public ::testing::TestWithParam<int> {};

TEST_P(NativeNormPoolSweepTest, RandomGeometriesMatchTheRuntime) {
  std::mt19937 rng(GetParam());
  auto draw = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  auto ints = [](std::vector<int64_t> v) {
    return absl::StrCat("{\"ints\": {\"values\": [", absl::StrJoin(v, ", "),
                        "]}}");
  };
  auto flag = [](bool b) {
    return b ? "{\"bool\": true}" : "{\"bool\": false}";
  };
  std::vector<std::string> inputs, nodes, outputs;
  std::vector<Tensor> values;
  // The first input holds ties and a NaN; variances are positive.
  auto input = [&](std::vector<int64_t> shape, bool grad,
                   double (*fill)(int64_t) = Wave) {
    const std::string name = absl::StrCat("in", inputs.size());
    inputs.push_back(absl::StrCat(
        "{\"name\": \"", name, "\", \"meta\": {\"shape\": [",
        absl::StrJoin(shape, ", "), "], \"dtype\": \"DTYPE_FLOAT32\", ",
        grad ? "\"requires_grad\": true, " : "", "\"is_leaf\": true}}"));
    values.push_back(Filled(std::move(shape), values.empty() ? Steps : fill));
    return name;
  };
  auto node = [&](const std::string& op, const std::vector<std::string>& args,
                  bool first_result) {
    const std::string name = absl::StrCat("n", nodes.size());
    nodes.push_back(absl::StrCat("{\"name\": \"", name, "\", \"op\": \"", op,
                                 "\", \"args\": [", absl::StrJoin(args, ", "),
                                 "], \"grad_mode\": \"GRAD_MODE_ENABLED\"}"));
    if (!first_result) return name;
    const std::string item = absl::StrCat("n", nodes.size());
    nodes.push_back(absl::StrCat(
        "{\"name\": \"", item,
        "\", \"op\": \"getitem\", \"args\": [{\"node\": "
        "\"",
        name, "\"}, {\"int\": 0}], \"grad_mode\": \"GRAD_MODE_ENABLED\"}"));
    return item;
  };
  auto ref = [](const std::string& name) {
    return absl::StrCat("{\"node\": \"", name, "\"}");
  };
  for (int k = 0; k < 6; ++k) {
    std::vector<int64_t> shape = {draw(1, 3), draw(1, 4), draw(3, 11),
                                  draw(3, 11)};
    if (draw(0, 3) == 0) shape.erase(shape.begin());  // (C, H, W).
    const bool max = k % 3 == 0, avg = k % 3 == 1;
    std::vector<int64_t> kernel = {draw(1, 3), draw(1, 3)};
    std::vector<int64_t> stride = {draw(1, 3), draw(1, 3)};
    std::vector<int64_t> dilation = {max ? draw(1, 2) : 1,
                                     max ? draw(1, 2) : 1};
    std::vector<int64_t> padding = {
        draw(0, (dilation[0] * (kernel[0] - 1) + 1) / 2),
        draw(0, (dilation[1] * (kernel[1] - 1) + 1) / 2)};
    const bool ceil = draw(0, 1) == 1;
    if (!(max || avg)) {
      const std::string x = input(shape, true);
      outputs.push_back(
          node("aten._adaptive_avg_pool2d.default",
               {ref(x), ints({draw(1, shape[shape.size() - 2]), draw(1, 5)})},
               false));
      continue;
    }
    if (!PoolGeometryOf(shape, kernel, stride, padding,
                        max ? dilation : std::vector<int64_t>{1}, ceil)
             .ok()) {
      continue;
    }
    const std::string x = input(shape, true);
    if (max) {
      outputs.push_back(node("aten.max_pool2d_with_indices.default",
                             {ref(x), ints(kernel), ints(stride), ints(padding),
                              ints(dilation), flag(ceil)},
                             true));
    } else {
      std::vector<std::string> args = {ref(x),       ints(kernel),
                                       ints(stride), ints(padding),
                                       flag(ceil),   flag(draw(0, 1) == 1)};
      if (draw(0, 2) == 0)
        args.push_back(absl::StrCat("{\"int\": ", draw(1, 7), "}"));
      outputs.push_back(node("aten.avg_pool2d.default", args, false));
    }
  }
  for (bool train : {true, false}) {
    std::vector<int64_t> shape = {draw(1, 4), draw(1, 5)};
    for (int d = draw(0, 2); d > 0; --d) shape.push_back(draw(1, 6));
    const std::string x = input(shape, true);
    const bool affine = draw(0, 1) == 1;
    const std::string w =
        affine ? ref(input({shape[1]}, true)) : "{\"none\": true}";
    const std::string b =
        affine ? ref(input({shape[1]}, true)) : "{\"none\": true}";
    const std::string mean = ref(input({shape[1]}, false));
    const std::string var = ref(input({shape[1]}, false, Ramp));
    const std::string y = node("aten.native_batch_norm.default",
                               {ref(x), w, b, mean, var, flag(train),
                                "{\"float\": 0.1}", "{\"float\": 1e-05}"},
                               true);
    // A ReLU after it (computed in its pass), the result returned too or
    // not.
    const int after = draw(0, 2);
    if (after != 1) outputs.push_back(y);
    if (after != 0)
      outputs.push_back(node("aten.relu.default", {ref(y)}, false));
  }
  std::vector<std::string> quoted;
  for (const std::string& o : outputs) quoted.push_back("\"" + o + "\"");
  auto p = Plan(absl::StrCat("{\"inputs\": [", absl::StrJoin(inputs, ", "),
                             "], \"nodes\": [", absl::StrJoin(nodes, ", "),
                             "], \"outputs\": [", absl::StrJoin(quoted, ", "),
                             "]}"));
  ASSERT_NE(p, nullptr);
  EXPECT_THAT(NativeProgramOf(p->plan).source(),
              HasSubstr("Run by the runtime's kernels: none"));
  ExpectNativeMatchesReference(p->plan, values);
}

INSTANTIATE_TEST_SUITE_P(Seeds, NativeNormPoolSweepTest,
                         ::testing::Range(1, 4));

}  // namespace
}  // namespace aotcache
