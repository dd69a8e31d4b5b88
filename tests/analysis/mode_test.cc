// The mode rule of SEMANTICS.md §4, one test per term.
#include "core/analysis/mode.h"

#include "gtest/gtest.h"

namespace aotcache {
namespace {

v1::InputAliasInfo In(bool requires_grad, bool mutates_data = false,
                      bool under_no_grad = false, bool hidden = false) {
  v1::InputAliasInfo in;
  in.set_requires_grad(requires_grad);
  in.set_mutates_data(mutates_data);
  in.set_mutations_under_no_grad_or_inference_mode(under_no_grad);
  in.set_mutations_hidden_from_autograd(hidden);
  return in;
}

v1::OutputAliasInfo Out(v1::OutputType type, bool requires_grad,
                        int base_idx = -1) {
  v1::OutputAliasInfo out;
  out.set_output_type(type);
  out.set_requires_grad(requires_grad);
  if (base_idx >= 0) out.set_base_idx(base_idx);
  return out;
}

TEST(ModeDecisionTest, NoInputRequiresGradIsInference) {
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(false);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_NON_ALIAS, true);
  EXPECT_EQ(DecideMode({false}, vmd), v1::MODE_INFERENCE);
}

TEST(ModeDecisionTest, OutputRequiringGradNeedsBackward) {
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(true);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_NON_ALIAS, true);
  EXPECT_EQ(DecideMode({true}, vmd), v1::MODE_TRAINING);
}

TEST(ModeDecisionTest, NoOutputRequiringGradAndNoMutationIsInference) {
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(true);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_NON_ALIAS, false);
  EXPECT_EQ(DecideMode({true}, vmd), v1::MODE_INFERENCE);
}

TEST(ModeDecisionTest, ViewOfRequiresGradInputIsRegeneratedNotCounted) {
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(true);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_ALIAS_OF_INPUT, true, 0);
  EXPECT_EQ(DecideMode({true}, vmd), v1::MODE_INFERENCE);
}

TEST(ModeDecisionTest, ReturnedRequiresGradInputIsNotCounted) {
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(true);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_IS_INPUT, true, 0);
  EXPECT_EQ(DecideMode({true}, vmd), v1::MODE_INFERENCE);
}

TEST(ModeDecisionTest, ViewOfInputThatGainedRequiresGradOnlyLaterCounts) {
  // Input 1 does not require grad, its view does (it was written with a
  // value that requires grad through another alias): not regenerated from a
  // requires-grad input, so the output needs autograd.
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(true);
  *vmd.add_inputs() = In(false);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_ALIAS_OF_INPUT, true, 1);
  EXPECT_EQ(DecideMode({true, false}, vmd), v1::MODE_TRAINING);
}

TEST(ModeDecisionTest, MutatedRequiresGradInputNeedsBackward) {
  // a.mul_(2); return (a + 1).detach(): PyTorch before #128229 chose
  // inference here and lost the gradient through `a`.
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(true, /*mutates_data=*/true);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_NON_ALIAS, false);
  EXPECT_EQ(DecideMode({true}, vmd), v1::MODE_TRAINING);
}

TEST(ModeDecisionTest, MutationUnderNoGradNeedsNoBackward) {
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(true, true, /*under_no_grad=*/true);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_NON_ALIAS, false);
  EXPECT_EQ(DecideMode({true}, vmd), v1::MODE_INFERENCE);
}

TEST(ModeDecisionTest, MutationHiddenFromAutogradNeedsNoBackward) {
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(true, true, false, /*hidden=*/true);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_NON_ALIAS, false);
  EXPECT_EQ(DecideMode({true}, vmd), v1::MODE_INFERENCE);
}

TEST(ModeDecisionTest, MutatedInputNotRequiringGradNeedsNoBackward) {
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(true);
  *vmd.add_inputs() = In(false, true);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_NON_ALIAS, false);
  EXPECT_EQ(DecideMode({true, false}, vmd), v1::MODE_INFERENCE);
}

TEST(ModeDecisionTest, CallerRequiresGradIsReadBeforeTheFunctionRan) {
  // No input required grad when called; one requires grad afterwards (a
  // tensor that does not require grad got written with one that does
  // inside the graph is impossible without a requires-grad input, so this
  // is the guard alone): inference.
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(true, true);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_NON_ALIAS, true);
  EXPECT_EQ(DecideMode({false}, vmd), v1::MODE_INFERENCE);
}

TEST(ModeDecisionTest, ExplanationNamesTheDecidingTerm) {
  v1::ViewAndMutationData vmd;
  *vmd.add_inputs() = In(true);
  *vmd.add_inputs() = In(true, true);
  *vmd.add_outputs() = Out(v1::OUTPUT_TYPE_NON_ALIAS, false);
  EXPECT_EQ(ExplainMode({true, true}, vmd),
            "training: input 1 requires grad and its data is mutated with "
            "grad mode on");
  *vmd.mutable_outputs(0) = Out(v1::OUTPUT_TYPE_NON_ALIAS, true);
  EXPECT_EQ(ExplainMode({true, true}, vmd), "training: output 0 requires grad");
}

}  // namespace
}  // namespace aotcache
