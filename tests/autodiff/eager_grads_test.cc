// Gradients against torch eager on the traced training-mode scenarios
// (tests/fixtures/grads, recorded by tools/make_grad_fixtures.py), end to
// end: the reference backend's artifacts run by CompiledFunction, forward on
// the scenario's inputs, backward on the saved values and the recorded
// cotangents (what the caller's autograd adds through regenerated views is
// added here), and every input's gradient equals eager's -- none exactly
// where eager has None.
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/backend/compile_plan.h"
#include "core/backend/reference_backend.h"
#include "core/graph/graph_json.h"
#include "core/runtime/compiled_function.h"
#include "core/runtime/graph_executor.h"
#include "core/runtime/strided.h"
#include "core/runtime/view_replay.h"
#include "google/protobuf/struct.pb.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/value_fixtures.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using google::protobuf::Struct;
using google::protobuf::Value;

const Value& F(const Struct& s, const std::string& name) {
  return s.fields().at(name);
}

std::vector<std::string> GradFixtures() {
  std::vector<std::string> out;
  for (const std::string& file : testing::FixtureGraphFiles()) {
    std::ifstream probe(testing::FixturePath("grads/" + file));
    if (probe) out.push_back(file);
  }
  return out;
}

class EagerGradsTest : public ::testing::TestWithParam<std::string> {};

TEST(EagerGradsCoverage, AtLeastFortyScenariosHaveEagerGradients) {
  EXPECT_GE(GradFixtures().size(), 40u);
}

