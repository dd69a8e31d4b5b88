// The op registry: schemas parse with their alias annotations and defaults,
// every op the foundation issue requires is present, RNG ops are random.
#include "core/graph/op_registry.h"

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

TEST(OpSchemaTest, ParsesAliasAnnotationsAndDefaults) {
  absl::StatusOr<OpSchema> s = ParseOpSchema(
      "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "
      "Tensor(a!)");
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->QualifiedName(), "aten.add_.Tensor");
  ASSERT_EQ(s->args.size(), 3u);
  EXPECT_EQ(s->args[0].alias.set, 'a');
  EXPECT_TRUE(s->args[0].alias.is_write);
  EXPECT_FALSE(s->args[1].kwarg_only);
  EXPECT_TRUE(s->args[2].kwarg_only);
  ASSERT_TRUE(s->args[2].default_value.has_value());
  EXPECT_EQ(s->args[2].default_value->int_(), 1);
  ASSERT_EQ(s->returns.size(), 1u);
  EXPECT_TRUE(s->returns[0].alias.is_write);
}

TEST(OpSchemaTest, ParsesTuplesViewsAndDefaultOverload) {
  absl::StatusOr<OpSchema> ln = ParseOpSchema(
      "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? "
      "weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)");
  ASSERT_THAT(ln, IsOk());
  EXPECT_EQ(ln->QualifiedName(), "aten.native_layer_norm.default");
  EXPECT_EQ(ln->returns.size(), 3u);
  absl::StatusOr<OpSchema> view =
      ParseOpSchema("view(Tensor(a) self, SymInt[] size) -> Tensor(a)");
  ASSERT_THAT(view, IsOk());
  EXPECT_EQ(view->returns[0].alias.set, 'a');
  EXPECT_FALSE(view->returns[0].alias.is_write);
}

TEST(OpSchemaTest, RefusesUnknownTypes) {
  EXPECT_FALSE(ParseOpSchema("f(Quaternion q) -> Tensor").ok());
  EXPECT_FALSE(ParseOpSchema("no arrow").ok());
}

TEST(OpRegistryTest, HasEveryRequiredOp) {
  const char* kRequired[] = {
      "aten.add.Tensor",
      "aten.add.Scalar",
      "aten.sub.Tensor",
      "aten.sub.Scalar",
      "aten.mul.Tensor",
      "aten.mul.Scalar",
      "aten.div.Tensor",
      "aten.div.Scalar",
      "aten.neg.default",
      "aten.exp.default",
      "aten.log.default",
      "aten.sin.default",
      "aten.cos.default",
      "aten.tanh.default",
      "aten.sigmoid.default",
      "aten.relu.default",
      "aten.gelu.default",
      "aten.sqrt.default",
      "aten.rsqrt.default",
      "aten.abs.default",
      "aten.pow.Tensor_Scalar",
      "aten.maximum.default",
      "aten.minimum.default",
      "aten.where.self",
      "aten.eq.Tensor",
      "aten.ne.Tensor",
      "aten.lt.Tensor",
      "aten.le.Tensor",
      "aten.gt.Tensor",
      "aten.ge.Tensor",
      "aten.eq.Scalar",
      "aten.clone.default",
      "aten.ones.default",
      "aten.zeros.default",
      "aten.ones_like.default",
      "aten.zeros_like.default",
      "aten.empty_like.default",
      "aten.full.default",
      "aten.lift_fresh_copy.default",
      "aten._to_copy.default",
      "aten.sum.default",
      "aten.sum.dim_IntList",
      "aten.mean.default",
      "aten.mean.dim",
      "aten.amax.default",
      "aten._softmax.default",
      "aten._log_softmax.default",
      "aten.native_layer_norm.default",
      "aten.mse_loss.default",
      "aten.mm.default",
      "aten.addmm.default",
      "aten.bmm.default",
      "aten.dot.default",
      "aten.cat.default",
      "aten.view.default",
      "aten._reshape_alias.default",
      "aten._unsafe_view.default",
      "aten.t.default",
      "aten.transpose.int",
      "aten.permute.default",
      "aten.expand.default",
      "aten.unsqueeze.default",
      "aten.squeeze.dim",
      "aten.slice.Tensor",
      "aten.select.int",
      "aten.detach.default",
      "aten.alias.default",
      "aten.as_strided.default",
      "aten.select_scatter.default",
      "aten.slice_scatter.default",
      "aten.as_strided_scatter.default",
      "aten.add_.Tensor",
      "aten.add_.Scalar",
      "aten.sub_.Tensor",
      "aten.sub_.Scalar",
      "aten.mul_.Tensor",
      "aten.mul_.Scalar",
      "aten.div_.Tensor",
      "aten.div_.Scalar",
      "aten.copy_.default",
      "aten.zero_.default",
      "aten.fill_.Scalar",
      "aten.relu_.default",
      "aten.t_.default",
      "aten.transpose_.default",
      "aten.unsqueeze_.default",
      "aten.native_dropout.default",
      "aten.rand_like.default",
      "aten.randn_like.default",
      "aten.bernoulli.default",
      "aten.bernoulli_.float",
  };
  for (const char* name : kRequired) {
    EXPECT_NE(OpRegistry::Get().Find(name), nullptr) << name;
  }
}

