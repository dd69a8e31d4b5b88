// `aotcache token NAME SCOPES`: makes a new random token for the daemon's
// tokens file (--tokens_file): prints the token, which only its holder
// keeps, and the file's line for it, which holds only its SHA-256.
// Thread-safety: call from one thread.
#ifndef AOTCACHE_CLIENT_CLI_TOKEN_COMMAND_H_
#define AOTCACHE_CLIENT_CLI_TOKEN_COMMAND_H_

#include <iosfwd>
#include <string>
#include <vector>

#include "client/cli/command_args.h"

namespace aotcache {

const CommandSpec& TokenSpec();

// Returns the process exit code: 0 made, 1 failed, 2 bad usage.
int RunTokenCommand(const std::vector<std::string>& args, std::ostream& out,
                    std::ostream& err);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_TOKEN_COMMAND_H_
