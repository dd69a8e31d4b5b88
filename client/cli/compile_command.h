// `aotcache compile --local [--json] GRAPH.json`: compiles a graph with the
// reference backend, as the daemon will on a miss, and prints what was made:
// the mode, each artifact's digest, size and calling-convention hash, the
// bytes the forward saves for the backward, and the planned memory.
// Thread-safety: call from one thread.
#ifndef AOTCACHE_CLIENT_CLI_COMPILE_COMMAND_H_
#define AOTCACHE_CLIENT_CLI_COMPILE_COMMAND_H_

#include <iosfwd>
#include <string>
#include <vector>

#include "client/cli/command_args.h"

namespace aotcache {

const CommandSpec& LocalCompileSpec();

// Returns the exit code: 0 ok, 1 bad graph, 2 bad usage.
int RunCompileCommand(const std::vector<std::string>& args, std::ostream& out,
                      std::ostream& err);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_COMPILE_COMMAND_H_
