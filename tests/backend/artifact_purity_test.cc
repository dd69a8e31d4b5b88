// An artifact is a pure function of its key's material: graphs that differ
// only in what the key ignores (names, the wire form's optional fields,
// storage numbering) compile to byte-identical artifacts on
// every backend, and nothing of a request's text reaches an artifact. This
// is what closes cache poisoning through names (a name that smuggles code
// into generated source would otherwise be stored under the clean graph's
// key and served to everyone who sends it).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/backend/compile_plan.h"
#include "core/backend/native/native_backend.h"
#include "core/backend/reference_backend.h"
#include "core/graph/canonical_graph.h"
#include "core/graph/deterministic_bytes.h"
#include "core/key/cache_key.h"
#include "gtest/gtest.h"
#include "tests/testing/disguise.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

struct Compiled {
  std::string key;
  std::string forward;
  std::string backward;  // Empty in inference mode.
};

Compiled CompileBoth(const v1::Graph& graph, const Backend& backend) {
  Compiled c;
  absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
  EXPECT_THAT(a, IsOk());
  if (!a.ok()) return c;
  KeyContext context;
  context.backend_name = std::string(backend.name());
  c.key = ComputeKey(a->graph, a->view_and_mutation, a->mode,
                     v1::CompileOptions(), context)
              .ToHex();
  absl::StatusOr<CompilePlan> plan = PlanCompilation(*a);
  EXPECT_THAT(plan, IsOk());
  if (!plan.ok()) return c;
  absl::StatusOr<v1::Artifact> fw = CompileForward(*plan, backend);
  EXPECT_THAT(fw, IsOk());
  if (!fw.ok()) return c;
  c.forward = DeterministicBytes(*fw);
  if (plan->backward_graph.has_value()) {
    absl::StatusOr<v1::Artifact> bw = CompileBackward(*plan, *fw, backend);
    EXPECT_THAT(bw, IsOk());
    if (bw.ok()) c.backward = DeterministicBytes(*bw);
  }
  return c;
}

void ExpectSameArtifacts(const std::string& file, const Backend& backend) {
  SCOPED_TRACE(absl::StrCat(file, " on ", backend.name()));
  v1::Graph graph = testing::LoadGraphOrDie("graphs/" + file);
  Compiled clean = CompileBoth(graph, backend);
  Compiled disguised = CompileBoth(testing::Disguised(graph), backend);
  EXPECT_EQ(clean.key, disguised.key);
  EXPECT_TRUE(clean.forward == disguised.forward);
  EXPECT_TRUE(clean.backward == disguised.backward);
  EXPECT_FALSE(absl::StrContains(disguised.forward, testing::kHostileMarker));
  EXPECT_FALSE(absl::StrContains(disguised.backward, testing::kHostileMarker));
}

TEST(ArtifactPurityTest, RenamedGraphsGiveTheSameReferenceArtifacts) {
  std::vector<std::string> files = testing::FixtureGraphFiles();
  ASSERT_GE(files.size(), 100u);
  ReferenceBackend backend;
  for (const std::string& file : files) ExpectSameArtifacts(file, backend);
}

TEST(ArtifactPurityTest, RenamedGraphsGiveTheSameNativeArtifacts) {
  absl::StatusOr<std::unique_ptr<NativeBackend>> backend =
      NativeBackend::Create();
  ASSERT_THAT(backend, IsOk());
  // Graphs whose artifacts have generated kernels of every kind; each
  // compile runs the host compiler, so not all 128.
  for (const char* name :
       {"mlp_mse__rg", "layer_norm_softmax__rg", "assorted_ops__rg",
        "input_mutation_simple__rg", "mutation_through_view__rg",
        "output_aliases_intermediate_multiple__rg", "inplace_ops_mix__rg",
        "closure_constant__rg", "dupe_arg_mutation__rg"}) {
    ExpectSameArtifacts(absl::StrCat(name, ".json"), **backend);
  }
}

// The canonical form of a graph is the graph the key describes: analyzing
// it gives the same key (so a stored entry's graph can be recompiled and
// checked against its key).
TEST(CanonicalGraphTest, HasTheKeyOfTheGraphItCameFrom) {
  for (const std::string& file : testing::FixtureGraphFiles()) {
    SCOPED_TRACE(file);
    v1::Graph graph = testing::LoadGraphOrDie("graphs/" + file);
    absl::StatusOr<Analysis> a = Analyze(graph, v1::CompileOptions());
    ASSERT_THAT(a, IsOk());
    v1::Graph canonical = CanonicalGraph(a->graph);
    absl::StatusOr<Analysis> b = Analyze(canonical, v1::CompileOptions());
    ASSERT_THAT(b, IsOk());
    KeyContext context;
    EXPECT_EQ(ComputeKey(a->graph, a->view_and_mutation, a->mode,
                         v1::CompileOptions(), context)
                  .ToHex(),
              ComputeKey(b->graph, b->view_and_mutation, b->mode,
                         v1::CompileOptions(), context)
                  .ToHex());
    // Canonical twice is canonical once.
    EXPECT_EQ(DeterministicBytes(CanonicalGraph(b->graph)),
              DeterministicBytes(canonical));
  }
}

}  // namespace
}  // namespace aotcache
