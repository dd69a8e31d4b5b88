// `aotcache export --to=FILE [--prefix=HEX]` and `aotcache import FILE`:
// a daemon's entries with their artifacts to a file and from one
// (core/store/export_format.h), checked on the way, with progress on a
// terminal. Import checks the whole file before it sends a byte.
// Thread-safety: one thread.
#ifndef AOTCACHE_CLIENT_CLI_TRANSFER_COMMANDS_H_
#define AOTCACHE_CLIENT_CLI_TRANSFER_COMMANDS_H_

#include <string>

#include "client/cli/remote_session.h"

namespace aotcache {

// The exit code (remote_session.h).
int RunExport(RemoteSession& remote, const RemoteInvocation& inv);
int RunImport(RemoteSession& remote, const std::string& path);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_TRANSFER_COMMANDS_H_
