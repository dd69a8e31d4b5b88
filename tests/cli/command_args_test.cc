// How every aotcache command reads its arguments (command_args.h): the
// spellings of a flag, what is refused as bad usage, --help, and the flags
// put back after the command.
#include "client/cli/command_args.h"

#include <sstream>

#include "absl/flags/flag.h"
#include "client/cli/cli_flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace aotcache {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

const CommandSpec& TopLike() {
  static const auto* spec = new CommandSpec{
      "top",
      "[--interval=SECONDS] [--count=N] [--json] [--older-than=AGE] FILE",
      "a spec for the tests",
      {&absl::GetFlagReflectionHandle(FLAGS_interval),
       &absl::GetFlagReflectionHandle(FLAGS_count),
       &absl::GetFlagReflectionHandle(FLAGS_json),
       &absl::GetFlagReflectionHandle(FLAGS_older_than)},
      1,
      1};
  return *spec;
}

class CommandArgsTest : public ::testing::Test {
 protected:
  std::ostringstream out_, err_;
};

TEST_F(CommandArgsTest, EverySpellingOfAFlagSetsIt) {
  CommandArgs args(TopLike(),
                   {"--interval=0.5", "--count", "3", "--json",
                    "--older-than=7d", "graph.json"},
                   out_, err_);
  ASSERT_FALSE(args.stop()) << err_.str();
  EXPECT_EQ(absl::GetFlag(FLAGS_interval), 0.5);
  EXPECT_EQ(absl::GetFlag(FLAGS_count), 3);
  EXPECT_TRUE(absl::GetFlag(FLAGS_json));
  EXPECT_EQ(absl::GetFlag(FLAGS_older_than), "7d");
  EXPECT_EQ(args.positional(), std::vector<std::string>{"graph.json"});
}

TEST_F(CommandArgsTest,
       UnderscoresAndDashesAreTheSameInANameAndABoolTakesAValue) {
  CommandArgs args(TopLike(), {"--older_than=1h", "--json=false", "x"}, out_,
                   err_);
  ASSERT_FALSE(args.stop()) << err_.str();
  EXPECT_EQ(absl::GetFlag(FLAGS_older_than), "1h");
  EXPECT_FALSE(absl::GetFlag(FLAGS_json));
}

TEST_F(CommandArgsTest, FlagsArePutBackWhenTheCommandEnds) {
  {
    CommandArgs args(TopLike(), {"--count=9", "x"}, out_, err_);
    ASSERT_FALSE(args.stop()) << err_.str();
    EXPECT_EQ(absl::GetFlag(FLAGS_count), 9);
  }
  EXPECT_EQ(absl::GetFlag(FLAGS_count), -1);
}

TEST_F(CommandArgsTest, AFlagOfAnotherCommandIsBadUsage) {
  // --backward is a flag of `compile`, not of this command.
  CommandArgs args(TopLike(), {"--backward", "x"}, out_, err_);
  EXPECT_TRUE(args.stop());
  EXPECT_EQ(args.exit_code(), 2);
  EXPECT_THAT(err_.str(), HasSubstr("unknown flag '--backward'"));
  EXPECT_THAT(err_.str(), HasSubstr("usage: aotcache top"));
  EXPECT_FALSE(absl::GetFlag(FLAGS_backward));
}

TEST_F(CommandArgsTest, BadValuesAndCountsAreBadUsageNamingThem) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  } cases[] = {
      {{"--count=many", "x"}, "--count='many'"},
      {{"--interval=", "x"}, "--interval=''"},
      {{"x", "--count"}, "--count needs a value"},
      {{}, "too few arguments"},
      {{"x", "y"}, "unexpected argument 'y'"},
      {{"-q", "x"}, "unknown flag '-q'"},
  };
  for (const Case& c : cases) {
    err_.str("");
    CommandArgs args(TopLike(), c.args, out_, err_);
    EXPECT_EQ(args.exit_code(), 2) << c.says;
    EXPECT_THAT(err_.str(), HasSubstr(c.says));
  }
}

TEST_F(CommandArgsTest, AfterADoubleDashEverythingIsPositional) {
  CommandArgs args(TopLike(), {"--", "--json"}, out_, err_);
  ASSERT_FALSE(args.stop()) << err_.str();
  EXPECT_EQ(args.positional(), std::vector<std::string>{"--json"});
  EXPECT_FALSE(absl::GetFlag(FLAGS_json));
}

TEST_F(CommandArgsTest, HelpPrintsEveryFlagWithItsHelpAndDefault) {
  CommandArgs args(TopLike(), {"--help"}, out_, err_);
  EXPECT_EQ(args.exit_code(), 0);
  EXPECT_THAT(err_.str(), IsEmpty());
  EXPECT_THAT(out_.str(), HasSubstr("usage: aotcache top [--interval"));
  EXPECT_THAT(out_.str(), HasSubstr("--interval"));
  EXPECT_THAT(out_.str(), HasSubstr("seconds between lines (default 2)"));
  EXPECT_THAT(out_.str(), HasSubstr("--older-than"));
}

}  // namespace
}  // namespace aotcache
