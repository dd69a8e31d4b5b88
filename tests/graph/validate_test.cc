// Malformed graphs: each is refused with the right code and a message that
// names the node or field at fault; none crashes.
#include "core/graph/validate.h"

#include <functional>
#include <string>

#include "core/analysis/analyze.h"
#include "core/graph/graph_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kGoodGraph[] = R"json({
  "inputs": [
    {"name": "x", "meta": {"shape": [2, 3], "dtype": "DTYPE_FLOAT32",
                           "requires_grad": true, "is_leaf": true}},
    {"name": "w", "meta": {"shape": [3, 4], "dtype": "DTYPE_FLOAT32",
                           "is_leaf": true}}
  ],
  "nodes": [
    {"name": "mm", "op": "aten.mm.default",
     "args": [{"node": "x"}, {"node": "w"}], "grad_mode": "GRAD_MODE_ENABLED"},
    {"name": "relu", "op": "aten.relu.default",
     "args": [{"node": "mm"}], "grad_mode": "GRAD_MODE_ENABLED"},
    {"name": "sum", "op": "aten.sum.default",
     "args": [{"node": "relu"}], "grad_mode": "GRAD_MODE_ENABLED"}
  ],
  "outputs": ["sum"]
})json";

struct MalformedCase {
  std::string name;
  std::function<void(v1::Graph&)> corrupt;
  absl::StatusCode code;
  std::string where;   // The node or field named.
  std::string detail;  // What is wrong with it.
  GraphLimits limits = {};
};

void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.name; }

v1::Node* AddNode(v1::Graph& g, const std::string& name, const std::string& op,
                  std::initializer_list<std::string> refs) {
  v1::Node* n = g.add_nodes();
  n->set_name(name);
  n->set_op(op);
  n->set_grad_mode(v1::GRAD_MODE_ENABLED);
  for (const std::string& r : refs) n->add_args()->set_node(r);
  return n;
}

// ln = native_layer_norm(input, [4], None, None, 1e-5): three results.
void AddLayerNorm(v1::Graph& g, const std::string& name,
                  const std::string& input) {
  v1::Node* ln = AddNode(g, name, "aten.native_layer_norm.default", {input});
  ln->add_args()->mutable_ints()->add_values(4);
  ln->add_args()->set_none(true);
  ln->add_args()->set_none(true);
  ln->add_args()->set_float_(1e-5);
}

v1::Input* AddInput(v1::Graph& g, const std::string& name,
                    std::initializer_list<int64_t> shape) {
  v1::Input* in = g.add_inputs();
  in->set_name(name);
  for (int64_t s : shape) in->mutable_meta()->add_shape(s);
  in->mutable_meta()->set_dtype(v1::DTYPE_FLOAT32);
  in->mutable_meta()->set_is_leaf(true);
  return in;
}

// convt = convolution(img (1, 2, 4, 4), k (2, 3, 3, 3), None, stride,
// [0], [1], transposed=True, output_padding, 1).
void AddTransposedConvolution(v1::Graph& g, int64_t stride,
                              int64_t output_padding) {
  AddInput(g, "img", {1, 2, 4, 4});
  AddInput(g, "k", {2, 3, 3, 3});
  v1::Node* n = AddNode(g, "convt", "aten.convolution.default", {"img", "k"});
  n->add_args()->set_none(true);
  for (int64_t list : {stride, int64_t{0}, int64_t{1}}) {
    n->add_args()->mutable_ints()->add_values(list);
  }
  n->add_args()->set_bool_(true);
  n->add_args()->mutable_ints()->add_values(output_padding);
  n->add_args()->set_int_(1);
}

class MalformedGraphTest : public ::testing::TestWithParam<MalformedCase> {};

TEST(GoodGraphTest, BaseGraphIsValid) {
  v1::Graph g = testing::GraphFromJson(kGoodGraph);
  absl::StatusOr<Analysis> a = Analyze(g, v1::CompileOptions());
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(a->mode, v1::MODE_TRAINING);
}

TEST_P(MalformedGraphTest, IsRefusedNamingTheFault) {
  const MalformedCase& c = GetParam();
  v1::Graph g = testing::GraphFromJson(kGoodGraph);
  c.corrupt(g);
  absl::StatusOr<Analysis> a = Analyze(g, v1::CompileOptions(), c.limits);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), c.code) << a.status();
  EXPECT_THAT(std::string(a.status().message()),
              AllOf(HasSubstr(c.where), HasSubstr(c.detail)));
}

