// The cache key: golden values (any change to the encoding shows here and
// must bump kKeySchemaVersion), invariance under renaming and argument
// spelling, one test per field that must change it, and agreement across
// processes.
#include "core/key/cache_key.h"

#include <cstdio>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/backend/reference_backend.h"
#include "core/graph/graph_json.h"
#include "core/key/target.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

KeyContext TestContext() {
  KeyContext context;
  context.pipeline_version = "test-pipeline";
  context.target.set_arch("x86_64");
  context.target.set_abi("linux-gnu");
  context.backend_name = "reference";
  context.backend_version = "1";
  return context;
}

std::string KeyOf(const v1::Graph& graph,
                  const v1::CompileOptions& options = {},
                  const KeyContext& context = TestContext()) {
  absl::StatusOr<Analysis> a = Analyze(graph, options);
  EXPECT_THAT(a, IsOk());
  if (!a.ok()) return "";
  return ComputeKey(a->graph, a->view_and_mutation, a->mode, options, context)
      .ToHex();
}

// a: a non-leaf that requires grad, mutated in place; b: a plain leaf; an
// output that is a view of another output.
constexpr char kGraph[] = R"json({
  "inputs": [
    {"name": "a", "meta": {"shape": [2, 3], "dtype": "DTYPE_FLOAT32",
                           "requires_grad": true, "is_leaf": false}},
    {"name": "b", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32",
                           "is_leaf": true}}
  ],
  "nodes": [
    {"name": "mul_", "op": "aten.mul_.Tensor",
     "args": [{"node": "a"}, {"int": 2}], "grad_mode": "GRAD_MODE_ENABLED"},
    {"name": "add", "op": "aten.add.Tensor",
     "args": [{"node": "a"}, {"node": "b"}], "grad_mode": "GRAD_MODE_ENABLED"},
    {"name": "view", "op": "aten.view.default",
     "args": [{"node": "add"}, {"ints": {"values": [6]}}],
     "grad_mode": "GRAD_MODE_ENABLED"}
  ],
  "outputs": ["view", "add"]
})json";

TEST(CacheKeyTest, GoldenKeys) {
  // Recorded once. A change here means the encoding changed: bump
  // kKeySchemaVersion and record the new values.
  EXPECT_EQ(KeyOf(testing::GraphFromJson(kGraph)),
            "2cf0f8dfdb3b7ca6ec279ee67be2294ac605edad47aecb38c6bcfc88c6712242");
  EXPECT_EQ(KeyOf(testing::LoadGraphOrDie("../../examples/mlp.json")),
            "38e9be4d6c634795933f7a977e5651de72bc846907f36a0b824dab6fa0b65af6");
  EXPECT_EQ(
      KeyOf(testing::LoadGraphOrDie("../../examples/aliased_inputs.json")),
      "c7f03b1be2daa9a4241ccd1118491277e137989fcbb33bf862a0fb338a0205d8");
}

TEST(CacheKeyTest, SameGraphSameKey) {
  EXPECT_EQ(KeyOf(testing::GraphFromJson(kGraph)),
            KeyOf(testing::GraphFromJson(kGraph)));
}

TEST(CacheKeyTest, RenamingNodesAndInputsKeepsTheKey) {
  v1::Graph renamed = testing::GraphFromJson(kGraph);
  renamed.mutable_inputs(0)->set_name("first");
  renamed.mutable_nodes(0)->set_name("scaled");
  renamed.mutable_nodes(0)->mutable_args(0)->set_node("first");
  renamed.mutable_nodes(1)->set_name("sum2");
  renamed.mutable_nodes(1)->mutable_args(0)->set_node("first");
  renamed.mutable_nodes(2)->set_name("flat");
  renamed.mutable_nodes(2)->mutable_args(0)->set_node("sum2");
  renamed.set_outputs(0, "flat");
  renamed.set_outputs(1, "sum2");
  EXPECT_EQ(KeyOf(renamed), KeyOf(testing::GraphFromJson(kGraph)));
}

TEST(CacheKeyTest, DefaultArgumentSpelledOutKeepsTheKey) {
  v1::Graph explicit_alpha = testing::GraphFromJson(kGraph);
  (*explicit_alpha.mutable_nodes(1)->mutable_kwargs())["alpha"].set_int_(1);
  EXPECT_EQ(KeyOf(explicit_alpha), KeyOf(testing::GraphFromJson(kGraph)));
}

