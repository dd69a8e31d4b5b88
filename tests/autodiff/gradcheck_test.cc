// Finite-difference checks, in float64, of every derivative rule and of
// multi-op graphs: the backward graph's gradients against central
// differences of the original program run by the runtime.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/analysis/analyze.h"
#include "core/autodiff/joint_graph.h"
#include "core/runtime/graph_executor.h"
#include "core/runtime/strided.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace aotcache {
namespace {

struct GradCase {
  std::string name;
  std::string shapes;       // "2x3,3": one float64 input per entry, x0, x1, ...
  std::string nodes;        // JSON node objects; the last one's name is "out".
  bool positive = false;    // Inputs in [0.5, 1.5] (log, sqrt, ...).
  bool leaf_inputs = true;  // False: inputs are non-leaves (in-place ops).
};

void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name; }

std::string Node(const std::string& name, const std::string& op,
                 const std::string& args, const std::string& kwargs = "") {
  return absl::StrCat(
      R"({"name": ")", name, R"(", "op": ")", op, R"(", "args": [)", args, "]",
      kwargs.empty() ? "" : absl::StrCat(R"(, "kwargs": {)", kwargs, "}"),
      R"(, "grad_mode": "GRAD_MODE_ENABLED"})");
}
std::string Ref(const std::string& n) {
  return absl::StrCat(R"({"node": ")", n, R"("})");
}
std::string Int(int64_t v) { return absl::StrCat(R"({"int": )", v, "}"); }
std::string Float(double v) { return absl::StrCat(R"({"float": )", v, "}"); }
std::string Bool(bool v) {
  return v ? R"({"bool": true})" : R"({"bool": false})";
}
std::string Ints(const std::string& csv) {
  return absl::StrCat(R"({"ints": {"values": [)", csv, "]}}");
}
std::string None() { return R"({"none": true})"; }

std::vector<std::vector<int64_t>> ParseShapes(const std::string& shapes) {
  std::vector<std::vector<int64_t>> out;
  for (absl::string_view s : absl::StrSplit(shapes, ',')) {
    std::vector<int64_t> shape;
    if (s != "scalar") {
      for (absl::string_view d : absl::StrSplit(s, 'x')) {
        shape.push_back(std::stoll(std::string(d)));
      }
    }
    out.push_back(shape);
  }
  return out;
}

v1::Graph BuildGraph(const GradCase& c) {
  std::vector<std::string> inputs;
  std::vector<std::vector<int64_t>> shapes = ParseShapes(c.shapes);
  for (size_t i = 0; i < shapes.size(); ++i) {
    inputs.push_back(absl::StrCat(
        R"({"name": "x)", i, R"(", "meta": {"shape": [)",
        absl::StrJoin(shapes[i], ","),
        R"(], "dtype": "DTYPE_FLOAT64", "requires_grad": true, "is_leaf": )",
        c.leaf_inputs ? "true" : "false", "}}"));
  }
  return testing::GraphFromJson(
      absl::StrCat(R"({"inputs": [)", absl::StrJoin(inputs, ","),
                   R"(], "nodes": [)", c.nodes, R"(], "outputs": ["out"]})"));
}

Tensor Random(const Meta& meta, std::mt19937_64& rng, bool positive) {
  Tensor t = Tensor::Zeros(meta);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  double* d = reinterpret_cast<double*>(t.storage_data());
  for (int64_t i = 0; i < t.storage_elements(); ++i) {
    d[i] = positive ? uniform(rng) : normal(rng);
  }
  return t;
}

Tensor Copy(const Tensor& t) {
  Tensor c = Tensor::Zeros(t.meta());
  CopyInto(t, c);
  return c;
}

// L = sum(out * cotangent).
double Loss(const GraphExecutor& exec, const std::vector<Tensor>& inputs,
            const Tensor& cot) {
  std::vector<Tensor> copies;
  for (const Tensor& t : inputs) copies.push_back(Copy(t));  // In-place safe.
  absl::StatusOr<std::vector<Tensor>> out = exec.Run(copies);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return 0;
  std::vector<double> y = (*out)[0].ToDoubles(), c = cot.ToDoubles();
  double l = 0;
  for (size_t i = 0; i < y.size(); ++i) l += y[i] * c[i];
  return l;
}

