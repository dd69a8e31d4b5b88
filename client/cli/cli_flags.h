// Every flag of the `aotcache` command line, as absl flags (defined, with
// their help, in cli_flags.cc). A command takes the ones its CommandSpec
// names (command_args.h); the rest keep their defaults while it runs.
// Thread-safety: flags are process-wide; one command runs at a time.
#ifndef AOTCACHE_CLIENT_CLI_CLI_FLAGS_H_
#define AOTCACHE_CLIENT_CLI_CLI_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"

// Every command that talks to a daemon.
ABSL_DECLARE_FLAG(std::string, server);
// Most commands.
ABSL_DECLARE_FLAG(bool, json);
// analyze.
ABSL_DECLARE_FLAG(bool, keep_input_mutations);
ABSL_DECLARE_FLAG(std::string, backend);
// compile.
ABSL_DECLARE_FLAG(bool, local);
ABSL_DECLARE_FLAG(bool, backward);
// show.
ABSL_DECLARE_FLAG(bool, source);
// evict.
ABSL_DECLARE_FLAG(std::string, older_than);
ABSL_DECLARE_FLAG(std::string, to_size);
// export.
ABSL_DECLARE_FLAG(std::string, to);
ABSL_DECLARE_FLAG(std::string, prefix);
// top.
ABSL_DECLARE_FLAG(double, interval);
ABSL_DECLARE_FLAG(int64_t, count);
// repair.
ABSL_DECLARE_FLAG(std::string, data_dir);

#endif  // AOTCACHE_CLIENT_CLI_CLI_FLAGS_H_
