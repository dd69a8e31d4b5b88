#include "client/cli/read_graph.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/graph/graph_json.h"

namespace aotcache {

absl::StatusOr<v1::Graph> ReadGraphFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << file.rdbuf();
  v1::Graph graph;
  absl::Status parsed = ParseJson(text.str(), &graph);
  if (!parsed.ok()) return parsed;
  return graph;
}

}  // namespace aotcache
