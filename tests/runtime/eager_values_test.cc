// The runtime against torch eager, on every traced scenario
// (tests/fixtures/values, recorded by tools/make_value_fixtures.py from the
// eager run of the same function on the same inputs):
//  - the functionalized graph computes eager's outputs and the new values of
//    the inputs eager mutated;
//  - the original graph, run with eager semantics (in-place ops write into
//    the inputs), leaves the inputs and outputs exactly as eager did, and an
//    output shares memory with an input exactly when it does in eager.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/graph/graph_json.h"
#include "core/runtime/graph_executor.h"
#include "google/protobuf/struct.pb.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace aotcache {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

const Value& F(const Struct& s, const std::string& name) {
  return s.fields().at(name);
}

std::vector<int64_t> Ints(const Value& v) {
  std::vector<int64_t> out;
  for (const Value& x : v.list_value().values()) {
    out.push_back(static_cast<int64_t>(x.number_value()));
  }
  return out;
}

DType DTypeOf(const Value& v) {
  DType d;
  v1::DType_Parse(v.string_value(), &d);
  return d;
}

// A contiguous tensor holding base64 `data`.
Tensor Decode(std::vector<int64_t> shape, DType dtype, const std::string& b64) {
  std::string bytes;
  absl::Base64Unescape(b64, &bytes);
  Tensor t = Tensor::Contiguous(std::move(shape), dtype);
  std::memcpy(t.storage_data(), bytes.data(),
              std::min<size_t>(bytes.size(), t.numel() * ItemSize(dtype)));
  return t;
}

struct Case {
  Struct values;
  std::vector<Tensor>
      storages;                // Fresh copies of the storages before the call.
  std::vector<Tensor> inputs;  // Views of `storages`.
};

Case Load(const std::string& file) {
  Case c;
  absl::Status st =
      ParseJson(testing::ReadFileOrDie(testing::FixturePath("values/" + file)),
                &c.values);
  EXPECT_TRUE(st.ok()) << st;
  for (const Value& s : F(c.values, "storages").list_value().values()) {
    const Struct& st_ = s.struct_value();
    c.storages.push_back(
        Decode({static_cast<int64_t>(F(st_, "size").number_value())},
               DTypeOf(F(st_, "dtype")), F(st_, "data").string_value()));
  }
  for (const Value& in : F(c.values, "inputs").list_value().values()) {
    const Struct& s = in.struct_value();
    const Tensor& storage =
        c.storages[static_cast<int>(F(s, "storage").number_value())];
    Meta meta;
    meta.shape = Ints(F(s, "shape"));
    meta.stride = Ints(F(s, "stride"));
    meta.offset = static_cast<int64_t>(F(s, "storage_offset").number_value());
    meta.dtype = storage.dtype();
    c.inputs.push_back(storage.View(meta));
  }
  return c;
}

// Compares values (NaN equals NaN); float32 within rtol 1e-5 + atol 1e-6.
void ExpectClose(const Tensor& got, const Struct& want,
                 const std::string& what) {
  std::vector<int64_t> shape = Ints(F(want, "shape"));
  ASSERT_EQ(got.shape(), shape) << what;
  Tensor expected =
      Decode(shape, DTypeOf(F(want, "dtype")), F(want, "data").string_value());
  ASSERT_EQ(got.dtype(), expected.dtype()) << what;
  std::vector<double> g = got.ToDoubles(), e = expected.ToDoubles();
  double rtol = got.dtype() == v1::DTYPE_FLOAT64 ? 1e-10 : 1e-5;
  double atol = got.dtype() == v1::DTYPE_FLOAT64 ? 1e-12 : 1e-6;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(e[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " element " << i;
      continue;
    }
    EXPECT_NEAR(g[i], e[i], atol + rtol * std::abs(e[i]))
        << what << " element " << i;
  }
}

class EagerValuesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EagerValuesTest, FunctionalGraphComputesEagerValues) {
  const std::string file = GetParam();
  v1::Graph graph = testing::LoadGraphOrDie("graphs/" + file);
  Case c = Load(file);
  if (F(c.values, "uses_rng").bool_value()) GTEST_SKIP() << "RNG";
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<v1::Graph> functional = FunctionalGraph(*a);
  ASSERT_TRUE(functional.ok()) << functional.status();
  absl::StatusOr<std::unique_ptr<GraphExecutor>> exec =
      GraphExecutor::Create(*functional);
  ASSERT_TRUE(exec.ok()) << exec.status();

