// `aotcache analyze`: readable and JSON output, exit codes, errors.
#include "client/cli/analyze_command.h"

#include <fstream>
#include <sstream>

#include "aotcache/v1/analysis.pb.h"
#include "core/graph/graph_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::testing::HasSubstr;

TEST(AnalyzeCommandTest, PrintsModeKeyAndViewAndMutationData) {
  std::ostringstream out, err;
  int code = RunAnalyzeCommand(
      {testing::FixturePath("../../examples/view_detach.json")}, out, err);
  EXPECT_EQ(code, 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("mode: training"));
  EXPECT_THAT(out.str(), HasSubstr("key:  "));
  EXPECT_THAT(out.str(), HasSubstr("mutates_data"));
  EXPECT_THAT(out.str(), HasSubstr("alias_of_input (base 0)"));
}

TEST(AnalyzeCommandTest, JsonIsAnAnalysisReport) {
  std::ostringstream out, err;
  int code = RunAnalyzeCommand(
      {"--json", testing::FixturePath("../../examples/mlp.json")}, out, err);
  ASSERT_EQ(code, 0) << err.str();
  v1::AnalysisReport report;
  ASSERT_THAT(ParseJson(out.str(), &report), IsOk());
  EXPECT_EQ(report.mode(), v1::MODE_TRAINING);
  EXPECT_EQ(report.key().size(), 64u);
  EXPECT_GT(report.functional_graph().nodes_size(), 0);
}

TEST(AnalyzeCommandTest, BadGraphPrintsTheProblemAndFails) {
  std::string path = ::testing::TempDir() + "/bad_graph.json";
  {
    std::ofstream f(path);
    f << R"({"inputs": [{"name": "x", "meta": {"shape": [2], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
             "nodes": [{"name": "y", "op": "aten.nope.default", "args": [{"node": "x"}],
                        "grad_mode": "GRAD_MODE_ENABLED"}],
             "outputs": ["y"]})";
  }
  std::ostringstream out, err;
  EXPECT_EQ(RunAnalyzeCommand({path}, out, err), 1);
  EXPECT_THAT(err.str(), HasSubstr("node 'y'"));
  EXPECT_THAT(err.str(), HasSubstr("unsupported op 'aten.nope.default'"));
  EXPECT_TRUE(out.str().empty());
}

TEST(AnalyzeCommandTest, MissingFileAndBadUsage) {
  std::ostringstream out, err;
  EXPECT_EQ(RunAnalyzeCommand({"/nonexistent/graph.json"}, out, err), 1);
  EXPECT_THAT(err.str(), HasSubstr("cannot read"));
  EXPECT_EQ(RunAnalyzeCommand({}, out, err), 2);
  EXPECT_EQ(RunAnalyzeCommand({"--frobnicate", "x.json"}, out, err), 2);
}

}  // namespace
}  // namespace aotcache