class GradCheckTest : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradCheckTest, BackwardMatchesFiniteDifferences) {
  const GradCase& c = GetParam();
  v1::Graph graph = BuildGraph(c);
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->mode, v1::MODE_TRAINING);
  absl::StatusOr<JointGraphs> joint = BuildJointGraphs(*a);
  ASSERT_TRUE(joint.ok()) << joint.status();

  std::mt19937_64 rng(7);
  std::vector<Tensor> inputs;
  for (int i = 0; i < graph.inputs_size(); ++i) {
    inputs.push_back(Random(a->graph.values[i].meta, rng, c.positive));
  }
  const Meta& out_meta = a->graph.values[a->graph.outputs[0]].meta;
  Tensor cot =
      Random(ContiguousMeta(out_meta.shape, out_meta.dtype), rng, false);

  // Analytical.
  auto forward = GraphExecutor::Create(joint->forward);
  auto backward = GraphExecutor::Create(joint->backward);
  ASSERT_TRUE(forward.ok() && backward.ok());
  std::vector<Tensor> fw_inputs;
  for (const Tensor& t : inputs) fw_inputs.push_back(Copy(t));
  auto fw = (*forward)->Run(fw_inputs);
  ASSERT_TRUE(fw.ok()) << fw.status();
  std::vector<Tensor> bw_inputs(fw->end() - joint->num_saved, fw->end());
  for (const v1::TangentInfo& t : a->view_and_mutation.tangents()) {
    bw_inputs.push_back(t.source() == v1::TANGENT_SOURCE_USER_OUTPUT
                            ? cot
                            : Tensor::Zeros(MetaFromProto(t.meta())));
  }
  auto bw = (*backward)->Run(bw_inputs);
  ASSERT_TRUE(bw.ok()) << bw.status();

  // Numerical, on the original program.
  auto original = GraphExecutor::Create(graph);
  ASSERT_TRUE(original.ok()) << original.status();
  const double eps = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // No gradient (none) must mean the numeric gradient is zero.
    int out = joint->input_grad_output[i];
    std::vector<double> analytical(inputs[i].storage_elements(), 0.0);
    if (out >= 0) analytical = (*bw)[out].ToDoubles();
    double* x = reinterpret_cast<double*>(inputs[i].storage_data());
    for (int64_t e = 0; e < inputs[i].storage_elements(); ++e) {
      double saved = x[e];
      x[e] = saved + eps;
      double plus = Loss(**original, inputs, cot);
      x[e] = saved - eps;
      double minus = Loss(**original, inputs, cot);
      x[e] = saved;
      double numeric = (plus - minus) / (2 * eps);
      EXPECT_NEAR(analytical[e], numeric, 1e-6 + 1e-5 * std::abs(numeric))
          << c.name << ": d/dx" << i << "[" << e << "]";
    }
  }
}

std::string T2(const std::string& op, const std::string& extra = "") {
  return Node("out", op, absl::StrCat(Ref("x0"), ",", Ref("x1"), extra));
}
// A view op on x0, then sin: a view of an input is regenerated by the
// runtime (no backward of its own), so the view feeds an op.
std::string V1(const std::string& op, const std::string& extra = "") {
  return Node("v", op, absl::StrCat(Ref("x0"), extra)) + "," +
         Node("out", "aten.sin.default", Ref("v"));
}
std::string T1(const std::string& op, const std::string& extra = "",
               const std::string& kwargs = "") {
  return Node("out", op, absl::StrCat(Ref("x0"), extra), kwargs);
}