TEST(CacheKeyTest, StorageIdsAreNumberedByFirstAppearance) {
  auto with_storage_ids = [](int first, int second) {
    v1::Graph g = testing::GraphFromJson(kGraph);
    v1::Storage* s0 = g.add_storages();
    s0->set_id(first);
    s0->set_size(6);
    v1::Storage* s1 = g.add_storages();
    s1->set_id(second);
    s1->set_size(3);
    g.mutable_inputs(0)->set_storage(first);
    g.mutable_inputs(1)->set_storage(second);
    return g;
  };
  EXPECT_EQ(KeyOf(with_storage_ids(0, 1)), KeyOf(with_storage_ids(41, 7)));
}

TEST(CacheKeyTest, NanPayloadsAreOneNanButSignedZerosDiffer) {
  auto with_scalar = [](double v) {
    v1::Graph g = testing::GraphFromJson(kGraph);
    g.mutable_nodes(0)->mutable_args(1)->set_float_(v);
    return KeyOf(g);
  };
  EXPECT_EQ(with_scalar(std::nan("1")), with_scalar(std::nan("2")));
  EXPECT_NE(with_scalar(0.0), with_scalar(-0.0));
}

struct FieldCase {
  std::string name;
  std::function<void(v1::Graph&, v1::CompileOptions&, KeyContext&)> change;
};

void PrintTo(const FieldCase& c, std::ostream* os) { *os << c.name; }

class KeyFieldTest : public ::testing::TestWithParam<FieldCase> {};

TEST_P(KeyFieldTest, ChangingTheFieldChangesTheKey) {
  v1::Graph g = testing::GraphFromJson(kGraph);
  v1::CompileOptions options;
  KeyContext context = TestContext();
  std::string before = KeyOf(g, options, context);
  GetParam().change(g, options, context);
  std::string after = KeyOf(g, options, context);
  ASSERT_FALSE(after.empty());
  EXPECT_NE(before, after);
}

v1::TensorMeta* MetaA(v1::Graph& g) {
  return g.mutable_inputs(0)->mutable_meta();
}
v1::TensorMeta* MetaB(v1::Graph& g) {
  return g.mutable_inputs(1)->mutable_meta();
}

const FieldCase kFieldCases[] = {
    {"InputShape",
     [](v1::Graph& g, auto&, auto&) { MetaB(g)->set_shape(0, 1); }},
    {"InputStride",  // Rows apart (a transposed `a` would make add's
                     // result transposed, which view refuses, as in eager).
     [](v1::Graph& g, auto&, auto&) {
       MetaA(g)->add_stride(4);
       MetaA(g)->add_stride(1);
     }},
    {"InputStorageOffset",
     [](v1::Graph& g, auto&, auto&) { MetaB(g)->set_storage_offset(2); }},
    {"InputDtype",
     [](v1::Graph& g, auto&, auto&) {
       MetaA(g)->set_dtype(v1::DTYPE_FLOAT64);
       MetaB(g)->set_dtype(v1::DTYPE_FLOAT64);
     }},
    {"InputRequiresGrad",
     [](v1::Graph& g, auto&, auto&) { MetaB(g)->set_requires_grad(true); }},
    {"InputIsLeaf",
     [](v1::Graph& g, auto&, auto&) {
       MetaA(g)->set_is_leaf(true);
       g.mutable_nodes(0)->set_grad_mode(v1::GRAD_MODE_DISABLED);
     }},
    {"InputsShareAStorage",
     [](v1::Graph& g, auto&, auto&) {
       v1::Storage* s = g.add_storages();
       s->set_id(0);
       s->set_size(6);
       g.mutable_inputs(0)->set_storage(0);
       g.mutable_inputs(1)->set_storage(0);
     }},
    {"StorageSize",
     [](v1::Graph& g, auto&, auto&) {
       v1::Storage* s = g.add_storages();
       s->set_id(0);
       s->set_size(100);
       g.mutable_inputs(1)->set_storage(0);
     }},
    {"NodeOp", [](v1::Graph& g, auto&,
                  auto&) { g.mutable_nodes(1)->set_op("aten.sub.Tensor"); }},
    {"NodeGradMode",
     [](v1::Graph& g, auto&, auto&) {
       g.mutable_nodes(1)->set_grad_mode(v1::GRAD_MODE_DISABLED);
     }},
    {"ScalarArgument",
     [](v1::Graph& g, auto&, auto&) {
       g.mutable_nodes(0)->mutable_args(1)->set_int_(3);
     }},
    {"ScalarArgumentType",
     [](v1::Graph& g, auto&, auto&) {
       g.mutable_nodes(0)->mutable_args(1)->set_float_(2.0);
     }},
    {"ArgumentWiring",
     [](v1::Graph& g, auto&, auto&) {
       g.mutable_nodes(1)->mutable_args(0)->set_node("b");
       g.mutable_nodes(1)->mutable_args(1)->set_node("a");
     }},
    {"OutputOrder",
     [](v1::Graph& g, auto&, auto&) {
       g.set_outputs(0, "add");
       g.set_outputs(1, "view");
     }},
    {"KeepInputMutations", [](v1::Graph&, v1::CompileOptions& o,
                              auto&) { o.set_keep_input_mutations(true); }},
    {"TargetArch",
     [](v1::Graph&, auto&, KeyContext& c) { c.target.set_arch("aarch64"); }},
    {"TargetAbi",
     [](v1::Graph&, auto&, KeyContext& c) { c.target.set_abi("linux-musl"); }},
    {"TargetCpu",  // Native code for x86-64-v4 dies of SIGILL on older CPUs.
     [](v1::Graph&, auto&, KeyContext& c) { c.target.set_cpu("x86-64-v4"); }},
    {"BackendName",
     [](v1::Graph&, auto&, KeyContext& c) { c.backend_name = "native"; }},
    {"BackendVersion",
     [](v1::Graph&, auto&, KeyContext& c) { c.backend_version = "2"; }},
    {"PipelineVersion",
     [](v1::Graph&, auto&, KeyContext& c) { c.pipeline_version = "other"; }},
};

