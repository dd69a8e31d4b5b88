// `aotcache repair [--data_dir=DIR]`: salvages the store of a data dir that
// does not open (a damaged WAL, MANIFEST or table file, a missing CURRENT),
// then verifies it, and prints what survived and what was lost. The daemon
// must be stopped first. Without --data_dir: the default data dir.
// Thread-safety: call from one thread.
#ifndef AOTCACHE_CLIENT_CLI_REPAIR_COMMAND_H_
#define AOTCACHE_CLIENT_CLI_REPAIR_COMMAND_H_

#include <iosfwd>
#include <string>
#include <vector>

#include "client/cli/command_args.h"

namespace aotcache {

const CommandSpec& RepairSpec();

// Returns the process exit code: 0 repaired with nothing lost, 1 repaired
// with losses or not repaired, 2 bad usage.
int RunRepairCommand(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_REPAIR_COMMAND_H_
