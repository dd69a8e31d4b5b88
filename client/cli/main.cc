// aotcache: the admin command line. `analyze`, `compile --local`, `repair`
// and `token` work alone; the other commands ask a daemon.
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/cli/analyze_command.h"
#include "client/cli/command_args.h"
#include "client/cli/compile_command.h"
#include "client/cli/remote_commands.h"
#include "client/cli/repair_command.h"
#include "client/cli/token_command.h"

namespace {

void PrintUsage(std::ostream& out) {
  std::vector<const aotcache::CommandSpec*> specs = {
      &aotcache::AnalyzeSpec(), &aotcache::LocalCompileSpec()};
  for (const aotcache::CommandSpec& spec : aotcache::RemoteCommandSpecs()) {
    specs.push_back(&spec);
  }
  specs.push_back(&aotcache::RepairSpec());
  specs.push_back(&aotcache::TokenSpec());
  out << "usage: aotcache COMMAND [FLAGS] ARGS   (aotcache COMMAND --help: "
         "its flags)\n";
  for (const aotcache::CommandSpec* spec : specs) {
    out << "  " << spec->name << " " << spec->synopsis << "\n      "
        << spec->summary << "\n";
  }
  out << "Without --server: $AOTCACHE_SERVER, else the daemon's unix socket "
         "in $XDG_CACHE_HOME/aotcache (else ~/.cache/aotcache). "
         "tls://HOST:PORT speaks TLS (CA: $AOTCACHE_CA, client certificate: "
         "$AOTCACHE_CLIENT_CERT and $AOTCACHE_CLIENT_KEY); the token: "
         "$AOTCACHE_TOKEN.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // The command is the first argument that is neither a flag nor the value
  // of a flag written before it (`aotcache --server HOST:PORT ls`).
  std::string command;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--server") {
      ++i;
    } else if (!absl::StartsWith(args[i], "-")) {
      command = args[i];
      args.erase(args.begin() + static_cast<long>(i));
      break;
    }
  }
  if (command.empty() || command == "help") {
    bool help = command == "help" || (!args.empty() && args[0] == "--help");
    PrintUsage(help ? std::cout : std::cerr);
    return help ? 0 : 2;
  }
  if (command == "analyze") {
    return aotcache::RunAnalyzeCommand(args, std::cout, std::cerr);
  }
  if (command == "token") {
    return aotcache::RunTokenCommand(args, std::cout, std::cerr);
  }
  if (command == "repair") {
    return aotcache::RunRepairCommand(args, std::cout, std::cerr);
  }
  if (command == "compile") {
    for (const std::string& arg : args) {
      if (arg == "--local" || absl::StartsWith(arg, "--local=")) {
        return aotcache::RunCompileCommand(args, std::cout, std::cerr);
      }
    }
  }
  return aotcache::RunRemoteCommand(command, args, std::cout, std::cerr);
}
