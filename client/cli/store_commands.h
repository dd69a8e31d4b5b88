// The commands about a daemon's store: `stats`, `ls`, `show KEY`, `rm KEY`,
// `evict` and `verify` (remote_commands.h parses their arguments). Each
// returns the exit code: 0 ok, 1 refused or failed (verify: something was
// corrupt), 3 no daemon answers.
// Thread-safety: call from one thread.
#ifndef AOTCACHE_CLIENT_CLI_STORE_COMMANDS_H_
#define AOTCACHE_CLIENT_CLI_STORE_COMMANDS_H_

#include <string>

#include "client/cli/remote_session.h"

namespace aotcache {

int RunStats(RemoteSession& remote, const RemoteInvocation& inv);
int RunList(RemoteSession& remote, const RemoteInvocation& inv);
// `key`: 32 bytes.
int RunShow(RemoteSession& remote, const RemoteInvocation& inv,
            const std::string& key);
int RunDelete(RemoteSession& remote, const std::string& key);
int RunEvict(RemoteSession& remote, const RemoteInvocation& inv);
int RunVerify(RemoteSession& remote, const RemoteInvocation& inv);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_STORE_COMMANDS_H_
