// Artifacts are byte-identical across processes: the same graph compiled
// here and by `aotcache compile --local` in a child process gives the same
// digests (partition, optimizations and buffer plan are deterministic).
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/backend/compile_plan.h"
#include "core/backend/reference_backend.h"
#include "core/graph/deterministic_bytes.h"
#include "core/graph/graph_json.h"
#include "core/key/digest.h"
#include "google/protobuf/struct.pb.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

std::string RunCli(const std::string& graph_path) {
  std::string command =
      absl::StrCat(AOTCACHE_CLI_PATH, " compile --local --json ", graph_path);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    output.append(buffer, n);
  pclose(pipe);
  return output;
}

TEST(ArtifactDeterminismTest, AnotherProcessCompilesTheSameBytes) {
  const char* kGraphs[] = {
      "mlp_mse__rg",
      "layer_norm_softmax__rg",
      "assorted_ops__rg",
      "input_mutation_simple__rg",
      "mutation_through_view__rg",
      "output_aliases_intermediate_multiple__rg",
      "tracked_mutation__rg",
      "input_mutation_requires_grad_no_grad__rg",
      "copy_into_nrg__rg",
      "inplace_ops_mix__rg",
      "closure_constant__rg",
      "pr128229__rg",
  };
  ReferenceBackend backend;
  int compared = 0;
  for (const char* name : kGraphs) {
    std::string file = absl::StrCat(name, ".json");
    v1::Graph graph = testing::LoadGraphOrDie("graphs/" + file);
    absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
    ASSERT_THAT(a, IsOk());
    absl::StatusOr<CompilePlan> plan = PlanCompilation(*a);
    ASSERT_THAT(plan, IsOk());
    absl::StatusOr<v1::Artifact> fw = CompileForward(*plan, backend);
    ASSERT_THAT(fw, IsOk());
    absl::StatusOr<v1::Artifact> bw = CompileBackward(*plan, *fw, backend);
    ASSERT_THAT(bw, IsOk());

    google::protobuf::Struct report;
    std::string text = RunCli(testing::FixturePath("graphs/" + file));
    ASSERT_THAT(ParseJson(text, &report), IsOk());
    EXPECT_EQ(report.fields()
                  .at("forward")
                  .struct_value()
                  .fields()
                  .at("digest")
                  .string_value(),
              Sha256Hex(DeterministicBytes(*fw)))
        << name;
    EXPECT_EQ(report.fields()
                  .at("backward")
                  .struct_value()
                  .fields()
                  .at("digest")
                  .string_value(),
              Sha256Hex(DeterministicBytes(*bw)))
        << name;
    ++compared;
  }
  EXPECT_GE(compared, 10);
}

}  // namespace
}  // namespace aotcache
