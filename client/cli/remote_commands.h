// The admin commands that talk to a daemon: `stats`, `ls`, `show KEY`,
// `rm KEY`, `verify`, `evict`, `export`, `import FILE`, and `compile` when
// not --local. Each takes
// `--server TARGET` (else $AOTCACHE_SERVER, else the unix socket in the
// default data dir) and `--json`.
// Thread-safety: call from one thread.
#ifndef AOTCACHE_CLIENT_CLI_REMOTE_COMMANDS_H_
#define AOTCACHE_CLIENT_CLI_REMOTE_COMMANDS_H_

#include <iosfwd>
#include <string>
#include <vector>

namespace aotcache {

// The usage lines of these commands.
extern const char kRemoteCommandsUsage[];

// True for the commands RunRemoteCommand handles.
bool IsRemoteCommand(const std::string& command);

// Returns the exit code: 0 ok, 1 the server refused or failed, 2 bad usage,
// 3 the server could not be reached.
int RunRemoteCommand(const std::string& command,
                     const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_REMOTE_COMMANDS_H_