TEST(OpRegistryTest, EffectsFollowAliasAnnotations) {
  const OpRegistry& r = OpRegistry::Get();
  EXPECT_EQ(r.Find("aten.add_.Tensor")->effect, OpEffect::kInPlace);
  EXPECT_EQ(r.Find("aten.t_.default")->effect, OpEffect::kInPlaceMetadata);
  EXPECT_EQ(r.Find("aten.view.default")->effect, OpEffect::kView);
  EXPECT_EQ(r.Find("aten.detach.default")->effect, OpEffect::kDetach);
  EXPECT_EQ(r.Find("aten._unsafe_view.default")->effect, OpEffect::kUnsafeView);
  EXPECT_EQ(r.Find("aten.mm.default")->effect, OpEffect::kFunctional);
}

TEST(OpRegistryTest, EveryInPlaceOpHasAFunctionalCounterpartWithTheSameArgs) {
  for (const OpInfo& op : OpRegistry::Get().ops()) {
    if (op.effect != OpEffect::kInPlace &&
        op.effect != OpEffect::kInPlaceMetadata) {
      continue;
    }
    const OpInfo* functional =
        OpRegistry::Get().Find(op.functional_counterpart);
    ASSERT_NE(functional, nullptr) << op.qualified_name;
    EXPECT_EQ(functional->effect == OpEffect::kFunctional ||
                  functional->effect == OpEffect::kView,
              true)
        << op.qualified_name;
    // Arguments beyond the in-place op's must all have defaults.
    for (size_t k = op.schema.args.size(); k < functional->schema.args.size();
         ++k) {
      EXPECT_TRUE(functional->schema.args[k].default_value.has_value())
          << op.qualified_name << " -> " << functional->qualified_name;
    }
  }
}

TEST(OpRegistryTest, RngOpsAreRandom) {
  for (const char* name : {"aten.native_dropout.default",
                           "aten.rand_like.default", "aten.randn_like.default",
                           "aten.bernoulli.default", "aten.bernoulli_.float"}) {
    EXPECT_EQ(OpRegistry::Get().Find(name)->randomness, Randomness::kRandom)
        << name;
  }
  EXPECT_EQ(OpRegistry::Get().Find("aten.mm.default")->randomness,
            Randomness::kDeterministic);
}

TEST(OpRegistryTest, DifferentiabilityPerArgument) {
  const OpInfo* where = OpRegistry::Get().Find("aten.where.self");
  EXPECT_FALSE(where->IsArgDifferentiable(0));  // condition
  EXPECT_TRUE(where->IsArgDifferentiable(1));
  EXPECT_FALSE(
      OpRegistry::Get().Find("aten.eq.Tensor")->IsArgDifferentiable(0));
  const OpInfo* ln = OpRegistry::Get().Find("aten.native_layer_norm.default");
  EXPECT_TRUE(ln->differentiable_results[0]);
  EXPECT_FALSE(ln->differentiable_results[1]);
}

}  // namespace
}  // namespace aotcache