const GradCase kCases[] = {
    {"AddBroadcast", "2x3,3", T2("aten.add.Tensor")},
    {"AddAlpha", "2x3,2x3",
     Node("out", "aten.add.Tensor", Ref("x0") + "," + Ref("x1"),
          R"("alpha": {"float": 2.5})")},
    {"SubBroadcast", "2x3,2x1", T2("aten.sub.Tensor")},
    {"MulTensor", "2x3,2x3", T2("aten.mul.Tensor")},
    {"MulNumber", "2x3", T1("aten.mul.Tensor", "," + Float(3.5))},
    {"DivTensor", "2x3,3", T2("aten.div.Tensor"), true},
    {"DivScalar", "2x3", T1("aten.div.Scalar", "," + Float(4))},
    {"Neg", "2x3", T1("aten.neg.default")},
    {"Exp", "2x3", T1("aten.exp.default")},
    {"Log", "2x3", T1("aten.log.default"), true},
    {"Sin", "2x3", T1("aten.sin.default")},
    {"Cos", "2x3", T1("aten.cos.default")},
    {"Tanh", "2x3", T1("aten.tanh.default")},
    {"Sigmoid", "2x3", T1("aten.sigmoid.default")},
    {"Relu", "2x3", T1("aten.relu.default")},
    {"Gelu", "2x3", T1("aten.gelu.default")},
    {"GeluTanh", "2x3",
     T1("aten.gelu.default", "", R"("approximate": {"string": "tanh"})")},
    {"Sqrt", "2x3", T1("aten.sqrt.default"), true},
    {"Rsqrt", "2x3", T1("aten.rsqrt.default"), true},
    {"Abs", "2x3", T1("aten.abs.default")},
    {"PowCube", "2x3", T1("aten.pow.Tensor_Scalar", "," + Float(3))},
    {"PowHalf", "2x3", T1("aten.pow.Tensor_Scalar", "," + Float(0.5)), true},
    {"Maximum", "2x3,3", T2("aten.maximum.default")},
    {"Minimum", "2x3,3", T2("aten.minimum.default")},
    {"Where", "2x3,2x3,3",
     Node("c", "aten.gt.Scalar", Ref("x0") + "," + Int(0)) + "," +
         Node("out", "aten.where.self",
              Ref("c") + "," + Ref("x1") + "," + Ref("x2"))},
    {"Clone", "2x3", T1("aten.clone.default")},
    {"ToCopy", "2x3",
     T1("aten._to_copy.default", "", R"("dtype": {"dtype": "DTYPE_FLOAT64"})")},
    {"SumAll", "2x3", T1("aten.sum.default")},
    {"SumDim", "2x3x4", T1("aten.sum.dim_IntList", "," + Ints("0,2"))},
    {"SumDimKeepdim", "2x3",
     T1("aten.sum.dim_IntList", "," + Ints("1") + "," + Bool(true))},
    {"MeanAll", "2x3", T1("aten.mean.default")},
    {"MeanDim", "2x3x4", T1("aten.mean.dim", "," + Ints("-1"))},
    {"Amax", "3x4", T1("aten.amax.default", "," + Ints("1"))},
    {"Softmax", "3x4",
     T1("aten._softmax.default", "," + Int(1) + "," + Bool(false))},
    {"LogSoftmax", "3x4",
     T1("aten._log_softmax.default", "," + Int(0) + "," + Bool(false))},
    {"LayerNorm", "3x4,4,4",
     Node("ln", "aten.native_layer_norm.default",
          Ref("x0") + "," + Ints("4") + "," + Ref("x1") + "," + Ref("x2") +
              "," + Float(1e-5)) +
         "," +
         R"({"name": "out", "op": "getitem", "args": [{"node": "ln"}, {"int": 0}]})"},
    {"MseLossMean", "2x3,2x3", T2("aten.mse_loss.default")},
    {"MseLossNone", "2x3,2x3", T2("aten.mse_loss.default", "," + Int(0))},
    {"MseLossSum", "2x3,2x3", T2("aten.mse_loss.default", "," + Int(2))},
    {"Mm", "2x3,3x4", T2("aten.mm.default")},
    {"Addmm", "4,2x3,3x4",
     Node("out", "aten.addmm.default",
          Ref("x0") + "," + Ref("x1") + "," + Ref("x2"),
          R"("beta": {"float": 0.5}, "alpha": {"float": 2})")},
    {"Bmm", "2x2x3,2x3x4", T2("aten.bmm.default")},
    {"Dot", "5,5", T2("aten.dot.default")},
    {"Cat", "2x3,2x2",
     Node("out", "aten.cat.default",
          R"({"nodes": {"names": ["x0", "x1"]}},)" + Int(1))},
    {"View", "2x6", V1("aten.view.default", "," + Ints("3,4"))},
    {"ReshapeAlias", "2x6",
     V1("aten._reshape_alias.default", "," + Ints("4,3") + "," + Ints("3,1"))},
    {"UnsafeView", "2x6", V1("aten._unsafe_view.default", "," + Ints("12"))},
    {"T", "2x3", V1("aten.t.default")},
    {"Transpose", "2x3x4",
     V1("aten.transpose.int", "," + Int(0) + "," + Int(2))},
    {"Permute", "2x3x4", V1("aten.permute.default", "," + Ints("2,0,1"))},
    {"Expand", "3", V1("aten.expand.default", "," + Ints("2,3"))},
    {"Unsqueeze", "2x3", V1("aten.unsqueeze.default", "," + Int(1))},
    {"SqueezeDim", "2x1x3", V1("aten.squeeze.dim", "," + Int(1))},
    {"Slice", "2x5",
     V1("aten.slice.Tensor",
        "," + Int(1) + "," + Int(1) + "," + Int(4) + "," + Int(2))},
    {"Select", "3x4", V1("aten.select.int", "," + Int(0) + "," + Int(1))},
    {"AsStrided", "2x3",
     V1("aten.as_strided.default",
        "," + Ints("2,2") + "," + Ints("3,1") + "," + Int(1))},
    {"SelectScatter", "3x4,4",
     T2("aten.select_scatter.default", "," + Int(0) + "," + Int(2))},
    {"SliceScatter", "3x4,3x2",
     T2("aten.slice_scatter.default",
        "," + Int(1) + "," + Int(1) + "," + Int(3))},
    {"AsStridedScatter", "3x4,2x2",
     T2("aten.as_strided_scatter.default",
        "," + Ints("2,2") + "," + Ints("4,1") + "," + Int(1))},
    {"CopyBroadcast", "2x3,3", T2("aten.copy.default")},
    {"DropoutEval", "2x3",
     Node("d", "aten.native_dropout.default",
          Ref("x0") + "," + Float(0.5) + "," + Bool(false)) +
         "," +
         R"({"name": "out", "op": "getitem", "args": [{"node": "d"}, {"int": 0}]})"},
    // In place, on non-leaf inputs: the rebased history is differentiated.
    {"InPlaceMulOnInput", "2x3,2x3",
     Node("m", "aten.mul_.Tensor", Ref("x0") + "," + Ref("x1")) + "," +
         Node("out", "aten.add.Tensor", Ref("m") + "," + Ref("x1")),
     false, false},
    {"InPlaceChain", "2x3,3",
     Node("c", "aten.clone.default", Ref("x0")) + "," +
         Node("a", "aten.add_.Tensor", Ref("c") + "," + Ref("x1")) + "," +
         Node("r", "aten.relu_.default", Ref("a")) + "," +
         Node("d", "aten.div_.Scalar", Ref("r") + "," + Float(2)) + "," +
         Node("out", "aten.mul.Tensor", Ref("d") + "," + Ref("x0")),
     false, false},
    {"CopyInPlaceIntoInput", "2x3,3",
     Node("cp", "aten.copy_.default", Ref("x0") + "," + Ref("x1")) + "," +
         Node("out", "aten.mul.Tensor", Ref("cp") + "," + Ref("cp")),
     false, false},
    {"AddScalar", "2x3",
     T1("aten.add.Scalar", "," + Float(2) + "," + Float(3))},
    {"MulScalar", "2x3", T1("aten.mul.Scalar", "," + Float(-1.5))},
    {"LiftFreshCopy", "2x3", T1("aten.lift_fresh_copy.default")},
    {"Alias", "2x3", V1("aten.alias.default")},
    {"SubScalarInPlace", "2x3,2x3",
     Node("s", "aten.sub_.Scalar", Ref("x0") + "," + Float(2)) + "," +
         Node("out", "aten.mul.Tensor", Ref("s") + "," + Ref("x1")),
     false, false},
    // fill_ and zero_ overwrite self: its gradient is zero, not none.
    {"FillInPlace", "2x3,2x3",
     Node("c", "aten.clone.default", Ref("x0")) + "," +
         Node("f", "aten.fill_.Scalar", Ref("c") + "," + Float(3)) + "," +
         Node("out", "aten.mul.Tensor", Ref("f") + "," + Ref("x1"))},
    {"ZeroInPlace", "2x3,2x3",
     Node("z", "aten.zero_.default", Ref("x0")) + "," +
         Node("out", "aten.add.Tensor", Ref("z") + "," + Ref("x1")),
     false, false},
    // In place through views: the base's history is rebased (CopySlices)
    // and views of it regenerate theirs.
    {"InPlaceThroughSelect", "2x3,3",
     Node("c", "aten.clone.default", Ref("x0")) + "," +
         Node("r", "aten.select.int", Ref("c") + "," + Int(0) + "," + Int(1)) +
         "," + Node("m", "aten.mul_.Tensor", Ref("r") + "," + Ref("x1")) + "," +
         Node("out", "aten.mul.Tensor", Ref("c") + "," + Ref("c"))},
    {"InPlaceThroughTransposedSlice", "3x4,2x3",
     Node("c", "aten.clone.default", Ref("x0")) + "," +
         Node("t", "aten.t.default", Ref("c")) + "," +
         Node("s", "aten.slice.Tensor",
              Ref("t") + "," + Int(0) + "," + Int(1) + "," + Int(3)) +
         "," + Node("a", "aten.add_.Tensor", Ref("s") + "," + Ref("x1")) + "," +
         Node("e", "aten.exp.default", Ref("c")) + "," +
         Node("u", "aten.t.default", Ref("e")) + "," +
         Node("out", "aten.mul.Tensor", Ref("u") + "," + Ref("t"))},
    {"ViewRegeneratedAfterBaseWrite", "2x3,2x3",
     Node("c", "aten.clone.default", Ref("x0")) + "," +
         Node("v", "aten.view.default", Ref("c") + "," + Ints("6")) + "," +
         Node("m", "aten.mul_.Tensor", Ref("c") + "," + Ref("x1")) + "," +
         Node("out", "aten.sin.default", Ref("v"))},
    {"CopyIntoViewOfNonRequiresGrad", "3,2x3",
     Node("z", "aten.zeros.default", Ints("2,3"),
          R"("dtype": {"dtype": "DTYPE_FLOAT64"})") +
         "," +
         Node("r", "aten.select.int", Ref("z") + "," + Int(0) + "," + Int(0)) +
         "," + Node("cp", "aten.copy_.default", Ref("r") + "," + Ref("x0")) +
         "," + Node("out", "aten.mul.Tensor", Ref("z") + "," + Ref("x1"))},
    // Multi-op graphs.
    {"Mlp", "4x3,5x3,5,2x5,2,4x2",
     Node("t0", "aten.t.default", Ref("x1")) + "," +
         Node("h", "aten.addmm.default",
              Ref("x2") + "," + Ref("x0") + "," + Ref("t0")) +
         "," + Node("r", "aten.relu.default", Ref("h")) + "," +
         Node("t1", "aten.t.default", Ref("x3")) + "," +
         Node("y", "aten.addmm.default",
              Ref("x4") + "," + Ref("r") + "," + Ref("t1")) +
         "," +
         Node("out", "aten.mse_loss.default", Ref("y") + "," + Ref("x5"))},
    {"LayerNormSoftmaxMatmul", "3x4,4,4,4x4",
     Node("ln", "aten.native_layer_norm.default",
          Ref("x0") + "," + Ints("4") + "," + Ref("x1") + "," + Ref("x2") +
              "," + Float(1e-5)) +
         "," +
         R"({"name": "n", "op": "getitem", "args": [{"node": "ln"}, {"int": 0}]})" +
         "," +
         Node("s", "aten._softmax.default",
              Ref("n") + "," + Int(-1) + "," + Bool(false)) +
         "," + Node("out", "aten.mm.default", Ref("s") + "," + Ref("x3"))},
    {"ElementwiseChain", "2x3,3",
     Node("a", "aten.sin.default", Ref("x0")) + "," +
         Node("b", "aten.mul.Tensor", Ref("a") + "," + Ref("x1")) + "," +
         Node("c", "aten.tanh.default", Ref("b")) + "," +
         Node("d", "aten.sigmoid.default", Ref("c")) + "," +
         Node("e", "aten.cos.default", Ref("d")) + "," +
         Node("f", "aten.add.Tensor", Ref("e") + "," + Ref("x0")) + "," +
         Node("out", "aten.exp.default", Ref("f"))},
    {"BroadcastingDiamond", "4x1,1x5",
     Node("a", "aten.mul.Tensor", Ref("x0") + "," + Ref("x1")) + "," +
         Node("b", "aten.sub.Tensor", Ref("a") + "," + Ref("x0")) + "," +
         Node("out", "aten.div.Tensor", Ref("b") + "," + Float(3))},
    {"ViewsOfAnIntermediate", "2x6",
     Node("e", "aten.exp.default", Ref("x0")) + "," +
         Node("v", "aten.view.default", Ref("e") + "," + Ints("3,4")) + "," +
         Node("t", "aten.t.default", Ref("v")) + "," +
         Node("s", "aten.select.int", Ref("t") + "," + Int(0) + "," + Int(1)) +
         "," + Node("out", "aten.mul.Tensor", Ref("s") + "," + Ref("s"))},
    {"ReductionsMix", "3x4",
     Node("m", "aten.amax.default",
          Ref("x0") + "," + Ints("1") + "," + Bool(true)) +
         "," + Node("d", "aten.sub.Tensor", Ref("x0") + "," + Ref("m")) + "," +
         Node("e", "aten.exp.default", Ref("d")) + "," +
         Node("s", "aten.sum.dim_IntList",
              Ref("e") + "," + Ints("1") + "," + Bool(true)) +
         "," + Node("out", "aten.div.Tensor", Ref("e") + "," + Ref("s"))},
};

