// Shape, stride and dtype inference, checked through ValidateGraph on small
// graphs; expected values are torch 1.13's (written from its documented
// behaviour: broadcasting, type promotion, view strides).
#include <string>

#include "absl/strings/str_cat.h"
#include "core/graph/validate.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

// Validates a one-node graph over inputs "a" and "b" and returns its result.
absl::StatusOr<Meta> Infer(const std::string& a_meta, const std::string& b_meta,
                           const std::string& node) {
  std::string json =
      absl::StrCat(R"({"inputs": [{"name": "a", "meta": )", a_meta,
                   R"(}, {"name": "b", "meta": )", b_meta, R"(}], "nodes": [)",
                   node, R"(], "outputs": ["n"]})");
  v1::Graph g = testing::GraphFromJson(json);
  absl::StatusOr<ResolvedGraph> r = ValidateGraph(g);
  if (!r.ok()) return r.status();
  return r->values[r->outputs[0]].meta;
}

std::string Node(const std::string& op, const std::string& args) {
  return absl::StrCat(R"({"name": "n", "op": ")", op, R"(", "args": [)", args,
                      R"(], "grad_mode": "GRAD_MODE_ENABLED"})");
}

constexpr char kF2x3[] =
    R"({"shape": [2, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true})";
constexpr char kF3[] =
    R"({"shape": [3], "dtype": "DTYPE_FLOAT32", "is_leaf": true})";
constexpr char kI2x3[] =
    R"({"shape": [2, 3], "dtype": "DTYPE_INT64", "is_leaf": true})";
constexpr char kD0[] =
    R"({"shape": [], "dtype": "DTYPE_FLOAT64", "is_leaf": true})";

TEST(ShapeInferenceTest, BroadcastsTrailingDims) {
  absl::StatusOr<Meta> m = Infer(
      kF2x3, kF3, Node("aten.add.Tensor", R"({"node": "a"}, {"node": "b"})"));
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m->stride, (std::vector<int64_t>{3, 1}));
}

TEST(ShapeInferenceTest, IntTensorTimesPythonFloatIsFloat32) {
  absl::StatusOr<Meta> m = Infer(
      kI2x3, kF3, Node("aten.mul.Tensor", R"({"node": "a"}, {"float": 0.5})"));
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->dtype, v1::DTYPE_FLOAT32);
}

TEST(ShapeInferenceTest, ZeroDimDoubleDoesNotPromoteFloatTensor) {
  absl::StatusOr<Meta> m = Infer(
      kF2x3, kD0, Node("aten.add.Tensor", R"({"node": "a"}, {"node": "b"})"));
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->dtype, v1::DTYPE_FLOAT32);
}

TEST(ShapeInferenceTest, IntDivisionIsTrueDivision) {
  absl::StatusOr<Meta> m = Infer(
      kI2x3, kF3, Node("aten.div.Tensor", R"({"node": "a"}, {"int": 2})"));
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->dtype, v1::DTYPE_FLOAT32);
}

