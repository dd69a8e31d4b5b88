// Kernels on zero-size, strided and broadcast inputs (torch's results,
// written from its documented behaviour).
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/runtime/graph_executor.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

// Runs one node `op(x, y?, extra...)` over inputs with the given metas.
absl::StatusOr<Tensor> RunOne(const std::string& inputs_json,
                              const std::string& node_json,
                              const std::vector<Tensor>& inputs) {
  v1::Graph g = testing::GraphFromJson(
      absl::StrCat(R"({"inputs": [)", inputs_json, R"(], "nodes": [)",
                   node_json, R"(], "outputs": ["out"]})"));
  auto e = GraphExecutor::Create(g);
  if (!e.ok()) return e.status();
  auto out = (*e)->Run(inputs);
  if (!out.ok()) return out.status();
  return (*out)[0];
}

std::string In(const std::string& name, const std::string& shape,
               const std::string& stride = "") {
  return absl::StrCat(
      R"({"name": ")", name, R"(", "meta": {"shape": [)", shape, "]",
      stride.empty() ? "" : absl::StrCat(R"(, "stride": [)", stride, "]"),
      R"(, "dtype": "DTYPE_FLOAT32", "is_leaf": true}})");
}

std::string Op(const std::string& op, const std::string& args) {
  return absl::StrCat(R"({"name": "out", "op": ")", op, R"(", "args": [)", args,
                      R"(], "grad_mode": "GRAD_MODE_ENABLED"})");
}

Tensor Iota(std::vector<int64_t> shape, Meta view = {}) {
  Tensor t = Tensor::Contiguous(shape, v1::DTYPE_FLOAT32);
  float* d = reinterpret_cast<float*>(t.storage_data());
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = static_cast<float>(i);
  if (!view.shape.empty()) return t.View(view);
  return t;
}

TEST(KernelsTest, ZeroSizeInputs) {
  Tensor empty = Tensor::Contiguous({0, 3}, v1::DTYPE_FLOAT32);
  Tensor row = Iota({3});
  auto add = RunOne(In("x", "0, 3") + "," + In("y", "3"),
                    Op("aten.add.Tensor", R"({"node": "x"}, {"node": "y"})"),
                    {empty, row});
  ASSERT_THAT(add, IsOk());
  EXPECT_EQ(add->shape(), (std::vector<int64_t>{0, 3}));
  auto sum = RunOne(In("x", "0, 3"), Op("aten.sum.default", R"({"node": "x"})"),
                    {empty});
  ASSERT_THAT(sum, IsOk());
  EXPECT_EQ(sum->ToDoubles(), std::vector<double>{0.0});
  auto mean = RunOne(In("x", "0, 3"),
                     Op("aten.mean.default", R"({"node": "x"})"), {empty});
  ASSERT_THAT(mean, IsOk());
  EXPECT_TRUE(
      std::isnan(mean->ToDoubles()[0]));  // torch: mean of nothing is nan
  Tensor w = Iota({3, 2});
  auto mm = RunOne(In("x", "0, 3") + "," + In("w", "3, 2"),
                   Op("aten.mm.default", R"({"node": "x"}, {"node": "w"})"),
                   {empty, w});
  ASSERT_THAT(mm, IsOk());
  EXPECT_EQ(mm->shape(), (std::vector<int64_t>{0, 2}));
  auto softmax = RunOne(In("x", "0, 3"),
                        Op("aten._softmax.default",
                           R"({"node": "x"}, {"int": 1}, {"bool": false})"),
                        {empty});
  ASSERT_THAT(softmax, IsOk());
  EXPECT_EQ(softmax->numel(), 0);
  Tensor two = Iota({2, 3});
  auto cat =
      RunOne(In("x", "0, 3") + "," + In("y", "2, 3"),
             Op("aten.cat.default", R"({"nodes": {"names": ["x", "y"]}})"),
             {empty, two});
  ASSERT_THAT(cat, IsOk());
  EXPECT_EQ(cat->ToDoubles(), two.ToDoubles());
}

TEST(KernelsTest, StridedAndBroadcastInputs) {
  // x = arange(6).view(2, 3).t(): shape [3, 2], strides [1, 3].
  Meta t;
  t.shape = {3, 2};
  t.stride = {1, 3};
  t.dtype = v1::DTYPE_FLOAT32;
  Tensor x = Iota({6}, t);
  Tensor col = Iota({3, 1});
  auto add = RunOne(In("x", "3, 2", "1, 3") + "," + In("c", "3, 1"),
                    Op("aten.add.Tensor", R"({"node": "x"}, {"node": "c"})"),
                    {x, col});
  ASSERT_THAT(add, IsOk());
  // x = [[0,3],[1,4],[2,5]] + [[0],[1],[2]]
  EXPECT_EQ(add->ToDoubles(), (std::vector<double>{0, 3, 2, 5, 4, 7}));
  Tensor w = Iota({2, 2});
  auto mm =
      RunOne(In("x", "3, 2", "1, 3") + "," + In("w", "2, 2"),
             Op("aten.mm.default", R"({"node": "x"}, {"node": "w"})"), {x, w});
  ASSERT_THAT(mm, IsOk());
  // [[0,3],[1,4],[2,5]] @ [[0,1],[2,3]]
  EXPECT_EQ(mm->ToDoubles(), (std::vector<double>{6, 9, 8, 13, 10, 17}));
  auto sum = RunOne(
      In("x", "3, 2", "1, 3"),
      Op("aten.sum.dim_IntList", R"({"node": "x"}, {"ints": {"values": [0]}})"),
      {x});
  ASSERT_THAT(sum, IsOk());
  EXPECT_EQ(sum->ToDoubles(), (std::vector<double>{3, 12}));
}

TEST(KernelsTest, NanPropagatesThroughMaximumAndAmax) {
  Tensor x = Tensor::Contiguous({3}, v1::DTYPE_FLOAT32);
  float* d = reinterpret_cast<float*>(x.storage_data());
  d[0] = 1;
  d[1] = NAN;
  d[2] = 3;
  auto amax =
      RunOne(In("x", "3"), Op("aten.amax.default", R"({"node": "x"})"), {x});
  ASSERT_THAT(amax, IsOk());
  EXPECT_TRUE(std::isnan(amax->ToDoubles()[0]));
  auto max =
      RunOne(In("x", "3") + "," + In("y", "3"),
             Op("aten.maximum.default", R"({"node": "x"}, {"node": "y"})"),
             {x, Iota({3})});
  ASSERT_THAT(max, IsOk());
  std::vector<double> m = max->ToDoubles();
  EXPECT_EQ(m[0], 1);
  EXPECT_TRUE(std::isnan(m[1]));
  EXPECT_EQ(m[2], 3);
}

}  // namespace
}  // namespace aotcache