INSTANTIATE_TEST_SUITE_P(Rules, GradCheckTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace aotcache

namespace aotcache {
namespace {

// Two inputs that overlap in one storage (b's first row is a's second), one
// written in place and the other read after: their gradient is their
// storage's (the synthetic base's), checked against central differences on
// the storage's elements.
TEST(SyntheticBaseGradCheckTest, GradientOfASharedStorage) {
  v1::Graph graph = testing::GraphFromJson(R"json({
    "inputs": [
      {"name": "a", "storage": 0, "meta": {"shape": [2, 3], "stride": [3, 1],
       "dtype": "DTYPE_FLOAT64", "requires_grad": true, "is_leaf": false}},
      {"name": "b", "storage": 0, "meta": {"shape": [2, 3], "stride": [3, 1],
       "storage_offset": 3, "dtype": "DTYPE_FLOAT64", "requires_grad": true,
       "is_leaf": false}}
    ],
    "storages": [{"id": 0, "size": 9}],
    "nodes": [
      {"name": "m", "op": "aten.mul_.Tensor", "args": [{"node": "a"}, {"float": 2.5}],
       "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "s", "op": "aten.sin.default", "args": [{"node": "b"}],
       "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "out", "op": "aten.mul.Tensor", "args": [{"node": "m"}, {"node": "s"}],
       "grad_mode": "GRAD_MODE_ENABLED"}
    ],
    "outputs": ["out"]
  })json");
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->view_and_mutation.synthetic_bases_size(), 1);
  absl::StatusOr<JointGraphs> joint = BuildJointGraphs(*a);
  ASSERT_TRUE(joint.ok()) << joint.status();
  ASSERT_EQ(joint->synthetic_base_grad_output.size(), 1u);
  ASSERT_GE(joint->synthetic_base_grad_output[0], 0);

  std::mt19937_64 rng(11);
  Tensor storage = Random(ContiguousMeta({9}, v1::DTYPE_FLOAT64), rng, false);
  Tensor cot = Random(ContiguousMeta({2, 3}, v1::DTYPE_FLOAT64), rng, false);
  auto views = [&](const Tensor& s) {
    return std::vector<Tensor>{s.View(a->graph.values[0].meta),
                               s.View(a->graph.values[1].meta)};
  };
  // Analytical: the forward takes the synthetic base (the whole storage).
  auto forward = GraphExecutor::Create(joint->forward);
  auto backward = GraphExecutor::Create(joint->backward);
  ASSERT_TRUE(forward.ok() && backward.ok());
  auto fw = (*forward)->Run({Copy(storage)});
  ASSERT_TRUE(fw.ok()) << fw.status();
  std::vector<Tensor> bw_inputs(fw->end() - joint->num_saved, fw->end());
  for (const v1::TangentInfo& t : a->view_and_mutation.tangents()) {
    bw_inputs.push_back(t.source() == v1::TANGENT_SOURCE_USER_OUTPUT
                            ? cot
                            : Tensor::Zeros(MetaFromProto(t.meta())));
  }
  auto bw = (*backward)->Run(bw_inputs);
  ASSERT_TRUE(bw.ok()) << bw.status();
  std::vector<double> analytical =
      (*bw)[joint->synthetic_base_grad_output[0]].ToDoubles();

  // Numerical: the original program on views of a perturbed storage.
  auto original = GraphExecutor::Create(graph);
  ASSERT_TRUE(original.ok());
  double* x = reinterpret_cast<double*>(storage.storage_data());
  const double eps = 1e-6;
  // The inputs must keep sharing one storage: no per-input copies.
  auto loss = [&]() {
    Tensor copy = Copy(storage);
    auto out = (*original)->Run(views(copy));
    EXPECT_TRUE(out.ok()) << out.status();
    std::vector<double> y = (*out)[0].ToDoubles(), c = cot.ToDoubles();
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += y[i] * c[i];
    return l;
  };
  for (int e = 0; e < 9; ++e) {
    double saved = x[e];
    x[e] = saved + eps;
    double plus = loss();
    x[e] = saved - eps;
    double minus = loss();
    x[e] = saved;
    double numeric = (plus - minus) / (2 * eps);
    EXPECT_NEAR(analytical[e], numeric, 1e-6 + 1e-5 * std::abs(numeric))
        << "d/dstorage[" << e << "]";
  }
}

}  // namespace
}  // namespace aotcache
