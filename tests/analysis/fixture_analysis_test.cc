// Every graph traced from a real function (tests/fixtures/graphs, written by
// tools/make_fixtures.py) against its expected analysis, written by hand from
// SEMANTICS.md and checked against eager torch by tests/python/eager_oracle.py
// (tests/fixtures/expected_analysis.json).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/graph/graph_json.h"
#include "google/protobuf/struct.pb.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

std::vector<Struct> LoadExpectations() {
  std::string text =
      testing::ReadFileOrDie(testing::FixturePath("expected_analysis.json"));
  ListValue list;
  absl::Status st = ParseJson(text, &list);
  std::vector<Struct> out;
  if (!st.ok()) return out;  // The test below then fails on the count.
  for (const Value& v : list.values()) out.push_back(v.struct_value());
  return out;
}

const std::vector<Struct>& Expectations() {
  static const std::vector<Struct>* all =
      new std::vector<Struct>(LoadExpectations());
  return *all;
}

const Value& Field(const Struct& s, const std::string& name) {
  static const Value* missing = new Value();
  auto it = s.fields().find(name);
  return it == s.fields().end() ? *missing : it->second;
}

std::string Why(const Struct& expected, const std::string& field) {
  const Value& why = Field(Field(expected, "why").struct_value(), field);
  return why.kind_case() == Value::kStringValue
             ? absl::StrCat(" (expected because: ", why.string_value(), ")")
             : "";
}

class FixtureAnalysisTest : public ::testing::TestWithParam<int> {};

TEST(FixtureSetTest, HasAtLeastTwentyFiveScenarios) {
  EXPECT_GE(Expectations().size(), 25u);
}

TEST_P(FixtureAnalysisTest, MatchesExpectation) {
  const Struct& expected = Expectations()[GetParam()];
  const std::string name = Field(expected, "name").string_value();
  v1::Graph graph = testing::LoadGraphOrDie(
      absl::StrCat("graphs/", Field(expected, "graph").string_value()));
  absl::StatusOr<Analysis> analysis = Analyze(graph, v1::CompileOptions());
  ASSERT_THAT(analysis, IsOk());
  const v1::ViewAndMutationData& vmd = analysis->view_and_mutation;

  EXPECT_EQ(v1::Mode_Name(analysis->mode),
            Field(expected, "mode").string_value())
      << name << Why(expected, "mode");

  const ListValue& inputs = Field(expected, "inputs").list_value();
  ASSERT_EQ(vmd.inputs_size(), inputs.values_size()) << name;
  for (int i = 0; i < vmd.inputs_size(); ++i) {
    const Struct& want = inputs.values(i).struct_value();
    const v1::InputAliasInfo& got = vmd.inputs(i);
    auto check = [&](const char* field, bool value) {
      std::string where = absl::StrCat("inputs[", i, "].", field);
      EXPECT_EQ(value, Field(want, field).bool_value())
          << name << " " << where << Why(expected, where);
    };
    check("mutates_data", got.mutates_data());
    check("mutates_metadata", got.mutates_metadata());
    check("mutations_under_no_grad_or_inference_mode",
          got.mutations_under_no_grad_or_inference_mode());
    check("mutations_hidden_from_autograd",
          got.mutations_hidden_from_autograd());
    check("requires_grad", got.requires_grad());
    check("is_leaf", got.is_leaf());
  }

  const ListValue& outputs = Field(expected, "outputs").list_value();
  ASSERT_EQ(vmd.outputs_size(), outputs.values_size()) << name;
  for (int j = 0; j < vmd.outputs_size(); ++j) {
    const Struct& want = outputs.values(j).struct_value();
    const v1::OutputAliasInfo& got = vmd.outputs(j);
    std::string where = absl::StrCat("outputs[", j, "]");
    EXPECT_EQ(v1::OutputType_Name(got.output_type()),
              Field(want, "output_type").string_value())
        << name << " " << where << ".output_type"
        << Why(expected, where + ".output_type");
    const Value& base = Field(want, "base_idx");
    if (base.kind_case() == Value::kNumberValue) {
      EXPECT_TRUE(got.has_base_idx()) << name << " " << where;
      EXPECT_EQ(got.base_idx(), static_cast<int>(base.number_value()))
          << name << " " << where << ".base_idx"
          << Why(expected, where + ".base_idx");
    } else {
      EXPECT_FALSE(got.has_base_idx()) << name << " " << where << ".base_idx";
    }
    EXPECT_EQ(got.requires_grad(), Field(want, "requires_grad").bool_value())
        << name << " " << where << ".requires_grad"
        << Why(expected, where + ".requires_grad");
  }

  EXPECT_EQ(vmd.num_intermediate_bases(),
            static_cast<int>(
                Field(expected, "num_intermediate_bases").number_value()))
      << name;

  const ListValue& bases = Field(expected, "synthetic_bases").list_value();
  ASSERT_EQ(vmd.synthetic_bases_size(), bases.values_size()) << name;
  for (int b = 0; b < bases.values_size(); ++b) {
    const ListValue& members = bases.values(b).list_value();
    ASSERT_EQ(vmd.synthetic_bases(b).inputs_size(), members.values_size())
        << name;
    for (int m = 0; m < members.values_size(); ++m) {
      EXPECT_EQ(vmd.synthetic_bases(b).inputs(m),
                static_cast<int>(members.values(m).number_value()))
          << name;
    }
  }

  const ListValue& tangents = Field(expected, "tangents").list_value();
  ASSERT_EQ(vmd.tangents_size(), tangents.values_size()) << name;
  for (int t = 0; t < tangents.values_size(); ++t) {
    const ListValue& want = tangents.values(t).list_value();
    EXPECT_EQ(v1::TangentSource_Name(vmd.tangents(t).source()),
              absl::StrCat("TANGENT_SOURCE_", want.values(0).string_value()))
        << name << " tangents[" << t << "]";
    EXPECT_EQ(vmd.tangents(t).index(),
              static_cast<int>(want.values(1).number_value()))
        << name << " tangents[" << t << "]";
  }
}

std::string FixtureName(const ::testing::TestParamInfo<int>& info) {
  std::string name = Field(Expectations()[info.param], "name").string_value();
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

std::vector<int> FixtureIndices() {
  std::vector<int> out;
  for (size_t i = 0; i < Expectations().size(); ++i)
    out.push_back(static_cast<int>(i));
  return out;
}

INSTANTIATE_TEST_SUITE_P(Traced, FixtureAnalysisTest,
                         ::testing::ValuesIn(FixtureIndices()), FixtureName);

}  // namespace
}  // namespace aotcache