  // Inputs: each synthetic base is a 1-D view of its whole storage, at its
  // first member's place; the other members are dropped.
  const v1::ViewAndMutationData& vmd = a->view_and_mutation;
  std::vector<int> base_of_input(graph.inputs_size(), -1);
  for (int b = 0; b < vmd.synthetic_bases_size(); ++b) {
    for (int i : vmd.synthetic_bases(b).inputs()) base_of_input[i] = b;
  }
  std::vector<Tensor> inputs;
  std::vector<bool> base_added(vmd.synthetic_bases_size(), false);
  for (int i = 0; i < graph.inputs_size(); ++i) {
    int b = base_of_input[i];
    if (b < 0) {
      inputs.push_back(c.inputs[i]);
    } else if (!base_added[b]) {
      base_added[b] = true;
      const Tensor& member = c.inputs[i];
      inputs.push_back(member.View(
          ContiguousMeta({member.storage_elements()}, member.dtype())));
    }
  }
  absl::StatusOr<std::vector<Tensor>> out = (*exec)->Run(inputs);
  ASSERT_TRUE(out.ok()) << out.status();

  const auto& inputs_after = F(c.values, "inputs_after").list_value().values();
  const auto& outputs = F(c.values, "outputs").list_value().values();
  size_t k = 0;
  for (int i = 0; i < vmd.inputs_size(); ++i) {
    if (!vmd.inputs(i).mutates_data() && !vmd.inputs(i).mutates_metadata())
      continue;
    ExpectClose((*out)[k++], inputs_after[i].struct_value(),
                absl::StrCat(file, " new value of input ", i));
  }
  for (int j = 0; j < outputs.size(); ++j) {
    ExpectClose((*out)[k++], outputs[j].struct_value(),
                absl::StrCat(file, " output ", j));
  }
}

TEST_P(EagerValuesTest, OriginalGraphRunsWithEagerSemantics) {
  const std::string file = GetParam();
  v1::Graph graph = testing::LoadGraphOrDie("graphs/" + file);
  Case c = Load(file);
  if (F(c.values, "uses_rng").bool_value()) GTEST_SKIP() << "RNG";
  absl::StatusOr<std::unique_ptr<GraphExecutor>> exec =
      GraphExecutor::Create(graph);
  ASSERT_TRUE(exec.ok()) << exec.status();
  absl::StatusOr<std::vector<Tensor>> out = (*exec)->Run(c.inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  const auto& outputs = F(c.values, "outputs").list_value().values();
  ASSERT_EQ(out->size(), static_cast<size_t>(outputs.size()));
  const auto& inputs_after = F(c.values, "inputs_after").list_value().values();
  for (int i = 0; i < graph.inputs_size(); ++i) {
    // The input's memory seen through its layout after the call (t_ and
    // friends change the layout; the data is written in place).
    const Struct& want = inputs_after[i].struct_value();
    Meta after = c.inputs[i].meta();
    after.shape = Ints(F(want, "shape"));
    after.stride = Ints(F(want, "stride"));
    after.offset =
        static_cast<int64_t>(F(want, "storage_offset").number_value());
    ExpectClose(c.inputs[i].View(after), want,
                absl::StrCat(file, " input ", i, " after"));
  }
  std::vector<int64_t> aliases = Ints(F(c.values, "output_aliases_input"));
  for (int j = 0; j < outputs.size(); ++j) {
    ExpectClose((*out)[j], outputs[j].struct_value(),
                absl::StrCat(file, " output ", j));
    bool shares = false;
    for (const Tensor& in : c.inputs) shares |= (*out)[j].SharesStorageWith(in);
    EXPECT_EQ(shares, aliases[j] >= 0)
        << file << " output " << j << " aliasing";
  }
}

std::string ParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.size() - 5);  // ".json"
  for (char& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Traced, EagerValuesTest,
                         ::testing::ValuesIn(testing::FixtureGraphFiles()),
                         ParamName);

}  // namespace
}  // namespace aotcache
