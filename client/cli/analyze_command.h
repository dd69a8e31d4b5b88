// `aotcache analyze [--json] [--keep-input-mutations]
// [--backend=auto|native|reference] GRAPH.json`: prints the mode, the
// ViewAndMutationData and the cache key of a graph, readable or as JSON (an
// AnalysisReport). The key is the one a daemon with that backend (by
// default as the daemon chooses it) gives the graph from a client on this
// machine. A bad graph prints the problem to stderr and returns non-zero.
// Thread-safety: call from one thread.
#ifndef AOTCACHE_CLIENT_CLI_ANALYZE_COMMAND_H_
#define AOTCACHE_CLIENT_CLI_ANALYZE_COMMAND_H_

#include <iosfwd>
#include <string>
#include <vector>

#include "client/cli/command_args.h"

namespace aotcache {

const CommandSpec& AnalyzeSpec();

// Returns the process exit code: 0 ok, 1 bad graph, 2 bad usage.
int RunAnalyzeCommand(const std::vector<std::string>& args, std::ostream& out,
                      std::ostream& err);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_ANALYZE_COMMAND_H_