const MalformedCase kCases[] = {
    {"UndefinedReference",
     [](v1::Graph& g) {
       g.mutable_nodes(1)->mutable_args(0)->set_node("nope");
     },
     absl::StatusCode::kInvalidArgument, "node 'relu'",
     "'nope' is not defined"},
    {"Cycle",
     [](v1::Graph& g) {
       g.mutable_nodes(0)->mutable_args(0)->set_node("relu");
     },
     absl::StatusCode::kInvalidArgument, "node 'mm'", "a cycle"},
    {"UnsupportedOp",
     [](v1::Graph& g) {
       g.mutable_nodes(1)->set_op("aten.frobnicate.default");
     },
     absl::StatusCode::kInvalidArgument, "node 'relu'",
     "unsupported op 'aten.frobnicate.default'"},
    {"EveryUnsupportedOpInOneError",
     [](v1::Graph& g) {
       g.mutable_nodes(0)->set_op("aten.frobnicate.default");
       g.mutable_nodes(1)->set_op("aten.twiddle.default");
       g.mutable_nodes(2)->set_op("aten.frobnicate.default");
     },
     absl::StatusCode::kInvalidArgument, "2 unsupported ops",
     "'aten.frobnicate.default' (2 nodes, first 'mm'), "
     "'aten.twiddle.default' (node 'relu')"},
    {"OneUnsupportedOpOnSeveralNodes",
     [](v1::Graph& g) {
       g.mutable_nodes(1)->set_op("aten.twiddle.default");
       g.mutable_nodes(2)->set_op("aten.twiddle.default");
     },
     absl::StatusCode::kInvalidArgument, "nodes: unsupported op",
     "'aten.twiddle.default' (2 nodes, first 'relu')"},
    {"DecomposedSplitOfAZeroSize",
     [](v1::Graph& g) {
       v1::Node* n = AddNode(g, "parts", "aten.split.Tensor", {"mm"});
       n->add_args()->set_int_(0);
     },
     absl::StatusCode::kInvalidArgument, "node 'parts'",
     "argument 'split_size': split_size 0 for a dim of 2"},
    {"DecomposedStackOfUnequalShapes",
     [](v1::Graph& g) {
       v1::Node* n = g.add_nodes();
       n->set_name("stacked");
       n->set_op("aten.stack.default");
       n->set_grad_mode(v1::GRAD_MODE_ENABLED);
       n->add_args()->mutable_nodes()->add_names("mm");
       n->mutable_args(0)->mutable_nodes()->add_names("x");
     },
     absl::StatusCode::kInvalidArgument, "node 'stacked'",
     "tensor 1 has another shape"},
    {"DecomposedOpsFailingInsideNameTheNode",
     [](v1::Graph& g) { AddNode(g, "lower", "aten.tril.default", {"sum"}); },
     absl::StatusCode::kInvalidArgument, "node 'lower'",
     "needs at least 2 dimensions"},
    {"ConvolutionDilationPastTheBound",
     [](v1::Graph& g) {
       v1::Input* img = g.add_inputs();
       img->set_name("img");
       for (int64_t s : {1, 1, 4, 4}) img->mutable_meta()->add_shape(s);
       img->mutable_meta()->set_dtype(v1::DTYPE_FLOAT32);
       img->mutable_meta()->set_is_leaf(true);
       v1::Input* k = g.add_inputs();
       k->set_name("k");
       for (int64_t s : {1, 1, 2, 2}) k->mutable_meta()->add_shape(s);
       k->mutable_meta()->set_dtype(v1::DTYPE_FLOAT32);
       k->mutable_meta()->set_is_leaf(true);
       v1::Node* n =
           AddNode(g, "conv", "aten.convolution.default", {"img", "k"});
       n->add_args()->set_none(true);
       for (int64_t dilation : {int64_t{1}, int64_t{0}, int64_t{1} << 62}) {
         n->add_args()->mutable_ints()->add_values(dilation);
       }
       n->add_args()->set_bool_(false);
       n->add_args()->mutable_ints()->add_values(0);
       n->add_args()->set_int_(1);
     },
     absl::StatusCode::kInvalidArgument, "node 'conv'",
     "dilation [4611686018427387904] must be in [1, 1048576]"},
    {"TransposedConvolutionPastTheElementLimit",
     [](v1::Graph& g) {
       AddTransposedConvolution(g, /*stride=*/int64_t{1} << 20,
                                /*output_padding=*/0);
     },
     absl::StatusCode::kResourceExhausted, "node 'convt'",
     "result exceeds 1099511627776 elements"},
    {"TransposedConvolutionOutputPaddingPastTheStride",
     [](v1::Graph& g) {
       AddTransposedConvolution(g, /*stride=*/2, /*output_padding=*/2);
     },
     absl::StatusCode::kInvalidArgument, "node 'convt'",
     "output padding must be smaller than either stride or dilation"},
    {"IntegralArangePastTheBound",
     [](v1::Graph& g) {
       v1::Node* n = AddNode(g, "r", "aten.arange.start", {});
       n->add_args()->set_float_(1e19);
       n->add_args()->set_float_(1e19);
       (*n->mutable_kwargs())["dtype"].set_dtype(v1::DTYPE_INT64);
     },
     absl::StatusCode::kInvalidArgument, "node 'r'", "past 2^62"},
    {"SplitPastTheNodeLimit",
     [](v1::Graph& g) {
       v1::Node* n = AddNode(g, "parts", "aten.split.Tensor", {"mm"});
       n->add_args()->set_int_(1);
       n->add_args()->set_int_(1);
     },
     absl::StatusCode::kResourceExhausted, "node 'parts'",
     "decomposes past the limit of 5 nodes",
     [] {
       GraphLimits l;
       l.max_nodes = 5;
       return l;
     }()},
    {"TooManyArguments",
     [](v1::Graph& g) { g.mutable_nodes(1)->add_args()->set_int_(1); },
     absl::StatusCode::kInvalidArgument, "node 'relu'",
     "at most 1 positional arguments, got 2"},
    {"MissingArgument",
     [](v1::Graph& g) { g.mutable_nodes(0)->mutable_args()->RemoveLast(); },
     absl::StatusCode::kInvalidArgument, "node 'mm'",
     "missing argument 'mat2'"},
    {"UnknownKeyword",
     [](v1::Graph& g) {
       (*g.mutable_nodes(1)->mutable_kwargs())["alpha"].set_int_(2);
     },
     absl::StatusCode::kInvalidArgument, "node 'relu'",
     "unknown keyword argument 'alpha'"},
    {"WrongArgumentType",
     [](v1::Graph& g) {
       v1::Node* n = AddNode(g, "s2", "aten.sum.dim_IntList", {"relu"});
       n->add_args()->set_string("rows");
       g.set_outputs(0, "s2");
     },
     absl::StatusCode::kInvalidArgument, "node 's2'",
     "argument 'dim': expected int[1]?"},
    {"NumberWhereTensorRequired",
     [](v1::Graph& g) { g.mutable_nodes(0)->mutable_args(1)->set_int_(3); },
     absl::StatusCode::kInvalidArgument, "node 'mm'",
     "argument 'mat2' must be a tensor"},
    {"ShapesDoNotMultiply",
     [](v1::Graph& g) { g.mutable_inputs(1)->mutable_meta()->set_shape(0, 4); },
     absl::StatusCode::kInvalidArgument, "node 'mm'", "cannot be multiplied"},
    {"DeclaredShapeContradictsInference",
     [](v1::Graph& g) {
       v1::TensorMeta* m = g.mutable_nodes(0)->add_output_meta();
       m->add_shape(2);
       m->add_shape(5);
       m->set_dtype(v1::DTYPE_FLOAT32);
     },
     absl::StatusCode::kInvalidArgument, "node 'mm'",
     "contradicts inferred [2, 4]"},
    {"NegativeSize",
     [](v1::Graph& g) {
       g.mutable_inputs(0)->mutable_meta()->set_shape(0, -2);
     },
     absl::StatusCode::kInvalidArgument, "inputs[0] 'x'", "negative size -2"},
    {"OverflowingSize",
     [](v1::Graph& g) {
       g.mutable_inputs(0)->mutable_meta()->set_shape(0, int64_t{1} << 40);
       g.mutable_inputs(0)->mutable_meta()->set_shape(1, int64_t{1} << 40);
     },
     absl::StatusCode::kInvalidArgument, "inputs[0] 'x'", "overflows int64"},
    {"TensorOverSizeLimit",
     [](v1::Graph& g) {
       g.mutable_inputs(0)->mutable_meta()->set_shape(0, int64_t{1} << 20);
     },
     absl::StatusCode::kResourceExhausted, "inputs[0] 'x'", "exceeds",
     GraphLimits{.max_numel = 1 << 20}},
    {"TooManyNodes", [](v1::Graph&) {}, absl::StatusCode::kResourceExhausted,
     "nodes", "3 nodes exceed the limit 2", GraphLimits{.max_nodes = 2}},
    {"DuplicateName", [](v1::Graph& g) { g.mutable_nodes(1)->set_name("mm"); },
     absl::StatusCode::kInvalidArgument, "nodes[1]", "duplicate name 'mm'"},
    {"GradModeMissing",
     [](v1::Graph& g) { g.mutable_nodes(2)->clear_grad_mode(); },
     absl::StatusCode::kInvalidArgument, "node 'sum'", "grad_mode must be set"},
    {"NonLeafWithoutGrad",
     [](v1::Graph& g) {
       g.mutable_inputs(1)->mutable_meta()->set_is_leaf(false);
     },
     absl::StatusCode::kInvalidArgument, "inputs[1] 'w'", "is_leaf=false"},
    {"StrideRankMismatch",
     [](v1::Graph& g) { g.mutable_inputs(0)->mutable_meta()->add_stride(1); },
     absl::StatusCode::kInvalidArgument, "inputs[0] 'x'",
     "stride has 1 entries"},
    {"StorageTooSmall",
     [](v1::Graph& g) {
       v1::Storage* s = g.add_storages();
       s->set_id(7);
       s->set_size(4);
       g.mutable_inputs(0)->set_storage(7);
     },
     absl::StatusCode::kInvalidArgument, "inputs[0] 'x'",
     "reaches element 5 of a storage of 4"},
    {"UnknownStorage",
     [](v1::Graph& g) { g.mutable_inputs(0)->set_storage(3); },
     absl::StatusCode::kInvalidArgument, "inputs[0] 'x'",
     "storage 3 is not in storages"},
    {"UnspecifiedDtype",
     [](v1::Graph& g) { g.mutable_inputs(1)->mutable_meta()->clear_dtype(); },
     absl::StatusCode::kInvalidArgument, "inputs[1] 'w'", "dtype"},
    {"NonCpuDevice",
     [](v1::Graph& g) {
       g.mutable_inputs(1)->mutable_meta()->set_device("cuda:0");
     },
     absl::StatusCode::kInvalidArgument, "inputs[1] 'w'", "'cuda:0'"},
    {"UndefinedOutput", [](v1::Graph& g) { g.set_outputs(0, "gone"); },
     absl::StatusCode::kInvalidArgument, "outputs[0]", "'gone' is not defined"},
    {"NoOutputs", [](v1::Graph& g) { g.clear_outputs(); },
     absl::StatusCode::kInvalidArgument, "outputs", "no outputs"},
    {"ConstantDataSize",
     [](v1::Graph& g) {
       v1::Constant* c = g.add_constants();
       c->set_name("c");
       c->mutable_meta()->add_shape(2);
       c->mutable_meta()->set_dtype(v1::DTYPE_FLOAT32);
       c->set_data("abc");
     },
     absl::StatusCode::kInvalidArgument, "constants[0] 'c'",
     "data has 3 bytes, expected 8"},
    {"NoneMustBeTrue",
     [](v1::Graph& g) {
       (*g.mutable_nodes(2)->mutable_kwargs())["dtype"].set_none(false);
     },
     absl::StatusCode::kInvalidArgument, "node 'sum'", "'none' must be true"},
    {"IncompatibleView",
     [](v1::Graph& g) {
       AddNode(g, "t", "aten.t.default", {"mm"});
       v1::Node* v = AddNode(g, "flat", "aten.view.default", {"t"});
       v->add_args()->mutable_ints()->add_values(-1);
       g.set_outputs(0, "flat");
     },
     absl::StatusCode::kInvalidArgument, "node 'flat'", "not compatible"},
    {"SeveralResultsUsedAsOne",
     [](v1::Graph& g) {
       AddLayerNorm(g, "ln", "mm");
       AddNode(g, "r2", "aten.relu.default", {"ln"});
       g.set_outputs(0, "r2");
     },
     absl::StatusCode::kInvalidArgument, "node 'r2'", "read one with getitem"},
    {"GetItemOutOfRange",
     [](v1::Graph& g) {
       AddLayerNorm(g, "ln", "mm");
       v1::Node* get = AddNode(g, "g", "getitem", {"ln"});
       get->add_args()->set_int_(3);
       g.set_outputs(0, "g");
     },
     absl::StatusCode::kInvalidArgument, "node 'g'", "index 3 out of range"},
    {"InPlaceOnLeafRequiringGrad",
     [](v1::Graph& g) {
       v1::Node* n = AddNode(g, "mul_", "aten.mul_.Scalar", {"x"});
       n->add_args()->set_int_(2);
     },
     absl::StatusCode::kInvalidArgument, "node 'mul_'",
     "a leaf Variable that requires grad is being used in an in-place"},
    {"InPlaceOnViewOfLeafRequiringGrad",
     [](v1::Graph& g) {
       v1::Node* sel = AddNode(g, "row", "aten.select.int", {"x"});
       sel->add_args()->set_int_(0);
       sel->add_args()->set_int_(1);
       v1::Node* n = AddNode(g, "add_", "aten.add_.Scalar", {"row"});
       n->add_args()->set_int_(1);
     },
     absl::StatusCode::kInvalidArgument, "node 'add_'",
     "a view of a leaf Variable that requires grad"},
    {"InPlaceOnMultiOutputView",
     [](v1::Graph& g) {
       AddNode(g, "rows", "aten.unbind.int", {"mm"});
       v1::Node* get = AddNode(g, "row", "getitem", {"rows"});
       get->add_args()->set_int_(0);
       v1::Node* n = AddNode(g, "add_", "aten.add_.Scalar", {"row"});
       n->add_args()->set_int_(1);
     },
     absl::StatusCode::kInvalidArgument, "node 'add_'",
     "output of a function returning multiple views"},
    {"InPlaceOnViewOfMultiOutputView",
     [](v1::Graph& g) {
       v1::Node* split = AddNode(g, "parts", "aten.split.Tensor", {"mm"});
       split->add_args()->set_int_(1);
       v1::Node* get = AddNode(g, "part", "getitem", {"parts"});
       get->add_args()->set_int_(1);
       AddNode(g, "t", "aten.t.default", {"part"});
       v1::Node* n = AddNode(g, "mul_", "aten.mul_.Scalar", {"t"});
       n->add_args()->set_int_(2);
     },
     absl::StatusCode::kInvalidArgument, "node 'mul_'",
     "output of a function returning multiple views"},
    {"InPlaceReadingMemoryItPartlyWrites",
     [](v1::Graph& g) {
       // w's second row is x2's first: x2.mul_(w) reads what it writes.
       v1::Storage* s = g.add_storages();
       s->set_id(5);
       s->set_size(9);
       v1::Input* x2 = g.add_inputs();
       x2->set_name("x2");
       x2->set_storage(5);
       x2->mutable_meta()->add_shape(2);
       x2->mutable_meta()->add_shape(3);
       x2->mutable_meta()->set_dtype(v1::DTYPE_FLOAT32);
       x2->mutable_meta()->set_is_leaf(true);
       v1::Input* w2 = g.add_inputs();
       *w2 = *x2;
       w2->set_name("w2");
       w2->mutable_meta()->set_storage_offset(3);
       AddNode(g, "mul_", "aten.mul_.Tensor", {"x2", "w2"});
     },
     absl::StatusCode::kInvalidArgument, "node 'mul_'",
     "refer to a single memory location"},
    {"InPlaceThroughExpandedView",
     [](v1::Graph& g) {
       v1::Node* e = AddNode(g, "e", "aten.expand.default", {"mm"});
       e->mutable_args()->RemoveLast();
       e->clear_args();
       e->add_args()->set_node("sum");
       e->add_args()->mutable_ints()->add_values(3);
       v1::Node* n = AddNode(g, "fill_", "aten.fill_.Scalar", {"e"});
       n->add_args()->set_int_(0);
     },
     absl::StatusCode::kInvalidArgument, "node 'fill_'",
     "more than one element of the written-to tensor"},
};

INSTANTIATE_TEST_SUITE_P(
    Graphs, MalformedGraphTest, ::testing::ValuesIn(kCases),
    [](const ::testing::TestParamInfo<MalformedCase>& info) {
      return info.param.name;
    });

TEST(MalformedJsonTest, UnknownFieldIsRefused) {
  v1::Graph g;
  absl::Status st = ParseJson(R"({"inputz": []})", &g);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("inputz"));
}

}  // namespace
}  // namespace aotcache
