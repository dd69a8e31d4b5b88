// Reading a graph file for the CLI commands.
// Thread-safety: function only.
#ifndef AOTCACHE_CLIENT_CLI_READ_GRAPH_H_
#define AOTCACHE_CLIENT_CLI_READ_GRAPH_H_

#include <string>

#include "absl/status/statusor.h"
#include "aotcache/v1/graph.pb.h"

namespace aotcache {

// NotFound if the file cannot be read; InvalidArgument if it does not parse.
absl::StatusOr<v1::Graph> ReadGraphFile(const std::string& path);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_READ_GRAPH_H_
