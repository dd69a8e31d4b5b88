// bench/analysis_key: the server's per-request analysis (validate, replay,
// ViewAndMutationData, mode) plus the cache key -- all a cache hit costs -- for
// graphs of 100, 1,000 and 10,000 nodes, beside parsing and serializing the
// same graph in the same run. Prints absolute times and, at the end, the ratio
// of analysis+key to each baseline (machines here are shared and noisy; the
// ratios are what to compare across runs).
//
//   build/bench/analysis_key_bench [--benchmark_min_time=0.5]
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/analysis/analyze.h"
#include "core/analysis/autograd_replay.h"
#include "core/analysis/functionalize.h"
#include "core/analysis/view_and_mutation.h"
#include "core/graph/graph_json.h"
#include "core/key/cache_key.h"
#include "core/key/target.h"

namespace aotcache {
namespace {

// An MLP-like program with the features that make analysis work: a weight
// that requires grad, matmuls, views, a transpose, and in-place ops on
// intermediates and through views. Six nodes per block.
v1::Graph MakeGraph(int target_nodes) {
  v1::Graph g;
  auto input = [&](const std::string& name, bool requires_grad) {
    v1::Input* in = g.add_inputs();
    in->set_name(name);
    v1::TensorMeta* m = in->mutable_meta();
    m->add_shape(64);
    m->add_shape(64);
    m->set_dtype(v1::DTYPE_FLOAT32);
    m->set_requires_grad(requires_grad);
    m->set_is_leaf(true);
  };
  input("x", false);
  input("w", true);
  auto node = [&](const std::string& name, const std::string& op) {
    v1::Node* n = g.add_nodes();
    n->set_name(name);
    n->set_op(op);
    n->set_grad_mode(v1::GRAD_MODE_ENABLED);
    return n;
  };
  std::string h = "x";
  for (int b = 0; g.nodes_size() + 6 <= target_nodes; ++b) {
    std::string p = absl::StrCat("b", b, "_");
    v1::Node* mm = node(p + "mm", "aten.mm.default");
    mm->add_args()->set_node(h);
    mm->add_args()->set_node("w");
    node(p + "relu", "aten.relu.default")->add_args()->set_node(p + "mm");
    v1::Node* row = node(p + "row", "aten.select.int");
    row->add_args()->set_node(p + "relu");
    row->add_args()->set_int_(0);
    row->add_args()->set_int_(b % 64);
    v1::Node* mul = node(p + "mul_", "aten.mul_.Scalar");
    mul->add_args()->set_node(p + "row");
    mul->add_args()->set_float_(0.5);
    node(p + "t", "aten.t.default")->add_args()->set_node(p + "relu");
    v1::Node* add = node(p + "add", "aten.add.Tensor");
    add->add_args()->set_node(p + "t");
    add->add_args()->set_node(p + "relu");
    h = p + "add";
  }
  g.add_outputs(h);
  return g;
}

const v1::Graph& GraphOf(int nodes) {
  static auto* graphs = new std::map<int, v1::Graph>();
  auto it = graphs->find(nodes);
  if (it == graphs->end()) it = graphs->emplace(nodes, MakeGraph(nodes)).first;
  return it->second;
}

void BM_ParseJson(benchmark::State& state) {
  std::string json = ToJson(GraphOf(state.range(0)));
  for (auto _ : state) {
    v1::Graph g;
    benchmark::DoNotOptimize(ParseJson(json, &g));
  }
}

void BM_ParseBinary(benchmark::State& state) {
  std::string bytes = GraphOf(state.range(0)).SerializeAsString();
  for (auto _ : state) {
    v1::Graph g;
    benchmark::DoNotOptimize(g.ParseFromString(bytes));
  }
}

void BM_SerializeBinary(benchmark::State& state) {
  const v1::Graph& g = GraphOf(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(g.SerializeAsString());
}

// The phases of the analysis, to show where its time goes, and
// functionalization, which only a miss pays.
void BM_Validate(benchmark::State& state) {
  const v1::Graph& g = GraphOf(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(ValidateGraph(g));
}

void BM_ReplayAndViewAndMutation(benchmark::State& state) {
  const v1::Graph& g = GraphOf(state.range(0));
  absl::StatusOr<ResolvedGraph> r = ValidateGraph(g);
  for (auto _ : state) {
    absl::StatusOr<Replay> replay = ReplayAutograd(*r);
    benchmark::DoNotOptimize(
        AnalyzeViewsAndMutations(*r, *replay, v1::CompileOptions()));
  }
}

void BM_Functionalize(benchmark::State& state) {
  const v1::Graph& g = GraphOf(state.range(0));
  absl::StatusOr<ResolvedGraph> r = ValidateGraph(g);
  absl::StatusOr<Replay> replay = ReplayAutograd(*r);
  absl::StatusOr<v1::ViewAndMutationData> vmd =
      AnalyzeViewsAndMutations(*r, *replay, v1::CompileOptions());
  for (auto _ : state)
    benchmark::DoNotOptimize(Functionalize(*r, *replay, *vmd));
}

void BM_AnalysisAndKey(benchmark::State& state) {
  const v1::Graph& g = GraphOf(state.range(0));
  KeyContext context{PipelineVersion(), HostTarget(), "reference", "1"};
  v1::CompileOptions options;
  for (auto _ : state) {
    absl::StatusOr<Analysis> a = Analyze(g, options);
    if (!a.ok()) {
      state.SkipWithError(std::string(a.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(
        ComputeKey(a->graph, a->view_and_mutation, a->mode, options, context));
  }
}

#define SIZES Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_ParseJson)->SIZES;
BENCHMARK(BM_ParseBinary)->SIZES;
BENCHMARK(BM_SerializeBinary)->SIZES;
BENCHMARK(BM_Validate)->SIZES;
BENCHMARK(BM_ReplayAndViewAndMutation)->SIZES;
BENCHMARK(BM_Functionalize)->SIZES;
BENCHMARK(BM_AnalysisAndKey)->SIZES;

// Remembers each run's time per iteration so the ratios can be printed.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      times_[r.benchmark_name()] = r.GetAdjustedRealTime();
    }
  }

  void PrintRatios() const {
    std::printf("\nanalysis+key time relative to the baselines (same run):\n");
    for (int n : {100, 1000, 10000}) {
      std::string suffix = absl::StrCat("/", n);
      auto t = [&](const char* name) {
        auto it = times_.find(absl::StrCat(name, suffix));
        return it == times_.end() ? 0.0 : it->second;
      };
      double analysis = t("BM_AnalysisAndKey");
      if (analysis == 0 || t("BM_ParseBinary") == 0 || t("BM_ParseJson") == 0 ||
          t("BM_SerializeBinary") == 0) {
        continue;  // Filtered out of this run.
      }
      std::printf(
          "  %5d nodes: analysis+key %9.1f us = %5.2fx parse-binary, "
          "%5.2fx parse-json, %5.2fx serialize-binary\n",
          n, analysis, analysis / t("BM_ParseBinary"),
          analysis / t("BM_ParseJson"), analysis / t("BM_SerializeBinary"));
    }
  }

 private:
  std::map<std::string, double> times_;
};

}  // namespace
}  // namespace aotcache

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  aotcache::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
