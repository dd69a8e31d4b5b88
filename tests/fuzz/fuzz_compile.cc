#include "tests/fuzz/fuzz_compile.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "aotcache/v1/service.pb.h"
#include "core/analysis/analyze.h"
#include "core/backend/compile_plan.h"
#include "core/backend/reference_backend.h"
#include "core/graph/canonical_graph.h"
#include "core/graph/deterministic_bytes.h"
#include "core/graph/graph_json.h"
#include "core/graph/json_fast_path.h"
#include "core/key/cache_key.h"
#include "core/runtime/compiled_function.h"
#include "google/protobuf/util/json_util.h"
#include "tests/testing/disguise.h"

namespace aotcache::fuzz {
namespace {

// Small enough that one input runs in milliseconds.
GraphLimits FuzzLimits() {
  GraphLimits limits;
  limits.max_nodes = 2000;
  limits.max_inputs = 64;
  limits.max_numel = int64_t{1} << 16;
  limits.max_constant_bytes = int64_t{1} << 20;
  return limits;
}

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "invariant broken: %s\n", what);
  std::abort();
}

std::string Key(const Analysis& a, const v1::CompileOptions& options) {
  return ComputeKey(a.graph, a.view_and_mutation, a.mode, options, KeyContext())
      .ToHex();
}

// Runs `function` on zeros of its inputs' metas; errors are fine.
void RunOnZeros(const CompiledFunction& function,
                const std::vector<Meta>& metas) {
  std::vector<Tensor> inputs;
  for (const Meta& m : metas) inputs.push_back(Tensor::Zeros(m));
  function.Forward(&inputs).IgnoreError();
}

struct Artifacts {
  std::string forward, backward;
};

absl::StatusOr<Artifacts> Compile(const Analysis& a) {
  absl::StatusOr<CompilePlan> plan = PlanCompilation(a);
  if (!plan.ok()) return plan.status();
  ReferenceBackend backend;
  absl::StatusOr<v1::Artifact> fw = CompileForward(*plan, backend);
  if (!fw.ok()) return fw.status();
  Artifacts out;
  out.forward = DeterministicBytes(*fw);
  if (plan->backward_graph.has_value()) {
    absl::StatusOr<v1::Artifact> bw = CompileBackward(*plan, *fw, backend);
    if (!bw.ok()) return bw.status();
    out.backward = DeterministicBytes(*bw);
  }
  absl::StatusOr<std::unique_ptr<CompiledFunction>> f =
      CompiledFunction::Load(*fw, plan->metadata);
  if (f.ok()) {
    std::vector<Meta> metas;
    for (int i = 0; i < a.graph.num_inputs(); ++i) {
      metas.push_back(a.graph.values[i].meta);
    }
    RunOnZeros(**f, metas);
  }
  return out;
}

}  // namespace

void CompileGraphJson(const std::string& bytes) {
  v1::Graph graph;
  if (!ParseJson(bytes, &graph).ok()) return;
  for (bool keep : {false, true}) {
    v1::CompileOptions options;
    options.set_keep_input_mutations(keep);
    absl::StatusOr<Analysis> a = Analyze(graph, options, FuzzLimits());
    if (!a.ok()) continue;
    const std::string key = Key(*a, options);
    v1::Graph canonical = CanonicalGraph(a->graph);
    absl::StatusOr<Analysis> b = Analyze(canonical, options, FuzzLimits());
    Check(b.ok(), "the canonical graph analyzes");
    Check(Key(*b, options) == key, "the canonical graph has the graph's key");
    absl::StatusOr<Artifacts> artifacts = Compile(*a);
    if (!artifacts.ok()) continue;
    v1::Graph disguised = testing::Disguised(graph);
    absl::StatusOr<Analysis> d = Analyze(disguised, options, FuzzLimits());
    Check(d.ok(), "the renamed graph analyzes");
    Check(Key(*d, options) == key, "the renamed graph has the graph's key");
    absl::StatusOr<Artifacts> renamed = Compile(*d);
    Check(renamed.ok(), "the renamed graph compiles");
    Check(renamed->forward == artifacts->forward &&
              renamed->backward == artifacts->backward,
          "renaming changes no artifact");
  }
}

void ReadJsonBothWays(const std::string& bytes) {
  v1::Graph fast;
  if (!ReadJsonFast(bytes, &fast)) return;  // Protobuf's answer stands.
  v1::Graph slow;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  Check(google::protobuf::util::JsonStringToMessage(bytes, &slow, options).ok(),
        "protobuf's parser takes what the fast reader takes");
  Check(DeterministicBytes(fast) == DeterministicBytes(slow),
        "the fast reader reads protobuf's message");
}

void LoadArtifact(const std::string& bytes) {
  v1::CompileResponse response;
  if (!response.ParseFromString(bytes)) return;
  absl::StatusOr<std::unique_ptr<CompiledFunction>> f =
      CompiledFunction::Load(response.forward(), response.metadata());
  if (!f.ok()) return;  // Load checked every meta used below.
  // The caller's inputs are the artifact's where no synthetic base merges
  // them; else the inputs below are refused, which is tested too.
  std::vector<Meta> metas;
  int64_t total = 0;
  for (const v1::TensorMeta& m :
       response.forward().calling_convention().inputs()) {
    Meta meta = MetaFromProto(m);
    const int64_t extent = meta.StorageExtent();  // Saturates.
    if (extent > (int64_t{1} << 20)) return;      // Not a memory test.
    total += extent;
    if (total > (int64_t{1} << 20)) return;
    metas.push_back(meta);
  }
  RunOnZeros(**f, metas);
}

}  // namespace aotcache::fuzz
