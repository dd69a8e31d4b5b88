// aotcache: the admin command line. Subcommands: analyze, compile.
#include <iostream>
#include <string>
#include <vector>

#include "client/cli/analyze_command.h"
#include "client/cli/compile_command.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "help") {
    std::cout << "usage: aotcache analyze [--json] GRAPH.json\n"
                 "       aotcache compile [--json] GRAPH.json\n";
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  if (command == "analyze") {
    return aotcache::RunAnalyzeCommand(args, std::cout, std::cerr);
  }
  if (command == "compile") {
    return aotcache::RunCompileCommand(args, std::cout, std::cerr);
  }
  std::cerr << "aotcache: unknown command '" << command << "'\n";
  return 2;
}