TEST_P(EagerGradsTest, GradientsMatchEager) {
  const std::string file = GetParam();
  v1::Graph graph = testing::LoadGraphOrDie("graphs/" + file);
  Struct grads = testing::LoadJsonFixture("grads/" + file);
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  ASSERT_EQ(a->mode, v1::MODE_TRAINING);
  const v1::ViewAndMutationData& vmd = a->view_and_mutation;
  // End to end: artifacts from the reference backend, run by
  // CompiledFunction (its epilogue writes the mutated inputs).
  absl::StatusOr<CompilePlan> plan = PlanCompilation(*a);
  if (absl::IsUnimplemented(plan.status())) {
    GTEST_SKIP() << plan.status().message();
  }
  ASSERT_THAT(plan, IsOk());
  ReferenceBackend backend;
  absl::StatusOr<v1::Artifact> fw_artifact = CompileForward(*plan, backend);
  ASSERT_THAT(fw_artifact, IsOk());
  absl::StatusOr<v1::Artifact> bw_artifact =
      CompileBackward(*plan, *fw_artifact, backend);
  ASSERT_THAT(bw_artifact, IsOk());
  auto function = CompiledFunction::Load(*fw_artifact, plan->metadata);
  ASSERT_THAT(function, IsOk());
  ASSERT_THAT((*function)->AttachBackward(*bw_artifact), IsOk());

  // Inputs, as the value fixture recorded them before the call.
  std::vector<Tensor> inputs = testing::LoadEagerRun(file).inputs;

  auto fw = (*function)->Forward(&inputs);
  ASSERT_THAT(fw, IsOk());

  // The cotangents eager received, per output and per mutated input.
  const auto& out_cot_json =
      F(grads, "output_cotangents").list_value().values();
  const auto& in_cot_json =
      F(grads, "mutated_input_cotangents").list_value().values();
  std::vector<Tensor> out_cot(vmd.outputs_size()), in_cot(vmd.inputs_size());
  for (int j = 0; j < vmd.outputs_size(); ++j) {
    if (out_cot_json[j].kind_case() == Value::kStructValue) {
      out_cot[j] = testing::DecodeTensorValue(out_cot_json[j].struct_value());
    }
  }
  for (int i = 0; i < vmd.inputs_size(); ++i) {
    if (in_cot_json[i].kind_case() == Value::kStructValue) {
      in_cot[i] = testing::DecodeTensorValue(in_cot_json[i].struct_value());
    }
  }
  auto add_into = [](Tensor& slot, const Tensor& contribution) {
    Tensor sum = Tensor::Contiguous(contribution.shape(), contribution.dtype());
    CopyInto(contribution, sum);
    if (slot.defined()) {
      std::vector<double> a = slot.ToDoubles(), b = sum.ToDoubles();
      for (size_t x = 0; x < a.size(); ++x) {
        StoreFrom<double>(sum.storage_data(), sum.dtype(), x, a[x] + b[x]);
      }
    }
    slot = sum;
  };
  // What the runtime's view replay does for outputs that alias an input, an
  // intermediate or another output: their gradients flow into their base's,
  // unless the view was made under no_grad (regenerated without history).
  std::vector<Tensor> base_cot(vmd.num_intermediate_bases());
  std::vector<Tensor> direct_input_grad(vmd.inputs_size());
  for (int j = vmd.outputs_size() - 1; j >= 0; --j) {
    const v1::OutputAliasInfo& out = vmd.outputs(j);
    if (!out_cot[j].defined() ||
        out.output_type() == v1::OUTPUT_TYPE_NON_ALIAS ||
        out.created_in_no_grad()) {
      continue;
    }
    const Meta& view = a->graph.values[a->graph.outputs[j]].meta;
    switch (out.output_type()) {
      case v1::OUTPUT_TYPE_IS_INPUT:
      case v1::OUTPUT_TYPE_ALIAS_OF_INPUT: {
        int i = out.base_idx();
        bool has_tangent = false;
        for (const v1::TangentInfo& t : vmd.tangents()) {
          has_tangent |=
              t.source() == v1::TANGENT_SOURCE_MUTATED_INPUT && t.index() == i;
        }
        // Into the tangent of the input's new value (laid out as the caller
        // holds it after the call), or straight to the input as passed
        // (through the as_strided_ of a metadata mutation, if any).
        Meta base = has_tangent ? MetaFromProto(plan->metadata.inputs_after(i))
                                : a->graph.values[i].meta;
        base.dtype = a->graph.values[i].meta.dtype;
        Tensor g = ViewGradToBase(base, view, out_cot[j]);
        add_into(has_tangent ? in_cot[i] : direct_input_grad[i], g);
        break;
      }
      case v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT:
      case v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE: {
        int k = out.base_idx();
        add_into(base_cot[k],
                 ViewGradToBase(MetaFromProto(vmd.intermediate_bases(k)), view,
                                out_cot[j]));
        break;
      }
      case v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT: {
        int b = out.base_idx();
        const Meta& base = a->graph.values[a->graph.outputs[b]].meta;
        add_into(out_cot[b], ViewGradToBase(base, view, out_cot[j]));
        break;
      }
      default:
        break;
    }
  }

  // One tangent per TangentInfo. As autograd, the backward runs only when
  // one of them receives a gradient.
  std::vector<Tensor> tangents;
  bool any_tangent = false;
  for (const v1::TangentInfo& t : vmd.tangents()) {
    Tensor cot;
    if (t.source() == v1::TANGENT_SOURCE_USER_OUTPUT) cot = out_cot[t.index()];
    if (t.source() == v1::TANGENT_SOURCE_MUTATED_INPUT) cot = in_cot[t.index()];
    if (t.source() == v1::TANGENT_SOURCE_INTERMEDIATE_BASE)
      cot = base_cot[t.index()];
    any_tangent |= cot.defined();
    tangents.push_back(cot.defined() ? cot
                                     : Tensor::Zeros(MetaFromProto(t.meta())));
  }
  std::vector<std::optional<Tensor>> backward_grads(graph.inputs_size());
  if (any_tangent) {
    auto bw = (*function)->Backward(fw->saved, tangents);
    ASSERT_THAT(bw, IsOk());
    backward_grads = bw->inputs;
  }

  const auto& want = F(grads, "input_grads").list_value().values();
  for (int i = 0; i < graph.inputs_size(); ++i) {
    Tensor got;
    if (backward_grads[i].has_value()) got = *backward_grads[i];
    if (direct_input_grad[i].defined()) {
      if (got.defined()) add_into(direct_input_grad[i], got);
      got = direct_input_grad[i];
    }
    if (want[i].kind_case() != Value::kStructValue) {
      EXPECT_FALSE(got.defined())
          << file << ": input " << i << " gets a gradient where eager has None";
      continue;
    }
    ASSERT_TRUE(got.defined())
        << file << ": input " << i << " gets none, eager has one";
    Tensor expected = testing::DecodeTensorValue(want[i].struct_value());
    ASSERT_EQ(got.shape(), expected.shape()) << file << " input " << i;
    std::vector<double> g = got.ToDoubles(), e = expected.ToDoubles();
    double rtol = got.dtype() == v1::DTYPE_FLOAT64 ? 1e-9 : 1e-4;
    double atol = got.dtype() == v1::DTYPE_FLOAT64 ? 1e-10 : 1e-5;
    for (size_t x = 0; x < g.size(); ++x) {
      EXPECT_NEAR(g[x], e[x], atol + rtol * std::abs(e[x]))
          << file << " grad of input " << i << " element " << x;
    }
  }
}

std::string ParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.size() - 5);
  for (char& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Traced, EagerGradsTest,
                         ::testing::ValuesIn(GradFixtures()), ParamName);

}  // namespace
}  // namespace aotcache
