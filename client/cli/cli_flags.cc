#include "client/cli/cli_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, server, "",
          "the daemon: HOST:PORT, unix:PATH or tls://HOST:PORT; default "
          "$AOTCACHE_SERVER, else the default daemon's unix socket");
ABSL_FLAG(bool, json, false, "print JSON (keys in hex, as everywhere)");
ABSL_FLAG(bool, keep_input_mutations, false,
          "analyze as CompileOptions.keep_input_mutations does");
ABSL_FLAG(std::string, backend, "auto",
          "the key of the daemon with this backend: auto, native or "
          "reference");
ABSL_FLAG(bool, local, false,
          "compile here with the reference backend, without a daemon");
ABSL_FLAG(bool, backward, false, "fetch the backward too (training graphs)");
ABSL_FLAG(bool, source, false, "print the native kernels' C++ source");
ABSL_FLAG(std::string, older_than, "",
          "evict entries not used for this long: 7d, 36h, 90m, 30s");
ABSL_FLAG(std::string, to_size, "",
          "evict the least recently used entries down to this size: 20G, "
          "512MiB, bytes");
ABSL_FLAG(std::string, to, "", "the file to write");
ABSL_FLAG(std::string, prefix, "", "only keys starting with these hex digits");
ABSL_FLAG(double, interval, 2, "seconds between lines");
ABSL_FLAG(int64_t, count, -1, "lines to print; negative: until interrupted");
ABSL_FLAG(std::string, data_dir, "",
          "the daemon's data dir; default $XDG_CACHE_HOME/aotcache (else "
          "~/.cache/aotcache)");