INSTANTIATE_TEST_SUITE_P(Fields, KeyFieldTest, ::testing::ValuesIn(kFieldCases),
                         [](const ::testing::TestParamInfo<FieldCase>& info) {
                           return info.param.name;
                         });

TEST(CacheKeyTest, ConstantValueChangesTheKey) {
  auto with_constant = [](const std::string& bytes) {
    v1::Graph g = testing::GraphFromJson(kGraph);
    v1::Constant* c = g.add_constants();
    c->set_name("c");
    c->mutable_meta()->add_shape(3);
    c->mutable_meta()->set_dtype(v1::DTYPE_FLOAT32);
    c->set_data(bytes);
    g.mutable_nodes(1)->mutable_args(1)->set_node("c");
    return KeyOf(g);
  };
  EXPECT_NE(with_constant(std::string(12, '\0')),
            with_constant(std::string(11, '\0') + '\1'));
}

TEST(CacheKeyTest, ViewAndMutationDataAndModeEnterTheKey) {
  v1::Graph g = testing::GraphFromJson(kGraph);
  absl::StatusOr<Analysis> a = Analyze(g, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  KeyContext ctx = TestContext();
  v1::CompileOptions options;
  CacheKey base =
      ComputeKey(a->graph, a->view_and_mutation, a->mode, options, ctx);
  v1::ViewAndMutationData vmd = a->view_and_mutation;
  vmd.mutable_inputs(0)->set_mutations_under_no_grad_or_inference_mode(true);
  EXPECT_FALSE(ComputeKey(a->graph, vmd, a->mode, options, ctx) == base);
  vmd = a->view_and_mutation;
  vmd.mutable_outputs(0)->set_base_idx(vmd.outputs(0).base_idx() + 1);
  EXPECT_FALSE(ComputeKey(a->graph, vmd, a->mode, options, ctx) == base);
  EXPECT_FALSE(ComputeKey(a->graph, a->view_and_mutation, v1::MODE_INFERENCE,
                          options, ctx) == base);
}

TEST(CacheKeyTest, AnotherProcessComputesTheSameKey) {
  // The CLI in a child process, with this build's pipeline version and the
  // host target, must agree with the key computed here.
  std::string path = testing::FixturePath("../../examples/view_detach.json");
  std::string command = absl::StrCat(
      AOTCACHE_CLI_PATH, " analyze --json --backend=reference ", path);
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    output.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0) << output;
  v1::AnalysisReport report;
  ASSERT_THAT(ParseJson(output, &report), IsOk());
  absl::StatusOr<KeyContext> context =
      KeyContextFor(ReferenceBackend(), HostTarget(), "");
  ASSERT_THAT(context, IsOk());
  EXPECT_EQ(report.key(),
            KeyOf(testing::LoadGraphOrDie("../../examples/view_detach.json"),
                  {}, *context));
}

TEST(PipelineVersionTest, IsAHashOfTheSources) {
  EXPECT_EQ(PipelineVersion().size(), 64u);
}

}  // namespace
}  // namespace aotcache
