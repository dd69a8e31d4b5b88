// `aotcache top`: the daemon's live hit rate, a line per interval (hits,
// misses and bypasses per second, hit %, refused misses, the store's
// entries and size; the first line counts since the daemon started).
// Thread-safety: one thread.
#ifndef AOTCACHE_CLIENT_CLI_TOP_COMMAND_H_
#define AOTCACHE_CLIENT_CLI_TOP_COMMAND_H_

#include "client/cli/remote_session.h"

namespace aotcache {

// The exit code (remote_session.h).
int RunTop(RemoteSession& remote, const RemoteInvocation& inv);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_TOP_COMMAND_H_
