// `aotcache compile`: artifacts for a training graph, errors for bad ones.
#include "client/cli/compile_command.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace aotcache {
namespace {

using ::testing::HasSubstr;

TEST(CompileCommandTest, TrainingGraphGetsForwardAndBackward) {
  std::ostringstream out, err;
  int code = RunCompileCommand(
      {testing::FixturePath("../../examples/mlp.json")}, out, err);
  ASSERT_EQ(code, 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("mode: MODE_TRAINING"));
  EXPECT_THAT(out.str(), HasSubstr("forward: "));
  EXPECT_THAT(out.str(), HasSubstr("backward: "));
  EXPECT_THAT(out.str(), HasSubstr("saved for backward: "));
}

TEST(CompileCommandTest, InferenceGraphGetsOneArtifact) {
  std::ostringstream out, err;
  int code = RunCompileCommand(
      {testing::FixturePath("graphs/mlp_mse__nrg.json")}, out, err);
  ASSERT_EQ(code, 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("mode: MODE_INFERENCE"));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("backward: ")));
}

TEST(CompileCommandTest, MissingFileFails) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCompileCommand({"/nonexistent.json"}, out, err), 1);
  EXPECT_THAT(err.str(), HasSubstr("cannot read"));
  EXPECT_EQ(RunCompileCommand({}, out, err), 2);
}

}  // namespace
}  // namespace aotcache
