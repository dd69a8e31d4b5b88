// The commands that talk to a daemon: `compile` (when not --local),
// `stats`, `ls`, `show KEY`, `rm KEY`, `verify`, `evict`, `export`,
// `import FILE` and `top`. Each takes `--server=TARGET` (else
// $AOTCACHE_SERVER, else the default daemon's unix socket) and makes its
// calls through an aotcache::Client's DaemonCalls.
// Thread-safety: call from one thread.
#ifndef AOTCACHE_CLIENT_CLI_REMOTE_COMMANDS_H_
#define AOTCACHE_CLIENT_CLI_REMOTE_COMMANDS_H_

#include <iosfwd>
#include <string>
#include <vector>

#include "client/cli/command_args.h"

namespace aotcache {

const std::vector<CommandSpec>& RemoteCommandSpecs();
// Null when `command` is not one of them.
const CommandSpec* RemoteCommandSpec(const std::string& command);

// Returns the exit code: 0 ok, 1 the server refused or failed, 2 bad usage,
// 3 the server could not be reached.
int RunRemoteCommand(const std::string& command,
                     const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_REMOTE_COMMANDS_H_
