// CommandArgs: how every `aotcache` command reads its arguments. The flags
// are absl flags (cli_flags.h); a command names the ones it takes in its
// CommandSpec, and CommandArgs sets them from the command's arguments --
// "--name=value", "--name value", a boolean's bare "--name", "-" and "_"
// alike in a name ("--older-than" sets --older_than) -- and keeps the rest
// as the positional arguments. "--help" prints the command's help. A flag
// the command does not take, a value its flag cannot parse or a wrong
// number of positional arguments is reported, with the help, as bad usage
// (exit code 2). The flags keep what the arguments set until the
// CommandArgs is destroyed, then are what they were before.
// Thread-safety: flags are process-wide; one command runs at a time.
#ifndef AOTCACHE_CLIENT_CLI_COMMAND_ARGS_H_
#define AOTCACHE_CLIENT_CLI_COMMAND_ARGS_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/status/status.h"

namespace aotcache {

struct CommandSpec {
  const char* name;      // "evict"
  const char* synopsis;  // "[--older-than=AGE] [--to-size=SIZE]"
  const char* summary;   // One line: what it does.
  std::vector<const absl::CommandLineFlag*> flags;
  int min_positional = 0;
  int max_positional = 0;
};

// "usage: aotcache NAME SYNOPSIS", the summary, then each flag with its
// help and default.
std::string CommandHelp(const CommandSpec& spec);

class CommandArgs {
 public:
  // Parses `args`; --help or bad usage is printed to `out` or `err` here.
  CommandArgs(const CommandSpec& spec, const std::vector<std::string>& args,
              std::ostream& out, std::ostream& err);
  CommandArgs(const CommandArgs&) = delete;
  CommandArgs& operator=(const CommandArgs&) = delete;
  // Puts the command's flags back as they were.
  ~CommandArgs();

  // Whether the command stops at once (after --help or bad usage), with
  // exit_code(): 0 or 2.
  bool stop() const { return exit_code_ >= 0; }
  int exit_code() const { return exit_code_; }
  const std::vector<std::string>& positional() const { return positional_; }

  // Reports bad usage found after parsing (a value the command checks
  // itself); returns 2.
  int Usage(const absl::Status& status);

 private:
  absl::Status Parse(const std::vector<std::string>& args);

  const CommandSpec& spec_;
  // The command's flags' values before parsing.
  std::vector<std::pair<absl::CommandLineFlag*, std::string>> saved_;
  std::ostream& err_;
  std::vector<std::string> positional_;
  int exit_code_ = -1;
};

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_COMMAND_ARGS_H_
