// aotcache: the admin command line. `analyze` and `compile --local` work on
// a graph file alone; the other commands ask a daemon.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "client/cli/analyze_command.h"
#include "client/cli/compile_command.h"
#include "client/cli/remote_commands.h"
#include "client/cli/repair_command.h"
#include "client/cli/token_command.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "help") {
    std::cout
        << "usage: aotcache analyze [--json] GRAPH.json\n"
           "       aotcache compile --local [--json] GRAPH.json\n"
           "       aotcache repair [--data_dir=DIR]   (the daemon stopped)\n"
           "       aotcache token NAME SCOPES   (a token for --tokens_file)\n"
        << aotcache::kRemoteCommandsUsage
        << "Without --server: $AOTCACHE_SERVER, else the daemon's unix "
           "socket in $XDG_CACHE_HOME/aotcache (else ~/.cache/aotcache).\n"
           "tls://HOST:PORT speaks TLS (CA: $AOTCACHE_CA, client "
           "certificate: $AOTCACHE_CLIENT_CERT and $AOTCACHE_CLIENT_KEY); "
           "the token: $AOTCACHE_TOKEN.\n";
    return args.empty() ? 2 : 0;
  }
  // A leading --server applies to the command after it.
  if (args.size() > 2 && args[0] == "--server") {
    std::rotate(args.begin(), args.begin() + 2, args.begin() + 3);
  } else if (args.size() > 1 && args[0].rfind("--server=", 0) == 0) {
    std::swap(args[0], args[1]);
  }
  std::string command = args[0];
  args.erase(args.begin());
  if (command == "analyze") {
    return aotcache::RunAnalyzeCommand(args, std::cout, std::cerr);
  }
  if (command == "token") {
    return aotcache::RunTokenCommand(args, std::cout, std::cerr);
  }
  if (command == "repair") {
    return aotcache::RunRepairCommand(args, std::cout, std::cerr);
  }
  auto local = std::find(args.begin(), args.end(), "--local");
  if (command == "compile" && local != args.end()) {
    args.erase(local);
    return aotcache::RunCompileCommand(args, std::cout, std::cerr);
  }
  if (aotcache::IsRemoteCommand(command)) {
    return aotcache::RunRemoteCommand(command, args, std::cout, std::cerr);
  }
  std::cerr << "aotcache: unknown command '" << command << "'\n";
  return 2;
}
