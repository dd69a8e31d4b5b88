#include "client/cli/command_args.h"

#include <algorithm>

#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace aotcache {
namespace {

// The name as written on command lines: "older-than", not "older_than".
std::string Dashed(absl::string_view name) {
  return absl::StrReplaceAll(name, {{"_", "-"}});
}

}  // namespace

std::string CommandHelp(const CommandSpec& spec) {
  std::string help = absl::StrCat("usage: aotcache ", spec.name, " ",
                                  spec.synopsis, "\n  ", spec.summary, "\n");
  for (const absl::CommandLineFlag* flag : spec.flags) {
    absl::StrAppendFormat(&help, "  --%-22s %s", Dashed(flag->Name()),
                          flag->Help());
    const std::string default_value = flag->DefaultValue();
    if (!default_value.empty() && default_value != "false") {
      absl::StrAppend(&help, " (default ", default_value, ")");
    }
    help += "\n";
  }
  return help;
}

CommandArgs::CommandArgs(const CommandSpec& spec,
                         const std::vector<std::string>& args,
                         std::ostream& out, std::ostream& err)
    : spec_(spec), err_(err) {
  for (const absl::CommandLineFlag* flag : spec.flags) {
    absl::CommandLineFlag* mutable_flag =
        absl::FindCommandLineFlag(flag->Name());
    saved_.emplace_back(mutable_flag, mutable_flag->CurrentValue());
  }
  if (std::find(args.begin(), args.end(), "--help") != args.end()) {
    out << CommandHelp(spec);
    exit_code_ = 0;
    return;
  }
  if (absl::Status parsed = Parse(args); !parsed.ok()) Usage(parsed);
}

CommandArgs::~CommandArgs() {
  for (auto& [flag, value] : saved_) {
    std::string error;
    (void)flag->ParseFrom(value, &error);  // Its own printed value parses.
  }
}

int CommandArgs::Usage(const absl::Status& status) {
  err_ << "aotcache " << spec_.name << ": " << status.message() << "\n"
       << CommandHelp(spec_);
  exit_code_ = 2;
  return 2;
}

absl::Status CommandArgs::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg == "-" || !absl::StartsWith(arg, "-")) {
      positional_.emplace_back(arg);
      continue;
    }
    if (arg == "--") {  // The rest are positional, whatever they look like.
      positional_.insert(positional_.end(), args.begin() + i + 1, args.end());
      break;
    }
    absl::string_view body = arg.substr(absl::StartsWith(arg, "--") ? 2 : 1);
    const size_t equals = body.find('=');
    const std::string name =
        absl::StrReplaceAll(body.substr(0, equals), {{"-", "_"}});
    const bool taken = std::any_of(spec_.flags.begin(), spec_.flags.end(),
                                   [&](const absl::CommandLineFlag* flag) {
                                     return flag->Name() == name;
                                   });
    absl::CommandLineFlag* flag =
        taken ? absl::FindCommandLineFlag(name) : nullptr;
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", arg, "'"));
    }
    std::string value;
    if (equals != absl::string_view::npos) {
      value = std::string(body.substr(equals + 1));
    } else if (flag->IsOfType<bool>()) {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", Dashed(name), " needs a value"));
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", Dashed(name), "='", value, "': ", error));
    }
  }
  const int n = static_cast<int>(positional_.size());
  if (n < spec_.min_positional || n > spec_.max_positional) {
    return absl::InvalidArgumentError(
        n < spec_.min_positional
            ? "too few arguments"
            : absl::StrCat("unexpected argument '",
                           positional_[spec_.max_positional], "'"));
  }
  return absl::OkStatus();
}

}  // namespace aotcache
