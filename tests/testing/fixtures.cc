#include "tests/testing/fixtures.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/graph/graph_json.h"
#include "google/protobuf/struct.pb.h"

namespace aotcache::testing {

std::string FixturePath(const std::string& relative) {
  return std::string(AOTCACHE_FIXTURES_DIR) + "/" + relative;
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::abort();
  }
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

v1::Graph LoadGraphOrDie(const std::string& relative) {
  v1::Graph graph;
  absl::Status st = ParseJson(ReadFileOrDie(FixturePath(relative)), &graph);
  if (!st.ok()) {
    std::fprintf(stderr, "%s: %s\n", relative.c_str(),
                 std::string(st.message()).c_str());
    std::abort();
  }
  return graph;
}

std::vector<std::string> FixtureGraphFiles() {
  google::protobuf::ListValue list;
  absl::Status st =
      ParseJson(ReadFileOrDie(FixturePath("expected_analysis.json")), &list);
  std::vector<std::string> out;
  if (!st.ok()) return out;  // Callers assert on the count.
  for (const auto& v : list.values()) {
    out.push_back(v.struct_value().fields().at("graph").string_value());
  }
  return out;
}

v1::Graph GraphFromJson(const std::string& json) {
  v1::Graph graph;
  absl::Status st = ParseJson(json, &graph);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n%s\n", std::string(st.message()).c_str(),
                 json.c_str());
    std::abort();
  }
  return graph;
}

}  // namespace aotcache::testing