TEST(ShapeInferenceTest, SumOfIntsIsInt64AndComparisonsAreBool) {
  absl::StatusOr<Meta> sum = Infer(
      kI2x3, kF3,
      Node("aten.sum.dim_IntList",
           R"({"node": "a"}, {"ints": {"values": [0]}}, {"bool": true})"));
  ASSERT_THAT(sum, IsOk());
  EXPECT_EQ(sum->shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(sum->dtype, v1::DTYPE_INT64);
  absl::StatusOr<Meta> lt = Infer(
      kF2x3, kF3, Node("aten.lt.Tensor", R"({"node": "a"}, {"node": "b"})"));
  ASSERT_THAT(lt, IsOk());
  EXPECT_EQ(lt->dtype, v1::DTYPE_BOOL);
}

TEST(ShapeInferenceTest, ViewsHaveExactStridesAndOffsets) {
  absl::StatusOr<Meta> t =
      Infer(kF2x3, kF3, Node("aten.t.default", R"({"node": "a"})"));
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->stride, (std::vector<int64_t>{1, 3}));
  absl::StatusOr<Meta> slice = Infer(
      kF2x3, kF3,
      Node(
          "aten.slice.Tensor",
          R"({"node": "a"}, {"int": 1}, {"int": 1}, {"int": 9223372036854775807}, {"int": 1})"));
  ASSERT_THAT(slice, IsOk());
  EXPECT_EQ(slice->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(slice->offset, 1);
  absl::StatusOr<Meta> sel = Infer(
      kF2x3, kF3,
      Node("aten.select.int", R"({"node": "a"}, {"int": 0}, {"int": -1})"));
  ASSERT_THAT(sel, IsOk());
  EXPECT_EQ(sel->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(sel->offset, 3);
  absl::StatusOr<Meta> ex =
      Infer(kF3, kF3,
            Node("aten.expand.default",
                 R"({"node": "a"}, {"ints": {"values": [4, -1]}})"));
  ASSERT_THAT(ex, IsOk());
  EXPECT_EQ(ex->shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(ex->stride, (std::vector<int64_t>{0, 1}));
  absl::StatusOr<Meta> un =
      Infer(kF2x3, kF3,
            Node("aten.unsqueeze.default", R"({"node": "a"}, {"int": 1})"));
  ASSERT_THAT(un, IsOk());
  EXPECT_EQ(un->stride, (std::vector<int64_t>{3, 3, 1}));
}

TEST(ShapeInferenceTest, ViewOfTransposedNeedsCompatibleStrides) {
  constexpr char kTransposed[] =
      R"({"shape": [3, 2], "stride": [1, 3], "dtype": "DTYPE_FLOAT32", "is_leaf": true})";
  absl::StatusOr<Meta> split =
      Infer(kTransposed, kF3,
            Node("aten.view.default",
                 R"({"node": "a"}, {"ints": {"values": [3, 2, 1]}})"));
  ASSERT_THAT(split, IsOk());
  EXPECT_EQ(split->stride, (std::vector<int64_t>{1, 3, 3}));
  EXPECT_FALSE(Infer(kTransposed, kF3,
                     Node("aten.view.default",
                          R"({"node": "a"}, {"ints": {"values": [6]}})"))
                   .ok());
}

TEST(ShapeInferenceTest, AZeroDimTensorViewsAsAnyShapeOfOneElement) {
  // torch 2.x records reshape(1) of a 0-d sum as a view.
  constexpr char kScalar[] =
      R"({"shape": [], "dtype": "DTYPE_FLOAT32", "is_leaf": true})";
  for (const char* size : {"[1]", "[1, 1, 1]", "[]"}) {
    absl::StatusOr<Meta> v =
        Infer(kScalar, kF3,
              Node("aten.view.default",
                   absl::StrCat(R"({"node": "a"}, {"ints": {"values": )", size,
                                "}}")));
    ASSERT_THAT(v, IsOk());
    EXPECT_EQ(v->stride, std::vector<int64_t>(v->shape.size(), 1));
  }
  EXPECT_FALSE(Infer(kScalar, kF3,
                     Node("aten.view.default",
                          R"({"node": "a"}, {"ints": {"values": [2]}})"))
                   .ok());
}

TEST(ShapeInferenceTest, LayerNormStatisticsKeepLeadingDims) {
  std::string json =
      R"({"inputs": [{"name": "a", "meta": {"shape": [4, 5, 6], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [{"name": "ln", "op": "aten.native_layer_norm.default",
               "args": [{"node": "a"}, {"ints": {"values": [6]}}, {"none": true}, {"none": true}, {"float": 1e-5}],
               "grad_mode": "GRAD_MODE_ENABLED"},
              {"name": "mean", "op": "getitem", "args": [{"node": "ln"}, {"int": 1}]}],
    "outputs": ["mean"]})";
  v1::Graph g = testing::GraphFromJson(json);
  absl::StatusOr<ResolvedGraph> r = ValidateGraph(g);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->values[r->outputs[0]].meta.shape,
            (std::vector<int64_t>{4, 5, 1}));
}

TEST(ShapeInferenceTest, InPlaceResultMustKeepSelfsShapeAndDtype) {
  EXPECT_FALSE(
      Infer(kF3, kF2x3,
            Node("aten.add_.Tensor", R"({"node": "a"}, {"node": "b"})"))
          .ok());
  EXPECT_FALSE(
      Infer(kI2x3, kF3,
            Node("aten.mul_.Tensor", R"({"node": "a"}, {"float": 0.5})"))
          .ok());
  EXPECT_TRUE(
      Infer(kI2x3, kF2x3,
            Node("aten.copy_.default", R"({"node": "a"}, {"node": "b"})"))
          .ok());
}

}  // namespace
}  // namespace aotcache
